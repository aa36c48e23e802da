"""Flow-control rollups: throttled seconds per group-hour, who caused them, the episodes.

Strategy: the history rows carry the daemon's flow-control replay
(`fc_*`, DESIGN.md section 6): every member's row says whether writers were
held at that moment (fc_writers_held, group-wide: a writer's commits reached
the quota, what MySQL's Gr_flow_control_throttle_count counts -- see
core/flowreplay.py), whether the quota was merely active (fc_throttling) and
whether the member itself was a bottleneck (fc_bottleneck).  Everything here
is counted in *seconds*, not rows, so that the members' rows of the same
second (each carrying the group's state) and duplicated rows count once:

- member-second: (group, member, UTC second = floor(sampled_at)) over the
  rows with replay figures (fc_throttling not NULL; older files and
  collectors have none).  It is *throttled* if one of its rows has
  fc_writers_held = 1 (files from before that column: never), *quota
  active* if one has fc_throttling = 1, a *bottleneck* second if one has a
  non-empty fc_bottleneck, *caused* if one row is both throttled and a
  bottleneck, and *uncontained* if it is a bottleneck second in which no
  writer was held (its queue over the threshold, flow control not acting
  on the writers);
- group-second: a throttled group second is a second in which some
  member-second is throttled; it is *attributed* if some member-second of it
  is caused (a second can be caused by several members: each is charged the
  whole second).  Unattributed throttled seconds are the quota's release
  tail: no queue over the threshold any more, the quota still growing back;
- an episode of a member: a maximal run of its caused seconds in one UTC
  day in which consecutive seconds are at most `EPISODE_GAP_S` apart (one
  missing sample does not split it); its length is the number of caused
  seconds.  Episodes are cut at midnight (the report joins them again);
- catch-up ETA per member-second: the largest of its rows; the distribution
  counts member-seconds per bucket and takes exact percentiles (linear
  interpolation, as DuckDB's quantile_cont) over the finite ETAs;
- per member-hour, what the report's "flow control did not contain it"
  finding rests on: the mean apply rate over the hour (increase of
  COUNT_TRANSACTIONS_REMOTE_APPLIED over the seconds between its first and
  last row; NULL across a counter reset) and the applier threshold the
  replay judged by (applier queue - excess on its applier-bottleneck
  seconds).

Output tables (partitioned like the others by group and UTC date):
flow_control_group_hour, flow_control_member_hour, flow_control_episodes.
Invariants: functions of pyspark.sql.functions only; per-day inputs, so an
incremental run that redoes a date redoes exactly its partitions.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_rollups.schema import BUCKET, DAY, GROUP_NAME, MEMBER_ID, SAMPLED_AT

__all__ = [
    "CATCH_UP_BUCKETS",
    "EPISODE_GAP_S",
    "FLOW_TABLES",
    "flow_seconds",
    "flow_tables",
    "flow_tables_from_seconds",
]

FLOW_TABLES = ("flow_control_group_hour", "flow_control_member_hour", "flow_control_episodes")
EPISODE_GAP_S = 2
SECOND = "second"  # Unix seconds (floor of sampled_at)
ETA = "fc_catch_up_eta_seconds"
# (column, lower bound exclusive or None, upper bound inclusive) of the ETA buckets; the
# first bucket is exactly 0 (caught up), `never` is +inf, `unknown` NULL.
CATCH_UP_BUCKETS: tuple[str, ...] = (
    "catch_up_0s",
    "catch_up_under_10s",
    "catch_up_10_60s",
    "catch_up_over_60s",
    "catch_up_never",
    "catch_up_unknown",
)


def _any(condition: Column) -> Column:
    return F.max(F.coalesce(condition, F.lit(False)).cast("int")) == 1


def flow_seconds(history: DataFrame) -> DataFrame:
    """One row per member-second with replay figures (see the module docstring).

    Args:
        history: history rows with the flow columns (schema.FLOW_SCHEMA).

    Returns:
        group_name, member_id, day, second, throttled, bottleneck, caused,
        quota_active, uncontained, applier_threshold, applied, kind, excess,
        certifier_queue, applier_queue, eta, unready.
    """
    rows = history.where(F.col("fc_throttling").isNotNull())
    held = F.col("fc_writers_held") == 1
    bottleneck = F.coalesce(F.col("fc_bottleneck"), F.lit("")) != ""
    applier_bound = F.col("fc_bottleneck") == "applier"
    threshold = F.col("count_transactions_remote_in_applier_queue") - F.col(
        "fc_excess_over_threshold"
    )
    return rows.groupBy(
        GROUP_NAME,
        MEMBER_ID,
        F.to_date(SAMPLED_AT).alias(DAY),
        F.floor(F.unix_micros(SAMPLED_AT) / 1_000_000).alias(SECOND),
    ).agg(
        _any(held).alias("throttled"),
        _any(F.col("fc_throttling") == 1).alias("quota_active"),
        _any(bottleneck).alias("bottleneck"),
        _any(held & bottleneck).alias("caused"),
        (_any(bottleneck) & ~_any(held)).alias("uncontained"),
        F.max(F.when(applier_bound, threshold)).alias("applier_threshold"),
        F.max("count_transactions_remote_applied").alias("applied"),
        F.max(F.when(bottleneck, F.col("fc_bottleneck"))).alias("kind"),
        F.max("fc_excess_over_threshold").alias("excess"),
        F.max("count_transactions_in_queue").alias("certifier_queue"),
        F.max("count_transactions_remote_in_applier_queue").alias("applier_queue"),
        F.max(ETA).alias("eta"),
        _any(F.col("fc_failover_ready") == 0).alias("unready"),
    )


def _hour(second: Column) -> Column:
    return F.date_trunc("hour", F.timestamp_seconds(second)).alias(BUCKET)


def _count(condition: Column) -> Column:
    return F.count(F.when(condition, True))


def _apply_rate() -> Column:
    """The hour's mean apply rate: the applied count's rise over the seconds it took."""
    first, last = F.min_by("applied", SECOND), F.max_by("applied", SECOND)
    span = F.max(SECOND) - F.min(SECOND)
    return F.when((span > 0) & (last >= first), (last - first) / span)


def _member_hour(seconds: DataFrame) -> DataFrame:
    eta = F.col("eta")
    finite = F.when(~F.isnan(eta) & (eta != F.lit(float("inf"))), eta)
    buckets = (
        eta == 0,
        (eta > 0) & (eta < 10),
        (eta >= 10) & (eta <= 60),
        (eta > 60) & (eta != F.lit(float("inf"))),
        eta == F.lit(float("inf")),
        eta.isNull(),
    )
    return (
        seconds.groupBy(GROUP_NAME, MEMBER_ID, DAY, _hour(F.col(SECOND)))
        .agg(
            F.count("*").alias("seconds"),
            _count(F.col("bottleneck")).alias("bottleneck_seconds"),
            _count(F.col("caused")).alias("throttled_seconds_caused"),
            _count(F.col("caused") & (F.col("kind") == "certifier")).alias(
                "throttled_seconds_caused_certifier"
            ),
            _count(F.col("caused") & (F.col("kind") == "applier")).alias(
                "throttled_seconds_caused_applier"
            ),
            F.max("excess").alias("excess_max"),
            F.max("certifier_queue").alias("certifier_queue_max"),
            F.max("applier_queue").alias("applier_queue_max"),
            *(_count(c).alias(name) for name, c in zip(CATCH_UP_BUCKETS, buckets, strict=True)),
            F.percentile(finite, F.lit(0.5)).alias("catch_up_eta_p50"),
            F.percentile(finite, F.lit(0.95)).alias("catch_up_eta_p95"),
            F.max(finite).alias("catch_up_eta_max"),
            _count(F.col("unready")).alias("failover_unready_seconds"),
            _count(F.col("uncontained")).alias("uncontained_seconds"),
            _apply_rate().alias("apply_rate"),
            F.max("applier_threshold").alias("applier_threshold"),
        )
        .select(
            GROUP_NAME,
            MEMBER_ID,
            BUCKET,
            "seconds",
            "bottleneck_seconds",
            "throttled_seconds_caused",
            "throttled_seconds_caused_certifier",
            "throttled_seconds_caused_applier",
            "excess_max",
            "certifier_queue_max",
            "applier_queue_max",
            *CATCH_UP_BUCKETS,
            "catch_up_eta_p50",
            "catch_up_eta_p95",
            "catch_up_eta_max",
            "failover_unready_seconds",
            "uncontained_seconds",
            "apply_rate",
            "applier_threshold",
            DAY,
        )
    )


def _group_hour(seconds: DataFrame) -> DataFrame:
    group_seconds = seconds.groupBy(GROUP_NAME, DAY, SECOND).agg(
        _any(F.col("throttled")).alias("throttled"),
        _any(F.col("quota_active")).alias("quota_active"),
        _any(F.col("caused")).alias("attributed"),
        _count(F.col("caused")).alias("causes"),
    )
    return (
        group_seconds.groupBy(GROUP_NAME, DAY, _hour(F.col(SECOND)))
        .agg(
            F.count("*").alias("seconds"),
            _count(F.col("throttled")).alias("throttled_seconds"),
            _count(F.col("attributed")).alias("attributed_seconds"),
            _count(F.col("throttled") & ~F.col("attributed")).alias("unattributed_seconds"),
            _count(F.col("causes") > 1).alias("shared_seconds"),
            _count(F.col("quota_active")).alias("quota_active_seconds"),
        )
        .select(
            GROUP_NAME,
            BUCKET,
            "seconds",
            "throttled_seconds",
            "attributed_seconds",
            "unattributed_seconds",
            "shared_seconds",
            "quota_active_seconds",
            DAY,
        )
    )


def _episodes(seconds: DataFrame) -> DataFrame:
    caused = seconds.where(F.col("caused"))
    order = Window.partitionBy(GROUP_NAME, MEMBER_ID, DAY).orderBy(SECOND)
    gap = F.col(SECOND) - F.lag(SECOND).over(order)
    starts = caused.withColumn("_new", F.when(gap.isNull() | (gap > EPISODE_GAP_S), 1).otherwise(0))
    numbered = starts.withColumn(
        "_episode", F.sum("_new").over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    kinds = F.array_sort(F.collect_set("kind"))
    return (
        numbered.groupBy(GROUP_NAME, MEMBER_ID, DAY, "_episode")
        .agg(
            F.timestamp_seconds(F.min(SECOND)).alias("episode_start"),
            F.timestamp_seconds(F.max(SECOND)).alias("episode_end"),
            F.count("*").alias("throttled_seconds"),
            kinds.alias("_kinds"),
            F.max("excess").alias("excess_max"),
            F.max("certifier_queue").alias("certifier_queue_max"),
            F.max("applier_queue").alias("applier_queue_max"),
        )
        .select(
            GROUP_NAME,
            MEMBER_ID,
            "episode_start",
            "episode_end",
            "throttled_seconds",
            F.array_join("_kinds", "+").alias("bottleneck"),
            "excess_max",
            "certifier_queue_max",
            "applier_queue_max",
            DAY,
        )
    )


def flow_tables(history: DataFrame) -> dict[str, DataFrame]:
    """The three flow-control tables of `history` as one lazy plan (tests).

    Args:
        history: history rows with the flow columns.

    Returns:
        Table name -> DataFrame (with `day`, the output partition).
    """
    return flow_tables_from_seconds(flow_seconds(history))


def flow_tables_from_seconds(seconds: DataFrame) -> dict[str, DataFrame]:
    """The three flow-control tables from `flow_seconds` (rollup.py persists them: one scan).

    Args:
        seconds: output of `flow_seconds`.

    Returns:
        Table name -> DataFrame (with `day`, the output partition).
    """
    return {
        "flow_control_group_hour": _group_hour(seconds),
        "flow_control_member_hour": _member_hour(seconds),
        "flow_control_episodes": _episodes(seconds),
    }
