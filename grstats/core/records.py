"""One history sample: the row schema of DESIGN.md section 6 (names are fixed).

Shared by the daemon (which produces rows), `grstats simulate` (which writes
the same rows offline) and history.py (which persists them).

Columns are only ever appended (the lag figures came after
flow_control_mode, the applier counters after the lag figures, then the
flow-control figures, then the GTID divergence counts, then the commit path,
then whether flow control held the writers),
so the schema of an older file is a prefix of this one and its rows read with
NULLs in the newer columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from grstats.core.columns import (
    APPLIER_METRICS,
    COMMIT_PATH_HISTORY,
    FLOW_CONTROL,
    FLOW_HELD_HISTORY,
    FLOW_HISTORY,
    MEMBER_GTIDS,
    MEMBER_LAG,
    STATS_ITEM_COLUMNS,
)

# The lag figures of the member's group_replication_applier channel, as
# replication_group_member_lag derives them (nullable doubles, seconds).
LAG_HISTORY_COLUMNS: tuple[str, ...] = tuple(
    str(c.history) for c in MEMBER_LAG.columns if c.history is not None
)
# The WL#15620 counters of the member's group_replication_applier channel, as
# replication_applier_metrics shows them (nullable int64: nanoseconds, bytes,
# counts); the gauges are not kept (PENDING is already the stats' applier queue).
APPLIER_HISTORY_COLUMNS: tuple[str, ...] = tuple(
    str(c.history) for c in APPLIER_METRICS.columns if c.history is not None and c.kind == "counter"
)

# The flow-control figures of the daemon's replay (core.flowreplay) for the row's
# member at recording time: (history column, arrow type name). NULL: no replay
# (a collector, or a file written before them).
_FLOW_ARROW = {"varchar(16)": "string", "bigint": "int64", "bigint unsigned": "int64"}
_FLOW_ARROW |= {"tinyint": "int8", "double": "double"}
FLOW_HISTORY_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (str(c.history), _FLOW_ARROW[c.sql_type])
    for c in FLOW_CONTROL.columns
    if c.name in FLOW_HISTORY
)
# Whether writers were held (fc_writers_held), appended after the commit path.
FLOW_HELD_HISTORY_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (str(c.history), _FLOW_ARROW[c.sql_type])
    for c in FLOW_CONTROL.columns
    if c.name in FLOW_HELD_HISTORY
)
# The daemon's GTID divergence verdict for the row's member at recording time
# (core.gtidrows): counts and the recovery method, never the sets. NULL: no
# verdict (a collector, a member without ext.gtids, or a file written before them).
GTID_HISTORY_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (str(c.history), _FLOW_ARROW[c.sql_type]) for c in MEMBER_GTIDS.columns if c.history
)
# The commit path's cumulative Gr_* counters per operation (columns.COMMIT_PATH_HISTORY:
# count, then time in µs), nullable int64: NULL on a server without them (8.0), from a
# member that did not send the section, and in files written before them.
COMMIT_PATH_HISTORY_COLUMNS: tuple[str, ...] = tuple(
    name for _, count, time_us in COMMIT_PATH_HISTORY for name in (count, time_us)
)

# (column, arrow type name) in file order; history builds its Arrow schema from this.
# The stats part is derived from the column registry (numbers, then GTID texts).
HISTORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("group_name", "string"),
    ("member_id", "string"),
    ("member_host", "string"),
    ("member_port", "int32"),
    ("member_state", "string"),
    ("member_role", "string"),
    ("member_version", "string"),
    ("view_id", "string"),
    ("incarnation", "uint64"),
    ("seq", "int64"),
    ("sampled_at", "timestamp[us, tz=UTC]"),
    # null GTID texts when the message's flag was '0'
    *((str(c.history), "int64" if c.numeric else "string") for c in STATS_ITEM_COLUMNS),
    ("flow_control_mode", "int8"),
    # appended after flow_control_mode: files written before them are a prefix and
    # read with NULLs
    *((name, "double") for name in LAG_HISTORY_COLUMNS),
    *((name, "int64") for name in APPLIER_HISTORY_COLUMNS),
    # flow control: appended as one block (older files read it as NULL)
    *FLOW_HISTORY_COLUMNS,
    # GTID divergence: appended after flow control (older files read it as NULL)
    *GTID_HISTORY_COLUMNS,
    # the commit path: appended after the GTID counts, as one block (older files: NULL)
    *((name, "int64") for name in COMMIT_PATH_HISTORY_COLUMNS),
    # writers held by flow control (older files: NULL, not known)
    *FLOW_HELD_HISTORY_COLUMNS,
)

# The non-finite doubles a history column stores as they are (declared in the
# registry: `Column.history_keeps`); any other non-finite value is stored NULL.
HISTORY_KEEPS: dict[str, frozenset[float]] = {
    str(c.history): frozenset(c.history_keeps)
    for c in (*MEMBER_LAG.columns, *FLOW_CONTROL.columns)
    if c.history is not None and c.history_keeps
}
# The columns that identify a sample: a row whose identity cannot be stored is dropped.
HISTORY_IDENTITY: frozenset[str] = frozenset(
    ("group_name", "member_id", "incarnation", "seq", "sampled_at")
)


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One sample of one member; field names equal the history column names."""

    group_name: str
    member_id: str
    member_host: str
    member_port: int
    member_state: str
    member_role: str
    member_version: str
    view_id: str
    incarnation: int
    seq: int
    sampled_at: int  # microseconds since the epoch, UTC
    count_transactions_in_queue: int
    count_transactions_checked: int
    count_conflicts_detected: int
    count_transactions_rows_validating: int
    count_transactions_remote_in_applier_queue: int
    count_transactions_remote_applied: int
    count_transactions_local_proposed: int
    count_transactions_local_rollback: int
    transactions_committed_all_members: str | None
    last_conflict_free_transaction: str | None
    flow_control_mode: int
    # the applier channel's lag figures (None: unknown, or no lag reported)
    replication_lag_seconds: float | None = None
    queue_lag_seconds: float | None = None
    apply_lag_seconds: float | None = None
    apply_time_seconds: float | None = None
    clock_offset_seconds: float | None = None
    # the applier channel's WL#15620 counters (None: unknown, or no metrics)
    total_active_time_duration: int | None = None
    transactions_committed_count: int | None = None
    transactions_committed_size_bytes_sum: int | None = None
    events_committed_count: int | None = None
    waits_for_work_from_source_count: int | None = None
    waits_for_work_from_source_sum_time: int | None = None
    waits_for_available_worker_count: int | None = None
    waits_for_available_worker_sum_time: int | None = None
    waits_commit_schedule_dependency_count: int | None = None
    waits_commit_schedule_dependency_sum_time: int | None = None
    waits_for_worker_queues_memory_count: int | None = None
    waits_for_worker_queues_memory_sum_time: int | None = None
    waits_worker_queues_full_count: int | None = None
    waits_worker_queues_full_sum_time: int | None = None
    waits_due_to_commit_order_count: int | None = None
    waits_due_to_commit_order_sum_time: int | None = None
    read_from_relay_log_sum_time: int | None = None
    # the daemon's flow-control replay for this member (None: no replay)
    fc_bottleneck: str | None = None  # "certifier", "applier" or "" (not a bottleneck)
    fc_excess_over_threshold: int | None = None
    fc_group_quota: int | None = None  # 0 = unlimited
    fc_throttling: int | None = None  # 1 while the quota limits writers
    fc_catch_up_eta_seconds: float | None = None  # +inf: never at this rate
    fc_failover_ready: int | None = None
    # the daemon's GTID divergence verdict for this member (None: no verdict)
    gtid_errant_count: int | None = None  # errant GTIDs (core.gtid_divergence)
    gtid_missing_count: int | None = None  # GTIDs every other ONLINE member has
    gtid_recovery_method: str | None = None  # "INCREMENTAL", "CLONE" or "REPROVISION"
    # the commit path's counters as the member's server showed them (None: unknown)
    cp_consensus_count: int | None = None
    cp_consensus_us: int | None = None
    cp_round_trip_count: int | None = None
    cp_round_trip_us: int | None = None
    cp_certification_gc_count: int | None = None
    cp_certification_gc_us: int | None = None
    cp_before_begin_count: int | None = None
    cp_before_begin_us: int | None = None
    cp_after_termination_count: int | None = None
    cp_after_termination_us: int | None = None
    cp_after_sync_count: int | None = None
    cp_after_sync_us: int | None = None
    cp_flow_control_count: int | None = None
    cp_flow_control_us: int | None = None
    # 1 while a writer's commits reached the flow-control quota (None: no replay)
    fc_writers_held: int | None = None
