"""protocol.gtid_state: the ext.gtids codec, golden values written by hand."""

from __future__ import annotations

from typing import Any

import pytest

from protocol import (
    MAX_GTID_STATE_TEXT,
    Envelope,
    GtidSet,
    GtidState,
    MemberInfo,
    ProtocolError,
    decode_envelope,
    decode_gtid_state,
    encode_envelope,
    encode_gtid_state,
)

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
LOCAL = "11111111-1111-1111-1111-111111111111"
AT = 1_700_000_003_250_000

# (name, state, its wire value written out by hand in MySQL's print form)
GOLDEN: list[tuple[str, GtidState, list[Any]]] = [
    ("empty", GtidState(AT, GtidSet(), GtidSet()), [1, AT, "", ""]),
    (
        "two uuids, purged",
        GtidState(
            AT,
            GtidSet([(GROUP, "", 1, 100), (LOCAL, "", 1, 1)]),
            GtidSet([(GROUP, "", 1, 40)]),
        ),
        # MySQL prints UUIDs in the order of their bytes: 11.. before aa..
        [1, AT, f"{LOCAL}:1,\n{GROUP}:1-100", f"{GROUP}:1-40"],
    ),
    (
        "tagged (8.4)",
        GtidState(AT, GtidSet([(GROUP, "", 1, 5), (GROUP, "maint", 1, 2)]), GtidSet()),
        [1, AT, f"{GROUP}:1-5:maint:1-2", ""],
    ),
]


@pytest.mark.parametrize(("name", "state", "wire"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_encode_and_decode(name: str, state: GtidState, wire: list[Any]) -> None:
    assert encode_gtid_state(state) == wire
    assert decode_gtid_state(wire) == state


def test_decode_takes_the_servers_text_in_any_form() -> None:
    text = f"{GROUP}:5-7:MAINT:2:Maint:1,{GROUP}:1-3,\n{LOCAL}:1"  # unsorted, tag case
    state = decode_gtid_state([1, AT, text, ""])
    assert str(state.executed) == f"{LOCAL}:1,\n{GROUP}:1-3:5-7:maint:1-2"


@pytest.mark.parametrize(
    "wire",
    [
        [2, AT, "", ""],  # unknown version
        [1, AT, ""],  # wrong length
        [1, 0, "", ""],  # at_us out of range
        [1, AT, b"", ""],  # not a string
        [1, AT, f"{GROUP}:0", ""],  # GNO 0: MySQL refuses it
        [1, AT, "x" * (MAX_GTID_STATE_TEXT + 1), ""],
        "not an array",
    ],
)
def test_malformed_sections_are_protocol_errors(wire: object) -> None:
    with pytest.raises(ProtocolError):
        decode_gtid_state(wire)


def test_the_bound_counts_both_texts() -> None:
    # each UUID line "xxxxxxxx-...:1" is 38 characters, ",\n" between them
    uuids = [f"{i:08x}-0000-0000-0000-000000000000" for i in range(1, 700)]
    big = GtidSet((u, "", 1, 1) for u in uuids)
    assert len(str(big)) > MAX_GTID_STATE_TEXT
    with pytest.raises(ProtocolError):
        encode_gtid_state(GtidState(AT, big, GtidSet()))
    half = GtidSet((u, "", 1, 1) for u in uuids[:320])  # 320 * 40 - 2 = 12798
    with pytest.raises(ProtocolError):
        encode_gtid_state(GtidState(AT, half, half))
    assert decode_gtid_state(encode_gtid_state(GtidState(AT, half, GtidSet()))).executed == half


def test_envelope_carries_the_section_beside_unknown_ones() -> None:
    member = MemberInfo(LOCAL, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "h:33061")
    wire = GOLDEN[1][2]
    env = Envelope(GROUP, member, "v:1", 1, 1, AT, b"\x01", {"gtids": wire, "future": {"x": 1}})
    decoded = decode_envelope(encode_envelope(env))
    assert decode_gtid_state(decoded.ext["gtids"]) == GOLDEN[1][1]
