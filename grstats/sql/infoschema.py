"""information_schema as Arrow tables, answered by DuckDB under the endpoint's limits.

Strategy: mysql-mimic builds information_schema's rows from the catalog
mapping ({schema: {table: {column: type}}}) and answers queries over them
with sqlglot's Python executor, on the event loop and outside every limit
(a three-way join of `columns` froze a daemon's loop for 39 s). Here the
same rows (mysql-mimic's `info_schema_tables`, so SHOW and DESCRIBE keep
their columns) become Arrow tables that a worker's DuckDB serves as
`catalog.INFO_SCHEMA_INTERNAL.<table>`, like any other table: in a worker
thread, under query_timeout, max_rows, max_result_bytes and memory_limit.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from mysql_mimic.constants import INFO_SCHEMA
from mysql_mimic.schema import info_schema_tables, mapping_to_columns

from grstats.sql import catalog

TABLES: tuple[str, ...] = tuple(INFO_SCHEMA[catalog.INFORMATION_SCHEMA])


def tables(mapping: Mapping[str, Mapping[str, Mapping[str, str]]]) -> dict[str, pa.Table]:
    """information_schema's tables for the catalog `mapping`, as Arrow tables."""
    columns = mapping_to_columns(dict(mapping))
    # Null as the declarations say (the library's mapping form calls every column nullable)
    not_null = catalog.not_null_columns()
    for c in columns:
        c.is_nullable = (c.schema, c.table, c.name) not in not_null
    data = info_schema_tables(columns)[catalog.INFORMATION_SCHEMA]
    return {name: _table(name, list(data[name].rows)) for name in TABLES}


def _table(name: str, rows: list[tuple[object, ...]]) -> pa.Table:
    types = INFO_SCHEMA[catalog.INFORMATION_SCHEMA][name]
    arrays = []
    for i, kind in enumerate(types.values()):
        values = [row[i] for row in rows]
        if kind == "INT":
            try:
                arrays.append(pa.array(values, pa.int64()))
                continue
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                pass
        arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    return pa.Table.from_arrays(arrays, names=list(types))
