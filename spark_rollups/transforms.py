"""Pure DataFrame -> DataFrame rollup transforms (DESIGN.md section 7).

Strategy: the only expensive step is ordering each member's samples, so it
happens once.  `with_steps` runs one window (partitioned by group, member and
UTC day, ordered by sampled_at, incarnation, seq) that yields the counter
steps, reset/restart flags and each day's first and last sample; the minute
table is aggregated from those rows, and the hour and day tables are sums,
minima and maxima of minutes -- exact, since every additive quantity (steps,
samples, resets, gauge sums) is carried through.  Percentiles are not
decomposable, so each minute also carries the sorted values of every
`DISTRIBUTIONS` entry (`_vals_*`, at most 60 at 1 Hz: the queue gauges as
ints, the lag figures as doubles, NULLs left out); hours and days merge those
arrays and take the exact percentile again, one function for all of them.
Percentiles are exact everywhere: linear interpolation between the closest
ranks, position = q * (n - 1) -- Spark's `percentile`, numpy's default and
DuckDB's `quantile_cont`; a bucket without values has NULL percentiles.
(Spark's `percentile` itself is not used: it is an object aggregate with a
value map per group, and the arrays are needed anyway for the coarser
buckets.)

Invariants:
- Steps: step_i = v_i - v_(i-1), or v_i when that is negative (a counter
  reset: the server restarted).  A new incarnation (daemon restart) is not a
  reset by itself.  The step belongs to the bucket containing sample i.
- Exact duplicates (same member, incarnation, seq -- a sample written twice,
  e.g. a crash replay, a compaction whose inputs a crash left behind, or a
  retained message written again by a restarted collector into another
  segment) are copies of one sample, with the same sampled_at.  The window
  orders by (sampled_at, incarnation, seq), a total order in which the
  copies are equal keys, so they end up next to each other wherever they
  were in the files; a row equal in (incarnation, seq) to its predecessor is
  not counted (no sample, no gauge value; its steps are 0 by construction).
- Day boundary: the window is per UTC day (63 partitions for a week of nine
  members instead of nine keeps both cores busy).  The first sample of a
  member on day D takes its step from the member's last sample on D-1, which
  `apply_day_boundary` joins in at minute level -- from the same run, or from
  `last_samples` of the D-1 history when D is the first day of an
  incremental run.  With no sample on D-1 the first sample of D is only a
  baseline.
- All timestamps are UTC: the session time zone must be UTC (rollup.py sets it).
- Functions of pyspark.sql.functions only: no Python UDFs, no collect().
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_rollups.schema import (
    BUCKET,
    COUNTERS,
    DAY,
    GAUGES,
    GROUP_COLUMNS,
    GROUP_NAME,
    HISTORY_INPUT_COLUMNS,
    HISTORY_SCHEMA,
    INCARNATION,
    LAG_PERCENTILES,
    LAGS,
    MEMBER_COLUMNS,
    MEMBER_ID,
    SAMPLED_AT,
    SEQ,
    percentile_name,
)

__all__ = [
    "BUCKET",
    "COUNTERS",
    "DAY",
    "DISTRIBUTIONS",
    "GAUGES",
    "GROUP_COLUMNS",
    "GROUP_NAME",
    "HISTORY_INPUT_COLUMNS",
    "HISTORY_SCHEMA",
    "LAGS",
    "MEMBER_COLUMNS",
    "MEMBER_ID",
    "SAMPLED_AT",
    "apply_day_boundary",
    "finish_member",
    "group_rollup",
    "last_samples",
    "member_coarser",
    "member_minute",
    "rollup_tables",
    "select_samples",
    "tables_from_minutes",
    "with_steps",
]

P95 = 0.95

# Every exact percentile is taken from sorted per-minute value arrays (`_VALS`),
# merged for hours and days: (value column, rollup prefix, element type, fractions).
# Gauges are integers (p95 of the queues), lags doubles (p50/p95/p99 of each figure).
DISTRIBUTIONS: tuple[tuple[str, str, str, tuple[float, ...]], ...] = (
    *((out, out, "int", (P95,)) for _, out, p95 in GAUGES if p95),
    *((lag, lag, "double", LAG_PERCENTILES) for lag in LAGS),
)

# Internal columns carried by the minute table for exact coarser rollups.
_HEAD = "_head_"  # values of the member's first sample of the day (first minute only)
_TAIL = "_tail_"  # values of the member's last sample of the day (last minute only)
_SUM = "_sum_"  # gauge sums, so that coarser averages are exact
_VALS = "_vals_"  # sorted gauge values of the minute, so that coarser p95 are exact


def select_samples(history: DataFrame) -> DataFrame:
    """Project history rows onto the columns the rollups read (Parquet column pruning).

    Args:
        history: rows with the DESIGN.md section 6 columns (more are ignored).

    Returns:
        HISTORY_INPUT_COLUMNS plus `day`, the UTC date of sampled_at; incarnation
        replaced by its xxhash64 (a long: two incarnations of one member would
        have to collide in 64 bits to be taken for one).
    """
    return history.select(*HISTORY_INPUT_COLUMNS).withColumns(
        {
            # uint64 reads as decimal(20, 0), slow to shuffle, sort and compare; only
            # equality matters (and order among samples with the same sampled_at),
            # so a 64-bit hash stands in for it.
            INCARNATION: F.xxhash64(INCARNATION),
            DAY: F.to_date(SAMPLED_AT),
        }
    )


def _step(value: Column, previous: Column) -> Column:
    """Prometheus `increase` step: the difference, or the value itself after a reset."""
    diff = value - previous
    return F.when(diff < 0, value).otherwise(diff)


def with_steps(samples: DataFrame) -> DataFrame:
    """Order each member's day and derive steps, flags and boundary values per sample.

    Args:
        samples: output of `select_samples`.

    Returns:
        One row per input row: group_name, member_id, day, sampled_at, the
        counter steps named like the rollup columns (null for the day's first
        sample), `_keep` (false for duplicates), `_reset`, `_restart`, the
        gauges (null for duplicates), and `_head_*` / `_tail_*` counter values
        and incarnation on the day's first / last row only.
    """
    window = Window.partitionBy(GROUP_NAME, MEMBER_ID, DAY).orderBy(SAMPLED_AT, INCARNATION, SEQ)
    lagged = samples.select(
        "*",
        F.lag(INCARNATION).over(window).alias("_prev_inc"),
        F.lag(SEQ).over(window).alias("_prev_seq"),
        F.lead(SEQ).over(window).alias("_next_seq"),
        *(F.lag(src).over(window).alias(f"_prev_{out}") for src, out in COUNTERS),
    )
    first = F.col("_prev_seq").isNull()
    last = F.col("_next_seq").isNull()
    duplicate = (F.col("_prev_seq") == F.col(SEQ)) & (F.col("_prev_inc") == F.col(INCARNATION))
    keep = F.coalesce(~duplicate, F.lit(True))
    reset = F.lit(False)
    for src, out in COUNTERS:
        reset = reset | F.coalesce(F.col(src) < F.col(f"_prev_{out}"), F.lit(False))
    return lagged.select(
        GROUP_NAME,
        MEMBER_ID,
        DAY,
        SAMPLED_AT,
        keep.alias("_keep"),
        reset.alias("_reset"),
        F.coalesce(F.col("_prev_inc") != F.col(INCARNATION), F.lit(False)).alias("_restart"),
        *(_step(F.col(src), F.col(f"_prev_{out}")).alias(out) for src, out in COUNTERS),
        *(F.when(keep, F.col(src)).alias(out) for src, out, _ in GAUGES),
        *(F.when(keep, F.col(lag)).alias(lag) for lag in LAGS),
        *(F.when(first, F.col(src)).alias(f"{_HEAD}{out}") for src, out in COUNTERS),
        F.when(first, F.col(INCARNATION)).alias(f"{_HEAD}incarnation"),
        *(F.when(last, F.col(src)).alias(f"{_TAIL}{out}") for src, out in COUNTERS),
        F.when(last, F.col(INCARNATION)).alias(f"{_TAIL}incarnation"),
    )


def _boundary_columns() -> list[str]:
    return [*(out for _, out in COUNTERS), "incarnation"]


def _percentile_sorted(values: Column, fraction: float) -> Column:
    """Exact percentile of a sorted array: linear interpolation between the closest ranks.

    position = fraction * (n - 1) (0-based), the definition of Spark's
    `percentile`, numpy's default and DuckDB's `quantile_cont`; null when empty.
    """
    n = F.size(values)
    position = F.lit(fraction) * (n - 1)
    low = F.floor(position).cast("int")
    high = F.ceil(position).cast("int")
    low_value = F.element_at(values, low + 1)
    high_value = F.element_at(values, high + 1)
    return F.when(n > 0, low_value + (position - low) * (high_value - low_value))


def _percentiles() -> dict[str, Column]:
    """Every percentile column, from the `_VALS` arrays of the bucket (one mechanism)."""
    return {
        percentile_name(prefix, fraction): _percentile_sorted(F.col(f"{_VALS}{prefix}"), fraction)
        for _, prefix, _, fractions in DISTRIBUTIONS
        for fraction in fractions
    }


def member_minute(steps: DataFrame) -> DataFrame:
    """Aggregate per-sample steps into member minutes (with internal columns).

    Args:
        steps: output of `with_steps`.

    Returns:
        One row per (group_name, member_id, day, bucket_start minute): counter
        increases, gauge min/max/p95, `samples`, `resets`, `restarts`, and the
        internal `_sum_*`, `_vals_*` (sorted gauge values), `_head_*` and
        `_tail_*` columns used by `apply_day_boundary` and `member_coarser`.
        Not final: pass it through `apply_day_boundary`, then `finish_member`.
    """
    aggs: list[Column] = [F.coalesce(F.sum(out), F.lit(0)).alias(out) for _, out in COUNTERS]
    for _, out, _p95 in GAUGES:
        aggs += [
            F.min(out).alias(f"{out}_min"),
            F.max(out).alias(f"{out}_max"),
            F.sum(out).alias(f"{_SUM}{out}"),
        ]
    aggs += [F.max(lag).alias(f"{lag}_max") for lag in LAGS]
    # The minute's values travel on, so that hour and day percentiles are exact too
    # (collect_list skips NULLs: a lag figure that was not known is no value).
    aggs += [
        F.sort_array(F.collect_list(F.col(column).cast(kind))).alias(f"{_VALS}{prefix}")
        for column, prefix, kind, _ in DISTRIBUTIONS
    ]
    aggs += [
        F.sum(F.col("_keep").cast("long")).alias("samples"),
        F.sum(F.col("_reset").cast("long")).alias("resets"),
        F.sum(F.col("_restart").cast("long")).alias("restarts"),
        *(F.max(f"{_HEAD}{c}").alias(f"{_HEAD}{c}") for c in _boundary_columns()),
        *(F.max(f"{_TAIL}{c}").alias(f"{_TAIL}{c}") for c in _boundary_columns()),
    ]
    bucket = F.date_trunc("minute", SAMPLED_AT).alias(BUCKET)
    minutes = steps.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket).agg(*aggs)
    return minutes.withColumns(_percentiles())


def last_samples(samples: DataFrame) -> DataFrame:
    """The last sample of each member and day, as `apply_day_boundary` wants it.

    Used for the day before an incremental run, which is read but not rolled up.

    Args:
        samples: output of `select_samples`.

    Returns:
        group_name, member_id, day, `_tail_*` counter values and incarnation.
    """
    order = F.struct(SAMPLED_AT, INCARNATION, SEQ)
    return samples.groupBy(GROUP_NAME, MEMBER_ID, DAY).agg(
        *(F.max_by(src, order).alias(f"{_TAIL}{out}") for src, out in COUNTERS),
        F.max_by(INCARNATION, order).alias(f"{_TAIL}incarnation"),
    )


def apply_day_boundary(minutes: DataFrame, previous_tails: DataFrame | None = None) -> DataFrame:
    """Give each member-day's first sample its step from the previous day's last sample.

    Args:
        minutes: output of `member_minute`.
        previous_tails: `last_samples` of days not rolled up in this run (the
            day before an incremental range); may be None.

    Returns:
        `minutes` with the first minute of each member-day corrected (counter
        steps, resets, restarts); same columns.
    """
    tail_cols = [f"{_TAIL}{c}" for c in _boundary_columns()]
    tails = minutes.where(F.col(f"{_TAIL}incarnation").isNotNull()).select(
        GROUP_NAME, MEMBER_ID, DAY, *tail_cols
    )
    if previous_tails is not None:
        tails = tails.unionByName(previous_tails.select(GROUP_NAME, MEMBER_ID, DAY, *tail_cols))
    prev = tails.select(
        GROUP_NAME,
        MEMBER_ID,
        F.date_add(DAY, 1).alias(DAY),
        *(F.col(f"{_TAIL}{c}").alias(f"_prev_{c}") for c in _boundary_columns()),
    )
    joined = minutes.join(F.broadcast(prev), [GROUP_NAME, MEMBER_ID, DAY], "left")
    at_boundary = F.col(f"{_HEAD}incarnation").isNotNull() & F.col("_prev_incarnation").isNotNull()
    reset = F.lit(False)
    fixed: dict[str, Column] = {}
    for _, out in COUNTERS:
        head, prev_value = F.col(f"{_HEAD}{out}"), F.col(f"_prev_{out}")
        fixed[out] = F.col(out) + F.when(at_boundary, _step(head, prev_value)).otherwise(0)
        reset = reset | (head < prev_value)
    fixed["resets"] = F.col("resets") + F.when(at_boundary & reset, 1).otherwise(0)
    restart = F.col(f"{_HEAD}incarnation") != F.col("_prev_incarnation")
    fixed["restarts"] = F.col("restarts") + F.when(at_boundary & restart, 1).otherwise(0)
    return joined.withColumns(fixed).drop(*(f"_prev_{c}" for c in _boundary_columns()))


def member_coarser(minutes: DataFrame, unit: str) -> DataFrame:
    """Roll member minutes up to hours or days, exactly (p95 from the minutes' values).

    Args:
        minutes: output of `apply_day_boundary` (with internal columns).
        unit: "hour" or "day".

    Returns:
        The same columns as `minutes` at the coarser bucket (internal columns
        kept for averages; `finish_member` drops them).
    """
    aggs: list[Column] = [F.sum(out).alias(out) for _, out in COUNTERS]
    for _, out, _p95 in GAUGES:
        aggs += [
            F.min(f"{out}_min").alias(f"{out}_min"),
            F.max(f"{out}_max").alias(f"{out}_max"),
            F.sum(f"{_SUM}{out}").alias(f"{_SUM}{out}"),
        ]
    aggs += [F.max(f"{lag}_max").alias(f"{lag}_max") for lag in LAGS]
    aggs += [
        F.sort_array(F.flatten(F.collect_list(f"{_VALS}{prefix}"))).alias(f"{_VALS}{prefix}")
        for _, prefix, _, _ in DISTRIBUTIONS
    ]
    aggs += [F.sum(c).alias(c) for c in ("samples", "resets", "restarts")]
    bucket = F.date_trunc(unit, BUCKET).alias(BUCKET)
    coarse = minutes.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket).agg(*aggs)
    # A separate projection: each sorted array is computed once, then indexed.
    return coarse.withColumns(_percentiles())


def finish_member(rolled: DataFrame, bucket_seconds: int, period_seconds: float) -> DataFrame:
    """Final member table: averages, coverage, fixed column order plus `day`.

    Args:
        rolled: minute, hour or day rows with internal columns.
        bucket_seconds: 60, 3600 or 86400.
        period_seconds: the sampling period (expected samples = bucket / period).

    Returns:
        MEMBER_COLUMNS plus `day` (the output partition).
    """
    expected = bucket_seconds / period_seconds
    derived = {f"{out}_avg": F.col(f"{_SUM}{out}") / F.col("samples") for _, out, _p in GAUGES}
    derived["coverage"] = F.col("samples") / F.lit(expected)
    return rolled.withColumns(derived).select(*MEMBER_COLUMNS, DAY)


def group_rollup(members: DataFrame, bucket_seconds: int, period_seconds: float) -> DataFrame:
    """Group level of a finished member table (hour or day).

    Every member certifies every transaction, so checked, conflicts and
    remote_applied are one member's view: the max over members present in
    the bucket.  Proposed and rollbacks are per originating member and sum.

    Args:
        members: output of `finish_member`.
        bucket_seconds: the bucket length, for coverage.
        period_seconds: the sampling period.

    Returns:
        GROUP_COLUMNS plus `day`; conflict_rate null when nothing was checked;
        coverage = samples / (members * expected samples).
    """
    maxed = {"transactions_checked", "conflicts_detected", "transactions_remote_applied"}
    expected = bucket_seconds / period_seconds
    grouped = members.where(F.col("samples") > 0).groupBy(GROUP_NAME, DAY, BUCKET)
    rolled = grouped.agg(
        F.count(MEMBER_ID).alias("members"),
        *((F.max(out) if out in maxed else F.sum(out)).alias(out) for _, out in COUNTERS),
        F.max("transactions_in_queue_max").alias("transactions_in_queue_max"),
        F.max("transactions_remote_in_applier_queue_max").alias(
            "transactions_remote_in_applier_queue_max"
        ),
        *(F.sum(c).alias(c) for c in ("samples", "resets", "restarts")),
    )
    checked, conflicts = F.col("transactions_checked"), F.col("conflicts_detected")
    return rolled.withColumns(
        {
            "conflict_rate": F.when(checked > 0, conflicts / checked),
            "coverage": F.col("samples") / (F.col("members") * F.lit(expected)),
        }
    ).select(*GROUP_COLUMNS, DAY)


_BUCKET_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def tables_from_minutes(minutes: DataFrame, period_seconds: float = 1.0) -> dict[str, DataFrame]:
    """The five output tables from boundary-corrected member minutes.

    Args:
        minutes: output of `apply_day_boundary` (persist it: every table reads it).
        period_seconds: the sampling period (expected samples = bucket / period).

    Returns:
        member_minute, member_hour, member_day, group_hour, group_day; each
        with its DESIGN.md section 7 columns plus `day` (the output partition).
    """
    tables = {"member_minute": finish_member(minutes, 60, period_seconds)}
    for unit in ("hour", "day"):
        seconds = _BUCKET_SECONDS[unit]
        member = finish_member(member_coarser(minutes, unit), seconds, period_seconds)
        tables[f"member_{unit}"] = member
        tables[f"group_{unit}"] = group_rollup(member, seconds, period_seconds)
    return {
        name: tables[name]
        for name in ("member_minute", "member_hour", "member_day", "group_hour", "group_day")
    }


def rollup_tables(
    samples: DataFrame,
    baseline: DataFrame | None = None,
    period_seconds: float = 1.0,
) -> dict[str, DataFrame]:
    """The whole rollup as one lazy plan (tests; rollup.py persists the minutes between).

    Args:
        samples: `select_samples` of the dates to roll up.
        baseline: `select_samples` of the day before them (only its last
            sample per member is used); None = no baseline.
        period_seconds: the sampling period.

    Returns:
        As `tables_from_minutes`.
    """
    tails = None if baseline is None else last_samples(baseline)
    minutes = apply_day_boundary(member_minute(with_steps(samples)), tails)
    return tables_from_minutes(minutes, period_seconds)
