"""The envelope's `ext.channels` section: rows of MySQL tables, mirrored as the server shows them.

A member sends its own server's rows of the six WL#3656 replication channel
tables (replication_connection_configuration, ..._by_worker) so that every
daemon can show them for every member. The section is self-describing -- each
table carries its column names -- so that a member whose server lacks a
column (an older 8.0) simply sends fewer, a newer server's extra column is
ignored by an older receiver, and this codec names no MySQL column: the
receiver maps names to its declarations (grstats.core.columns) and leaves the
rest.

Wire form (version 1), a msgpack array, every position fixed::

    [1, read_at_us, [[table, [column, ...], [[value, ...], ...]], ...]]

* `read_at_us`: when the sender read the rows, µs since the epoch (0..2^63-1);
* `table`: a lower-case table name (``[a-z][a-z0-9_]*``, at most 64 characters),
  each at most once, at most `MAX_MIRRORED_TABLES` tables;
* `column`: an upper-case column name (``[A-Z][A-Z0-9_]*``, at most 64
  characters), each at most once in its table, at most `MAX_MIRRORED_COLUMNS`;
* a row has exactly one value per column; at most `MAX_MIRRORED_ROWS` rows a table;
* a value is nil, an integer in -2^63..2^64-1, a finite float, or a text of at
  most `MAX_MIRRORED_TEXT` UTF-8 bytes (timestamps as MySQL prints them).
  Booleans, binary and maps are refused.

The whole section packs to at most `MAX_CHANNELS_SIZE` bytes: the encoder
refuses more (the caller bounds long texts and many workers first, counting
what it left out: core.channels.bounded), the decoder is bounded by the
envelope's own size limit and the counts above.

Invariants: only `ProtocolError` leaves `decode_channels`; whatever
`encode_channels` returns, the decoder accepts and returns equal.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import msgpack

from protocol.errors import ProtocolError

CHANNELS_VERSION: Final = 1
MAX_MIRRORED_TABLES: Final = 8
MAX_MIRRORED_COLUMNS: Final = 64
MAX_MIRRORED_ROWS: Final = 256
MAX_MIRRORED_TEXT: Final = 8192
MAX_CHANNELS_SIZE: Final = 16 * 1024  # with ext.gtids (2 x 24 KiB) within the 64 KiB envelope
_TABLE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
_COLUMN: Final = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 64) - 1
_US_MAX: Final = (1 << 63) - 1

Value = None | int | float | str


@dataclass(frozen=True, slots=True)
class MirroredTable:
    """One table's rows as the sender's server showed them: names, then rows in that order."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]

    def dicts(self) -> list[dict[str, Value]]:
        """The rows as column -> value maps."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True, slots=True)
class MirroredTables:
    """A member's rows of the mirrored tables, read at `read_at_us`."""

    read_at_us: int
    tables: tuple[MirroredTable, ...]

    def table(self, name: str) -> MirroredTable | None:
        """The table called `name`, or None when the sender sent none."""
        return next((t for t in self.tables if t.name == name), None)


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"ext.channels: {where}: {problem}")


def _array(value: Any) -> bool:
    return type(value) is list or type(value) is tuple


def _check_value(where: str, value: object) -> None:
    if value is None:
        return
    if type(value) is str:
        if len(value.encode("utf-8", "surrogatepass")) > MAX_MIRRORED_TEXT:
            _fail(where, f"a text over {MAX_MIRRORED_TEXT} bytes")
        return
    if type(value) is int:
        if not _INT_MIN <= value <= _INT_MAX:
            _fail(where, "an integer out of -2^63..2^64-1")
        return
    if type(value) is float:
        if not math.isfinite(value):
            _fail(where, "a float that is not finite")
        return
    _fail(where, f"expected nil, an integer, a finite float or a text, got {type(value).__name__}")


def _check_names(where: str, names: Any, pattern: re.Pattern[str], most: int) -> None:
    if not _array(names) or len(names) > most:
        _fail(where, f"expected an array of at most {most} names")
    seen: set[str] = set()
    for name in names:
        if type(name) is not str or not pattern.fullmatch(name):
            _fail(where, f"not a name: {name!r:.70}")
        if name in seen:
            _fail(where, f"{name} twice")
        seen.add(name)


def _check_table(index: int, table: Any, seen: set[str]) -> None:
    where = f"table {index}"
    if not _array(table) or len(table) != 3:
        _fail(where, "expected [name, columns, rows]")
    name, columns, rows = table
    if type(name) is not str or not _TABLE.fullmatch(name):
        _fail(where, f"not a table name: {name!r:.70}")
    if name in seen:
        _fail(where, f"{name} twice")
    seen.add(name)
    _check_names(f"{name} columns", columns, _COLUMN, MAX_MIRRORED_COLUMNS)
    if not _array(rows) or len(rows) > MAX_MIRRORED_ROWS:
        _fail(f"{name} rows", f"expected an array of at most {MAX_MIRRORED_ROWS} rows")
    width = len(columns)
    for r, row in enumerate(rows):
        if not _array(row) or len(row) != width:
            _fail(f"{name} row {r}", f"expected {width} values")
        for c, value in enumerate(row):
            _check_value(f"{name} row {r} {columns[c]}", value)


def _check(value: Any) -> list[Any] | tuple[Any, ...]:
    """`decode_channels`' checks: the value itself when it is well formed."""
    if not _array(value) or len(value) != 3:
        _fail("top level", "expected an array of 3 items")
    version, read_at, tables = value
    if type(version) is not int or version != CHANNELS_VERSION:
        _fail("version", f"unsupported channels section version {version!r:.20}")
    if type(read_at) is not int or not 0 <= read_at <= _US_MAX:
        _fail("read_at_us", f"expected an integer 0-{_US_MAX}")
    if not _array(tables) or len(tables) > MAX_MIRRORED_TABLES:
        _fail("tables", f"expected an array of at most {MAX_MIRRORED_TABLES} tables")
    seen: set[str] = set()
    for i, table in enumerate(tables):
        _check_table(i, table, seen)
    checked: list[Any] | tuple[Any, ...] = value
    return checked


def decode_channels(value: object) -> MirroredTables:
    """Validate an `ext.channels` value (already unpacked by the envelope decoder).

    Args:
        value: `envelope.ext["channels"]`: plain msgpack data.

    Returns:
        The sender's tables, as its server showed them.

    Raises:
        ProtocolError: not the layout above (version, type, name, count or size).
    """
    _, read_at, tables = _check(value)
    return MirroredTables(
        read_at,
        tuple(
            MirroredTable(name, tuple(columns), tuple(tuple(row) for row in rows))
            for name, columns, rows in tables
        ),
    )


def encode_channels(tables: MirroredTables) -> list[Any]:
    """The `ext.channels` value for `tables` (plain data for the envelope's msgpack).

    Args:
        tables: the sender's rows.

    Returns:
        The array described in the module docstring.

    Raises:
        ProtocolError: a value `decode_channels` would refuse, or more than
            `MAX_CHANNELS_SIZE` bytes packed.
    """
    wire: list[Any] = [
        CHANNELS_VERSION,
        tables.read_at_us,
        [[t.name, list(t.columns), [list(r) for r in t.rows]] for t in tables.tables],
    ]
    _check(wire)  # one set of rules for both directions
    size = packed_size(wire)
    if size > MAX_CHANNELS_SIZE:
        _fail("size", f"{size} bytes packed, over {MAX_CHANNELS_SIZE}")
    return wire


def packed_size(value: Any) -> int:
    """The bytes `value` (plain data: an encoded section, or a part of one) packs to."""
    return len(msgpack.packb(value, use_bin_type=True))
