"""MySQL's GTID text: the parser of ``Gtid::parse`` and ``Gtid_set::add_gtid_text``, the printer.

Parsing transcribes MySQL's ``Gtid_set::add_gtid_text`` with ``Tsid`` and
``Tag::from_cstring`` (PROTOCOL.md section 10) token by token, including its
quirks: GNOs are read like C ``strtoll(s, &end, 0)``, a reversed interval
(``5-3``) and a missing interval end (``5-``) are dropped, and ``:`` followed
only by whitespace selects the untagged TSID again. Each token is one anchored,
non-backtracking regular expression, so the cost is linear in the text; digit
runs are length-checked before conversion, so a megabyte of digits is one
overflow error, not a huge integer. Text is ASCII only; anything else -- NUL
included, where C would stop reading -- is a stray character.

Invariants: the parsers return plain values (a TSID's intervals unmerged, in
text order); `protocol.gtid` turns them into `Gtid` / `GtidSet` and owns the
set algebra. Only `ProtocolError` leaves this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, NoReturn

from protocol.errors import ProtocolError

GNO_MAX: Final = (1 << 63) - 2
"""Largest valid GNO; MySQL's GNO_END (2^63 - 1) is exclusive."""

MALFORMED_SET: Final = "Malformed Gtid_set specification"
MALFORMED_GTID: Final = "Malformed GTID specification"

_WS_CHARS: Final = frozenset(" \t\n\v\f\r")  # C isspace, "C" locale
_DIGITS: Final = frozenset("0123456789")
_WS = re.compile(r"[ \t\n\v\f\r]+")
UUID: Final = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
)
"""A dashed UUID, any case."""
CANONICAL_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A dashed UUID as MySQL prints it (lowercase)."""
# Tag::from_cstring: whitespace, up to 32 tag characters, whitespace; the caller
# then requires ':', ',' or the end. Every part is optional, so the pattern
# matches on its first attempt and never backtracks.
_TAG_SCAN = re.compile(r"[ \t\n\v\f\r]*([A-Za-z_][A-Za-z0-9_]{0,31})?[ \t\n\v\f\r]*")
TAG: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
"""A tag, any case."""
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
    uuid_form, item_form = CANONICAL_UUID.fullmatch, _PRINTED_ITEM.fullmatch
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
        m = UUID.match(s, pos)
        if m is None:
            _fail(f"{MALFORMED_SET}: expected a dashed UUID", pos)
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
            _fail(f"{MALFORMED_SET}: expected ':' or ','", pos)
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
                _fail(f"{MALFORMED_SET}: expected a tag or a GNO in 1..{GNO_MAX}", gno_pos)
            pos = _skip_ws(s, pos)
            last = first
            if pos < n and s[pos] == "-":
                last, end = _parse_gno(s, pos + 1)
                if last < 0:
                    _fail(f"{MALFORMED_SET}: expected a GNO in 0..{GNO_MAX}", pos + 1)
                pos = _skip_ws(s, end)
            if last >= first:  # MySQL silently drops "5-3", "5-0" and "5-"
                bucket.append((first, last))
        if pos < n and s[pos] != ",":
            _fail(f"{MALFORMED_SET}: unexpected character", pos)


def _gtid_separator(s: str, pos: int) -> int:
    """``Gtid::parse_gtid_separator``: whitespace, ':', whitespace."""
    pos = _skip_ws(s, pos)
    if pos >= len(s) or s[pos] != ":":
        _fail(f"{MALFORMED_GTID}: expected ':'", pos)
    return _skip_ws(s, pos + 1)


def parse_gtid(text: str | bytes) -> tuple[str, str, int]:
    """Read one GTID the way MySQL's ``Gtid::parse`` does.

    Args:
        text: ``uuid:gno`` or ``uuid:tag:gno``; bytes must be ASCII.

    Returns:
        (lowercase UUID, lowercase tag or "", GNO in 1..GNO_MAX).

    Raises:
        ProtocolError: malformed text; `offset` is where parsing stopped.
    """
    s = _as_text(text, MALFORMED_GTID)
    pos = _skip_ws(s, 0)
    m = UUID.match(s, pos)
    if m is None:
        _fail(f"{MALFORMED_GTID}: expected a dashed UUID", pos)
    pos = _gtid_separator(s, m.end())
    consumed, tag = _scan_tag(s, pos)
    if tag:
        pos = _gtid_separator(s, pos + consumed)
    gno, end = _parse_gno(s, pos)
    if gno <= 0:
        _fail(f"{MALFORMED_GTID}: expected a GNO in 1..{GNO_MAX}", pos)
    end = _skip_ws(s, end)
    if end != len(s):
        _fail(f"{MALFORMED_GTID}: unexpected character", end)
    return m.group().lower(), tag, gno


def parse_gtid_set(text: str | bytes) -> dict[Key, list[Interval]]:
    """Read GTID-set text exactly as MySQL's ``Gtid_set::add_gtid_text``.

    Args:
        text: the set; bytes must be ASCII.

    Returns:
        Each TSID's intervals, unmerged, in text order (a list may be empty).

    Raises:
        ProtocolError: at the offset of the first character MySQL rejects.
    """
    return _parse_set(_as_text(text, MALFORMED_SET))


def format_gtid_set(mapping: Mapping[Key, Sequence[Interval]]) -> str:
    """MySQL's printed form of a set: one ``uuid[:tag]:a-b...`` block per UUID, ",\\n" between.

    Args:
        mapping: normalized intervals per TSID, keys in print order, none empty.

    Returns:
        The text; "" for the empty set.
    """
    blocks: list[str] = []
    parts: list[str] = []
    prev_uuid = ""
    for (uuid, tag), intervals in mapping.items():
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
