"""GtidSet and Gtid: MySQL's GTID text parser and printer, and the set algebra.

Expected values come from the golden vectors, from MySQL's source read by hand
(``Gtid_set::add_gtid_text``, ``Tsid::from_cstring``, ``Tag::from_cstring``,
``parse_gno``), or from an independent model (a Python set of GTIDs over small
GNO ranges) -- never from the code under test.
"""

from __future__ import annotations

import contextlib
import functools
import json
import pickle
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import Gtid, GtidSet, ProtocolError
from protocol.gtid import GNO_MAX
from tests.fixtures.paths import VECTORS_DIR, load_vectors

GTID_TEXT = "pipeline_stats_gtid_text.json"
ENCODE = "pipeline_stats_encode.json"

A = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
B = "b8f3a0d3-b50b-dc85-6329-e6e8e52c8de9"
Z = "00000000-0000-0000-0000-000000000001"


@functools.cache
def _vectors(name: str) -> dict[str, dict[str, Any]]:
    return {case["name"]: case for case in load_vectors(name)}


def _names(name: str) -> list[str]:
    # Read at collection only to name the cases; each test body loads through
    # load_vectors, which skips cleanly when ../shared is absent.
    path = VECTORS_DIR / name
    return [case["name"] for case in json.loads(path.read_text())] if path.exists() else []


def gs(text: str) -> GtidSet:
    return GtidSet.parse(text)


# --- golden vectors ----------------------------------------------------------


@pytest.mark.parametrize("name", _names(GTID_TEXT))
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


@pytest.mark.parametrize("name", _names(ENCODE))
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


@pytest.mark.parametrize("name", _names(ENCODE))
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


# --- algebra, hand computed ---------------------------------------------------


def test_union_merges_touching_and_keeps_tags_apart() -> None:
    s = gs(f"{A}:1-5:t:1") | gs(f"{A}:6-9:u:2,{B}:1")
    assert str(s) == f"{A}:1-9:t:1:u:2,\n{B}:1"


def test_union_method_equals_operator() -> None:
    x, y = gs(f"{A}:1-3"), gs(f"{A}:3-7")
    assert x.union(y) == x | y == gs(f"{A}:1-7")


def test_difference_splits_intervals() -> None:
    s = gs(f"{A}:1-10:t:1-3,{B}:1") - gs(f"{A}:3-4:8:t:2,{B}:1")
    assert str(s) == f"{A}:1-2:5-7:9-10:t:1:3"
    assert s == gs(f"{A}:1-10:t:1-3,{B}:1").difference(gs(f"{A}:3-4:8:t:2,{B}:1"))


def test_difference_with_untagged_does_not_touch_tagged() -> None:
    assert gs(f"{A}:t:1-5") - gs(f"{A}:1-5") == gs(f"{A}:t:1-5")


def test_difference_across_many_intervals() -> None:
    s = gs(f"{A}:1-100") - gs(f"{A}:2:4:6-50:99-200")
    assert str(s) == f"{A}:1:3:5:51-98"


def test_intersection() -> None:
    s = gs(f"{A}:1-10:20-30:t:5,{B}:1") & gs(f"{A}:5-25:t:5-6,{Z}:1")
    assert str(s) == f"{A}:5-10:20-25:t:5"
    assert s == gs(f"{A}:1-10:20-30:t:5,{B}:1").intersection(gs(f"{A}:5-25:t:5-6,{Z}:1"))


def test_subset_and_superset() -> None:
    small, big = gs(f"{A}:2-3:t:1"), gs(f"{A}:1-5:t:1-2")
    assert small.issubset(big) and small <= big and small < big
    assert big.issuperset(small) and big >= small and big > small
    assert not big <= small
    same = gs(str(big))
    assert big <= same and not big < same
    assert not gs(f"{A}:t:1") <= gs(f"{A}:1")
    assert GtidSet() <= small


def test_contains_text_tuple_and_gtid() -> None:
    s = gs(f"{A}:1-3:7:Tag:5")
    assert f"{A}:2" in s
    assert f"{A.upper()}:TAG:5" in s
    assert (A, "tag", 5) in s
    assert (A.upper(), "TAG", 7) not in s
    assert Gtid(A, "", 7) in s
    assert f"{A}:4" not in s
    assert f"{A}:8" not in s
    assert f"{A}:tag:4" not in s
    assert f"{B}:1" not in s
    assert 5 not in s


def test_contains_rejects_malformed_gtid_text() -> None:
    with pytest.raises(ProtocolError):
        _ = "nonsense" in gs(f"{A}:1")


def test_count_and_len() -> None:
    s = gs(f"{A}:1-10:20:t:1-5,{B}:100-199")
    assert s.count() == len(s) == 116


def test_count_beyond_sys_maxsize() -> None:
    s = gs(f"{A}:1-{GNO_MAX},{B}:1-{GNO_MAX}")
    assert s.count() == 2 * GNO_MAX
    with pytest.raises(OverflowError):
        len(s)


def test_empty_set() -> None:
    for e in (GtidSet(), gs(""), gs(f"{A}:lonely"), gs(f"{A}:1") - gs(f"{A}:1")):
        assert e.is_empty() and not e and e.count() == 0 and str(e) == ""
        assert e == GtidSet()
    assert not gs(f"{A}:1").is_empty()


def test_equal_sets_hash_alike_whatever_the_text() -> None:
    x = gs(f"{A}:3:1-2,{B}:5")
    y = gs(f"{B.upper()}:0x5, {A}:1, {A}:2-3")
    assert x == y and hash(x) == hash(y)
    assert len({x, y}) == 1
    assert x != gs(f"{A}:1-3") and x != str(x)


def test_round_trip_through_text_and_pickle() -> None:
    s = gs(f"{B}:1-3:z:9,{A}:x:1:7")
    assert GtidSet.parse(str(s)) == s
    assert pickle.loads(pickle.dumps(s)) == s
    assert eval(repr(s), {"GtidSet": GtidSet}) == s


def test_operations_leave_operands_unchanged() -> None:
    x, y = gs(f"{A}:1-5"), gs(f"{A}:3-9")
    _ = (x | y, x - y, x & y)
    assert str(x) == f"{A}:1-5" and str(y) == f"{A}:3-9"


def test_gtid_set_is_immutable() -> None:
    s = gs(f"{A}:1")
    with pytest.raises(AttributeError):
        s._map = {}


def test_constructor_from_intervals() -> None:
    s = GtidSet([(A.upper(), "T", 4, 6), (A, "", 1, 2), (A, "", 3, 3), (B, "", 9, 9)])
    assert str(s) == f"{A}:1-3:t:4-6,\n{B}:9"
    assert list(s.intervals()) == [(A, "", 1, 3), (A, "t", 4, 6), (B, "", 9, 9)]


@pytest.mark.parametrize(
    "bad",
    [("nope", "", 1, 1), (A, "1t", 1, 1), (A, "", 0, 1), (A, "", 3, 2), (A, "", 1, GNO_MAX + 1)],
)
def test_constructor_rejects_bad_intervals(bad: tuple[str, str, int, int]) -> None:
    with pytest.raises(ProtocolError):
        GtidSet([bad])


def test_operators_with_other_types_are_not_implemented() -> None:
    with pytest.raises(TypeError):
        _ = gs(f"{A}:1") | {1}
    with pytest.raises(TypeError):
        _ = gs(f"{A}:1") <= 3


# --- single GTIDs -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{A}:1", Gtid(A, "", 1)),
        (f" {A.upper()} : 0x10 ", Gtid(A, "", 16)),
        (f"{A}:Tag_1:5", Gtid(A, "tag_1", 5)),
        (f"{A} : t : 010", Gtid(A, "t", 8)),
        (f"{A}:{GNO_MAX}".encode(), Gtid(A, "", GNO_MAX)),
    ],
)
def test_single_gtid_parses(text: str | bytes, expected: Gtid) -> None:
    assert Gtid.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        A,
        f"{A}:",
        f"{A}:0",
        f"{A}:-1",
        f"{A}:1-2",
        f"{A}:1,",
        f"{A}:t",
        f"{A}:t:",
        f"{A}:1tag:1",
        f"{A}:{'t' * 33}:1",
        f"{A}:9223372036854775807",
        f"{A}:1:2",
        "ñ",
        b"\xff",
    ],
)
def test_single_gtid_rejects(text: str | bytes) -> None:
    with pytest.raises(ProtocolError):
        Gtid.parse(text)


def test_single_gtid_prints() -> None:
    assert str(Gtid(A, "", 7)) == f"{A}:7"
    assert str(Gtid(A, "tg", 7)) == f"{A}:tg:7"


@pytest.mark.parametrize("args", [(A.upper(), "", 1), (A, "T", 1), (A, "", 0), ("x", "", 1)])
def test_single_gtid_constructor_requires_canonical_fields(args: tuple[str, str, int]) -> None:
    with pytest.raises(ProtocolError):
        Gtid(*args)


# --- property tests against an independent model ------------------------------

UUIDS = [Z, "3e11fa47-71ca-11e1-9e33-c80aa9429562", "ffffffff-0000-0000-0000-000000000000"]
TAGS = ["a", "B_2", "zz"]
Model = set[tuple[str, str, int]]


def _model_text(model: Model) -> str:
    """MySQL's printed form of a model, written independently of protocol.gtid."""
    blocks = []
    for uuid in sorted({u for u, _, _ in model}):
        out = uuid
        for tag in sorted({t for u, t, _ in model if u == uuid}):
            out += f":{tag}" if tag else ""
            gnos = sorted(g for u, t, g in model if u == uuid and t == tag)
            start = prev = gnos[0]
            for g in [*gnos[1:], None]:
                if g is not None and g == prev + 1:
                    prev = g
                    continue
                out += f":{start}" if start == prev else f":{start}-{prev}"
                if g is not None:
                    start = prev = g
        blocks.append(out)
    return ",\n".join(blocks)


def _expand(s: GtidSet) -> Model:
    return {(u, t, g) for u, t, first, last in s.intervals() for g in range(first, last + 1)}


@st.composite
def gno_text(draw: st.DrawFn, n: int) -> str:
    fmt = draw(st.sampled_from(["{}", "0x{:x}", "0X{:X}", "0{:o}", "+{}"]))
    return fmt.format(n)


@st.composite
def set_text(draw: st.DrawFn) -> tuple[str, Model]:
    """Random MySQL-acceptable text with the set it denotes, built side by side."""
    model: Model = set()
    elements = []
    for _ in range(draw(st.integers(0, 4))):
        uuid = draw(st.sampled_from(UUIDS))
        text = uuid.upper() if draw(st.booleans()) else uuid
        tag = ""
        for _ in range(draw(st.integers(0, 4))):
            ws = draw(st.sampled_from(["", "", " ", "\t", "\n "]))
            if draw(st.integers(0, 3)) == 0:
                tag = draw(st.sampled_from(TAGS))
                text += f"{ws}:{ws}{tag}"
                tag = tag.lower()
                continue
            first, last = draw(st.integers(1, 30)), draw(st.integers(0, 30))
            if draw(st.booleans()):
                text += f":{ws}{draw(gno_text(first))}"
                model |= {(uuid, tag, first)}
            else:
                text += f":{draw(gno_text(first))}{ws}-{ws}{draw(gno_text(last))}"
                model |= {(uuid, tag, g) for g in range(first, last + 1)}
        elements.append(text)
    separator = draw(st.sampled_from([",", ", ", ",\n", " ,, "]))
    return separator.join(elements), model


@settings(max_examples=200)
@given(set_text())
def test_parse_and_print_match_the_model(case: tuple[str, Model]) -> None:
    text, model = case
    s = GtidSet.parse(text)
    assert _expand(s) == model
    assert str(s) == _model_text(model)
    assert s.count() == len(s) == len(model)
    assert GtidSet.parse(str(s)) == s


@settings(max_examples=200)
@given(set_text(), set_text())
def test_algebra_matches_the_model(left: tuple[str, Model], right: tuple[str, Model]) -> None:
    x, y = GtidSet.parse(left[0]), GtidSet.parse(right[0])
    mx, my = left[1], right[1]
    assert _expand(x | y) == mx | my
    assert _expand(x & y) == mx & my
    assert _expand(x - y) == mx - my
    assert str(x - y) == _model_text(mx - my)
    assert (x <= y) == (mx <= my)
    assert (x < y) == (mx < my)
    assert (x == y) == (mx == my)
    for uuid in UUIDS:
        for tag in ["", "a", "b_2"]:
            for gno in range(1, 32):
                assert ((uuid, tag, gno) in x) == ((uuid, tag, gno) in mx)


# --- fuzzing: only ProtocolError or a GtidSet ---------------------------------

ALPHABET = "0123456789abcdefABCDEFxX:-, \n_tTgz+\t"


def _parse_or_protocol_error(text: str | bytes) -> None:
    try:
        s = GtidSet.parse(text)
    except ProtocolError as err:
        assert isinstance(err.offset, int)
        return
    assert GtidSet.parse(str(s)) == s


@settings(max_examples=1000)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_fuzz_random_text(text: str) -> None:
    _parse_or_protocol_error(text)


@settings(max_examples=600)
@given(set_text(), st.data())
def test_fuzz_mutated_valid_text(case: tuple[str, Model], data: st.DataObject) -> None:
    text = case[0] or Z
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        if data.draw(st.booleans()) and at < len(text):
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + data.draw(st.sampled_from(ALPHABET)) + text[at:]
    _parse_or_protocol_error(text)


@settings(max_examples=400)
@given(st.binary(max_size=60))
def test_fuzz_random_bytes(data: bytes) -> None:
    _parse_or_protocol_error(data)
    with contextlib.suppress(ProtocolError):
        Gtid.parse(data)
