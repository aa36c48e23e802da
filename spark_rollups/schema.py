"""The history columns the rollups read and the rollup tables' columns (DESIGN.md 6-7).

Strategy: this package ships without grstats, so the history names and types
it reads are copied here (a test asserts they equal
grstats.core.records.HISTORY_COLUMNS).  The history is read with the
explicit `HISTORY_SCHEMA` rather than the schema of whichever file Spark
opens first: a file written before a column existed (the lag figures were
appended in issue 10) then reads that column as NULL, without `mergeSchema`
opening every footer.

Invariants: history columns are only appended, never renamed; the member
tables' lag columns are `<figure>_{p50,p95,p99,max}` for each of `LAGS`; the
applier tables' shares are `<wait>_share` for each `<wait>_wait_ns`.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = [
    "APPLIER_COLUMNS",
    "APPLIER_COUNTERS",
    "APPLIER_SHARES",
    "BUCKET",
    "COMMIT_COLUMNS",
    "COMMIT_COUNTERS",
    "COMMIT_OPS",
    "COMMIT_SHARED",
    "COUNTERS",
    "DAY",
    "FLOW_COLUMNS",
    "FLOW_INPUT_COLUMNS",
    "FLOW_SCHEMA",
    "GAUGES",
    "GROUP_COLUMNS",
    "GROUP_NAME",
    "GTID_COLUMNS",
    "GTID_INPUT_COLUMNS",
    "GTID_SCHEMA",
    "HISTORY_INPUT_COLUMNS",
    "HISTORY_SCHEMA",
    "INCARNATION",
    "LAGS",
    "LAG_STATS",
    "MEMBER_COLUMNS",
    "MEMBER_ID",
    "SAMPLED_AT",
    "SEQ",
    "percentile_name",
]

GROUP_NAME = "group_name"
MEMBER_ID = "member_id"
INCARNATION = "incarnation"
SEQ = "seq"
SAMPLED_AT = "sampled_at"
DAY = "day"  # UTC date of sampled_at (the output partition)
BUCKET = "bucket_start"

# (history column, rollup column): counters become increases per bucket.
COUNTERS: tuple[tuple[str, str], ...] = (
    ("count_transactions_checked", "transactions_checked"),
    ("count_conflicts_detected", "conflicts_detected"),
    ("count_transactions_remote_applied", "transactions_remote_applied"),
    ("count_transactions_local_proposed", "transactions_local_proposed"),
    ("count_transactions_local_rollback", "transactions_local_rollback"),
)
# (history column, rollup prefix, with p95): gauges become min/avg/max[/p95].
GAUGES: tuple[tuple[str, str, bool], ...] = (
    ("count_transactions_in_queue", "transactions_in_queue", True),
    ("count_transactions_remote_in_applier_queue", "transactions_remote_in_applier_queue", True),
    ("count_transactions_rows_validating", "transactions_rows_validating", False),
)
# Lag figures of the applier channel (history columns, nullable doubles, seconds):
# applying (MySQL Shell's replicationLag), queue, apply, and the apply time.  They
# keep their history names in the rollups.  The clock offset is stored in the
# history but not rolled up: it is a property of the clocks, not a lag.
LAGS: tuple[str, ...] = (
    "replication_lag_seconds",
    "queue_lag_seconds",
    "apply_lag_seconds",
    "apply_time_seconds",
)
LAG_PERCENTILES = (0.50, 0.95, 0.99)

# The group_replication_applier channel's WL#15620 counters (history columns,
# nullable int64, appended after the lag figures in issue 11) and their rollup
# columns: increases per bucket, like COUNTERS, but NULL without any figure.
APPLIER_COUNTERS: tuple[tuple[str, str], ...] = (
    ("total_active_time_duration", "active_ns"),
    ("transactions_committed_count", "transactions_committed"),
    ("transactions_committed_size_bytes_sum", "committed_bytes"),
    ("events_committed_count", "events_committed"),
    ("waits_for_work_from_source_count", "work_from_source_waits"),
    ("waits_for_work_from_source_sum_time", "work_from_source_wait_ns"),
    ("waits_for_available_worker_count", "available_worker_waits"),
    ("waits_for_available_worker_sum_time", "available_worker_wait_ns"),
    ("waits_commit_schedule_dependency_count", "commit_schedule_dependency_waits"),
    ("waits_commit_schedule_dependency_sum_time", "commit_schedule_dependency_wait_ns"),
    ("waits_for_worker_queues_memory_count", "worker_queues_memory_waits"),
    ("waits_for_worker_queues_memory_sum_time", "worker_queues_memory_wait_ns"),
    ("waits_worker_queues_full_count", "worker_queues_full_waits"),
    ("waits_worker_queues_full_sum_time", "worker_queues_full_wait_ns"),
    ("waits_due_to_commit_order_count", "commit_order_waits"),
    ("waits_due_to_commit_order_sum_time", "commit_order_wait_ns"),
    ("read_from_relay_log_sum_time", "relay_log_read_wait_ns"),
)
ACTIVE = "active_ns"
# (share column, its wait time column): wait time / active time of the bucket.
APPLIER_SHARES: tuple[tuple[str, str], ...] = tuple(
    (out.removesuffix("_wait_ns") + "_share", out)
    for _, out in APPLIER_COUNTERS
    if out.endswith("_wait_ns")
)

# The commit path's cumulative Gr_* counters per operation (history columns
# cp_<op>_count and cp_<op>_us, nullable int64, appended after flow control in
# issue 27; kept on one sample per 10 s) and their rollup columns: increases per
# bucket like APPLIER_COUNTERS. The message round trip contains the consensus
# round, so it is shown but not shared out (COMMIT_SHARED).
COMMIT_OPS: tuple[str, ...] = (
    "consensus",
    "round_trip",
    "certification_gc",
    "before_begin",
    "after_termination",
    "after_sync",
    "flow_control",
)
COMMIT_SHARED: tuple[str, ...] = tuple(op for op in COMMIT_OPS if op != "round_trip")
COMMIT_COUNTERS: tuple[tuple[str, str], ...] = tuple(
    (f"cp_{op}_{unit}", f"{op}_{unit}") for op in COMMIT_OPS for unit in ("count", "us")
)

HISTORY_INPUT_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    MEMBER_ID,
    INCARNATION,
    SEQ,
    SAMPLED_AT,
    *(src for src, _ in COUNTERS),
    *(src for src, _, _ in GAUGES),
    *LAGS,
    *(src for src, _ in APPLIER_COUNTERS),
    *(src for src, _ in COMMIT_COUNTERS),
)

_TYPES: dict[str, DataType] = {
    GROUP_NAME: StringType(),
    MEMBER_ID: StringType(),
    INCARNATION: DecimalType(20, 0),  # Parquet UINT_64, as Spark reads it
    SEQ: LongType(),
    SAMPLED_AT: TimestampType(),
    **{src: LongType() for src, _ in COUNTERS},
    **{src: LongType() for src, _, _ in GAUGES},
    **{lag: DoubleType() for lag in LAGS},
    **{src: LongType() for src, _ in APPLIER_COUNTERS},
    **{src: LongType() for src, _ in COMMIT_COUNTERS},
}
HISTORY_SCHEMA = StructType([StructField(name, _TYPES[name]) for name in HISTORY_INPUT_COLUMNS])

# The flow-control figures of the daemon's replay (appended last to the history,
# issue 13): read on their own scan by flowrollup.py, NULL in older files.
FLOW_COLUMNS: tuple[tuple[str, DataType], ...] = (
    ("fc_bottleneck", StringType()),
    ("fc_excess_over_threshold", LongType()),
    ("fc_group_quota", LongType()),
    ("fc_throttling", ByteType()),  # Parquet INT(8), as Spark reads it
    ("fc_catch_up_eta_seconds", DoubleType()),
    ("fc_failover_ready", ByteType()),
    # appended after the commit path (issue 38): writers held by the quota, NULL before
    ("fc_writers_held", ByteType()),
)
FLOW_INPUT_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    MEMBER_ID,
    SAMPLED_AT,
    "count_transactions_in_queue",
    "count_transactions_remote_in_applier_queue",
    "count_transactions_remote_applied",
    *(name for name, _ in FLOW_COLUMNS),
)
FLOW_SCHEMA = StructType(
    [StructField(name, _TYPES.get(name) or dict(FLOW_COLUMNS)[name]) for name in FLOW_INPUT_COLUMNS]
)

# The GTID divergence verdict of the recording daemon (appended after the flow
# columns, issue 26): read on their own scan by gtidrollup.py, NULL in older files.
GTID_COLUMNS: tuple[tuple[str, DataType], ...] = (
    ("gtid_errant_count", LongType()),
    ("gtid_missing_count", LongType()),
    ("gtid_recovery_method", StringType()),
)
GTID_INPUT_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    MEMBER_ID,
    SAMPLED_AT,
    *(name for name, _ in GTID_COLUMNS),
)
GTID_SCHEMA = StructType(
    [StructField(name, _TYPES.get(name) or dict(GTID_COLUMNS)[name]) for name in GTID_INPUT_COLUMNS]
)


def percentile_name(prefix: str, fraction: float) -> str:
    """`<prefix>_p95` for 0.95 (the rollup column of one percentile)."""
    return f"{prefix}_p{round(fraction * 100):02d}"


_GAUGE_STATS = tuple(
    f"{out}_{stat}"
    for _, out, p95 in GAUGES
    for stat in (("min", "avg", "max", "p95") if p95 else ("min", "avg", "max"))
)
LAG_STATS: tuple[str, ...] = tuple(
    name
    for lag in LAGS
    for name in (*(percentile_name(lag, f) for f in LAG_PERCENTILES), f"{lag}_max")
)
# Column order of the member tables (DESIGN.md section 7 names + restarts, then lags).
MEMBER_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    MEMBER_ID,
    BUCKET,
    *(out for _, out in COUNTERS),
    *_GAUGE_STATS,
    "samples",
    "coverage",
    "resets",
    "restarts",
    *LAG_STATS,
)
GROUP_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    BUCKET,
    "members",
    *(out for _, out in COUNTERS),
    "conflict_rate",
    "transactions_in_queue_max",
    "transactions_remote_in_applier_queue_max",
    "samples",
    "coverage",
    "resets",
    "restarts",
)
# Column order of the applier tables (applier_member_hour, applier_member_day).
APPLIER_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    MEMBER_ID,
    BUCKET,
    *(out for _, out in APPLIER_COUNTERS),
    *(share for share, _ in APPLIER_SHARES),
    "samples",
    "resets",
)
# Column order of the commit-path tables (commit_member_hour, commit_member_day):
# per operation its count and time (µs) increases, mean time of one (seconds),
# share of the member's commit path (COMMIT_SHARED only); the operation with the
# largest share; kept samples with figures and counter resets.
COMMIT_COLUMNS: tuple[str, ...] = (
    GROUP_NAME,
    MEMBER_ID,
    BUCKET,
    *(out for _, out in COMMIT_COUNTERS),
    *(f"{op}_mean_seconds" for op in COMMIT_OPS),
    *(f"{op}_share" for op in COMMIT_SHARED),
    "dominant",
    "samples",
    "resets",
)
