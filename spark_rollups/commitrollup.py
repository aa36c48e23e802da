"""Commit-path rollups (issue 27): per member-hour and member-day, where commit time went.

Strategy: the history keeps each member's cumulative Gr_* counters per
operation (`COMMIT_COUNTERS`: a count and a time in µs, on one sample per
10 s). They step exactly as the applier counters do (`applier.applier_steps`
with these counters: the previous sample *with figures*, a reset counts its
own value, nothing across a missing day), and a bucket sums the steps
(`applier.counter_tables`). From the sums: the mean time of one operation,
and each operation's share of the member's commit path -- its time over the
summed time of the operations in `COMMIT_SHARED` (the message round trip
contains the consensus round, so it is shown but not shared out), the same
rule as grstats_member_commit_path.  The day table sums the hours (exact:
everything is additive), then derives again.

Invariants:
- NULL-safe: history written before the columns reads them as NULL; a bucket
  without any step of a counter has that sum NULL (unknown, not 0); a mean
  is NULL unless the count grew; a share is NULL unless some time was spent
  (an operation with an unknown time counts 0 in the whole, as the live table
  leaves it out).
- `dominant` names the operation with the largest share (the first in
  `COMMIT_SHARED` order on a tie); "" when the bucket spent no time; NULL
  when no operation's time is known.
- Functions of pyspark.sql.functions only: no Python UDFs, no collect().
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_rollups.applier import counter_tables
from spark_rollups.schema import COMMIT_COLUMNS, COMMIT_COUNTERS, COMMIT_OPS, COMMIT_SHARED, DAY

__all__ = ["COMMIT_TABLES", "commit_tables"]

COMMIT_TABLES = ("commit_member_hour", "commit_member_day")


def _time(op: str) -> Column:
    return F.col(f"{op}_us")


def _finish(rolled: DataFrame) -> DataFrame:
    derived: dict[str, Column] = {}
    for op in COMMIT_OPS:
        count = F.col(f"{op}_count")
        derived[f"{op}_mean_seconds"] = F.when(count > 0, _time(op) / count / 1e6)
    whole = sum((F.coalesce(_time(op), F.lit(0)) for op in COMMIT_SHARED), F.lit(0))
    for op in COMMIT_SHARED:
        derived[f"{op}_share"] = F.when(whole > 0, _time(op) / whole)
    largest = F.greatest(*(_time(op) for op in COMMIT_SHARED))  # NULLs skipped
    first_largest = F.coalesce(*(F.when(_time(op) == largest, F.lit(op)) for op in COMMIT_SHARED))
    derived["dominant"] = F.when(whole > 0, first_largest).when(largest.isNotNull(), F.lit(""))
    return rolled.withColumns(derived).select(*COMMIT_COLUMNS, DAY)


def commit_tables(samples: DataFrame, baseline: DataFrame | None = None) -> dict[str, DataFrame]:
    """Both commit-path tables (`applier.counter_tables` of COMMIT_COUNTERS).

    Args:
        samples: `select_samples` of the dates to roll up.
        baseline: `select_samples` of the day before them, or None.

    Returns:
        commit_member_hour and commit_member_day, each COMMIT_COLUMNS plus `day`.
    """
    return counter_tables(samples, baseline, COMMIT_COUNTERS, _finish, COMMIT_TABLES)
