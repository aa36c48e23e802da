"""The query engine: DuckDB over Arrow copies of the live tables and over the Parquet history.

Strategy: a statement arrives parsed (sqlglot, MySQL dialect). `prepare`
refuses what a read-only server refuses (1290), checks every table against
the catalog (1146, as MySQL names it) and qualifies it, then prints DuckDB's
dialect. `Engine.run` executes it in the calling worker thread on that
thread's own DuckDB database (DuckDB connections are not shared between
threads): the live tables are Arrow tables made from the snapshot given,
registered under views named like MySQL's; the history and the rollups are
views over `read_parquet` with hive partitioning, so a filter on
`group_name` or `date` reads only those directories.

Invariants: a worker database can read only the history and rollup
directories (`allowed_directories`, external access off, configuration
locked): a query cannot read any other file. A timer interrupts a statement
at `query_timeout`; results past `max_rows` or `max_result_bytes` are
refused, never silently cut. Every failure leaves as a `SqlError`.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from sqlglot import exp

from grstats.sql import catalog, functions
from grstats.sql.errors import (
    BAD_FIELD,
    FUNCTION_NOT_EXISTS,
    NO_DB,
    NO_SUCH_TABLE,
    NOT_SUPPORTED,
    OUT_OF_MEMORY,
    PARSE,
    QUERY_TIMEOUT,
    READ_ONLY,
    READ_ONLY_MESSAGE,
    TOO_BIG_SELECT,
    UNKNOWN,
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


@dataclass(frozen=True, slots=True)
class Result:
    """A statement's result: column names, DuckDB type names, rows."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def prepare(expression: exp.Expression, database: str | None, known: set[tuple[str, str]]) -> str:
    """A MySQL statement checked against the catalog and printed for DuckDB.

    Args:
        expression: the parsed statement (sqlglot, MySQL dialect).
        database: the session's current database (`USE`), if any.
        known: the (schema, table) pairs that exist, lower case.

    Returns:
        The statement in DuckDB's dialect, every table schema-qualified.

    Raises:
        SqlError: a write (1290), an unsupported statement (1235), no database
            selected (1046), an unknown table (1146), a table function (1064).
    """
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
    expression = expression.copy()
    ctes = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    for table in list(expression.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            raise SqlError(PARSE, "table functions are not supported; name a table")
        name = table.name
        db = table.text("db")
        if not db and name.lower() in ctes:
            continue
        db = db or (database or "")
        if not db:
            raise SqlError(NO_DB, "No database selected")
        if (db.lower(), name.lower()) not in known:
            raise SqlError(NO_SUCH_TABLE, f"Table '{db}.{name}' doesn't exist")
        table.set("db", exp.to_identifier(db.lower()))
        table.set("this", exp.to_identifier(name.lower()))
        table.set("catalog", None)
    return expression.sql(dialect="duckdb")


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _parquet_glob(root: Path) -> str:
    return _sql_string(str(root / "group=*" / "date=*" / "*.parquet"))


_HIVE = "hive_partitioning = true, hive_types = {'group': 'VARCHAR', 'date': 'DATE'}"


def _error(exc: duckdb.Error) -> SqlError:
    text = str(exc).split("\n", 1)[0]
    for prefix in ("Catalog Error: ", "Binder Error: ", "Parser Error: ", "Conversion Error: "):
        text = text.removeprefix(prefix)
    if isinstance(exc, duckdb.InterruptException):
        return SqlError(
            QUERY_TIMEOUT,
            "Query execution was interrupted, maximum statement execution time exceeded",
            limit="query_timeout",
        )
    if isinstance(exc, duckdb.OutOfMemoryException):
        return SqlError(OUT_OF_MEMORY, f"Out of memory: {text}")
    if isinstance(exc, duckdb.ParserException):
        return SqlError(PARSE, f"You have an error in your SQL syntax: {text}")
    if isinstance(exc, duckdb.BinderException) and "column" in text.lower():
        return SqlError(BAD_FIELD, f"Unknown column: {text}")
    if isinstance(exc, duckdb.CatalogException) and "Function with name" in text:
        return SqlError(FUNCTION_NOT_EXISTS, f"FUNCTION does not exist: {text}")
    return SqlError(UNKNOWN, text)


class Engine:
    """DuckDB execution with the endpoint's limits; `run` is called in worker threads.

    Args:
        history_dir: the Parquet history root ("" for none).
        rollups_dir: the rollups root ("" for none).
        query_timeout: seconds before a statement is interrupted.
        max_rows: the most rows a result may have.
        max_result_bytes: the most bytes (of values as text) a result may have.
        threads: DuckDB threads per worker (1 keeps a query on one core).
        memory_limit: DuckDB's memory limit per worker ("256MB").
    """

    def __init__(
        self,
        *,
        history_dir: str,
        rollups_dir: str,
        query_timeout: float,
        max_rows: int,
        max_result_bytes: int,
        threads: int = 1,
        memory_limit: str = "256MB",
    ) -> None:
        self.history_dir = history_dir
        self.rollups_dir = rollups_dir
        self.query_timeout = query_timeout
        self.max_rows = max_rows
        self.max_result_bytes = max_result_bytes
        self.threads = threads
        self.memory_limit = memory_limit
        self.live = catalog.live_tables()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[duckdb.DuckDBPyConnection] = []

    # -- catalog -----------------------------------------------------------

    def rollup_types(self) -> dict[str, dict[str, str]]:
        """The rollup tables present and their columns' MySQL types."""
        out: dict[str, dict[str, str]] = {}
        for name, root in catalog.rollup_dirs(self.rollups_dir):
            first = next(root.glob("group=*/date=*/*.parquet"), None)
            if first is None:
                continue
            schema = pq.read_schema(first)
            types = {f.name: _mysql_type(str(f.type)) for f in schema if f.name != "group"}
            types["date"] = "date"
            out[name] = types
        return out

    def known_tables(self) -> set[tuple[str, str]]:
        """(schema, table) pairs a query may name, lower case."""
        known = {(t.schema, t.name) for t in self.live}
        if self.history_dir:
            known.add((catalog.GRSTATS, catalog.HISTORY))
        for name, _ in catalog.rollup_dirs(self.rollups_dir):
            known.add((catalog.GRSTATS, name))
        return known

    # -- worker side -------------------------------------------------------

    def _connection(self) -> duckdb.DuckDBPyConnection:
        con: duckdb.DuckDBPyConnection | None = getattr(self._local, "con", None)
        if con is not None:
            return con
        con = duckdb.connect(":memory:")
        allowed = [str(Path(d).resolve()) + "/" for d in (self.history_dir, self.rollups_dir) if d]
        con.execute(f"SET allowed_directories = [{', '.join(map(_sql_string, allowed))}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET python_enable_replacements = false")
        con.execute("SET TimeZone = 'UTC'")
        con.execute(f"SET threads = {int(self.threads)}")
        con.execute(f"SET memory_limit = {_sql_string(self.memory_limit)}")
        functions.install(con)
        con.execute("SET lock_configuration = true")
        for schema in {t.schema for t in self.live} | {catalog.GRSTATS}:
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        for t in self.live:
            con.register(f"_live_{t.schema}_{t.name}", t.to_arrow(None))
            con.execute(
                f'CREATE VIEW "{t.schema}"."{t.name}" AS SELECT * FROM "_live_{t.schema}_{t.name}"'
            )
        self._local.con = con
        self._local.snapshot = None
        self._local.history_files = False
        with self._lock:
            self._all.append(con)
        return con

    def _refresh(self, con: duckdb.DuckDBPyConnection, snapshot: object) -> None:
        if self._local.snapshot is not snapshot:
            for t in self.live:
                con.register(f"_live_{t.schema}_{t.name}", t.to_arrow(snapshot))  # type: ignore[arg-type]
            self._local.snapshot = snapshot
        if self.history_dir and (
            not self._local.history_files  # also when the files went (directory deleted)
            or not catalog.has_parquet(Path(self.history_dir).resolve())
        ):
            root = Path(self.history_dir).resolve()
            if catalog.has_parquet(root):
                cols = ", ".join(
                    '"group" AS group_name' if n == "group_name" else f'"{n}"'
                    for n in catalog.history_sql_types()
                )
                try:
                    con.execute(
                        f"CREATE OR REPLACE VIEW grstats.history AS SELECT {cols} "
                        f"FROM read_parquet({_parquet_glob(root)}, {_HIVE}, union_by_name = true)"
                    )
                except duckdb.Error as exc:  # not a grstats history: only its queries fail
                    raise SqlError(
                        UNKNOWN, f"history_dir is not a grstats history: {exc}"
                    ) from None
                self._local.history_files = True
            else:
                self._local.history_files = False
                con.register("_history_empty", catalog.history_arrow_schema().empty_table())
                con.execute(
                    "CREATE OR REPLACE VIEW grstats.history AS SELECT *, "
                    "CAST(NULL AS DATE) AS date FROM _history_empty"
                )
        for name, root in catalog.rollup_dirs(self.rollups_dir):
            if catalog.has_parquet(root.resolve()):
                con.execute(  # the files' own columns: nothing to bind that could be missing
                    f'CREATE OR REPLACE VIEW grstats."{name}" AS SELECT * EXCLUDE ("group") '
                    f"FROM read_parquet({_parquet_glob(root.resolve())}, {_HIVE}, "
                    "union_by_name = true)"
                )

    def run(self, sql: str, snapshot: object) -> Result:
        """Execute one prepared statement in this worker thread.

        Args:
            sql: a statement from `prepare`.
            snapshot: the DaemonSnapshot the live tables are read from (None: empty).

        Returns:
            The result.

        Raises:
            SqlError: the statement failed, ran past the timeout or its result
                is past a limit.
        """
        con = self._connection()
        timer = threading.Timer(self.query_timeout, con.interrupt)
        timer.daemon = True
        try:
            self._refresh(con, snapshot)
            timer.start()
            rel = con.sql(sql)
            names = tuple(rel.columns)
            types = tuple(str(t) for t in rel.dtypes)
            rows = _fetch(rel, self.max_rows + 1)
        except duckdb.Error as exc:
            raise _error(exc) from None
        finally:
            timer.cancel()
        if len(rows) > self.max_rows:
            raise SqlError(
                TOO_BIG_SELECT,
                f"The result has more than max_rows={self.max_rows} rows; add a LIMIT or aggregate",
                limit="max_rows",
            )
        size = sum(_text_size(v) for row in rows for v in row)
        if size > self.max_result_bytes:
            raise SqlError(
                TOO_BIG_SELECT,
                f"The result is larger than max_result_bytes={self.max_result_bytes}; "
                "add a LIMIT or select fewer columns",
                limit="max_result_bytes",
            )
        return Result(names, types, rows)

    def interrupt_all(self) -> None:
        """Interrupt every running statement (shutdown)."""
        with self._lock:
            for con in self._all:
                con.interrupt()


def _fetch(rel: duckdb.DuckDBPyRelation, limit: int) -> list[tuple[Any, ...]]:
    """Up to `limit` rows through Arrow (timestamps with a zone become UTC wall time)."""
    batches: list[pa.RecordBatch] = []
    count = 0
    reader = rel.to_arrow_reader(min(limit, 65536))
    for batch in reader or ():
        batches.append(batch)
        count += batch.num_rows
        if count >= limit:
            break
    if not batches:
        return []
    table = pa.Table.from_batches(batches).slice(0, limit)
    cols = []
    for col in table.columns:
        naive = col
        if pa.types.is_timestamp(col.type) and col.type.tz is not None:
            naive = col.cast(pa.timestamp(col.type.unit))
        cols.append(naive.to_pylist())
    return list(zip(*cols, strict=True))


def _text_size(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, str):
        return len(value)
    return 24


def _mysql_type(arrow: str) -> str:
    table: dict[str, str] = {
        "int8": "tinyint",
        "int16": "smallint",
        "int32": "int",
        "int64": "bigint",
        "uint64": "bigint unsigned",
        "double": "double",
        "float": "float",
        "string": "varchar(255)",
        "large_string": "text",
        "date32[day]": "date",
        "bool": "tinyint(1)",
    }
    if arrow.startswith("timestamp"):
        return "datetime(6)"
    return table.get(arrow, "text")


# -- DuckDB values -> MySQL result columns ------------------------------------


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
