"""The MySQL functions monitoring queries use, installed into a worker's DuckDB.

Strategy: what DuckDB lacks is added as a macro over its own functions
(`UNIX_TIMESTAMP`, `TIMEDIFF`, `TIME_TO_SEC`) or, for GTID sets, as a Python
function over `protocol.gtid` (MySQL's exact set algebra and text).
`IF` is DuckDB's own; `NOW()`/`NOW(6)` are replaced by mysql-mimic with the
statement's start time, as MySQL evaluates them once per statement.
Sessions run in UTC, so TIMESTAMP arithmetic is UTC arithmetic.
"""

from __future__ import annotations

import duckdb
from duckdb.func import FunctionNullHandling
from duckdb.sqltypes import BOOLEAN, VARCHAR

from protocol import GtidSet, ProtocolError

_MACROS = (
    "CREATE MACRO unix_timestamp() AS epoch(current_timestamp), (t) AS epoch(CAST(t AS TIMESTAMP))",
    "CREATE MACRO timediff(a, b) AS (CAST(a AS TIMESTAMP) - CAST(b AS TIMESTAMP))",
    "CREATE MACRO time_to_sec(t) AS epoch(t)",
)


class MalformedGtidSet(ValueError):
    """A GTID set argument is not a GTID set (MySQL's error 1772)."""


def _parse(text: str) -> GtidSet:
    try:
        return GtidSet.parse(text)
    except ProtocolError:
        raise MalformedGtidSet(f"Malformed GTID set specification '{text[:80]}'") from None


def gtid_subtract(a: str | None, b: str | None) -> str | None:
    """MySQL GTID_SUBTRACT(a, b): the GTIDs of `a` not in `b`; NULL if either is NULL."""
    if a is None or b is None:
        return None
    return str(_parse(a) - _parse(b))


def gtid_subset(a: str | None, b: str | None) -> bool | None:
    """MySQL GTID_SUBSET(a, b): every GTID of `a` is in `b`; NULL if either is NULL."""
    if a is None or b is None:
        return None
    return _parse(a).issubset(_parse(b))


def install(con: duckdb.DuckDBPyConnection) -> None:
    """Add the functions to one DuckDB connection (before its configuration is locked)."""
    for macro in _MACROS:
        con.execute(macro)
    con.create_function(
        "gtid_subtract",
        gtid_subtract,
        [VARCHAR, VARCHAR],
        VARCHAR,
        null_handling=FunctionNullHandling.SPECIAL,
    )
    con.create_function(
        "gtid_subset",
        gtid_subset,
        [VARCHAR, VARCHAR],
        BOOLEAN,
        null_handling=FunctionNullHandling.SPECIAL,
    )
