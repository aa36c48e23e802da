"""Applier rollups (WL#15620): per member-hour and member-day increases and wait shares.

Strategy: the applier counters of the group_replication_applier channel
(`APPLIER_COUNTERS`) become increases per bucket with the same step rule as
the stats counters (transforms.py, DESIGN.md section 7), and each wait's
share of the active time is the bucket's wait increase over its active-time
increase.  One window per member orders the samples of the dates rolled up
together with those of the baseline days (the day before each, read but not
rolled up), so the first step of an incremental run is right without a
separate boundary join; the baseline rows are dropped after the window.  The
commit path's counters (commitrollup.py) are a second set in the same window
(`counter_hours`: one sort for both), and the hours of both are aggregated
together and persisted; each table takes its set's columns out.  The
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
  from losing the increase across it; one `lag(...) IGNORE NULLS` per set,
  of a struct NULL on the samples without the set's figures, is that previous
  sample (a running last-non-NULL per counter is several times dearer).
- Exact duplicates (same incarnation and seq) are not samples; their steps
  are 0 by construction (equal values next to each other).
- NULL-safe: history written before the applier columns reads them as NULL;
  a bucket without any step of a counter has that increase NULL (unknown,
  not 0), and a share is NULL unless the active-time increase is > 0.
- Functions of pyspark.sql.functions only: no Python UDFs, no collect().
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

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

__all__ = [
    "APPLIER",
    "APPLIER_TABLES",
    "Counters",
    "applier_tables",
    "counter_hours",
    "counter_tables",
]

APPLIER_TABLES = ("applier_member_hour", "applier_member_day")
APPLIER = "applier"  # the applier counters' set name in `counter_hours`
Counters = tuple[tuple[str, str], ...]  # (history column, step column)
_ROLLED = "_rolled"  # true for samples of the dates rolled up, false for baseline days


def _step(value: Column, previous: Column) -> Column:
    diff = value - previous
    return F.when(diff < 0, value).otherwise(diff)


def _figures(counters: Counters) -> Column:
    """True for a sample with any of these counters' figures."""
    has = F.lit(False)
    for src, _ in counters:
        has = has | F.col(src).isNotNull()
    return has


def counter_hours(
    samples: DataFrame, baseline: DataFrame | None, sets: Mapping[str, Counters]
) -> DataFrame:
    """Each set's hour sums, from one ordered pass over the samples (the sets side by side).

    One window per member orders every sample with any set's figures; for each
    set, `lag(...) IGNORE NULLS` of a struct that is NULL on the samples without
    that set's figures yields the member's previous sample *with figures* of the
    set (its incarnation, seq, day and values), exactly what a window over only
    those samples would (one sort for every set instead of one each).  A
    sample's steps are taken from it (`_steps`); the hour sums each set's steps
    and counts its kept samples with figures and their resets.

    Args:
        samples: `select_samples` of the dates to roll up.
        baseline: `select_samples` of the days before them that are not rolled
            up; None = none.
        sets: set name -> (history column, step column) of the counters that
            step together (the applier's, the commit path's); step column
            names distinct across sets.

    Returns:
        One row per member-hour with a sample of any set: group_name,
        member_id, day, bucket_start, every set's step sums (NULL: no step),
        and per set `_samples_<name>` and `_resets_<name>` (`counter_tables`
        takes one set's rows out).
    """
    keys = [GROUP_NAME, MEMBER_ID, DAY, SAMPLED_AT, INCARNATION, SEQ]
    sources = list(dict.fromkeys(src for counters in sets.values() for src, _ in counters))
    frame = samples.select(*keys, *sources, F.lit(True).alias(_ROLLED))
    if baseline is not None:
        frame = frame.unionByName(baseline.select(*keys, *sources, F.lit(False).alias(_ROLLED)))
    has_any = F.lit(False)
    for counters in sets.values():
        has_any = has_any | _figures(counters)
    frame = frame.where(has_any).select(
        "*",
        *(
            F.when(
                _figures(counters), F.struct(INCARNATION, SEQ, DAY, *(s for s, _ in counters))
            ).alias(f"_fig_{name}")
            for name, counters in sets.items()
        ),
    )
    window = Window.partitionBy(GROUP_NAME, MEMBER_ID).orderBy(SAMPLED_AT, INCARNATION, SEQ)
    lagged = frame.select(
        "*",
        *(
            F.expr(f"lag(_fig_{name}) IGNORE NULLS").over(window).alias(f"_prev_{name}")
            for name in sets
        ),
    ).where(F.col(_ROLLED))
    aggs: list[Column] = []
    for name, counters in sets.items():
        aggs += _steps(name, counters)
    bucket = F.date_trunc("hour", SAMPLED_AT).alias(BUCKET)
    return lagged.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket).agg(*aggs)


def _steps(name: str, counters: Counters) -> list[Column]:
    """One set's hour aggregates of `counter_hours`' lagged rows.

    The steps of a sample with the set's figures: from the previous sample with
    them, when it is from the same or the previous UTC day; not a duplicate (same
    incarnation and seq as that previous one) for `_samples_<name>`.
    """
    prev = F.col(f"_prev_{name}")
    has = F.col(f"_fig_{name}").isNotNull()
    duplicate = (prev[SEQ] == F.col(SEQ)) & (prev[INCARNATION] == F.col(INCARNATION))
    counted = has & F.coalesce(~duplicate, F.lit(True))
    recent = prev[DAY] >= F.date_sub(F.col(DAY), 1)
    aggs: list[Column] = []
    reset = F.lit(False)
    for src, out in counters:
        usable = F.col(src).isNotNull() & prev[src].isNotNull() & recent
        aggs.append(F.sum(F.when(usable, _step(F.col(src), prev[src]))).alias(out))
        reset = reset | F.coalesce(usable & (F.col(src) < prev[src]), F.lit(False))
    return [
        *aggs,
        F.sum(counted.cast("long")).alias(f"_samples_{name}"),
        F.sum((counted & reset).cast("long")).alias(f"_resets_{name}"),
    ]


def _finish(rolled: DataFrame) -> DataFrame:
    active = F.col(ACTIVE)
    shares = {share: F.when(active > 0, F.col(wait) / active) for share, wait in APPLIER_SHARES}
    return rolled.withColumns(shares).select(*APPLIER_COLUMNS, DAY)


def _day_sums(hours: DataFrame, counters: Counters) -> DataFrame:
    aggs = [F.sum(out).alias(out) for _, out in counters]
    aggs += [F.sum(c).alias(c) for c in ("samples", "resets")]
    bucket = F.date_trunc("day", BUCKET).alias(BUCKET)
    return hours.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket).agg(*aggs)


def counter_tables(
    hours: DataFrame,
    name: str,
    counters: Counters,
    finish: Callable[[DataFrame], DataFrame],
    names: tuple[str, str],
) -> dict[str, DataFrame]:
    """One set's hour and day tables from `counter_hours` (lazy; persist the hours).

    The hour keeps the set's sums and its `samples` (kept samples with the
    set's figures; hours without one are left out) and `resets`; the day sums
    the hours (exact: everything is additive).  `finish` derives the table's
    other columns from the sums, again for the day.

    Args:
        hours: `counter_hours` with this set among its sets.
        name: the set's name there.
        counters: its (history column, step column).
        finish: the sums -> the table's columns plus `day`.
        names: the hour table's name and the day table's.

    Returns:
        Both tables by name.
    """
    own = hours.where(F.col(f"_samples_{name}") > 0).select(
        GROUP_NAME,
        MEMBER_ID,
        DAY,
        BUCKET,
        *(out for _, out in counters),
        F.col(f"_samples_{name}").alias("samples"),
        F.col(f"_resets_{name}").alias("resets"),
    )
    finished = finish(own)
    return {names[0]: finished, names[1]: finish(_day_sums(finished, counters))}


def applier_tables(hours: DataFrame) -> dict[str, DataFrame]:
    """Both applier tables (`counter_tables` of the `APPLIER` set).

    Args:
        hours: `counter_hours` with the `APPLIER` set (APPLIER_COUNTERS).

    Returns:
        applier_member_hour and applier_member_day, each APPLIER_COLUMNS plus
        `day`: increases, shares (NULL unless active time increased),
        `samples` (kept samples with applier figures) and `resets`.
    """
    return counter_tables(hours, APPLIER, APPLIER_COUNTERS, _finish, APPLIER_TABLES)
