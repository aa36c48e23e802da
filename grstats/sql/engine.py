"""The query engine: DuckDB over Arrow copies of the live tables and over the Parquet history.

Strategy: a statement arrives checked and printed in DuckDB's dialect
(`statements.prepare`: read-only, tables and functions allowlisted).
`Engine.run` executes it in the calling worker thread on that
thread's own DuckDB database (DuckDB connections are not shared between
threads): the live tables are Arrow tables made from the snapshot given,
registered under views named like MySQL's; the history and the rollups are
views over `read_parquet` with hive partitioning, so a filter on
`group_name` or `date` reads only those directories; the history view adds
the rows not flushed yet, read from the write-ahead log (`grstats.history.tail`,
re-read only when a WAL file changed), each part only while its segment file
does not exist (checked in the query: a row shows once while a flush runs);
information_schema is Arrow tables too (`infoschema`), rebuilt when the
catalog changes.

Invariants: a worker database can read only the history and rollup
directories (`allowed_directories`, external access off, configuration
locked): a query cannot read any other file. A timer interrupts a statement
at `query_timeout`; results past `max_rows` or `max_result_bytes` are
refused, never silently cut (a non-scalar value is sized as the text MySQL
would send, before it becomes a Python object). Every failure leaves as a `SqlError`.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from grstats.sql import catalog, functions, infoschema, values
from grstats.sql.errors import (
    BAD_FIELD,
    FUNCTION_NOT_EXISTS,
    OUT_OF_MEMORY,
    PARSE,
    QUERY_TIMEOUT,
    TOO_BIG_SELECT,
    UNKNOWN,
    SqlError,
)
from grstats.sql.segments import SegmentCheck


@dataclass(frozen=True, slots=True)
class Result:
    """A statement's result: column names, DuckDB type names, rows of MySQL's values,
    and the warnings MySQL's SHOW WARNINGS gives for it."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    warnings: tuple[str, ...] = ()


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _parquet_glob(root: Path) -> str:
    return _sql_string(str(root / "group=*" / "date=*" / "*.parquet"))


# the id a segment file's name ends with (see grstats.history.parquet.write_segments)
_SEGMENT_ID = "'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\\.parquet$'"


class HistoryTail(Protocol):
    """The rows not flushed to Parquet yet (`grstats.history.tail.WalTail`, given by
    the process that starts the endpoint: `sql` does not import `history`)."""

    @property
    def segment_column(self) -> str:
        """The column with the id of the segment file a row will be written to."""
        ...

    @property
    def max_bytes(self) -> int:
        """The most WAL bytes read."""
        ...

    @property
    def skipped(self) -> int:
        """Files left out now (past `max_bytes`, or unreadable)."""
        ...

    @property
    def skipped_bytes(self) -> int:
        """Their bytes."""
        ...

    @property
    def skipped_total(self) -> int:
        """Files ever left out, each once."""
        ...

    def table(self, deadline: float | None = None) -> pa.Table:
        """The rows now: the history's columns, `date` and `segment_column`.

        Raises:
            TimeoutError: `deadline` (monotonic) passed first; the next call reads on.
        """
        ...


_NO_TAIL_SEGMENT = "_segment"


@functools.cache
def _no_tail() -> pa.Table:
    # the tail of an endpoint given none: no rows, the columns the view selects
    schema = catalog.history_arrow_schema()
    schema = schema.append(pa.field("date", pa.date32()))
    return schema.append(pa.field(_NO_TAIL_SEGMENT, pa.string())).empty_table()


_BATCH_ROWS = 2048  # rows per Arrow batch: the unit a result's size is checked in

_HIVE = "hive_partitioning = true, hive_types = {'group': 'VARCHAR', 'date': 'DATE'}"


# DuckDB's category in front of its message ("Out of Memory Error: ", "Binder Error: ")
_CATEGORY = re.compile(r"^[A-Z][A-Za-z ]{0,40}? Error:\s*")


def _text(exc: BaseException) -> str:
    # the library's first line without its category: its advice ("Possible solutions:
    # ... SET memory_limit") follows on later lines and is for its own users, not ours
    return _CATEGORY.sub("", str(exc).split("\n", 1)[0], count=1)


def _timeout() -> SqlError:
    return SqlError(
        QUERY_TIMEOUT,
        "Query execution was interrupted, maximum statement execution time exceeded",
        limit="query_timeout",
    )


def _error(exc: duckdb.Error) -> SqlError:
    text = _text(exc)
    if isinstance(exc, duckdb.InterruptException):
        return _timeout()
    if isinstance(exc, duckdb.OutOfMemoryException):
        return SqlError(OUT_OF_MEMORY, f"Out of memory (memory_limit): {text}")
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
        tail: the rows not yet in Parquet (None: the Parquet files only).
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
        tail: HistoryTail | None = None,
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
        self._tail = tail if history_dir else None
        self._segments = SegmentCheck(Path(history_dir).resolve()) if history_dir else None
        self._unreadable: tuple[str, ...] = ()  # the history's files left out of the view now

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
        known |= {(catalog.INFORMATION_SCHEMA, name) for name in infoschema.TABLES}
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
        self._local.info_mapping = None
        self._local.history_files = None
        self._local.history_view = False
        with self._lock:
            self._all.append(con)
        return con

    def info_schema(self) -> dict[str, dict[str, dict[str, str]]]:
        """{schema: {table: {column: MySQL type}}} of what a query may name (reads rollup files)."""
        return catalog.info_schema(self.history_dir, self.rollup_types())

    def _refresh_info_schema(self, con: duckdb.DuckDBPyConnection) -> None:
        # built on a worker's first information_schema statement (a point query never pays)
        mapping = self.info_schema()
        if mapping == self._local.info_mapping:
            return
        internal = catalog.INFO_SCHEMA_INTERNAL
        first = self._local.info_mapping is None
        if first:
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{internal}"')
        for name, table in infoschema.tables(mapping).items():
            con.register(f"_is_{name}", table)
            if first:
                con.execute(
                    f'CREATE OR REPLACE VIEW "{internal}"."{name}" AS SELECT * FROM "_is_{name}"'
                )
        self._local.info_mapping = mapping

    def tail_figures(self) -> tuple[int, int]:
        """(WAL files left out of grstats.history now, files ever left out)."""
        return (self._tail.skipped, self._tail.skipped_total) if self._tail else (0, 0)

    def _tail_warnings(self) -> tuple[str, ...]:
        out: list[str] = []
        if self._unreadable:
            names = ", ".join(Path(p).name for p in self._unreadable[:3])
            more = f" and {len(self._unreadable) - 3} more" if len(self._unreadable) > 3 else ""
            out.append(
                f"grstats.history: {len(self._unreadable)} Parquet files unreadable, left out "
                f"(the writer's housekeeping quarantines them): {names}{more}"
            )
        t = self._tail
        if t is not None and t.skipped:
            out.append(
                f"grstats.history: {t.skipped} write-ahead log files ({t.skipped_bytes} bytes) "
                f"not read, past the tail's bound of {t.max_bytes} bytes: their rows are "
                "missing until the daemon flushes them to Parquet"
            )
        return tuple(out)

    def _refresh(
        self, con: duckdb.DuckDBPyConnection, snapshot: object, sql: str, deadline: float
    ) -> bool:
        if self._local.snapshot is not snapshot:
            for t in self.live:
                con.register(f"_live_{t.schema}_{t.name}", t.to_arrow(snapshot))  # type: ignore[arg-type]
            self._local.snapshot = snapshot
        history = bool(self.history_dir) and catalog.HISTORY in sql.lower()
        if history:  # reads the WAL: only if named
            self._refresh_history(con, deadline)
        for name, root in catalog.rollup_dirs(self.rollups_dir):
            if catalog.has_parquet(root.resolve()):
                con.execute(  # the files' own columns: nothing to bind that could be missing
                    f'CREATE OR REPLACE VIEW grstats."{name}" AS SELECT * EXCLUDE ("group") '
                    f"FROM read_parquet({_parquet_glob(root.resolve())}, {_HIVE}, "
                    "union_by_name = true)"
                )
        return history

    def _refresh_history(self, con: duckdb.DuckDBPyConnection, deadline: float) -> None:
        # Parquet UNION ALL the WAL tail; a tail part whose segment file exists is left
        # out by the query itself (the file is durable before its WAL file goes). The
        # tail is registered for this statement only (`run` unregisters it): an idle
        # worker holds no old tail, so its memory goes back when its files go
        root = Path(self.history_dir).resolve()
        tail = self._tail.table(deadline) if self._tail is not None else _no_tail()
        segment = self._tail.segment_column if self._tail is not None else _NO_TAIL_SEGMENT
        con.register("_history_tail", tail)
        assert self._segments is not None
        files, self._unreadable = self._segments.files(deadline)
        if self._local.history_files == files and self._local.history_view:
            return
        names = list(catalog.history_sql_types())
        plain = ", ".join(f'"{n}"' for n in names)
        stored = f"SELECT {plain} FROM _history_tail WHERE false"
        if files:
            cols = plain.replace('"group_name"', '"group" AS group_name', 1)
            listed = ", ".join(map(_sql_string, files))  # the readable ones (`segments`)
            scan = f"read_parquet([{listed}], {_HIVE}, union_by_name = true)"
            stored = f"SELECT {cols} FROM {scan}"
        recent = (
            f'SELECT {plain} FROM _history_tail WHERE "{segment}" NOT IN '
            f"(SELECT regexp_extract(file, {_SEGMENT_ID}, 1) FROM glob({_parquet_glob(root)}))"
        )
        try:
            con.execute(f"CREATE OR REPLACE VIEW grstats.history AS {stored} UNION ALL {recent}")
        except duckdb.Error as exc:  # not a grstats history: only its queries fail
            raise SqlError(UNKNOWN, f"history_dir is not a grstats history: {_text(exc)}") from None
        self._local.history_files = files
        self._local.history_view = True

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
        # the statement's time starts now: reading the WAL tail and the catalog count too
        deadline = time.monotonic() + self.query_timeout
        timer = threading.Timer(self.query_timeout, con.interrupt)
        timer.daemon = True
        timer.start()
        history = False
        try:
            history = self._refresh(con, snapshot, sql, deadline)
            if catalog.INFO_SCHEMA_INTERNAL in sql:
                self._refresh_info_schema(con)
            if time.monotonic() > deadline:  # an interrupt before DuckDB runs is lost
                raise TimeoutError
            rel = con.sql(sql)
            names = tuple(rel.columns)
            types = tuple(str(t) for t in rel.dtypes)
            rows = _fetch(_as_text(rel, types), self.max_rows + 1, self.max_result_bytes)
        except duckdb.Error as exc:
            raise _error(exc) from None
        except TimeoutError:  # the WAL tail's read (kept: the next statement reads on)
            raise _timeout() from None
        finally:
            timer.cancel()
            if history:
                with contextlib.suppress(duckdb.Error):
                    con.unregister("_history_tail")
        if len(rows) > self.max_rows:
            raise SqlError(
                TOO_BIG_SELECT,
                f"The result has more than max_rows={self.max_rows} rows; add a LIMIT or aggregate",
                limit="max_rows",
            )
        return Result(names, types, rows, self._tail_warnings() if history else ())

    def interrupt_all(self) -> None:
        """Interrupt every running statement (shutdown)."""
        with self._lock:
            for con in self._all:
                con.interrupt()


_SCALAR = re.compile(
    r"^(BOOLEAN|(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?)|FLOAT|DOUBLE|DECIMAL\(.*\)|DATE|TIME"
    r"|TIMESTAMP.*|INTERVAL|VARCHAR|\"NULL\")$"
)


def _as_text(rel: duckdb.DuckDBPyRelation, types: tuple[str, ...]) -> duckdb.DuckDBPyRelation:
    """`rel` with every non-scalar column (LIST, STRUCT, BLOB, ...) as DuckDB's text of it.

    MySQL sends such a value as text anyway; as text its size is known from
    Arrow's buffers before any Python object is made (see `_fetch`).
    """
    if all(_SCALAR.match(t.upper()) for t in types):
        return rel
    return rel.project(
        ", ".join(
            f"#{i}" if _SCALAR.match(t.upper()) else f"CAST(#{i} AS VARCHAR)"
            for i, t in enumerate(types, 1)
        )
    )


def _fetch(rel: duckdb.DuckDBPyRelation, limit: int, max_bytes: int) -> list[tuple[Any, ...]]:
    """Up to `limit` rows as MySQL's values, made batch by batch through Arrow
    (timestamps with a zone become UTC wall time).

    The result is refused as soon as its encoded bytes pass `max_bytes`: each
    batch's text values are sized from Arrow's buffers before they become
    Python objects, and every batch is counted as it is converted, so what is
    held is at most `max_bytes` and one batch, whatever the result would be.

    Raises:
        SqlError: the encoded result is past `max_bytes`.
    """
    rows: list[tuple[Any, ...]] = []
    text_bytes = 0
    left = max_bytes
    reader = rel.to_arrow_reader(min(limit, _BATCH_ROWS))
    try:
        for batch in reader or ():
            for col in batch.columns:
                if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                    text_bytes += pc.sum(pc.binary_length(col)).as_py() or 0
            if text_bytes > max_bytes:
                raise values.too_big(max_bytes)
            cols = []
            for col in batch.slice(0, limit - len(rows)).columns:
                naive = col
                if pa.types.is_timestamp(col.type) and col.type.tz is not None:
                    naive = col.cast(pa.timestamp(col.type.unit))
                cols.append(naive.to_pylist())
            try:
                encoded, size = values.mysql_rows(list(zip(*cols, strict=True)), left)
            except SqlError:  # past what was left of the bound: named by the whole bound
                raise values.too_big(max_bytes) from None
            left -= size
            rows.extend(encoded)
            if len(rows) >= limit:
                break
    finally:
        if reader is not None:
            reader.close()  # the rest of the result is never made
    return rows


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
