"""Exact percentiles of the member tables from value counts (minute, hour and day).

Strategy: a percentile is not decomposable, but a value -> count map is: the
map of an hour is the sum of its minutes' maps.  The maps are rows: one
`(bucket, distribution, value) -> count` row per distinct value, built by
`value_rows` in the same aggregation as the minute's other figures (every
sample also yields one row per `DISTRIBUTIONS` figure it has, grouped by the
value), so the ordered samples are read once and no per-minute list of values
exists.  Hours and days sum the counts of the minutes' rows (`coarser_counts`,
plain hash aggregations, and the rows shrink: a queue takes a few dozen
values an hour).  `percentiles` then orders each bucket's values once (one
window: the running count) and picks the two closest ranks of every fraction
with conditional minima, all native aggregates.

Invariants:
- Exact and the same number as before: linear interpolation between the
  closest ranks, position = q * (n - 1) (0-based), value = low + (position -
  floor(position)) * (high - low) -- Spark's `percentile`, numpy's 'linear'
  and DuckDB's `quantile_cont`; the rank r is the value whose running count
  is the first one > r.  A bucket without a value of a figure has NULL
  percentiles of it.
- NULLs are no value (a lag not known; a duplicate sample's figures, nulled
  by `with_steps`).  Values are doubles: the queue gauges are integers far
  below 2**53, exact.
- Functions of pyspark.sql.functions only: no Python UDFs, no collect().
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_rollups.schema import (
    BUCKET,
    DAY,
    GAUGES,
    GROUP_NAME,
    LAG_PERCENTILES,
    LAGS,
    MEMBER_ID,
    percentile_name,
)

__all__ = [
    "COUNT",
    "DISTRIBUTIONS",
    "FIGURE",
    "VALUE",
    "coarser_counts",
    "percentiles",
    "value_entries",
]

P95 = 0.95
# (value column, rollup prefix, fractions): the queue gauges' p95, each lag figure's
# p50/p95/p99.  A figure's index here is its FIGURE in the value rows.
DISTRIBUTIONS: tuple[tuple[str, str, tuple[float, ...]], ...] = (
    *((out, out, (P95,)) for _, out, p95 in GAUGES if p95),
    *((lag, lag, LAG_PERCENTILES) for lag in LAGS),
)

FIGURE = "_figure"  # index into DISTRIBUTIONS; -1 on a bucket's row of other figures
VALUE = "_value"  # one distinct value of the figure in the bucket
COUNT = "_count"  # how many kept samples of the bucket had it
_KEYS = (GROUP_NAME, MEMBER_ID, DAY, BUCKET)


def value_entries() -> Column:
    """Per sample: an array of (figure, value) structs, inlined before the minute aggregation.

    The first entry (figure -1, value NULL) is the sample's row of the other
    figures; then one entry per DISTRIBUTIONS figure (value NULL when the
    sample has none: the caller drops those rows).
    """
    entries = [F.struct(F.lit(-1).alias(FIGURE), F.lit(None).cast("double").alias(VALUE))]
    entries += [
        F.struct(F.lit(i).alias(FIGURE), F.col(column).cast("double").alias(VALUE))
        for i, (column, _, _) in enumerate(DISTRIBUTIONS)
    ]
    return F.inline(F.array(*entries))


def coarser_counts(counts: DataFrame, unit: str) -> DataFrame:
    """Value counts of minutes summed into hours or days (exact: counts add up).

    Args:
        counts: group_name, member_id, day, bucket_start, FIGURE, VALUE, COUNT.
        unit: "hour" or "day".

    Returns:
        The same columns at the coarser bucket.
    """
    bucket = F.date_trunc(unit, BUCKET).alias(BUCKET)
    grouped = counts.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket, FIGURE, VALUE)
    return grouped.agg(F.sum(COUNT).alias(COUNT))


def _percentile(figure: int, fraction: float) -> Column:
    """The interpolated percentile of one figure, as an aggregate over ranked rows."""
    mine = F.col(FIGURE) == figure
    position = F.lit(fraction) * (F.col("_total") - 1)
    low, high = F.floor(position), F.ceil(position)
    upto = F.col("_upto")
    low_value = F.min(F.when(mine & (upto > low), F.col(VALUE)))
    high_value = F.min(F.when(mine & (upto > high), F.col(VALUE)))
    offset = F.max(F.when(mine, position - low))  # the same on every row of the figure
    return low_value + offset * (high_value - low_value)


def percentiles(counts: DataFrame) -> DataFrame:
    """Every DISTRIBUTIONS percentile of each bucket, from its value counts.

    Args:
        counts: group_name, member_id, day, bucket_start, FIGURE, VALUE, COUNT
            (one row per distinct value).

    Returns:
        One row per bucket with any value: the four keys and one column per
        percentile (`percentile_name`), NULL for a figure without values.
    """
    ordered = Window.partitionBy(*_KEYS, FIGURE).orderBy(VALUE)
    ranked = counts.select(
        *_KEYS,
        FIGURE,
        VALUE,
        F.sum(COUNT).over(ordered.rowsBetween(Window.unboundedPreceding, 0)).alias("_upto"),
        F.sum(COUNT)
        .over(ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
        .alias("_total"),
    )
    return ranked.groupBy(*_KEYS).agg(
        *(
            _percentile(i, fraction).alias(percentile_name(prefix, fraction))
            for i, (_, prefix, fractions) in enumerate(DISTRIBUTIONS)
            for fraction in fractions
        )
    )
