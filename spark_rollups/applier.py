"""Applier rollups (WL#15620): per member-hour and member-day increases and wait shares.

Strategy: the applier counters of the group_replication_applier channel
(`APPLIER_COUNTERS`) become increases per bucket with the same step rule as
the stats counters (transforms.py, DESIGN.md section 7), and each wait's
share of the active time is the bucket's wait increase over its active-time
increase.  One window per member orders the samples of the dates rolled up
together with those of the baseline days (the day before each, read but not
rolled up), so the first step of an incremental run is right without a
separate boundary join; the baseline rows are dropped after the window.  The
day table sums the hours (exact: everything is additive), then takes the
shares again.

Invariants:
- Steps: a sample's step is its value minus the member's latest earlier
  value of that counter (from its previous sample with applier figures), or
  its own value when that is negative (a reset: the metrics restarted),
  provided that earlier sample is from the same or the previous UTC day
  (otherwise, as for the stats counters, the sample is only a baseline).
  Skipping the samples without figures, not taking the previous row, keeps a
  sample without the applier section (an older daemon, a refused section)
  from losing the increase across it; one `lag` per counter over those
  samples is several times cheaper than a running last-non-NULL.
- Exact duplicates (same incarnation and seq) are not samples; their steps
  are 0 by construction (equal values next to each other).
- NULL-safe: history written before the applier columns reads them as NULL;
  a bucket without any step of a counter has that increase NULL (unknown,
  not 0), and a share is NULL unless the active-time increase is > 0.
- Functions of pyspark.sql.functions only: no Python UDFs, no collect().
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_rollups.schema import (
    ACTIVE,
    APPLIER_COLUMNS,
    APPLIER_COUNTERS,
    APPLIER_SHARES,
    BUCKET,
    DAY,
    GROUP_NAME,
    INCARNATION,
    MEMBER_ID,
    SAMPLED_AT,
    SEQ,
)

__all__ = ["APPLIER_TABLES", "applier_steps", "applier_tables", "counter_tables"]

APPLIER_TABLES = ("applier_member_hour", "applier_member_day")
_ROLLED = "_rolled"  # true for samples of the dates rolled up, false for baseline days


def _step(value: Column, previous: Column) -> Column:
    diff = value - previous
    return F.when(diff < 0, value).otherwise(diff)


def applier_steps(
    samples: DataFrame,
    baseline: DataFrame | None = None,
    counters: tuple[tuple[str, str], ...] = APPLIER_COUNTERS,
) -> DataFrame:
    """Each applier sample's steps (baseline days only feed the first steps).

    Only samples with applier figures take part: the step of one is taken from
    the member's previous sample *with figures*, so a sample without the
    applier section loses nothing, and one `lag` per counter does what a
    running "last non-NULL" would (a member reports the same counters in
    every section its server writes).

    Args:
        samples: `select_samples` of the dates to roll up.
        baseline: `select_samples` of the days before them that are not rolled
            up; None = none.
        counters: (history column, step column) of the counters that step
            together (default the applier's; commitrollup.py passes the commit
            path's).

    Returns:
        One row per sample of `samples` with applier figures: group_name,
        member_id, day, sampled_at, `_keep` (false for duplicates), `_reset`,
        and the steps named like the rollup columns (NULL: no step).
    """
    columns = [GROUP_NAME, MEMBER_ID, DAY, SAMPLED_AT, INCARNATION, SEQ]
    columns += [src for src, _ in counters]
    frame = samples.select(*columns, F.lit(True).alias(_ROLLED))
    if baseline is not None:
        frame = frame.unionByName(baseline.select(*columns, F.lit(False).alias(_ROLLED)))
    has_figures = F.lit(False)
    for src, _ in counters:
        has_figures = has_figures | F.col(src).isNotNull()
    window = Window.partitionBy(GROUP_NAME, MEMBER_ID).orderBy(SAMPLED_AT, INCARNATION, SEQ)
    lagged = frame.where(has_figures).select(
        "*",
        F.lag(INCARNATION).over(window).alias("_prev_inc"),
        F.lag(SEQ).over(window).alias("_prev_seq"),
        F.lag(DAY).over(window).alias("_prev_day"),
        *(F.lag(src).over(window).alias(f"_prev_{out}") for src, out in counters),
    )
    duplicate = (F.col("_prev_seq") == F.col(SEQ)) & (F.col("_prev_inc") == F.col(INCARNATION))
    recent = F.col("_prev_day") >= F.date_sub(F.col(DAY), 1)
    steps: dict[str, Column] = {}
    reset = F.lit(False)
    for src, out in counters:
        prev = F.col(f"_prev_{out}")
        usable = F.col(src).isNotNull() & prev.isNotNull() & recent
        steps[out] = F.when(usable, _step(F.col(src), prev))
        reset = reset | F.coalesce(usable & (F.col(src) < prev), F.lit(False))
    return lagged.where(F.col(_ROLLED)).select(
        GROUP_NAME,
        MEMBER_ID,
        DAY,
        SAMPLED_AT,
        F.coalesce(~duplicate, F.lit(True)).alias("_keep"),
        reset.alias("_reset"),
        *(step.alias(out) for out, step in steps.items()),
    )


def _finish(rolled: DataFrame) -> DataFrame:
    active = F.col(ACTIVE)
    shares = {share: F.when(active > 0, F.col(wait) / active) for share, wait in APPLIER_SHARES}
    return rolled.withColumns(shares).select(*APPLIER_COLUMNS, DAY)


def _hour_sums(steps: DataFrame, counters: tuple[tuple[str, str], ...]) -> DataFrame:
    counted = F.col("_keep")  # every step row has figures
    aggs = [F.sum(out).alias(out) for _, out in counters]
    aggs += [
        F.sum(counted.cast("long")).alias("samples"),
        F.sum((counted & F.col("_reset")).cast("long")).alias("resets"),
    ]
    bucket = F.date_trunc("hour", SAMPLED_AT).alias(BUCKET)
    hours = steps.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket).agg(*aggs)
    return hours.where(F.col("samples") > 0)


def _day_sums(hours: DataFrame, counters: tuple[tuple[str, str], ...]) -> DataFrame:
    aggs = [F.sum(out).alias(out) for _, out in counters]
    aggs += [F.sum(c).alias(c) for c in ("samples", "resets")]
    bucket = F.date_trunc("day", BUCKET).alias(BUCKET)
    return hours.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket).agg(*aggs)


def counter_tables(
    samples: DataFrame,
    baseline: DataFrame | None,
    counters: tuple[tuple[str, str], ...],
    finish: Callable[[DataFrame], DataFrame],
    names: tuple[str, str],
) -> dict[str, DataFrame]:
    """The hour and day tables of counters that step together, as one lazy plan.

    The hour sums each counter's `applier_steps` (NULL when the hour has no
    step of it), counts the kept samples with figures (`samples`; hours
    without one are left out) and the resets among them; the day sums the
    hours (exact: everything is additive).  `finish` derives the table's
    other columns from the sums, again for the day.

    Args:
        samples: `select_samples` of the dates to roll up.
        baseline: `select_samples` of the day before them, or None.
        counters: (history column, step column), as for `applier_steps`.
        finish: the sums -> the table's columns plus `day`.
        names: the hour table's name and the day table's.

    Returns:
        Both tables by name (rollup.py persists the hours between).
    """
    hours = _hour_sums(applier_steps(samples, baseline, counters), counters)
    finished = finish(hours)
    return {names[0]: finished, names[1]: finish(_day_sums(finished, counters))}


def applier_tables(samples: DataFrame, baseline: DataFrame | None = None) -> dict[str, DataFrame]:
    """Both applier tables (`counter_tables` of APPLIER_COUNTERS).

    Args:
        samples: `select_samples` of the dates to roll up.
        baseline: `select_samples` of the day before them, or None.

    Returns:
        applier_member_hour and applier_member_day, each APPLIER_COLUMNS plus
        `day`: increases, shares (NULL unless active time increased),
        `samples` (kept samples with applier figures) and `resets`.
    """
    return counter_tables(samples, baseline, APPLIER_COUNTERS, _finish, APPLIER_TABLES)
