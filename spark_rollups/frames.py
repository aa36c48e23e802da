"""The report sections' reads: a rollup table's week in, its rows out as Python dicts.

Strategy: `read_week` is every section's read of a table (None when the
rollups predate it or it had nothing to write); `rows_by_group` its
collection, per group.  `rows`: pyspark 4.0 added `DataFrame.toArrow()`;
pyspark 3.5 has the same Arrow collection only behind `toPandas`
(`_collect_as_arrow`, the method `toArrow` itself calls in 4.x). Arrow
batches rather than pickled `Row` objects: the same Python values on both
versions, and timestamps never pass through the driver's local time zone.

Invariants: only for the few hundred rows a report section collects; the
week filter is on the `date` partition column, so it prunes directories.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_rollups.storage import hadoop_fs

__all__ = ["read_week", "rows", "rows_by_group"]


def rows(frame: DataFrame) -> list[dict[str, Any]]:
    """Every row of `frame` as a dict (column name -> Python value).

    Args:
        frame: a small DataFrame (it is collected to the driver).

    Returns:
        The rows, in the frame's order.
    """
    to_arrow = getattr(frame, "toArrow", None)
    if to_arrow is not None:  # pyspark >= 4.0
        out: list[dict[str, Any]] = to_arrow().to_pylist()
        return out
    # pyspark 3.5: what its toPandas collects (an attribute to the type checker's
    # pyspark 4 stubs would be a column, hence getattr)
    collect: Callable[[], list[Any]] = getattr(frame, "_collect_as_arrow")  # noqa: B009
    return [row for batch in collect() for row in batch.to_pylist()]


def rows_by_group(frame: DataFrame) -> dict[str, list[dict[str, Any]]]:
    """`rows` of a frame with a `group_name` column, per group, in the frame's order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows(frame):
        found.setdefault(row["group_name"], []).append(row)
    return found


def read_week(
    spark: SparkSession, table: str, start: dt.date, end: dt.date, group: str | None
) -> DataFrame | None:
    """A rollup table's rows of the days [start, end), of one group or all.

    Args:
        spark: the session.
        table: the table's directory (`<rollups>/<table>`).
        start: the first date.
        end: the date after the last.
        group: only this group; None = all.

    Returns:
        The rows (lazily), or None when the table has no Parquet file: rollups
        written before it existed, or a history without its figures (a run
        then writes no file).
    """
    fs, pattern = hadoop_fs(spark, f"{table}/group=*/date=*/*.parquet")
    found = fs.globStatus(pattern)
    if found is None or len(found) == 0:
        return None
    frame: DataFrame = spark.read.parquet(table)
    frame = frame.where((F.col("date") >= start.isoformat()) & (F.col("date") < end.isoformat()))
    return frame if group is None else frame.where(F.col("group_name") == group)
