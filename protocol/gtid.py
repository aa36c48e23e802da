"""GTID sets: immutable values and MySQL's set algebra.

Strategy: a `GtidSet` is an immutable mapping from a TSID -- the pair
(lowercase dashed UUID, lowercase tag, "" when untagged) -- to a tuple of
inclusive ``(first, last)`` GNO intervals. The mapping is built once, with its
keys in print order, and never changed afterwards; every operation returns a
new set. Text in and out is MySQL's own (`protocol.gtid_text`: the parser and
the printer); this module owns the values and the interval arithmetic.

Invariants of every instance:

* keys are sorted; a lowercase dashed UUID sorts like its 16 raw bytes and ""
  sorts before any tag, so walking the keys in order is MySQL's print order;
* no key maps to an empty tuple;
* intervals are sorted, disjoint and never touching (``next.first >
  prev.last + 1``), with ``1 <= first <= last <= GNO_MAX``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import ProtocolError
from protocol.gtid_text import (
    CANONICAL_UUID,
    GNO_MAX,
    MALFORMED_GTID,
    MALFORMED_SET,
    TAG,
    UUID,
    Interval,
    Key,
    format_gtid_set,
    parse_gtid,
    parse_gtid_set,
)

__all__ = ["GNO_MAX", "Gtid", "GtidSet"]


def _merge(pending: Sequence[Interval]) -> tuple[Interval, ...]:
    """Sort inclusive intervals and merge overlapping or touching ones."""
    if len(pending) <= 1:
        return tuple(pending)
    merged: list[list[int]] = []
    for first, last in sorted(pending):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return tuple((first, last) for first, last in merged)


def _subtract(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    """Intervals of `a` minus those of `b`; both normalized; linear time."""
    out: list[Interval] = []
    j, nb = 0, len(b)
    for first, last in a:
        cur = first
        while j < nb and b[j][1] < cur:
            j += 1
        k = j
        while k < nb and b[k][0] <= last and cur <= last:
            b_first, b_last = b[k]
            if b_first > cur:
                out.append((cur, b_first - 1))
            cur = max(cur, b_last + 1)
            k += 1
        if cur <= last:
            out.append((cur, last))
    return tuple(out)


def _intersect(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    """Intervals in both `a` and `b`; both normalized; linear time."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Gtid:
    """One GTID, as in LAST_CONFLICT_FREE_TRANSACTION (``uuid:gno`` / ``uuid:tag:gno``).

    Attributes:
        uuid: lowercase dashed 36-character UUID.
        tag: lowercase tag, "" when untagged.
        gno: 1 .. GNO_MAX.
    """

    uuid: str
    tag: str
    gno: int

    def __post_init__(self) -> None:
        if not CANONICAL_UUID.fullmatch(self.uuid):
            raise ProtocolError(f"{MALFORMED_GTID}: UUID must be lowercase dashed", None)
        if self.tag and not (TAG.fullmatch(self.tag) and self.tag.islower()):
            raise ProtocolError(f"{MALFORMED_GTID}: invalid tag {self.tag!r}", None)
        if not 1 <= self.gno <= GNO_MAX:
            raise ProtocolError(f"{MALFORMED_GTID}: GNO out of range 1..{GNO_MAX}", None)

    @classmethod
    def parse(cls, text: str | bytes) -> Gtid:
        """Parse one GTID the way MySQL's ``Gtid::parse`` does.

        Whitespace is allowed around every token, hex digits and tags are
        case-insensitive, the GNO is read like ``strtoll`` base 0. The empty
        string (how P_S shows "unknown") is not a GTID.

        Args:
            text: ``uuid:gno`` or ``uuid:tag:gno``; bytes must be ASCII.

        Returns:
            The GTID with UUID and tag lowercased.

        Raises:
            ProtocolError: malformed text; `offset` is where parsing stopped.
        """
        return cls(*parse_gtid(text))

    def __str__(self) -> str:
        if self.tag:
            return f"{self.uuid}:{self.tag}:{self.gno}"
        return f"{self.uuid}:{self.gno}"


class GtidSet:
    """An immutable set of GTIDs, printed and parsed exactly like MySQL.

    Set operators follow `frozenset`: ``|`` ``&`` ``-`` ``<=`` ``<`` ``>=``
    ``>``, ``in`` for one GTID, ``len`` / `count` for the number of
    transactions. Two sets are equal when they hold the same GTIDs, whatever
    text they came from.
    """

    __slots__ = ("_hash", "_map")
    _map: dict[Key, tuple[Interval, ...]]
    _hash: int | None

    def __init__(self, intervals: Iterable[tuple[str, str, int, int]] = ()) -> None:
        """Build a set from ``(uuid, tag, first, last)`` inclusive ranges.

        Args:
            intervals: UUID in dashed form (any case), tag ("" for untagged,
                any case), and ``1 <= first <= last <= GNO_MAX``. Overlapping
                and touching ranges are merged.

        Raises:
            ProtocolError: a malformed UUID, tag or range.
        """
        pending: dict[Key, list[Interval]] = {}
        for uuid, tag, first, last in intervals:
            if not UUID.fullmatch(uuid):
                raise ProtocolError(f"{MALFORMED_SET}: expected a dashed UUID, got {uuid!r}", None)
            if tag and not TAG.fullmatch(tag):
                raise ProtocolError(f"{MALFORMED_SET}: invalid tag {tag!r}", None)
            if not 1 <= first <= last <= GNO_MAX:
                raise ProtocolError(f"{MALFORMED_SET}: invalid range {first}-{last}", None)
            pending.setdefault((uuid.lower(), tag.lower()), []).append((first, last))
        self._init({key: _merge(ivs) for key, ivs in pending.items()})

    def _init(self, mapping: Mapping[Key, tuple[Interval, ...]]) -> None:
        object.__setattr__(self, "_map", {k: mapping[k] for k in sorted(mapping) if mapping[k]})
        object.__setattr__(self, "_hash", None)

    @classmethod
    def _from_map(cls, mapping: Mapping[Key, tuple[Interval, ...]]) -> GtidSet:
        new = cls.__new__(cls)
        new._init(mapping)
        return new

    @classmethod
    def parse(cls, text: str | bytes) -> GtidSet:
        """Parse GTID-set text exactly as MySQL's ``Gtid_set::add_gtid_text``.

        Accepted (PROTOCOL.md section 10): whitespace around any token, empty
        elements between commas, repeated UUIDs, unsorted or overlapping
        intervals, any-case hex and tags, ``strtoll`` base-0 GNOs (``0x10``,
        ``010``), ``uuid:tag:1-5`` where a tag applies to the intervals after
        it; a reversed interval such as ``5-3`` is dropped.

        Args:
            text: the set; bytes must be ASCII.

        Returns:
            The set.

        Raises:
            ProtocolError: GNO 0, negative or >= 2^63 - 1, a UUID not in dashed
                36-character form, a bad tag, a stray character or a
                non-ASCII one; `offset` is its character offset.
        """
        pending = parse_gtid_set(text)
        return cls._from_map({key: _merge(ivs) for key, ivs in pending.items()})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("GtidSet is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("GtidSet is immutable")

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (GtidSet.parse, (str(self),))

    def __str__(self) -> str:
        return format_gtid_set(self._map)

    def __repr__(self) -> str:
        return f"GtidSet.parse({str(self)!r})"

    def intervals(self) -> Iterator[tuple[str, str, int, int]]:
        """Yield ``(uuid, tag, first, last)`` in print order; ranges are inclusive."""
        for (uuid, tag), ivs in self._map.items():
            for first, last in ivs:
                yield uuid, tag, first, last

    def is_empty(self) -> bool:
        """Return True when the set holds no GTID."""
        return not self._map

    def __bool__(self) -> bool:
        return bool(self._map)

    def count(self) -> int:
        """Return the number of transactions (GTIDs) in the set; may exceed sys.maxsize."""
        return sum(last - first + 1 for ivs in self._map.values() for first, last in ivs)

    def __len__(self) -> int:
        # Python raises OverflowError past sys.maxsize; count() has no limit.
        return self.count()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._map == other._map

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(self._map.items())))
        assert self._hash is not None
        return self._hash

    def union(self, other: GtidSet) -> GtidSet:
        """Return the GTIDs in either set."""
        merged = dict(self._map)
        for key, ivs in other._map.items():
            mine = merged.get(key)
            merged[key] = ivs if mine is None else _merge(mine + ivs)
        return GtidSet._from_map(merged)

    def difference(self, other: GtidSet) -> GtidSet:
        """Return the GTIDs of this set that are not in `other`."""
        result = {}
        for key, ivs in self._map.items():
            theirs = other._map.get(key)
            result[key] = ivs if theirs is None else _subtract(ivs, theirs)
        return GtidSet._from_map(result)

    def intersection(self, other: GtidSet) -> GtidSet:
        """Return the GTIDs in both sets."""
        result = {}
        for key, ivs in self._map.items():
            theirs = other._map.get(key)
            if theirs is not None:
                result[key] = _intersect(ivs, theirs)
        return GtidSet._from_map(result)

    def issubset(self, other: GtidSet) -> bool:
        """Return True when every GTID of this set is in `other`."""
        for key, ivs in self._map.items():
            theirs = other._map.get(key)
            if theirs is None or _subtract(ivs, theirs):
                return False
        return True

    def issuperset(self, other: GtidSet) -> bool:
        """Return True when every GTID of `other` is in this set."""
        return other.issubset(self)

    def __or__(self, other: object) -> GtidSet:
        return self.union(other) if isinstance(other, GtidSet) else NotImplemented

    def __and__(self, other: object) -> GtidSet:
        return self.intersection(other) if isinstance(other, GtidSet) else NotImplemented

    def __sub__(self, other: object) -> GtidSet:
        return self.difference(other) if isinstance(other, GtidSet) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.issubset(other) if isinstance(other, GtidSet) else NotImplemented

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self != other and self.issubset(other)

    def __ge__(self, other: object) -> bool:
        return other.issubset(self) if isinstance(other, GtidSet) else NotImplemented

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self != other and other.issubset(self)

    def __contains__(self, item: object) -> bool:
        """Membership of one GTID: a `Gtid`, its text, or ``(uuid, tag, gno)``.

        Raises:
            ProtocolError: `item` is text or a tuple that is not a valid GTID.
        """
        if isinstance(item, str | bytes):
            item = Gtid.parse(item)
        elif isinstance(item, tuple) and len(item) == 3:
            uuid, tag, gno = item
            if not (isinstance(uuid, str) and isinstance(tag, str) and isinstance(gno, int)):
                return False
            item = Gtid(uuid.lower(), tag.lower(), gno)
        if not isinstance(item, Gtid):
            return False
        ivs = self._map.get((item.uuid, item.tag))
        if ivs is None:
            return False
        i = bisect_right(ivs, (item.gno, GNO_MAX + 1))
        return i > 0 and ivs[i - 1][1] >= item.gno
