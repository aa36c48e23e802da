"""The six WL#3656 channel tables of the local server, read as they are: the mysql source's part.

Strategy / invariants
---------------------
Pure: SQL texts and results -> `protocol.MirroredTables`, no driver, no I/O
(the queries run in the poll's one round trip, extras.py). Every table is
read whole (``SELECT *``: every channel, the columns the server has, in its
order), so a server that lacks a column sends fewer and a newer one's extra
column rides along unread by older receivers. The connection status,
applier status, coordinator and worker reads are the lag's own (lag.py: one
query per table serves both).

Values as the server shows them: a TIMESTAMP(6) as MySQL prints it in the
session's zone, which the source sets to UTC (lag.SQL_UTC_SESSION; the
channel rows are left out of a poll whose session could not be set to UTC),
the driver's datetime printed back the same way; MySQL's all-zero timestamp
(a string from the driver) kept as it is; DOUBLE and DECIMAL as floats;
binary text decoded as UTF-8 with replacement. MySQL never shows a password
in these tables (replication_connection_configuration has no such column).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal

from grstats.core import columns as col
from grstats.sources.mysql.values import Result
from protocol import MirroredTable, MirroredTables

__all__ = ["SQL_CONFIGURATION", "build_channels", "select_all"]


def select_all(table: col.TableDef) -> str:
    """``SELECT *`` of one channel table (every channel)."""
    return f"SELECT * FROM {table.schema}.{table.name}"


#: the two configuration tables, read in the poll's round trip after the lag's four
SQL_CONFIGURATION = (
    ("channel_connection_configuration", select_all(col.CONNECTION_CONFIGURATION)),
    ("channel_applier_configuration", select_all(col.APPLIER_CONFIGURATION)),
)


def _value(value: object) -> int | float | str | None:
    if value is None or (isinstance(value, int | float | str) and not isinstance(value, bool)):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def build_channels(
    at_us: int, results: Sequence[tuple[col.TableDef, Result | None]]
) -> MirroredTables | None:
    """The server's rows of the channel tables it answered; None when they hold no row.

    Args:
        at_us: when the rows were read.
        results: each table with its result (None: not read or refused).
    """
    tables = []
    for table, result in results:
        if result is None:
            continue
        names, rows = result
        tables.append(
            MirroredTable(
                table.name,
                tuple(str(n).upper() for n in names),
                tuple(tuple(_value(v) for v in row) for row in rows),
            )
        )
    if not any(t.rows for t in tables):
        return None  # no channel configured (GR never started): nothing to send
    return MirroredTables(at_us, tuple(tables))
