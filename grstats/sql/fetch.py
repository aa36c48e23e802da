"""A statement's result made as MySQL's values, batch by batch, within the endpoint's bounds.

Strategy: DuckDB hands the result over as Arrow batches (`to_arrow_reader`);
each batch's text values are sized from Arrow's buffers before they become
Python objects, then the batch is converted to MySQL's values and counted,
so a result past `max_result_bytes` is stopped while it is made (the reader
closed: the rest is never produced), never built whole and refused after.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from grstats.sql import values
from grstats.sql.errors import SqlError

__all__ = ["as_text", "fetch"]

_BATCH_ROWS = 2048  # rows per Arrow batch: the unit a result's size is checked in


_SCALAR = re.compile(
    r"^(BOOLEAN|(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?)|FLOAT|DOUBLE|DECIMAL\(.*\)|DATE|TIME"
    r"|TIMESTAMP.*|INTERVAL|VARCHAR|\"NULL\")$"
)


def as_text(rel: duckdb.DuckDBPyRelation, types: tuple[str, ...]) -> duckdb.DuckDBPyRelation:
    """`rel` with every non-scalar column (LIST, STRUCT, BLOB, ...) as DuckDB's text of it.

    MySQL sends such a value as text anyway; as text its size is known from
    Arrow's buffers before any Python object is made (see `fetch`).
    """
    if all(_SCALAR.match(t.upper()) for t in types):
        return rel
    return rel.project(
        ", ".join(
            f"#{i}" if _SCALAR.match(t.upper()) else f"CAST(#{i} AS VARCHAR)"
            for i, t in enumerate(types, 1)
        )
    )


def fetch(rel: duckdb.DuckDBPyRelation, limit: int, max_bytes: int) -> list[tuple[Any, ...]]:
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
