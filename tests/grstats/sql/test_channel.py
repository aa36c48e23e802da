"""The daemon <-> SQL child channel: frames bounded, versioned, refused whole, never cut.

Pure codec tests: expected bytes and values are written by hand here (the
frame header is a 4-byte big-endian length, the body a msgpack map), and the
stream tests drive a real asyncio.StreamReader fed with those bytes.
"""

from __future__ import annotations

import asyncio
import struct

import msgpack
import pytest

from grstats.core import columns
from grstats.core.snapshot import DaemonSnapshot, SqlFigures
from grstats.sql.channel import (
    VERSION,
    ChannelError,
    ChildConfig,
    config_from,
    config_message,
    decode_body,
    encode_frame,
    figures_from,
    figures_message,
    read_frame,
    snapshot_from,
    snapshot_message,
)
from grstats.sql.options import SqlOptions

M1 = "11111111-1111-1111-1111-111111111111"


def _frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def _members_row(member: str, state: str) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(columns.MEMBERS.names)
    row.update({columns.MEMBER_ID: member, columns.MEMBER_STATE: state, columns.MEMBER_PORT: 3306})
    return row


def _read_all(data: bytes, cap: int) -> list[object]:
    """Every frame of `data` read with `cap`: the message, or the refusal's reason."""

    async def run() -> list[object]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        out: list[object] = []
        while True:
            try:
                message = await read_frame(reader, cap)
            except ChannelError as exc:
                out.append(exc.reason)
                continue
            if message is None:
                return out
            out.append(message)

    return asyncio.run(run())


def test_a_frame_is_its_length_then_a_msgpack_map_with_the_version() -> None:
    frame = encode_frame({"kind": "x", "n": 1}, 1024)
    body = msgpack.packb({"v": 1, "kind": "x", "n": 1})
    assert frame == struct.pack(">I", len(body)) + body
    assert VERSION == 1


def test_a_frame_past_the_cap_is_refused_and_the_next_one_still_read() -> None:
    big = msgpack.packb({"v": 1, "kind": "snapshot", "pad": "x" * 5000})
    small = msgpack.packb({"v": 1, "kind": "snapshot", "n": 2})
    got = _read_all(_frame(big) + _frame(small), cap=4096)
    assert got == ["too_large", {"v": 1, "kind": "snapshot", "n": 2}]


def test_a_sender_refuses_to_encode_past_the_cap() -> None:
    with pytest.raises(ChannelError) as info:
        encode_frame({"kind": "snapshot", "pad": "x" * 5000}, 4096)
    assert info.value.reason == "too_large"


def test_another_version_and_garbage_are_refused_and_the_stream_goes_on() -> None:
    other = msgpack.packb({"v": 2, "kind": "snapshot"})
    not_a_map = msgpack.packb([1, 2, 3])
    garbage = b"\xc1\xc1\xc1"  # 0xc1 is never used in msgpack
    good = msgpack.packb({"v": 1, "kind": "figures"})
    data = b"".join(_frame(b) for b in (other, not_a_map, garbage, good))
    assert _read_all(data, cap=4096) == [
        "version",
        "malformed",
        "malformed",
        {"v": 1, "kind": "figures"},
    ]


def test_a_stream_cut_inside_a_frame_ends_without_a_message() -> None:
    body = msgpack.packb({"v": 1, "kind": "snapshot"})
    assert _read_all(_frame(body)[:-2], cap=4096) == []


def test_a_snapshot_carries_each_declared_table_and_the_identity() -> None:
    rows = (_members_row(M1, "ONLINE"),)
    snapshot = DaemonSnapshot(
        taken_at_us=7,
        group_name="g",
        local_member_id=M1,
        tables={"replication_group_members": rows},
    )
    back = snapshot_from(decode_body(encode_frame(snapshot_message(snapshot), 1 << 20)[4:]))
    assert (back.taken_at_us, back.group_name, back.local_member_id) == (7, "g", M1)
    assert [dict(r) for r in back.table("replication_group_members")] == [rows[0]]
    assert back.table("replication_group_member_stats") == ()


def test_a_snapshot_row_with_a_cell_of_another_kind_is_malformed() -> None:
    message = snapshot_message(DaemonSnapshot(taken_at_us=0, group_name="g", local_member_id=M1))
    message["tables"][columns.MEMBERS.name] = [[{"a": 1}] * len(columns.MEMBERS.names)]
    with pytest.raises(ChannelError) as info:
        snapshot_from(message)
    assert info.value.reason == "malformed"


def test_a_snapshot_row_of_the_wrong_width_is_malformed() -> None:
    message = snapshot_message(DaemonSnapshot(taken_at_us=0, group_name="g", local_member_id=M1))
    message["tables"][columns.MEMBERS.name] = [[M1]]
    with pytest.raises(ChannelError) as info:
        snapshot_from(message)
    assert info.value.reason == "malformed"


def test_figures_travel_whole_with_the_port_and_the_childs_refusals() -> None:
    figures = SqlFigures(
        serving=True,
        connections_open=2,
        max_connections=16,
        connections_accepted=5,
        queries=9,
        results_refused={"max_rows": 1, "max_result_bytes": 0},
        errors={1045: 2, 1146: 1},
    )
    message = figures_message(figures, port=3307, refused={"too_large": 3})
    back, port, refused = figures_from(decode_body(encode_frame(message, 1 << 16)[4:]))
    assert back == figures
    assert port == 3307
    assert refused == {"too_large": 3}


def test_figures_with_a_negative_count_are_malformed() -> None:
    message = figures_message(SqlFigures(), port=1, refused={})
    message["queries"] = -1
    with pytest.raises(ChannelError) as info:
        figures_from(message)
    assert info.value.reason == "malformed"


def test_the_config_carries_the_options_and_the_limits() -> None:
    config = ChildConfig(
        options=SqlOptions(port=0, password_hash="*" + "A" * 40, max_connections=3),
        max_snapshot_bytes=1 << 20,
        report_interval=0.5,
        max_address_space=1 << 31,
        max_cpu_seconds=60,
        nice=10,
    )
    back = config_from(decode_body(encode_frame(config_message(config), 1 << 16)[4:]))
    assert back == config
