"""The six WL#3656 channel tables of every member: from a member's mirrored rows to table rows.

Strategy: a member's server rows of the six tables travel as they were read
(`protocol.MirroredTables`, ext.channels); here they become rows of the
declarations in `core.columns.CHANNEL_TABLES`, MEMBER_ID first. Columns are
matched by name: one the member's server does not show is NULL, one it
shows that grstats does not declare is left out (a newer server). A value of
the wrong kind for its column (a text in a number column, a timestamp MySQL
could not have printed) is NULL and counted, never a dropped row.

`bounded` is the sender's side: what the wire cannot carry (a text over
`protocol.MAX_MIRRORED_TEXT` bytes, the configuration tables when the
operator keeps them off the bus, workers past what fits) is left out and
counted before `protocol.encode_channels` sees it.

Invariants: pure (no clock, no I/O); a member's rows keep its server's row
order within a table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grstats.core import columns as col
from grstats.core.lagrows import parse_timestamp
from grstats.core.records import CHANNEL_HISTORY_COLUMNS
from grstats.core.snapshot import Cell, Row
from protocol import (
    MAX_CHANNELS_SIZE,
    MAX_MIRRORED_TEXT,
    MirroredTable,
    MirroredTables,
    ProtocolError,
    encode_channels,
    packed_size,
)

__all__ = [
    "CHANNEL_HISTORY_NAMES",
    "Bounded",
    "bounded",
    "channel_rows",
    "channel_state",
    "channels_left_out",
    "encode_bounded_channels",
    "error_history",
    "member_channel_rows",
    "without_configuration",
]

_ZERO_DATE = "0000-00-00 00:00:00"
#: the history block of ext.channels (core.sections)
CHANNEL_HISTORY_NAMES = tuple(name for name, _ in CHANNEL_HISTORY_COLUMNS)
# Columns that move with the workload (the transactions a thread queues or applies,
# heartbeats, the received set, delays): not a change of the channel's state.
_VOLATILE_PREFIXES = (
    "LAST_QUEUED_",
    "QUEUEING_",
    "LAST_PROCESSED_",
    "PROCESSING_",
    "LAST_APPLIED_",
    "APPLYING_",
    "LAST_HEARTBEAT_",
    "COUNT_RECEIVED_HEARTBEATS",
    "RECEIVED_TRANSACTION_SET",
    "REMAINING_DELAY",
)


def _cell(column: col.Column, value: object) -> tuple[Cell, bool]:
    """(the cell, whether it was refused) for `value` in `column`."""
    if value is None:
        return None, False
    if column.kind == "timestamp":
        if isinstance(value, str) and (
            value.startswith(_ZERO_DATE) or parse_timestamp(value) is not None
        ):
            return value, False
        return None, True
    if column.numeric:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value, False
        return None, True
    return (value, False) if isinstance(value, str) else (None, True)


def channel_rows(
    table: col.TableDef, member_id: str, mirrored: MirroredTable
) -> tuple[list[Row], int]:
    """`table`'s rows for one member from its server's rows of it.

    Args:
        table: the declaration (one of `columns.CHANNEL_TABLES`).
        member_id: the member the rows are of (its MEMBER_ID cell).
        mirrored: the member's server rows of that table.

    Returns:
        The rows, and how many cells were NULLed for a value of the wrong kind.
    """
    refused = 0
    out: list[Row] = []
    index = {name: i for i, name in enumerate(mirrored.columns)}
    for values in mirrored.rows:
        row: dict[str, Cell] = {col.MEMBER_ID: member_id}
        for column in table.columns[1:]:
            at = index.get(column.name)
            cell, bad = _cell(column, None if at is None else values[at])
            row[column.name] = cell
            refused += bad
        out.append(row)
    return out, refused


def member_channel_rows(
    table: col.TableDef, members: Iterable[tuple[str, MirroredTables | None]]
) -> tuple[Row, ...]:
    """`table`'s rows for every member that sent that table, in the order given."""
    rows: list[Row] = []
    for member_id, tables in members:
        mirrored = None if tables is None else tables.table(table.name)
        if mirrored is not None:
            rows.extend(channel_rows(table, member_id, mirrored)[0])
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class Bounded:
    """What `bounded` kept and what it left out.

    Attributes:
        tables: what the wire can carry.
        texts_nulled: values over `MAX_MIRRORED_TEXT` bytes sent as NULL.
        rows_dropped: rows left out (the last workers first) to fit the section's bytes.
    """

    tables: MirroredTables | None
    texts_nulled: int = 0
    rows_dropped: int = 0


def _short(value: object) -> tuple[object, bool]:
    if isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) > MAX_MIRRORED_TEXT:
        return None, True
    return value, False


def _size(tables: MirroredTables) -> int | None:
    """Packed bytes of `tables`' section, or None when the wire refuses it for its size."""
    try:
        return packed_size(encode_channels(tables))
    except ProtocolError:
        return None


def _cut(tables: MirroredTables, over: int) -> tuple[MirroredTables, int] | None:
    """The tables less enough last rows of their longest table to shed about `over` bytes."""
    biggest = max(tables.tables, key=lambda t: len(t.rows), default=None)
    if biggest is None or not biggest.rows:
        return None
    per_row = max(1, packed_size([list(r) for r in biggest.rows]) // len(biggest.rows))
    n = min(len(biggest.rows), max(1, -(-over // per_row)))
    cut = MirroredTable(biggest.name, biggest.columns, biggest.rows[:-n])
    kept = tuple(cut if t is biggest else t for t in tables.tables)
    return MirroredTables(tables.read_at_us, kept), n


def bounded(tables: MirroredTables, *, configuration: bool = True) -> Bounded:
    """`tables` as the wire can carry them, and what was left out (for the sender's counters).

    Args:
        tables: the local server's rows.
        configuration: False keeps the two configuration tables off the bus
            ([publish] channel_configuration = false).

    Returns:
        The tables to encode (None when even without rows they would not fit),
        with the texts sent as NULL and the rows left out.
    """
    nulled = 0
    kept: list[MirroredTable] = []
    for table in tables.tables:
        if not configuration and table.name in col.CHANNEL_CONFIGURATION_TABLES:
            continue
        rows = []
        for values in table.rows:
            cells = [_short(v) for v in values]
            nulled += sum(bad for _, bad in cells)
            rows.append(tuple(v for v, _ in cells))
        kept.append(MirroredTable(table.name, table.columns, tuple(rows)))  # type: ignore[arg-type]  # the same values
    out = MirroredTables(tables.read_at_us, tuple(kept))
    dropped = 0
    while (size := _size(out)) is None or size > MAX_CHANNELS_SIZE:
        over = MAX_CHANNELS_SIZE // 8 if size is None else size - MAX_CHANNELS_SIZE
        step = _cut(out, over)
        if step is None:
            return Bounded(None, nulled, dropped)
        out, n = step
        dropped += n
    return Bounded(out, nulled, dropped)


_THREADS = (
    (col.CONNECTION_STATUS, "receiver"),
    (col.APPLIER_STATUS_BY_COORDINATOR, "coordinator"),
    (col.APPLIER_STATUS_BY_WORKER, "worker"),
)


def error_history(tables: MirroredTables | None) -> dict[str, object]:
    """The history block of one member: its newest channel error that still shows.

    Args:
        tables: the member's rows of the channel tables (None: none known).

    Returns:
        ch_error_channel, ch_error_thread ('receiver', 'coordinator', 'worker <id>')
        and ch_error_number of the thread error with the latest
        LAST_ERROR_TIMESTAMP; all None when no thread shows an error.
    """
    best: tuple[int, str, str, int] | None = None
    for table, thread in _THREADS:
        mirrored = None if tables is None else tables.table(table.name)
        if mirrored is None:
            continue
        for row in channel_rows(table, "", mirrored)[0]:
            number = row.get(col.LAST_ERROR_NUMBER)
            if not isinstance(number, int) or number == 0:
                continue
            at = parse_timestamp(row.get(col.LAST_ERROR_TIMESTAMP)) or 0
            name = f"worker {row.get(col.WORKER_ID)}" if thread == "worker" else thread
            candidate = (at, str(row.get(col.CHANNEL_NAME)), name, number)
            if best is None or candidate[0] > best[0]:
                best = candidate
    if best is None:
        return {"ch_error_channel": None, "ch_error_thread": None, "ch_error_number": None}
    return {"ch_error_channel": best[1], "ch_error_thread": best[2], "ch_error_number": best[3]}


def channel_state(tables: MirroredTables) -> object:
    """What a change of must go out at once: every value but the workload's (a comparison key).

    A thread's state, its error, its thread id and the configuration are the
    channel's state; the transactions it queues or applies, heartbeats and the
    received set move every period under load and go with the GTID sets.
    """
    key = []
    for table in tables.tables:
        kept = [i for i, c in enumerate(table.columns) if not c.startswith(_VOLATILE_PREFIXES)]
        key.append(
            (
                table.name,
                tuple(table.columns[i] for i in kept),
                tuple(tuple(row[i] for i in kept) for row in table.rows),
            )
        )
    return tuple(key)


def channels_left_out(tables: MirroredTables) -> tuple[int, int]:
    """(values, values left out) of one local value: texts over the bound, cut rows' values."""
    values = sum(len(t.columns) * len(t.rows) for t in tables.tables)
    cut = bounded(tables)
    kept = 0 if cut.tables is None else sum(len(t.columns) * len(t.rows) for t in cut.tables.tables)
    return values, cut.texts_nulled + (values - kept)


def encode_bounded_channels(tables: MirroredTables) -> object:
    """The ext.channels wire value of what `bounded` keeps of `tables`.

    Raises:
        ProtocolError: not even an empty section of these tables fits the wire.
    """
    cut = bounded(tables).tables
    if cut is None:
        raise ProtocolError("ext.channels: not even the tables' names fit the section")
    return encode_channels(cut)


def without_configuration(tables: MirroredTables) -> MirroredTables:
    """`tables` less the two configuration tables ([publish] channel_configuration = false)."""
    kept = tuple(t for t in tables.tables if t.name not in col.CHANNEL_CONFIGURATION_TABLES)
    return MirroredTables(tables.read_at_us, kept)
