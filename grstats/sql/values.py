"""DuckDB values as MySQL sends them: column types, text, and the result's real encoded size.

Strategy: a result's rows become the values mysql-mimic encodes as text
(`mysql_value`); `mysql_rows` does that in the worker thread and counts the
bytes each row will take on the wire (every value's text plus its
length prefix, NULL one byte), so `max_result_bytes` bounds what is sent,
whatever the types (a LIST or BLOB is its text, not a fixed guess). A row
whose encoding may reach the protocol's 16 MiB packet limit is returned as a
`LargeRow`, which the wire frames in 16 MiB pieces.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from grstats.sql import catalog
from grstats.sql.errors import TOO_BIG_SELECT, SqlError

LARGE_ROW_BYTES = 0xFFFFFF - 64  # near the 16 MiB packet payload limit (a margin for prefixes)


class LargeRow(tuple):  # type: ignore[type-arg]
    """A result row whose text encoding may reach 16 MiB: framed in pieces by the wire."""

    __slots__ = ()


def column_kind(duck_type: str) -> str:
    """The mysql-mimic ColumnType name for a DuckDB type name."""
    t = duck_type.upper()
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT", "UHUGEINT"):  # fmt: skip
        return "LONGLONG"
    if t in ("DOUBLE", "FLOAT", "REAL"):
        return "DOUBLE"
    if t.startswith("DECIMAL"):
        return "NEWDECIMAL"
    if t == "BOOLEAN":
        return "TINY"
    if t == "DATE":
        return "DATE"
    if t.startswith("TIMESTAMP"):
        return "DATETIME"
    if t in ("TIME", "INTERVAL"):
        return "TIME"
    return "VAR_STRING"


def is_unsigned(duck_type: str) -> bool:
    """True for DuckDB's unsigned integer types (MySQL's UNSIGNED column flag)."""
    return duck_type.upper() in ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def mysql_time(value: dt.timedelta | dt.time) -> str:
    """A duration as MySQL prints a TIME: [-]HH:MM:SS[.ffffff], hours past 24."""
    if isinstance(value, dt.time):
        return value.isoformat()
    total_us = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if total_us < 0 else ""
    total_us = abs(total_us)
    secs, us = divmod(total_us, 1_000_000)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    frac = f".{us:06d}" if us else ""
    return f"{sign}{h:02d}:{m:02d}:{s:02d}{frac}"


def mysql_value(value: Any) -> Any:
    """A DuckDB value as the text MySQL would send (None stays NULL)."""
    if isinstance(value, bool):
        return int(value)
    if value is None or isinstance(value, (int, float, str, Decimal)):
        return value
    if isinstance(value, dt.datetime):
        if value == catalog.ZERO_STAND_IN:
            return catalog.ZERO_TEXT  # MySQL's zero timestamp (DuckDB has no zero date)
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.timedelta, dt.time)):
        return mysql_time(value)
    if hasattr(value, "nanoseconds") and hasattr(value, "days"):  # Arrow's interval
        days = value.days + 30 * getattr(value, "months", 0)
        return mysql_time(dt.timedelta(days=days, microseconds=value.nanoseconds // 1000))
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _prefix(n: int) -> int:
    # the length-encoded integer in front of a text value
    return 1 if n < 251 else 3 if n < 1 << 16 else 4 if n < 1 << 24 else 9


def mysql_rows(
    rows: list[tuple[Any, ...]], max_result_bytes: int
) -> tuple[list[tuple[Any, ...]], int]:
    """Rows as MySQL text values, refused past `max_result_bytes` of encoded bytes.

    Args:
        rows: DuckDB's values (one batch of a result: the caller passes what is left).
        max_result_bytes: the most bytes the encoded rows may take.

    Returns:
        The rows of `mysql_value`s (a row near 16 MiB or past it is a `LargeRow`),
        and their encoded bytes.

    Raises:
        SqlError: the encoded result is larger than `max_result_bytes` (1104).
    """
    out: list[tuple[Any, ...]] = []
    total = 0
    for row in rows:
        values = tuple(mysql_value(v) for v in row)
        size = 0
        for v in values:
            if v is None:
                size += 1
                continue
            n = (
                len(str(v))
                if not isinstance(v, str)
                else len(v)
                if v.isascii()
                else len(v.encode())
            )
            size += n + _prefix(n)
        total += size
        if total > max_result_bytes:
            raise too_big(max_result_bytes)
        out.append(LargeRow(values) if size >= LARGE_ROW_BYTES else values)
    return out, total


def too_big(max_result_bytes: int) -> SqlError:
    """The refusal of a result past `max_result_bytes`."""
    return SqlError(
        TOO_BIG_SELECT,
        f"The result is larger than max_result_bytes={max_result_bytes}; "
        "add a LIMIT or select fewer columns",
        limit="max_result_bytes",
    )
