"""What a statement may do: read-only, named tables only, the functions provided only.

Strategy: `prepare` takes a statement parsed by sqlglot (MySQL dialect) and
allows, rather than denies:
- a query (SELECT, set operations); writes and server commands are refused
  as a read-only MySQL refuses them (1290), anything else is 1235;
- table references that name a table of the catalog (`known`: the live
  tables, the history, the rollups, information_schema) or a CTE visible
  where it is referenced (SQL scoping: a CTE of an enclosing query, an
  earlier CTE of the same WITH). A CTE name must be a plain identifier; a
  table reference must be a name, never a function call; a LATERAL / APPLY
  must be a subquery. Anything else would reach one of DuckDB's table
  functions or its file-name replacement scans (read_blob, read_csv, a
  quoted path);
- functions: MySQL's functions that monitoring queries use (`MYSQL_FUNCTIONS`),
  a few of DuckDB's analytic ones (`DUCKDB_FUNCTIONS`: quantiles, time
  buckets), each mapped to sqlglot's expression class by parsing it once,
  and the ones grstats installs (`functions.py`). Any other is MySQL's 1305.
information_schema is answered by DuckDB like any other table (its tables
are `catalog.INFO_SCHEMA_INTERNAL` in the worker database), so it runs under
the same limits, off the event loop.
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from grstats.sql import catalog
from grstats.sql.errors import (
    FUNCTION_NOT_EXISTS,
    NO_DB,
    NO_SUCH_TABLE,
    NOT_SUPPORTED,
    PARSE,
    READ_ONLY,
    READ_ONLY_MESSAGE,
    SqlError,
)

_WRITES = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Merge,
    exp.LoadData,
    exp.Copy,
    exp.Grant,
)
_WRITE_COMMANDS = frozenset(
    {"GRANT", "REVOKE", "LOAD", "REPLACE", "RENAME", "CALL", "INSTALL", "ATTACH", "DETACH",
     "PRAGMA", "EXPORT", "IMPORT", "VACUUM", "CHECKPOINT", "OPTIMIZE", "REPAIR", "HANDLER",
     "DO", "LOCK", "UNLOCK", "FLUSH", "RESET", "PURGE", "CHANGE", "START", "STOP"}
)  # fmt: skip


# MySQL 8.4's functions a monitoring query may call (names as MySQL spells them)
def _words(*lines: str) -> tuple[str, ...]:
    return tuple(word for line in lines for word in line.split())


MYSQL_FUNCTIONS = _words(
    # aggregate and window
    "COUNT SUM AVG MIN MAX GROUP_CONCAT STD STDDEV STDDEV_POP STDDEV_SAMP VAR_POP VAR_SAMP "
    "VARIANCE BIT_AND BIT_OR BIT_XOR ANY_VALUE ROW_NUMBER RANK DENSE_RANK PERCENT_RANK "
    "CUME_DIST NTILE LAG LEAD FIRST_VALUE LAST_VALUE NTH_VALUE "
    # flow control and comparison
    "IF IFNULL NULLIF COALESCE GREATEST LEAST ISNULL INTERVAL "
    # string
    "CONCAT CONCAT_WS LENGTH CHAR_LENGTH CHARACTER_LENGTH BIT_LENGTH LOWER UPPER LCASE UCASE "
    "SUBSTRING SUBSTR MID SUBSTRING_INDEX LEFT RIGHT TRIM LTRIM RTRIM REPLACE REPEAT REVERSE "
    "LPAD RPAD INSTR LOCATE POSITION HEX UNHEX FORMAT ASCII ORD CHAR SPACE STRCMP FIND_IN_SET "
    "FIELD ELT MD5 SHA1 SHA2 CRC32 REGEXP_LIKE REGEXP_REPLACE REGEXP_SUBSTR QUOTE "
    # numeric
    "ABS CEIL CEILING FLOOR ROUND TRUNCATE MOD POW POWER SQRT EXP LN LOG LOG2 LOG10 SIGN PI "
    "RAND DEGREES RADIANS SIN COS TAN CONV BIN OCT "
    # date and time
    "NOW CURRENT_TIMESTAMP LOCALTIME LOCALTIMESTAMP SYSDATE UTC_TIMESTAMP UTC_DATE CURDATE "
    "CURRENT_DATE CURTIME CURRENT_TIME UNIX_TIMESTAMP FROM_UNIXTIME DATE TIME YEAR QUARTER "
    "MONTH MONTHNAME DAY DAYOFMONTH DAYNAME HOUR MINUTE SECOND MICROSECOND WEEK WEEKDAY "
    "DAYOFWEEK DAYOFYEAR YEARWEEK DATE_FORMAT TIME_FORMAT STR_TO_DATE DATE_ADD DATE_SUB "
    "ADDDATE SUBDATE TIMESTAMPDIFF TIMESTAMPADD DATEDIFF TIMEDIFF TIME_TO_SEC SEC_TO_TIME "
    "TO_DAYS TO_SECONDS LAST_DAY MAKEDATE EXTRACT "
    # cast and information
    "CAST CONVERT DATABASE SCHEMA VERSION USER CURRENT_USER SESSION_USER SYSTEM_USER "
    "CONNECTION_ID "
    # group replication
    "GTID_SUBTRACT GTID_SUBSET",
    # JSON values (MySQL's -> and ->> too)
    "JSON_EXTRACT JSON_UNQUOTE",
)
# DuckDB's analytic functions the endpoint documents (docs/sql.md: quantiles, buckets): scalar
# or aggregate only -- never a table function or one that reads a file
DUCKDB_FUNCTIONS = _words(
    "DATE_TRUNC DATE_PART TIME_BUCKET EPOCH EPOCH_MS STRFTIME QUANTILE_CONT QUANTILE_DISC "
    "MEDIAN MODE APPROX_QUANTILE APPROX_COUNT_DISTINCT ARG_MIN ARG_MAX MIN_BY MAX_BY "
    "STRING_AGG BOOL_AND BOOL_OR"
)
# calls whose arguments are syntax, parsed as written
_SAMPLES = (
    "DATE_ADD(x, INTERVAL 1 DAY)",
    "DATE_SUB(x, INTERVAL 1 DAY)",
    "CAST(x AS CHAR)",
    "CONVERT(x, CHAR)",
    "CONVERT(x USING utf8mb4)",
)
# grstats' own helpers in the worker database (functions.py), by their DuckDB names
_INSTALLED = frozenset(
    {"gtid_subtract", "gtid_subset", "unix_timestamp", "timediff", "time_to_sec"}
)
# expression classes sqlglot makes from syntax rather than a function name
_SYNTAX = (exp.Cast, exp.TryCast, exp.Case, exp.If, exp.Extract, exp.Count, exp.Coalesce)
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


@functools.cache
def allowed() -> tuple[frozenset[type[exp.Func]], frozenset[str]]:
    """(sqlglot Func classes, anonymous function names) allowed (built once: ~0.1 s)."""
    classes: set[type[exp.Func]] = set(_SYNTAX)
    names: set[str] = set(_INSTALLED)
    done: set[str] = set()
    calls = [
        f"{name}({args})"
        for name in (*MYSQL_FUNCTIONS, *DUCKDB_FUNCTIONS)
        for args in ("x", "x, y", "x, y, z", "")
    ]
    for call in [*_SAMPLES, *calls]:
        name = call.split("(", 1)[0]
        if name in done:
            continue
        try:
            tree = sqlglot.parse_one(f"SELECT {call}", read="mysql")
        except (ParseError, AttributeError):  # a wrong arity (AttributeError: sqlglot's own slip)
            continue
        done.add(name)
        for func in tree.find_all(exp.Func):  # none for an operator in sqlglot (MOD)
            if isinstance(func, exp.Anonymous):
                names.add(func.name.lower())
            else:
                classes.add(type(func))
    return frozenset(classes), frozenset(names)


def warm() -> None:
    """Load now what the first statement would: the allowlist and sqlglot's DuckDB dialect
    (imported on its first use). The SQL child calls this before it lowers its
    priority, so the first client does not wait for imports at nice 10 on a busy node."""
    allowed()
    sqlglot.Dialect.get_or_raise("duckdb")


def _check_function(func: exp.Func) -> None:
    classes, names = allowed()
    if isinstance(func, exp.Connector | exp.Collate):  # AND, OR, XOR, COLLATE: operators
        return
    if isinstance(func, exp.Anonymous):
        if func.name.lower() in names:
            return
        name = func.name
    elif type(func) in classes:
        return
    else:
        name = func.sql_name()
    raise SqlError(FUNCTION_NOT_EXISTS, f"FUNCTION {name.lower()} does not exist")


def _visible_ctes(table: exp.Table) -> set[str]:
    """The CTE names in scope where `table` is referenced."""
    names: set[str] = set()
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = node.expressions
            at = next((i for i, c in enumerate(ctes) if c is child), len(ctes))
            visible = ctes[: at + 1] if node.args.get("recursive") else ctes[:at]
            names |= {c.alias_or_name.lower() for c in visible}
        else:
            with_ = node.args.get("with_") or node.args.get("with")
            if isinstance(with_, exp.With) and with_ is not child:
                names |= {c.alias_or_name.lower() for c in with_.expressions}
        child, node = node, node.parent
    return names


def _check_statement(expression: exp.Expression) -> None:
    if isinstance(expression, _WRITES) or expression.find(exp.Into) is not None:
        raise SqlError(READ_ONLY, READ_ONLY_MESSAGE)
    if isinstance(expression, exp.Command):
        verb = expression.name.upper()
        if verb in _WRITE_COMMANDS:
            raise SqlError(READ_ONLY, READ_ONLY_MESSAGE)
        raise SqlError(NOT_SUPPORTED, f"This version of grstats doesn't yet support '{verb}'")
    if not isinstance(expression, exp.Query):
        kind = type(expression).__name__.upper()
        raise SqlError(NOT_SUPPORTED, f"This version of grstats doesn't yet support '{kind}'")


def prepare(expression: exp.Expression, database: str | None, known: set[tuple[str, str]]) -> str:
    """A MySQL statement checked against the allowlists and printed for DuckDB.

    Args:
        expression: the parsed statement (sqlglot, MySQL dialect).
        database: the session's current database (`USE`), if any.
        known: the (schema, table) pairs that exist, lower case.

    Returns:
        The statement in DuckDB's dialect, every table schema-qualified
        (information_schema's as the worker's `catalog.INFO_SCHEMA_INTERNAL`).

    Raises:
        SqlError: a write (1290), an unsupported statement (1235), no database
            selected (1046), an unknown table (1146), a table function or a CTE
            name that is not a plain name (1064), a function not provided (1305).
    """
    _check_statement(expression)
    expression = expression.copy()
    for cte in expression.find_all(exp.CTE):
        if not _PLAIN_NAME.match(cte.alias_or_name):
            raise SqlError(PARSE, f"CTE names are plain identifiers: '{cte.alias_or_name[:64]}'")
    for table in list(expression.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            raise SqlError(PARSE, "table functions are not supported; name a table")
        name = table.name
        db = table.text("db")
        if not db and name.lower() in _visible_ctes(table):
            continue
        db = db or (database or "")
        if not db:
            raise SqlError(NO_DB, "No database selected")
        if (db.lower(), name.lower()) not in known:
            raise SqlError(NO_SUCH_TABLE, f"Table '{db}.{name}' doesn't exist")
        db = db.lower()
        if db == catalog.INFORMATION_SCHEMA:
            db = catalog.INFO_SCHEMA_INTERNAL
        table.set("db", exp.to_identifier(db))
        table.set("this", exp.to_identifier(name.lower()))
        table.set("catalog", None)
    for lateral in expression.find_all(exp.Lateral):
        if not isinstance(lateral.this, exp.Subquery | exp.Query):
            raise SqlError(PARSE, "table functions are not supported; name a table")
    for func in expression.find_all(exp.Func):
        _check_function(func)
    return expression.sql(dialect="duckdb")
