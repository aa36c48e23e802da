"""How result sets go on the wire: MySQL's column flags, and rows of any size.

Strategy: mysql-mimic writes a column definition without flags and a text row
in one packet; the endpoint's connection (`wire.GrstatsConnection`) writes
its result sets through here instead, so that
- a column made with `column(..., unsigned=True)` carries MySQL's UNSIGNED
  flag in its definition, in the text and the binary protocol (a client
  reading BIGINT UNSIGNED gets the whole range);
- a `values.LargeRow` is framed in 16 MiB packets (`stream.GuardedStream.write_row`),
  between runs of ordinary rows written as the library does.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from mysql_mimic import packets, types
from mysql_mimic.connection import Connection
from mysql_mimic.results import ResultColumn, ResultSet
from mysql_mimic.types import ColumnDefinition
from mysql_mimic.utils import aiterate, cooperative_iterate

from grstats.sql.stream import GuardedStream
from grstats.sql.values import LargeRow

__all__ = ["column", "column_definition", "write_text_resultset"]


def column(name: str, kind: types.ColumnType, *, unsigned: bool = False) -> ResultColumn:
    """A result column; an unsigned one is sent with MySQL's UNSIGNED flag.

    (mysql-mimic's ResultColumn is a compiled class: no subclass, no extra
    attribute. Its binary encoder is what marks it unsigned: `_flags`.)
    """
    return ResultColumn(name, kind, binary_encoder=_binary_unsigned if unsigned else None)


def _binary_unsigned(col: ResultColumn, val: Any) -> bytes:
    return int(val).to_bytes(8, "little", signed=False)


def _flags(col: ResultColumn) -> ColumnDefinition:
    unsigned = col.binary_encoder is _binary_unsigned
    return ColumnDefinition.UNSIGNED_FLAG if unsigned else ColumnDefinition(0)


def column_definition(connection: Connection, column: ResultColumn) -> bytes:
    """The column definition packet of `column`, with its flags (UNSIGNED)."""
    packet: bytes = packets.make_column_definition_41(
        server_charset=connection.server_charset,
        name=column.name,
        column_type=column.type,
        character_set=column.character_set,
        flags=_flags(column),
    )
    return packet


async def write_text_resultset(connection: Connection, result_set: ResultSet) -> None:
    """mysql-mimic's `Connection.write_text_resultset`, with the columns' flags in their
    definitions and each `LargeRow` framed on its own."""
    header = [
        packets.make_column_count(
            capabilities=connection.capabilities, column_count=len(result_set.columns)
        ),
        *(column_definition(connection, c) for c in result_set.columns),
    ]
    if not connection.deprecate_eof():
        header.append(connection.eof())
    connection.stream.write_many(header)
    cols = result_set.columns
    stream = cast(GuardedStream, connection.stream)
    count = 0
    if isinstance(result_set.rows, (list, tuple)):
        rows = result_set.rows
        count = len(rows)
        i = 0
        while i < count:  # runs of ordinary rows, each LargeRow framed on its own
            j, end = i, min(count, i + 10_000)
            while j < end and not isinstance(rows[j], LargeRow):
                j += 1
            if j > i:
                connection.stream.write_text_rows(rows[i:j], cols)
            if j < end:
                await stream.write_row(packets.make_text_resultset_row(rows[j], cols))
                j += 1
            i = j
            await asyncio.sleep(0)
    else:
        async for row in cooperative_iterate(aiterate(result_set.rows)):
            count += 1
            await stream.write_row(packets.make_text_resultset_row(row, cols))
    warnings = len(getattr(connection.session, "warnings", ()))  # SHOW WARNINGS lists them
    await connection.stream.write(
        connection.ok_or_eof(affected_rows=count, warnings=warnings), drain=False
    )
    await connection.stream.drain()
