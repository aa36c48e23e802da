"""GTID sets: MySQL's parser and printer, and set algebra.

Strategy: a `GtidSet` is an immutable mapping from a TSID -- the pair
(lowercase dashed UUID, lowercase tag, "" when untagged) -- to a tuple of
inclusive ``(first, last)`` GNO intervals. The mapping is built once, with its
keys in print order, and never changed afterwards; every operation returns a
new set.

Invariants of every instance:

* keys are sorted; a lowercase dashed UUID sorts like its 16 raw bytes and ""
  sorts before any tag, so walking the keys in order is MySQL's print order;
* no key maps to an empty tuple;
* intervals are sorted, disjoint and never touching (``next.first >
  prev.last + 1``), with ``1 <= first <= last <= GNO_MAX``.

Parsing transcribes MySQL's ``Gtid_set::add_gtid_text`` with ``Tsid`` and
``Tag::from_cstring`` (PROTOCOL.md section 10) token by token, including its
quirks: GNOs are read like C ``strtoll(s, &end, 0)``, a reversed interval
(``5-3``) and a missing interval end (``5-``) are dropped, and ``:`` followed
only by whitespace selects the untagged TSID again. Each token is one anchored,
non-backtracking regular expression, so the cost is linear in the text; digit
runs are length-checked before conversion, so a megabyte of digits is one
overflow error, not a huge integer. Text is ASCII only; anything else -- NUL
included, where C would stop reading -- is a stray character.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NoReturn

from protocol.errors import ProtocolError

GNO_MAX: Final = (1 << 63) - 2
"""Largest valid GNO; MySQL's GNO_END (2^63 - 1) is exclusive."""

_MALFORMED_SET: Final = "Malformed Gtid_set specification"
_MALFORMED_GTID: Final = "Malformed GTID specification"

_WS_CHARS: Final = frozenset(" \t\n\v\f\r")  # C isspace, "C" locale
_DIGITS: Final = frozenset("0123456789")
_WS = re.compile(r"[ \t\n\v\f\r]+")
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Tag::from_cstring: whitespace, up to 32 tag characters, whitespace; the caller
# then requires ':', ',' or the end. Every part is optional, so the pattern
# matches on its first attempt and never backtracks.
_TAG_SCAN = re.compile(r"[ \t\n\v\f\r]*([A-Za-z_][A-Za-z0-9_]{0,31})?[ \t\n\v\f\r]*")
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
# strtoll base 0: "0x" + hex digits, else a leading "0" means octal ("0x" not
# followed by a hex digit reads as octal 0 and stops at the 'x').
_NUMBER = re.compile(r"[ \t\n\v\f\r]*([+-]?)(?:0[xX]([0-9A-Fa-f]+)|(0[0-7]*)|([1-9][0-9]*))")
# Longest digit runs (leading zeros stripped) whose value can be below 2^63.
_MAX_DIGITS: Final = {16: 16, 8: 21, 10: 19}
# Fast path for what MySQL itself prints: ":N" or ":N-M" in plain decimal (at
# most 18 digits, so below 2^63 - 2) directly followed by ':', ',' or the end.
# Anything else goes through the general, token-by-token path.
_PLAIN_INTERVAL = re.compile(r":([1-9][0-9]{0,17})(?:-([1-9][0-9]{0,17}))?(?=[:,]|\Z)")

# Fast path for a set as MySQL prints it: blocks joined by "," or ",\n", each a
# lowercase UUID and ":"-separated items, a plain interval as above or a
# lowercase tag. Checked item by item while splitting; any other text (and
# any item that does not fit) takes the general path, so what is accepted
# and how it reads are unchanged.
_PRINTED_ITEM = re.compile(r"([1-9][0-9]{0,17})(?:-([1-9][0-9]{0,17}))?|[a-z_][a-z0-9_]{0,31}")

Key = tuple[str, str]
"""A TSID: (lowercase dashed UUID, lowercase tag or "" when untagged)."""
Interval = tuple[int, int]
"""Inclusive GNO range (first, last)."""


def _fail(reason: str, offset: int | None) -> NoReturn:
    raise ProtocolError(reason, offset)


def _skip_ws(s: str, pos: int) -> int:
    if pos < len(s) and s[pos] in _WS_CHARS:
        m = _WS.match(s, pos)
        assert m is not None  # s[pos] is whitespace
        return m.end()
    return pos


def _as_text(text: str | bytes, reason: str) -> str:
    """Return `text` as an ASCII str, or raise at its first non-ASCII character."""
    if isinstance(text, bytes):
        try:
            return text.decode("ascii")
        except UnicodeDecodeError as exc:
            _fail(f"{reason}: non-ASCII byte", exc.start)
    if not text.isascii():
        _fail(f"{reason}: non-ASCII character", next(i for i, c in enumerate(text) if c > "\x7f"))
    return text


def _parse_gno(s: str, pos: int) -> tuple[int, int]:
    """MySQL's ``parse_gno``: C ``strtoll(s + pos, &end, 0)``, -1 unless 0 <= value < 2^63 - 1.

    Returns:
        (value, position after the number). With no digits the value is 0 and
        the position is `pos`; with value -1 the position is meaningless.
    """
    m = _NUMBER.match(s, pos)
    if m is None:
        return 0, pos
    sign, hex_digits, oct_digits, dec_digits = m.groups()
    if hex_digits is not None:
        digits, base = hex_digits, 16
    elif oct_digits is not None:
        digits, base = oct_digits, 8
    else:
        digits, base = dec_digits, 10
    digits = digits.lstrip("0")
    if len(digits) > _MAX_DIGITS[base]:  # strtoll saturates: always out of range
        return -1, pos
    value = int(digits, base) if digits else 0
    if (sign == "-" and value) or value > GNO_MAX:
        return -1, pos
    return value, m.end()


def _scan_tag(s: str, pos: int) -> tuple[int, str]:
    """MySQL's ``Tag::from_cstring`` at `pos`.

    Returns:
        (characters consumed, lowercase tag). 0 consumed means "not a tag". A
        positive count with "" is whitespace before ':', ',' or the end, which
        MySQL reads as the empty tag, i.e. back to untagged.
    """
    m = _TAG_SCAN.match(s, pos)
    assert m is not None  # every part of the pattern is optional
    end = m.end()
    if end < len(s) and s[end] not in ":,":
        return 0, ""
    return end - pos, (m.group(1) or "").lower()


def _parse_printed(s: str) -> dict[Key, list[Interval]] | None:
    """`_parse_set` of a set in MySQL's printed form; None: not in that form."""
    pending: dict[Key, list[Interval]] = {}
    uuid_form, item_form = _CANONICAL_UUID.fullmatch, _PRINTED_ITEM.fullmatch
    for block in s.split(","):
        uuid, *items = block[1:].split(":") if block[:1] == "\n" else block.split(":")
        if uuid_form(uuid) is None or not items:
            return None
        bucket = pending.setdefault((uuid, ""), [])
        for item in items:
            m = item_form(item)
            if m is None:
                return None
            first_text, last_text = m.groups()
            if first_text is None:  # a tag: the intervals after it are tagged
                bucket = pending.setdefault((uuid, item), [])
                continue
            first = int(first_text)
            last = first if last_text is None else int(last_text)
            if last >= first:  # MySQL drops a reversed interval
                bucket.append((first, last))
    return pending


def _parse_set(s: str) -> dict[Key, list[Interval]]:
    """Transcription of ``Gtid_set::add_gtid_text`` (with ``Tsid::from_cstring``).

    Returns:
        Unmerged intervals per TSID, in text order.

    Raises:
        ProtocolError: at the offset of the first character MySQL rejects.
    """
    printed = _parse_printed(s)
    if printed is not None:
        return printed
    n = len(s)
    pending: dict[Key, list[Interval]] = {}
    pos = _skip_ws(s, 0)
    while True:
        while pos < n and s[pos] == ",":  # empty elements are allowed
            pos = _skip_ws(s, pos + 1)
        if pos == n:
            return pending
        m = _UUID.match(s, pos)
        if m is None:
            _fail(f"{_MALFORMED_SET}: expected a dashed UUID", pos)
        uuid = m.group().lower()
        tag = ""
        pos = _skip_ws(s, m.end())
        if pos + 1 < n and s[pos] == ":" and s[pos + 1] in _DIGITS:
            pass  # common case ":<GNO>": no tag can start here
        elif pos < n and s[pos] == ":":
            # Tsid::from_cstring also takes a tag right after the UUID; when there
            # is none it leaves `pos` on the ':' for the loop below.
            tag_pos = _skip_ws(s, pos + 1)
            consumed, first_tag = _scan_tag(s, tag_pos)
            if first_tag:
                tag, pos = first_tag, tag_pos + consumed
        elif pos < n and s[pos] != ",":
            _fail(f"{_MALFORMED_SET}: expected ':' or ','", pos)
        bucket = pending.setdefault((uuid, tag), [])  # may stay empty; dropped later
        while pos < n and s[pos] == ":":
            plain = _PLAIN_INTERVAL.match(s, pos)
            if plain is not None:
                first_text, last_text = plain.groups()
                first = int(first_text)
                last = first if last_text is None else int(last_text)
                if last >= first:
                    bucket.append((first, last))
                pos = plain.end()
                continue
            consumed, next_tag = _scan_tag(s, pos + 1)
            if consumed:
                tag, pos = next_tag, pos + 1 + consumed
                bucket = pending.setdefault((uuid, tag), [])
                continue
            gno_pos = _skip_ws(s, pos + 1)
            first, pos = _parse_gno(s, gno_pos)
            if first <= 0:
                _fail(f"{_MALFORMED_SET}: expected a tag or a GNO in 1..{GNO_MAX}", gno_pos)
            pos = _skip_ws(s, pos)
            last = first
            if pos < n and s[pos] == "-":
                last, end = _parse_gno(s, pos + 1)
                if last < 0:
                    _fail(f"{_MALFORMED_SET}: expected a GNO in 0..{GNO_MAX}", pos + 1)
                pos = _skip_ws(s, end)
            if last >= first:  # MySQL silently drops "5-3", "5-0" and "5-"
                bucket.append((first, last))
        if pos < n and s[pos] != ",":
            _fail(f"{_MALFORMED_SET}: unexpected character", pos)


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
        if not _CANONICAL_UUID.fullmatch(self.uuid):
            _fail(f"{_MALFORMED_GTID}: UUID must be lowercase dashed", None)
        if self.tag and not (_TAG.fullmatch(self.tag) and self.tag.islower()):
            _fail(f"{_MALFORMED_GTID}: invalid tag {self.tag!r}", None)
        if not 1 <= self.gno <= GNO_MAX:
            _fail(f"{_MALFORMED_GTID}: GNO out of range 1..{GNO_MAX}", None)

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
        s = _as_text(text, _MALFORMED_GTID)
        pos = _skip_ws(s, 0)
        m = _UUID.match(s, pos)
        if m is None:
            _fail(f"{_MALFORMED_GTID}: expected a dashed UUID", pos)
        pos = _gtid_separator(s, m.end())
        consumed, tag = _scan_tag(s, pos)
        if tag:
            pos = _gtid_separator(s, pos + consumed)
        gno, end = _parse_gno(s, pos)
        if gno <= 0:
            _fail(f"{_MALFORMED_GTID}: expected a GNO in 1..{GNO_MAX}", pos)
        end = _skip_ws(s, end)
        if end != len(s):
            _fail(f"{_MALFORMED_GTID}: unexpected character", end)
        return cls(m.group().lower(), tag, gno)

    def __str__(self) -> str:
        if self.tag:
            return f"{self.uuid}:{self.tag}:{self.gno}"
        return f"{self.uuid}:{self.gno}"


def _gtid_separator(s: str, pos: int) -> int:
    """``Gtid::parse_gtid_separator``: whitespace, ':', whitespace."""
    pos = _skip_ws(s, pos)
    if pos >= len(s) or s[pos] != ":":
        _fail(f"{_MALFORMED_GTID}: expected ':'", pos)
    return _skip_ws(s, pos + 1)


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
            if not _UUID.fullmatch(uuid):
                _fail(f"{_MALFORMED_SET}: expected a dashed UUID, got {uuid!r}", None)
            if tag and not _TAG.fullmatch(tag):
                _fail(f"{_MALFORMED_SET}: invalid tag {tag!r}", None)
            if not 1 <= first <= last <= GNO_MAX:
                _fail(f"{_MALFORMED_SET}: invalid range {first}-{last}", None)
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
        pending = _parse_set(_as_text(text, _MALFORMED_SET))
        return cls._from_map({key: _merge(ivs) for key, ivs in pending.items()})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("GtidSet is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("GtidSet is immutable")

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (GtidSet.parse, (str(self),))

    def __str__(self) -> str:
        blocks: list[str] = []
        parts: list[str] = []
        prev_uuid = ""
        for (uuid, tag), intervals in self._map.items():
            if uuid != prev_uuid:
                if parts:
                    blocks.append("".join(parts))
                parts = [uuid]
                prev_uuid = uuid
            if tag:
                parts.append(f":{tag}")
            parts.extend(f":{a}" if a == b else f":{a}-{b}" for a, b in intervals)
        if parts:
            blocks.append("".join(parts))
        return ",\n".join(blocks)

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
