"""ext.channels: the mirrored-table codec's layout, bounds and refusals (values by hand)."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import (
    MAX_CHANNELS_SIZE,
    MAX_MIRRORED_ROWS,
    MAX_MIRRORED_TEXT,
    MirroredTable,
    MirroredTables,
    ProtocolError,
    decode_channels,
    encode_channels,
)

ZERO = "0000-00-00 00:00:00.000000"
STATUS = MirroredTable(
    "replication_connection_status",
    ("CHANNEL_NAME", "SERVICE_STATE", "LAST_ERROR_NUMBER", "LAST_ERROR_TIMESTAMP", "THREAD_ID"),
    (("group_replication_recovery", "CONNECTING", 2003, "2026-12-06 07:00:00.000001", None),),
)


def test_a_table_round_trips_in_the_documented_order() -> None:
    tables = MirroredTables(1_700_000_000_000_000, (STATUS,))
    wire = encode_channels(tables)
    assert wire == [
        1,
        1_700_000_000_000_000,
        [
            [
                "replication_connection_status",
                [
                    "CHANNEL_NAME",
                    "SERVICE_STATE",
                    "LAST_ERROR_NUMBER",
                    "LAST_ERROR_TIMESTAMP",
                    "THREAD_ID",
                ],
                [
                    [
                        "group_replication_recovery",
                        "CONNECTING",
                        2003,
                        "2026-12-06 07:00:00.000001",
                        None,
                    ]
                ],
            ]
        ],
    ]
    assert decode_channels(msgpack.unpackb(msgpack.packb(wire))) == tables
    assert tables.table("replication_connection_status") == STATUS
    assert tables.table("replication_applier_status") is None
    assert STATUS.dicts()[0]["LAST_ERROR_NUMBER"] == 2003


def test_golden_bytes_of_a_small_section() -> None:
    tables = MirroredTables(5, (MirroredTable("t", ("A",), ((1.5,), (None,))),))
    packed = msgpack.packb(encode_channels(tables), use_bin_type=True)
    # 93: array 3; 01; 05; 91 array 1; 93 [name, columns, rows]; a1 't'; 91 a1 'A';
    # 92 rows: 91 cb <float64 1.5>, 91 c0
    assert packed.hex() == "9301059193a17491a1419291cb3ff800000000000091c0"


def test_no_table_is_an_empty_section_and_a_table_may_have_no_rows() -> None:
    for tables in (MirroredTables(0, ()), MirroredTables(0, (MirroredTable("t", ("A",), ()),))):
        assert decode_channels(encode_channels(tables)) == tables


def test_a_text_at_the_bound_passes_and_one_byte_more_is_refused() -> None:
    at = MirroredTables(0, (MirroredTable("t", ("A",), (("x" * MAX_MIRRORED_TEXT,),)),))
    assert decode_channels(encode_channels(at)) == at
    # a two-byte character past the bound counts in bytes, not characters
    over = MirroredTables(
        0, (MirroredTable("t", ("A",), (("x" * (MAX_MIRRORED_TEXT - 1) + "é",),)),)
    )
    with pytest.raises(ProtocolError, match="text over"):
        encode_channels(over)


def test_the_packed_size_is_bounded() -> None:
    rows = tuple(("y" * 4000,) for _ in range(MAX_CHANNELS_SIZE // 4000 + 1))
    with pytest.raises(ProtocolError, match="bytes packed"):
        encode_channels(MirroredTables(0, (MirroredTable("t", ("A",), rows),)))


def test_rows_past_the_bound_are_refused() -> None:
    rows = tuple((i,) for i in range(MAX_MIRRORED_ROWS + 1))
    with pytest.raises(ProtocolError, match="rows"):
        decode_channels([1, 0, [["t", ["A"], [list(r) for r in rows]]]])


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ([2, 0, []], "version"),
        ([1, 0], "top level"),
        ({"v": 1}, "top level"),
        ([1, -1, []], "read_at_us"),
        ([1, True, []], "read_at_us"),
        ([1, 0, {}], "tables"),
        ([1, 0, [["t", ["A"]]]], "table 0"),
        ([1, 0, [["T", ["A"], []]]], "table name"),
        ([1, 0, [["t", ["A"], []], ["t", ["A"], []]]], "twice"),
        ([1, 0, [["t", ["a"], []]]], "not a name"),
        ([1, 0, [["t", ["A", "A"], []]]], "twice"),
        ([1, 0, [["t", ["A"] * 65, []]]], "at most 64"),
        ([1, 0, [["t", ["A"], [[1, 2]]]]], "expected 1 values"),
        ([1, 0, [["t", ["A"], [[True]]]]], "got bool"),
        ([1, 0, [["t", ["A"], [[b"x"]]]]], "got bytes"),
        ([1, 0, [["t", ["A"], [[{"k": 1}]]]]], "got dict"),
        ([1, 0, [["t", ["A"], [[1 << 64]]]]], "out of"),
        ([1, 0, [["t", ["A"], [[float("nan")]]]]], "not finite"),
        ([1, 0, [["t", ["A"], "rows"]]], "rows"),
    ],
)
def test_any_other_layout_is_a_protocol_error_naming_the_place(wire: object, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        decode_channels(wire)


_values = st.one_of(
    st.none(),
    st.integers(-(1 << 63), (1 << 64) - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_values, min_size=2, max_size=2), max_size=5))
def test_encode_then_decode_round_trips(rows: list[list[int | float | str | None]]) -> None:
    table = MirroredTable("t", ("A", "B"), tuple(tuple(r) for r in rows))
    tables = MirroredTables(7, (table,))
    packed = msgpack.packb(encode_channels(tables), use_bin_type=True)
    assert decode_channels(msgpack.unpackb(packed, raw=False)) == tables


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.text(max_size=8),
            st.binary(max_size=4),
            st.floats(),
        ),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=20,
    )
)
def test_any_msgpack_value_only_raises_protocol_error(value: object) -> None:
    with contextlib.suppress(ProtocolError):
        decode_channels(value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_mutated_sections_only_raise_protocol_error(noise: bytes) -> None:
    good = msgpack.packb(encode_channels(MirroredTables(1, (STATUS,))), use_bin_type=True)
    for i in range(0, len(good), max(1, len(good) // 8)):
        data = good[:i] + noise[:8] + good[i + 8 :]
        try:
            value = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception:
            continue
        with contextlib.suppress(ProtocolError):
            decode_channels(value)
