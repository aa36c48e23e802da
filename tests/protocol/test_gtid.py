"""GtidSet's text: the golden vectors, MySQL's parser and printer, hostile input.

The set algebra and single GTIDs: test_gtid_algebra.py; the independent model and
fuzzing: test_gtid_model.py.

Expected values come from the golden vectors or from MySQL's source read by hand
(``Gtid_set::add_gtid_text``, ``Tsid::from_cstring``, ``Tag::from_cstring``,
``parse_gno``) -- never from the code under test.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from protocol import Gtid, GtidSet, ProtocolError
from protocol.gtid import GNO_MAX
from tests.fixtures.gtid_text import A, B, gs
from tests.fixtures.paths import load_vectors, vector_case_names

GTID_TEXT = "pipeline_stats_gtid_text.json"
ENCODE = "pipeline_stats_encode.json"


@functools.cache
def _vectors(name: str) -> dict[str, dict[str, Any]]:
    return {case["name"]: case for case in load_vectors(name)}


# --- golden vectors ----------------------------------------------------------


@pytest.mark.parametrize("name", vector_case_names(GTID_TEXT))
def test_gtid_text_vector(name: str) -> None:
    case = _vectors(GTID_TEXT)[name]
    if case["valid"]:
        assert str(GtidSet.parse(case["input"])) == case["normalized"]
        assert str(GtidSet.parse(case["input"].encode("ascii"))) == case["normalized"]
    else:
        with pytest.raises(ProtocolError):
            GtidSet.parse(case["input"])
        with pytest.raises(ProtocolError):
            GtidSet.parse(case["input"].encode("ascii"))


def test_gtid_text_vectors_are_all_covered() -> None:
    assert len(_vectors(GTID_TEXT)) == 19


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        ("short_uuid_rejected", 0),
        ("uuid_without_dashes_rejected", 0),
        ("gno_zero_rejected", 37),
        ("negative_gno_rejected", 37),
        ("tag_33_chars_rejected", 37),
        ("tag_starting_with_digit_rejected", 38),
        ("semicolon_separator_rejected", 38),
    ],
)
def test_rejection_offset_points_at_the_problem(name: str, offset: int) -> None:
    with pytest.raises(ProtocolError) as err:
        GtidSet.parse(_vectors(GTID_TEXT)[name]["input"])
    assert err.value.offset == offset
    assert "Malformed Gtid_set specification" in err.value.reason


_UUID_START = re.compile(r"[0-9A-Fa-f]{8}-")

# Read from the vector by hand: uppercase UUID, unsorted intervals 5 and 1-4,
# second block with a lower UUID, ", " separator.
NON_NORMALIZED_EXPECTED = (
    "50690657-3295-5fb8-26ac-8ee5139d9864:3,\naaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:1-5"
)


@pytest.mark.parametrize("name", vector_case_names(ENCODE))
def test_encode_vector_committed_set(name: str) -> None:
    case = _vectors(ENCODE)[name]
    text = case.get("transactions_committed_all_members")
    if text is None:  # not valid UTF-8: the vector holds the raw bytes as _hex
        with pytest.raises(ProtocolError):
            GtidSet.parse(bytes.fromhex(case["transactions_committed_all_members_hex"]))
        return
    if name == "non_normalized_text_is_opaque":
        assert str(GtidSet.parse(text)) == NON_NORMALIZED_EXPECTED
    elif text == "" or _UUID_START.match(text):
        assert str(GtidSet.parse(text)) == text
    else:  # "xxx...", non-ASCII, embedded NUL: not GTID text at all
        with pytest.raises(ProtocolError):
            GtidSet.parse(text)


@pytest.mark.parametrize("name", vector_case_names(ENCODE))
def test_encode_vector_last_conflict_free(name: str) -> None:
    case = _vectors(ENCODE)[name]
    text = case.get("transaction_last_conflict_free")
    if text is None:
        text = bytes.fromhex(case["transaction_last_conflict_free_hex"]).decode("latin-1")
    if _UUID_START.match(text):
        assert str(Gtid.parse(text)) == text.lower()
    else:  # "" (unknown), "y...", non-ASCII, NUL: not a GTID
        with pytest.raises(ProtocolError):
            Gtid.parse(text)


def test_large_vector_sets_count_their_transactions() -> None:
    v = _vectors(ENCODE)
    assert gs(v["typical_three_member_sets"]["transactions_committed_all_members"]).count() == 6000
    many = gs(v["gtid_set_many_single_gnos"]["transactions_committed_all_members"])
    assert many.count() == 100
    assert (A, "", 199) in many
    assert (A, "", 200) not in many
    big = gs(v["gtid_set_1000_uuids"]["transactions_committed_all_members"])
    assert len({uuid for uuid, _, _, _ in big.intervals()}) == 1000
    assert big.count() > 2**31


# --- parser: MySQL semantics traced from the source ---------------------------

PARSE_OK = [
    # strtoll base 0
    (f"{A}:0x10", f"{A}:16"),
    (f"{A}:0X1f-0x20", f"{A}:31-32"),
    (f"{A}:010", f"{A}:8"),
    (f"{A}:+5", f"{A}:5"),
    (f"{A}:1-+3", f"{A}:1-3"),
    (f"{A}:1- 3", f"{A}:1-3"),
    (f"{A}:{'0' * 5000}1", f"{A}:1"),
    (f"{A}:0x7ffffffffffffffe", f"{A}:{GNO_MAX}"),
    (f"{A}:1-9223372036854775806", f"{A}:1-{GNO_MAX}"),
    # dropped intervals: reversed, end 0, end missing
    (f"{A}:5-4", ""),
    (f"{A}:5-0", ""),
    (f"{A}:5--0", ""),
    (f"{A}:5-", ""),
    (f"{A}:5-,{B}:6", f"{B}:6"),
    (f"{A}:5-5", f"{A}:5"),
    # merging
    (f"{A}:1:2:3", f"{A}:1-3"),
    (f"{A}:4-6:1-3", f"{A}:1-6"),
    (f"{A}:1-10:3-4", f"{A}:1-10"),
    (f"{A}:1-3:5-7", f"{A}:1-3:5-7"),
    # whitespace of every C isspace kind
    (f"\t{A}\n:\r1\v-\f2 ", f"{A}:1-2"),
    (f" , {A} , ,{B}:1,", f"{B}:1"),
    (A, ""),
    # tags apply to what follows; printed lowercase, untagged first
    (f"{A}:1-3:tag:5", f"{A}:1-3:tag:5"),
    (f"{A}:Tag:1:TAG:2", f"{A}:tag:1-2"),
    (f"{A}:_:1", f"{A}:_:1"),
    (f"{A}:a1_:1", f"{A}:a1_:1"),
    (f"{A}:{'t' * 32}:1", f"{A}:{'t' * 32}:1"),
    (f"{A} : x : 1 , {A}:y:2", f"{A}:x:1:y:2"),
    (f"{A}:b:1,{A}:a:1,{A}:1", f"{A}:1:a:1:b:1"),
    (f"{A}:x:1,{A}:2", f"{A}:2:x:1"),  # a tag does not carry over to the next element
    # ':' followed only by whitespace is Tag::from_cstring's empty tag: back to untagged
    (f"{A}:x:1: :2", f"{A}:2:x:1"),
    (f"{A}: ", ""),
    (f"{A}:1: ,{B}:2", f"{A}:1,\n{B}:2"),
    # blocks sorted by UUID bytes, uppercase input
    (f"{B.upper()}:1,{A.upper()}:2", f"{A}:2,\n{B}:1"),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_OK)
def test_parse_accepts_like_mysql(text: str, expected: str) -> None:
    assert str(GtidSet.parse(text)) == expected


PARSE_ERRORS = [
    (f"{A}:", 37),  # nothing after ':' (no whitespace): parse_gno reads no digits
    (f"{A}:1:", 39),
    (f"{A}:x:", 39),
    (f"{A}::1", 37),
    (f"{A}:08", 37),  # octal: strtoll reads "0" and stops at '8'; GNO 0
    (f"{A}:9223372036854775807", 37),
    (f"{A}:0x7fffffffffffffff", 37),
    (f"{A}:{'9' * 100_000}", 37),
    (f"{A}:1-9223372036854775807", 39),
    (f"{A}:1--5", 39),
    (f"{A}:-0", 37),
    (f"{A}:1-2-3", 40),
    (f"{A}:1 2", 39),
    (f"{A}:0x", 37),
    (f"{A}:1-0x", 40),
    (f"{A}:tag 1", 37),
    (f"{A} x", 37),
    (f"{A}1", 36),
    ("{" + A + "}:1", 0),
    (f"+{A}:1", 0),
    ("ANONYMOUS", 0),
    (f"{A}:1,x", 39),
    (f"{A}:1\x00", 38),
    (f"{A}:1\u00e9", 38),
]


@pytest.mark.parametrize(("text", "offset"), PARSE_ERRORS)
def test_parse_rejects_like_mysql(text: str, offset: int) -> None:
    with pytest.raises(ProtocolError) as err:
        GtidSet.parse(text)
    assert err.value.offset == offset


def test_non_ascii_bytes_are_a_protocol_error_not_a_decode_error() -> None:
    with pytest.raises(ProtocolError) as err:
        GtidSet.parse(f"{A}:1".encode() + b"\xff")
    assert err.value.offset == 38


def test_bytes_and_str_parse_alike() -> None:
    assert GtidSet.parse(f"{A}:1-3".encode()) == GtidSet.parse(f"{A}:1-3")


# --- hostile input: linear, bounded ------------------------------------------

MB = 1_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" " * MB, ""),
        ("," * MB, ""),
        (f"{A}" + ":1" * (MB // 2), f"{A}:1"),
        (f"{A}" + " " * MB + ":1", f"{A}:1"),
        (f"{A}:" + "0" * MB + "7", f"{A}:7"),
        (f"{A}:x" + ":1" * (MB // 2), f"{A}:x:1"),
        (f"{A}:" + " " * MB, ""),
    ],
)
def test_megabyte_inputs_parse(text: str, expected: str) -> None:
    assert str(GtidSet.parse(text)) == expected


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        (f"{A}:" + "9" * MB, 37),
        (f"{A}:" + "t" * MB, 37),
        (f"{A}:1-" + "1" * MB, 39),
        ("-" * MB, 0),
    ],
)
def test_megabyte_inputs_fail_fast(text: str, offset: int) -> None:
    with pytest.raises(ProtocolError) as err:
        GtidSet.parse(text)
    assert err.value.offset == offset


def test_many_distinct_intervals() -> None:
    text = A + "".join(f":{n}" for n in range(1, 200_001, 2))
    s = GtidSet.parse(text)
    assert s.count() == 100_000
    assert str(s) == text
