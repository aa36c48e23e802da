"""What the SQL endpoint shows: schemas, tables and their types, derived from `core.columns`.

Strategy: every live table is one `columns.TABLES` declaration; its schema is
the declaration's (`performance_schema` keeps MySQL's table name, `grstats`
drops the `grstats_` prefix: `grstats.member_status`). Column order and the
MySQL type text (`SHOW COLUMNS`) come from the declaration; the Arrow type a
live row is converted to is derived from that MySQL type. The Parquet history
is `grstats.history` and each rollup directory found is `grstats.<table>`
(`ROLLUP_TABLES`: every table spark_rollups writes, the members dimension
`member_hosts` included; a test ties the two lists, as grstats may not import
spark_rollups; `_skipped_files.json` is the report's, not a table).
Nothing here names a column: a table added to `columns.TABLES` appears here
without an edit.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from grstats.core import columns, records
from grstats.core.snapshot import DaemonSnapshot

PERFORMANCE_SCHEMA = "performance_schema"
GRSTATS = "grstats"
INFORMATION_SCHEMA = "information_schema"
INFO_SCHEMA_INTERNAL = "_information_schema"  # its DuckDB schema in a worker database
DATABASES = frozenset({PERFORMANCE_SCHEMA, GRSTATS, INFORMATION_SCHEMA})
HISTORY = "history"
ROLLUP_TABLES = (
    "member_minute",
    "member_hour",
    "member_day",
    "group_hour",
    "group_day",
    "applier_member_hour",
    "applier_member_day",
    "flow_control_group_hour",
    "flow_control_member_hour",
    "flow_control_episodes",
    "gtid_member_hour",
    "gtid_member_day",
    "commit_member_hour",
    "commit_member_day",
    "channel_error_episodes",
    "member_hosts",
)
# the hive partition columns of the history and rollup directories
PARTITION_GROUP = "group"
PARTITION_DATE = "date"

_INT_TYPES = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "mediumint": pa.int32(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
}
_UNSIGNED = {
    "tinyint": pa.uint8(),
    "smallint": pa.uint16(),
    "mediumint": pa.uint32(),
    "int": pa.uint32(),
    "integer": pa.uint32(),
    "bigint": pa.uint64(),
}
_TYPE = re.compile(r"^\s*([a-z]+)\s*(?:\([^)]*\))?\s*(unsigned)?", re.IGNORECASE)


def arrow_type(sql_type: str) -> pa.DataType:
    """The Arrow type holding values of a MySQL column type (`bigint unsigned`, `char(36)`)."""
    m = _TYPE.match(sql_type)
    base = m.group(1).lower() if m else ""
    if base in _INT_TYPES:
        return _UNSIGNED[base] if m and m.group(2) else _INT_TYPES[base]
    if base in ("double", "float", "real", "decimal"):
        return pa.float64()
    if base in ("datetime", "timestamp"):
        return pa.timestamp("us")
    return pa.string()


@dataclass(frozen=True, slots=True)
class LiveTable:
    """A live table as the endpoint shows it: where, and from which declaration."""

    schema: str
    name: str
    table: columns.TableDef

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the rows, columns in declaration order."""
        return pa.schema(
            [pa.field(c.name, arrow_type(c.sql_type), nullable=True) for c in self.table.columns]
        )

    def to_arrow(self, snapshot: DaemonSnapshot | None) -> pa.Table:
        """The snapshot's rows of this table (none when the snapshot lacks it)."""
        schema = self.arrow_schema()
        try:
            rows = snapshot.table(self.table.name) if snapshot is not None else ()
        except KeyError:  # a table declared before the snapshot carries it
            rows = ()
        data = {c.name: [_cell(c, row.get(c.name)) for row in rows] for c in self.table.columns}
        return pa.Table.from_pydict(data, schema=schema)


_ZERO_DATE = "0000-00-00 00:00:00"  # MySQL's all-zero timestamp, any precision
ZERO_STAND_IN = dt.datetime(1, 1, 1)  # naive UTC wall time, as every cell here
ZERO_TEXT = "0000-00-00 00:00:00.000000"  # as MySQL prints the zero TIMESTAMP(6)
_SECONDS = "%Y-%m-%d %H:%M:%S"


def _cell(column: columns.Column, value: object) -> object:
    """A table cell as Arrow takes it: TIMESTAMP(6) text becomes a datetime (UTC).

    The snapshot shows timestamps as MySQL prints TIMESTAMP(6) values, with
    the all-zero timestamp for "none"; DuckDB has no zero date, so "none" is
    `ZERO_STAND_IN` here (in a NOT NULL column; NULL in a nullable one).
    """
    if column.kind != "timestamp" or not isinstance(value, str):
        return value
    if not value:
        return None
    if value.startswith(_ZERO_DATE):
        # DuckDB has no zero date: a stand-in below every real date (MySQL's zero
        # sorts first too), printed back as MySQL's zero text (engine.mysql_value)
        return None if column.nullable else ZERO_STAND_IN
    # TIMESTAMP(6) has a fraction, a plain TIMESTAMP (LAST_APPLIER_START) none
    return dt.datetime.strptime(value, "%Y-%m-%d %H:%M:%S.%f" if "." in value else _SECONDS)


def live_tables() -> tuple[LiveTable, ...]:
    """Every declared table, in its endpoint schema and under its endpoint name."""
    out = []
    for t in columns.TABLES:
        name = t.name
        if t.schema == GRSTATS:
            name = name.removeprefix("grstats_")
        out.append(LiveTable(t.schema, name, t))
    return tuple(out)


def deprecated_tables() -> tuple[LiveTable, ...]:
    """The old names a query may still use for one release (columns.DEPRECATED_NAMES).

    They answer the same rows as the table they now are, with a Note 1287
    (session.GrstatsSession), and are listed nowhere (SHOW TABLES,
    information_schema): MySQL has no such performance_schema table.
    """
    return tuple(
        LiveTable(schema, old, columns.table(current))
        for old, (schema, current) in columns.DEPRECATED_NAMES.items()
    )


def not_null_columns() -> frozenset[tuple[str, str, str]]:
    """(schema, table, column) of the live columns declared NOT NULL (SHOW COLUMNS' Null: NO)."""
    return frozenset(
        (live.schema, live.name, c.name)
        for live in live_tables()
        for c in live.table.columns
        if not c.nullable
    )


def history_sql_types() -> dict[str, str]:
    """grstats.history's columns and MySQL types: the history file columns plus `date`."""
    mysql = {
        "string": "varchar(255)",
        "int8": "tinyint",
        "int32": "int",
        "int64": "bigint",
        "uint64": "bigint unsigned",
    }
    out = {
        name: "datetime(6)" if kind.startswith("timestamp") else mysql.get(kind, "text")
        for name, kind in records.HISTORY_COLUMNS
    }
    out[PARTITION_DATE] = "date"
    return out


def history_arrow_schema() -> pa.Schema:
    """The Arrow schema of the history files (for an empty history).

    The timestamp kind is written `timestamp[us, tz=UTC]`, which
    `pa.type_for_alias` does not parse (it knows only bare `timestamp[us]`).
    """
    return pa.schema(
        [
            pa.field(
                name,
                pa.timestamp("us", tz="UTC")
                if kind.startswith("timestamp")
                else pa.type_for_alias(kind),
            )
            for name, kind in records.HISTORY_COLUMNS
        ]
    )


def has_parquet(root: Path) -> bool:
    """True when `root/group=*/date=*/` holds at least one Parquet file."""
    return next(root.glob("group=*/date=*/*.parquet"), None) is not None


def rollup_dirs(rollups: str) -> Iterator[tuple[str, Path]]:
    """The rollup tables present under `rollups` (name, directory)."""
    if not rollups:
        return
    root = Path(rollups)
    for name in ROLLUP_TABLES:
        if (root / name).is_dir():
            yield name, root / name


def info_schema(
    history_dir: str, rollup_types: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, dict[str, str]]]:
    """{schema: {table: {column: MySQL type}}} for SHOW and information_schema."""
    out: dict[str, dict[str, dict[str, str]]] = {PERFORMANCE_SCHEMA: {}, GRSTATS: {}}
    for live in live_tables():
        out.setdefault(live.schema, {})[live.name] = {
            c.name: c.sql_type for c in live.table.columns
        }
    if history_dir:
        out[GRSTATS][HISTORY] = history_sql_types()
    for name, types in rollup_types.items():
        out[GRSTATS][name] = dict(types)
    return out
