"""GtidSet's algebra and single GTIDs, hand computed from MySQL's semantics."""

from __future__ import annotations

import pickle

import pytest

from protocol import Gtid, GtidSet, ProtocolError
from protocol.gtid import GNO_MAX
from tests.fixtures.gtid_text import A, B, Z, gs

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
