"""Every table grstats shows, declared once: columns, types, sources, history and metric names.

Strategy: a table is a `TableDef` of `Column`s. A column names its
performance_schema (or grstats) column, its MySQL type as `SHOW COLUMNS`
would print it, what it is (`text`, `id`, `counter`, `gauge`, `number`), the
`PipelineStats` field it comes from (`item`), its history column (`history`)
and its Prometheus metric (`metric`). Row builders, the mysql and simulated
sources, history records, snapshots, `/metrics` and the SQL endpoint derive
what they need from these declarations, so a new table is one declaration and
a renamed column is one edit.

Invariants: each column name string appears in this module only; other
modules refer to the constants below (`columns.MEMBER_ID`). The history order
of the stats columns is `MEMBER_STATS`' order with the numbers first and the
two GTID texts after them: the fixed file order of DESIGN.md section 6.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Final, Literal

ColumnKind = Literal["text", "id", "counter", "gauge", "number", "timestamp"]

GROUP_REPLICATION_CHANNEL: Final = "group_replication_applier"

# -- column names (performance_schema's, upper case) ---------------------------

CHANNEL_NAME: Final = "CHANNEL_NAME"
VIEW_ID: Final = "VIEW_ID"
MEMBER_ID: Final = "MEMBER_ID"
COUNT_TRANSACTIONS_IN_QUEUE: Final = "COUNT_TRANSACTIONS_IN_QUEUE"
COUNT_TRANSACTIONS_CHECKED: Final = "COUNT_TRANSACTIONS_CHECKED"
COUNT_CONFLICTS_DETECTED: Final = "COUNT_CONFLICTS_DETECTED"
COUNT_TRANSACTIONS_ROWS_VALIDATING: Final = "COUNT_TRANSACTIONS_ROWS_VALIDATING"
TRANSACTIONS_COMMITTED_ALL_MEMBERS: Final = "TRANSACTIONS_COMMITTED_ALL_MEMBERS"
LAST_CONFLICT_FREE_TRANSACTION: Final = "LAST_CONFLICT_FREE_TRANSACTION"
COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE: Final = "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"
COUNT_TRANSACTIONS_REMOTE_APPLIED: Final = "COUNT_TRANSACTIONS_REMOTE_APPLIED"
COUNT_TRANSACTIONS_LOCAL_PROPOSED: Final = "COUNT_TRANSACTIONS_LOCAL_PROPOSED"
COUNT_TRANSACTIONS_LOCAL_ROLLBACK: Final = "COUNT_TRANSACTIONS_LOCAL_ROLLBACK"

MEMBER_HOST: Final = "MEMBER_HOST"
MEMBER_PORT: Final = "MEMBER_PORT"
MEMBER_STATE: Final = "MEMBER_STATE"
MEMBER_ROLE: Final = "MEMBER_ROLE"
MEMBER_VERSION: Final = "MEMBER_VERSION"
MEMBER_COMMUNICATION_STACK: Final = "MEMBER_COMMUNICATION_STACK"

# grstats_member_status (grstats' own facts about each member)
GROUP_NAME: Final = "GROUP_NAME"
IS_LOCAL: Final = "IS_LOCAL"
LAST_SEEN_AGE_SECONDS: Final = "LAST_SEEN_AGE_SECONDS"
INCARNATION: Final = "INCARNATION"
SEQ: Final = "SEQ"
ACCEPTED: Final = "ACCEPTED"

# replication_group_member_lag: WL#7374's names (replication_connection_status,
# replication_applier_status_by_coordinator, replication_applier_status_by_worker)
LAST_QUEUED_TRANSACTION: Final = "LAST_QUEUED_TRANSACTION"
LAST_QUEUED_ORIGINAL_COMMIT: Final = "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"
LAST_QUEUED_IMMEDIATE_COMMIT: Final = "LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"
LAST_QUEUED_START_QUEUE: Final = "LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP"
LAST_QUEUED_END_QUEUE: Final = "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP"
LAST_PROCESSED_TRANSACTION: Final = "LAST_PROCESSED_TRANSACTION"
LAST_PROCESSED_ORIGINAL_COMMIT: Final = "LAST_PROCESSED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"
LAST_PROCESSED_IMMEDIATE_COMMIT: Final = "LAST_PROCESSED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"
LAST_PROCESSED_START_BUFFER: Final = "LAST_PROCESSED_TRANSACTION_START_BUFFER_TIMESTAMP"
LAST_PROCESSED_END_BUFFER: Final = "LAST_PROCESSED_TRANSACTION_END_BUFFER_TIMESTAMP"
LAST_APPLIED_TRANSACTION: Final = "LAST_APPLIED_TRANSACTION"
LAST_APPLIED_ORIGINAL_COMMIT: Final = "LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"
LAST_APPLIED_IMMEDIATE_COMMIT: Final = "LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"
LAST_APPLIED_START_APPLY: Final = "LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP"
LAST_APPLIED_END_APPLY: Final = "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"
APPLYING_TRANSACTION: Final = "APPLYING_TRANSACTION"
APPLYING_ORIGINAL_COMMIT: Final = "APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"
APPLYING_IMMEDIATE_COMMIT: Final = "APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"
APPLYING_START_APPLY: Final = "APPLYING_TRANSACTION_START_APPLY_TIMESTAMP"
# the derived figures (grstats' names; tests and tooling depend on them)
REPLICATION_LAG: Final = "REPLICATION_LAG"
REPLICATION_LAG_SECONDS: Final = "REPLICATION_LAG_SECONDS"
QUEUE_LAG_SECONDS: Final = "QUEUE_LAG_SECONDS"
APPLY_LAG_SECONDS: Final = "APPLY_LAG_SECONDS"
APPLY_TIME_SECONDS: Final = "APPLY_TIME_SECONDS"
CLOCK_OFFSET_SECONDS: Final = "CLOCK_OFFSET_SECONDS"
LAG_WITHIN_CLOCK_OFFSET: Final = "LAG_WITHIN_CLOCK_OFFSET"

# replication_applier_metrics and replication_applier_progress_by_worker
# (WL#15620; MySQL 9.1 Enterprise, every edition from 9.7), names as MySQL ships
# them (components/replication_applier_metrics/applier_metrics_pfs_table.cc);
# the worklog's draft names differ for three columns, see _HISTORY_DRAFT_NAMES
TOTAL_ACTIVE_TIME_DURATION: Final = "TOTAL_ACTIVE_TIME_DURATION"
LAST_APPLIER_START: Final = "LAST_APPLIER_START"
TRANSACTIONS_COMMITTED_COUNT: Final = "TRANSACTIONS_COMMITTED_COUNT"
TRANSACTIONS_ONGOING_COUNT: Final = "TRANSACTIONS_ONGOING_COUNT"
TRANSACTIONS_PENDING_COUNT: Final = "TRANSACTIONS_PENDING_COUNT"
TRANSACTIONS_COMMITTED_SIZE_BYTES_SUM: Final = "TRANSACTIONS_COMMITTED_SIZE_BYTES_SUM"
TRANSACTIONS_ONGOING_FULL_SIZE_BYTES_SUM: Final = "TRANSACTIONS_ONGOING_FULL_SIZE_BYTES_SUM"
TRANSACTIONS_ONGOING_PROGRESS_SIZE_BYTES_SUM: Final = "TRANSACTIONS_ONGOING_PROGRESS_SIZE_BYTES_SUM"
TRANSACTIONS_PENDING_SIZE_BYTES_SUM: Final = "TRANSACTIONS_PENDING_SIZE_BYTES_SUM"
EVENTS_COMMITTED_COUNT: Final = "EVENTS_COMMITTED_COUNT"
WAITS_FOR_WORK_FROM_SOURCE_COUNT: Final = "WAITS_FOR_WORK_FROM_SOURCE_COUNT"
WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME: Final = "WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME"
WAITS_FOR_AVAILABLE_WORKER_COUNT: Final = "WAITS_FOR_AVAILABLE_WORKER_COUNT"
WAITS_FOR_AVAILABLE_WORKER_SUM_TIME: Final = "WAITS_FOR_AVAILABLE_WORKER_SUM_TIME"
WAITS_COMMIT_SCHEDULE_DEPENDENCY_COUNT: Final = "WAITS_COMMIT_SCHEDULE_DEPENDENCY_COUNT"
WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME: Final = "WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME"
WAITS_FOR_WORKER_QUEUE_MEMORY_COUNT: Final = "WAITS_FOR_WORKER_QUEUE_MEMORY_COUNT"
WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME: Final = "WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME"
WAITS_WORKER_QUEUES_FULL_COUNT: Final = "WAITS_WORKER_QUEUES_FULL_COUNT"
WAITS_WORKER_QUEUES_FULL_SUM_TIME: Final = "WAITS_WORKER_QUEUES_FULL_SUM_TIME"
WAITS_DUE_TO_COMMIT_ORDER_COUNT: Final = "WAITS_DUE_TO_COMMIT_ORDER_COUNT"
WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME: Final = "WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME"
TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME: Final = "TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME"
WORKER_ID: Final = "WORKER_ID"
THREAD_ID: Final = "THREAD_ID"
ONGOING_TRANSACTION_TYPE: Final = "ONGOING_TRANSACTION_TYPE"
ONGOING_TRANSACTION_FULL_SIZE_BYTES: Final = "ONGOING_TRANSACTION_FULL_SIZE_BYTES"
ONGOING_TRANSACTION_APPLIED_SIZE_BYTES: Final = "ONGOING_TRANSACTION_APPLIED_SIZE_BYTES"
# grstats_member_status: where a member's applier metrics come from
APPLIER_METRICS_SOURCE: Final = "APPLIER_METRICS_SOURCE"
# grstats_member_status: where a member's rows come from: 'daemon' (the member's
# own daemon: the local sample or the bus) or 'server' (the local server's view
# only: no daemon publishes for that member)
ROW_ORIGIN: Final = "ROW_ORIGIN"
ORIGIN_DAEMON: Final = "daemon"
ORIGIN_SERVER: Final = "server"
# grstats_member_status: comparisons of the local server's view of a member with
# what its daemon published that disagreed (core.oracle); NULL: never compared
SERVER_DISAGREEMENTS: Final = "SERVER_DISAGREEMENTS"

# Why an envelope was refused; each reason is counted per member and in total.
REJECT_REASONS: Final = (
    "malformed",
    "oversized",
    "spoofed",
    "other_group",
    "stale",
    "invalid_id",
    "out_of_range",
    "future",
    "over_limit",
)


def rejected_column(reason: str) -> str:
    """The grstats_member_status column counting one reject reason."""
    return f"REJECTED_{reason.upper()}"


@dataclass(frozen=True, slots=True)
class Column:
    """One column of one table.

    Attributes:
        name: the column name as MySQL (or grstats) shows it.
        sql_type: the MySQL type, as `SHOW COLUMNS` prints it.
        kind: text, id (identifying text), counter, gauge or number.
        item: the `protocol.PipelineStats` field it comes from, if any.
        history: the history column it is stored in, if any.
        metric: the Prometheus metric it is exported as, if any.
        help: one line for the metric's HELP and the docs.
        nullable: whether the column may be NULL.
        metric_labels: constant labels of this column's series, for a metric
            that several columns share (told apart by these labels).
        history_keeps: the non-finite doubles that mean something in this
            column and are stored as they are (any other one is stored NULL).
        metric_enum: for a text column with a metric, (label, values): one 0/1
            series per value, 1 for the value the cell holds (a NULL cell: none).
    """

    name: str
    sql_type: str
    kind: ColumnKind = "text"
    item: str | None = None
    history: str | None = None
    metric: str | None = None
    help: str = ""
    nullable: bool = False
    metric_labels: tuple[tuple[str, str], ...] = ()
    history_keeps: tuple[float, ...] = ()
    metric_enum: tuple[str, tuple[str, ...]] | None = None

    @property
    def numeric(self) -> bool:
        """True for counters, gauges and other numbers."""
        return self.kind in ("counter", "gauge", "number")


@dataclass(frozen=True, slots=True)
class MetricPolicy:
    """How /metrics shows a table's rows (api.table_metrics; the label policy).

    Every series is labelled `group` and `member_id` (a row without MEMBER_ID
    has none), then `keys` lower-cased, then its column's `metric_labels`;
    counters are counters, the other numbers gauges.

    Attributes:
        keys: the key columns that label each series beside the member.
        skip_member_states: members in these states (replication_group_members)
            have no series of this table (an OFFLINE member's zeroed stats are
            no counter reset).
        hook: the name of the table's own extra families in `api.table_metrics`
            ("" for none): what a column declaration cannot say (info series,
            ages as Unix times).
    """

    keys: tuple[str, ...] = (CHANNEL_NAME,)
    skip_member_states: tuple[str, ...] = ()
    hook: str = ""


@dataclass(frozen=True, slots=True)
class TableDef:
    """A table: its name, the schema the SQL endpoint shows it in, its columns in order.

    `metrics` is how /metrics shows its rows (`MetricPolicy`).
    """

    name: str
    schema: str
    columns: tuple[Column, ...]
    metrics: MetricPolicy = MetricPolicy()

    @property
    def names(self) -> tuple[str, ...]:
        """The column names in order."""
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        """The column called `name`; KeyError when there is none."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


def _count(
    name: str,
    kind: ColumnKind,
    item: str,
    metric: str,
    help_: str,
) -> Column:
    return Column(
        name=name,
        sql_type="bigint unsigned",
        kind=kind,
        item=item,
        history=name.lower(),
        metric=metric,
        help=help_,
    )


MEMBER_STATS = TableDef(
    name="replication_group_member_stats",
    schema="performance_schema",
    metrics=MetricPolicy(keys=(), skip_member_states=("OFFLINE",)),
    columns=(
        Column(CHANNEL_NAME, "char(64)", "id"),
        Column(VIEW_ID, "char(60)", "id"),
        Column(MEMBER_ID, "char(36)", "id"),
        _count(
            COUNT_TRANSACTIONS_IN_QUEUE,
            "gauge",
            "transactions_waiting_certification",
            "mysql_perf_schema_transactions_in_queue",
            "The number of transactions in the queue pending conflict detection checks.",
        ),
        _count(
            COUNT_TRANSACTIONS_CHECKED,
            "counter",
            "transactions_certified",
            "mysql_perf_schema_transactions_checked_total",
            "The number of transactions that have been checked for conflicts.",
        ),
        _count(
            COUNT_CONFLICTS_DETECTED,
            "counter",
            "transactions_negative_certified",
            "mysql_perf_schema_conflicts_detected_total",
            "The number of transactions that have not passed the conflict detection check.",
        ),
        _count(
            COUNT_TRANSACTIONS_ROWS_VALIDATING,
            "gauge",
            "transactions_rows_validating",
            "mysql_perf_schema_transactions_rows_validating",
            "Current size of the conflict detection database (rows not yet garbage collected).",
        ),
        Column(
            TRANSACTIONS_COMMITTED_ALL_MEMBERS,
            "longtext",
            "text",
            item="transactions_committed_all_members",
            history=TRANSACTIONS_COMMITTED_ALL_MEMBERS.lower(),
        ),
        Column(
            LAST_CONFLICT_FREE_TRANSACTION,
            "text",
            "text",
            item="transaction_last_conflict_free",
            history=LAST_CONFLICT_FREE_TRANSACTION.lower(),
        ),
        _count(
            COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE,
            "gauge",
            "transactions_waiting_apply",
            "mysql_perf_schema_transactions_remote_in_applier_queue",
            "Transactions received from the group that are waiting to be applied.",
        ),
        _count(
            COUNT_TRANSACTIONS_REMOTE_APPLIED,
            "counter",
            "transactions_applied",
            "mysql_perf_schema_transactions_remote_applied_total",
            "Transactions this member has received from the group and applied.",
        ),
        _count(
            COUNT_TRANSACTIONS_LOCAL_PROPOSED,
            "counter",
            "transactions_local",
            "mysql_perf_schema_transactions_local_proposed_total",
            "Transactions which originated on this member and were sent to the group.",
        ),
        _count(
            COUNT_TRANSACTIONS_LOCAL_ROLLBACK,
            "counter",
            "transactions_local_rollback",
            "mysql_perf_schema_transactions_local_rollback_total",
            "Transactions which originated on this member and were rolled back by the group.",
        ),
    ),
)

MEMBERS = TableDef(
    name="replication_group_members",
    schema="performance_schema",
    metrics=MetricPolicy(keys=(), hook="members"),
    columns=(
        Column(CHANNEL_NAME, "char(64)", "id"),
        Column(MEMBER_ID, "char(36)", "id"),
        Column(MEMBER_HOST, "char(255)"),
        Column(MEMBER_PORT, "int", "number", nullable=True),
        Column(MEMBER_STATE, "char(64)"),
        Column(MEMBER_ROLE, "char(64)"),
        Column(MEMBER_VERSION, "char(64)"),
        Column(MEMBER_COMMUNICATION_STACK, "char(64)"),
    ),
)

MEMBER_STATUS = TableDef(
    name="grstats_member_status",
    schema="grstats",
    metrics=MetricPolicy(keys=(), hook="member_status"),
    columns=(
        Column(GROUP_NAME, "char(36)", "id"),
        Column(MEMBER_ID, "char(36)", "id"),
        Column(IS_LOCAL, "tinyint", "number"),
        Column(LAST_SEEN_AGE_SECONDS, "double", "number", nullable=True),
        Column(INCARNATION, "bigint unsigned", "number", nullable=True),
        Column(SEQ, "bigint unsigned", "number", nullable=True),
        Column(ACCEPTED, "bigint unsigned", "counter"),
        *(Column(rejected_column(r), "bigint unsigned", "counter") for r in REJECT_REASONS),
        # 'native' (WL#15620 tables), 'derived' (a pre-WL#15620 server: only what
        # its 8.0 tables tell, the rest NULL; see core.applier), NULL (none)
        Column(APPLIER_METRICS_SOURCE, "char(16)", nullable=True),
        Column(ROW_ORIGIN, "char(8)"),
        Column(SERVER_DISAGREEMENTS, "bigint unsigned", "counter", nullable=True),
    ),
)


def _ts(name: str, metric: str | None = None, help_: str = "") -> Column:
    # MySQL's TIMESTAMP(6): shown as 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), the
    # all-zero value when there is none, as performance_schema shows it.
    return Column(name, "timestamp(6)", "timestamp", metric=metric, help=help_)


def _gtid(name: str) -> Column:
    # MySQL 8.4+: CHAR(90), nullable (a tagged GTID is up to 89 characters; 8.0's
    # CHAR(57) GTIDs fit); the mysql source keeps all of it
    return Column(name, "char(90)", nullable=True)


def _seconds(
    name: str, metric: str, help_: str, labels: tuple[tuple[str, str], ...] = ()
) -> Column:
    return Column(
        name,
        "double",
        "gauge",
        history=name.lower(),
        metric=metric,
        help=help_,
        nullable=True,
        metric_labels=labels,
    )


_MYSQLD_EXPORTER = "mysql_perf_schema_"  # its perf_schema.replication_applier_status_by_worker
_STAGE_LAG = "grstats_member_replication_lag_seconds"

MEMBER_LAG = TableDef(
    name="replication_group_member_lag",
    schema="performance_schema",
    columns=(
        Column(MEMBER_ID, "char(36)", "id"),
        Column(CHANNEL_NAME, "char(64)", "id"),
        _gtid(LAST_QUEUED_TRANSACTION),
        _ts(LAST_QUEUED_ORIGINAL_COMMIT),
        _ts(LAST_QUEUED_IMMEDIATE_COMMIT),
        _ts(LAST_QUEUED_START_QUEUE),
        _ts(LAST_QUEUED_END_QUEUE),
        _gtid(LAST_PROCESSED_TRANSACTION),
        _ts(LAST_PROCESSED_ORIGINAL_COMMIT),
        _ts(LAST_PROCESSED_IMMEDIATE_COMMIT),
        _ts(LAST_PROCESSED_START_BUFFER),
        _ts(LAST_PROCESSED_END_BUFFER),
        _gtid(LAST_APPLIED_TRANSACTION),
        _ts(
            LAST_APPLIED_ORIGINAL_COMMIT,
            _MYSQLD_EXPORTER + "last_applied_transaction_original_commit_timestamp_seconds",
            "When the last transaction applied was committed on the original source.",
        ),
        _ts(
            LAST_APPLIED_IMMEDIATE_COMMIT,
            _MYSQLD_EXPORTER + "last_applied_transaction_immediate_commit_timestamp_seconds",
            "When the last transaction applied was committed on the immediate source.",
        ),
        _ts(
            LAST_APPLIED_START_APPLY,
            _MYSQLD_EXPORTER + "last_applied_transaction_start_apply_timestamp_seconds",
            "When the member started applying the last applied transaction.",
        ),
        _ts(
            LAST_APPLIED_END_APPLY,
            _MYSQLD_EXPORTER + "last_applied_transaction_end_apply_timestamp_seconds",
            "When the member finished applying the last applied transaction.",
        ),
        _gtid(APPLYING_TRANSACTION),
        _ts(
            APPLYING_ORIGINAL_COMMIT,
            _MYSQLD_EXPORTER + "applying_transaction_original_commit_timestamp_seconds",
            "When the transaction being applied was committed on the original source.",
        ),
        _ts(
            APPLYING_IMMEDIATE_COMMIT,
            _MYSQLD_EXPORTER + "applying_transaction_immediate_commit_timestamp_seconds",
            "When the transaction being applied was committed on the immediate source.",
        ),
        _ts(
            APPLYING_START_APPLY,
            _MYSQLD_EXPORTER + "applying_transaction_start_apply_timestamp_seconds",
            "When the member started applying the transaction being applied.",
        ),
        Column(REPLICATION_LAG, "varchar(32)", nullable=True),
        _seconds(
            REPLICATION_LAG_SECONDS,
            _STAGE_LAG,
            "Replication lag by stage: applying (MySQL Shell's replicationLag), "
            "queue (end queue - original commit), apply (end apply - original commit).",
            (("stage", "applying"),),
        ),
        _seconds(QUEUE_LAG_SECONDS, _STAGE_LAG, "", (("stage", "queue"),)),
        _seconds(APPLY_LAG_SECONDS, _STAGE_LAG, "", (("stage", "apply"),)),
        _seconds(
            APPLY_TIME_SECONDS,
            "grstats_member_apply_time_seconds",
            "How long the last applied transaction took to apply (end - start apply).",
        ),
        _seconds(
            CLOCK_OFFSET_SECONDS,
            "grstats_member_clock_offset_seconds",
            "The member's clock minus this daemon's, estimated from envelope send times.",
        ),
        Column(
            LAG_WITHIN_CLOCK_OFFSET,
            "tinyint",
            "gauge",
            metric="grstats_member_lag_within_clock_offset",
            help="1 when a lag figure is small enough that clock skew could explain it.",
            nullable=True,
        ),
    ),
)

# performance_schema.global_status (the server's Gr_flow_control_throttle_* figures)
VARIABLE_NAME: Final = "VARIABLE_NAME"
VARIABLE_VALUE: Final = "VARIABLE_VALUE"

# grstats_flow_control: every daemon's replay of MySQL's QUOTA flow control
# (core.flowreplay) over all members' stats, plus the local server's own
# Gr_flow_control_throttle_* figures where it has them (SERVER_*: the local
# row only, NULL elsewhere and on servers without the flow-control stats
# component). SERVER_THROTTLE_TIME_SUM is MySQL's: microseconds summed over
# held transactions (two sessions held 1 s add 2_000_000), not the wall time
# of THROTTLED_SECONDS; SERVER_THROTTLE_LAST_THROTTLE_TIMESTAMP is the server's
# UTC text, "" before its first hold.
BOTTLENECK: Final = "BOTTLENECK"
EXCESS_OVER_THRESHOLD: Final = "EXCESS_OVER_THRESHOLD"
GROUP_QUOTA: Final = "GROUP_QUOTA"
THROTTLING: Final = "THROTTLING"
WRITERS_HELD: Final = "WRITERS_HELD"
BOTTLENECK_SINCE: Final = "BOTTLENECK_SINCE"
THROTTLED_SECONDS: Final = "THROTTLED_SECONDS"
CERTIFIER_QUEUE: Final = "CERTIFIER_QUEUE"
APPLIER_QUEUE: Final = "APPLIER_QUEUE"
INCOMING_RATE: Final = "INCOMING_RATE"
APPLY_RATE: Final = "APPLY_RATE"
CATCH_UP_ETA_SECONDS: Final = "CATCH_UP_ETA_SECONDS"
CATCH_UP: Final = "CATCH_UP"
APPLY_CAPACITY: Final = "APPLY_CAPACITY"
FAILOVER_SECONDS: Final = "FAILOVER_SECONDS"
FAILOVER_READY: Final = "FAILOVER_READY"
SERVER_THROTTLE_COUNT: Final = "SERVER_THROTTLE_COUNT"
SERVER_THROTTLE_TIME_SUM: Final = "SERVER_THROTTLE_TIME_SUM"
SERVER_THROTTLE_ACTIVE_COUNT: Final = "SERVER_THROTTLE_ACTIVE_COUNT"
SERVER_THROTTLE_LAST: Final = "SERVER_THROTTLE_LAST_THROTTLE_TIMESTAMP"
BOTTLENECK_KINDS: Final = ("certifier", "applier")
# The flow-control figures the history keeps (appended last, `fc_<name>`): the
# queues themselves are already there (count_transactions_*queue), the rates
# follow from the counters, and THROTTLED_SECONDS is a per-daemon running total.
FLOW_HISTORY: Final = (
    BOTTLENECK,
    EXCESS_OVER_THRESHOLD,
    GROUP_QUOTA,
    THROTTLING,
    CATCH_UP_ETA_SECONDS,
    FAILOVER_READY,
)
# Appended after the commit path's block (files before it read NULL): whether
# writers were held, as Gr_flow_control_throttle_count counts a throttled commit.
FLOW_HELD_HISTORY: Final = (WRITERS_HELD,)


def _flow(
    name: str,
    sql_type: str,
    kind: ColumnKind,
    metric: str | None,
    help_: str = "",
    *,
    keeps: tuple[float, ...] = (),
) -> Column:
    return Column(
        name,
        sql_type,
        kind,
        history=f"fc_{name.lower()}",
        metric=metric,
        help=help_,
        nullable=True,
        history_keeps=keeps,
    )


FLOW_CONTROL = TableDef(
    name="grstats_flow_control",
    schema="grstats",
    metrics=MetricPolicy(keys=()),
    columns=(
        Column(MEMBER_ID, "char(36)", "id"),
        Column(
            BOTTLENECK,
            "varchar(16)",
            history="fc_bottleneck",
            metric="grstats_flow_control_bottleneck",
            help="1 while the member counts as a certifier or applier bottleneck "
            "(its queue over the threshold, MySQL's QUOTA flow control).",
            metric_enum=("kind", BOTTLENECK_KINDS),
        ),
        _flow(
            EXCESS_OVER_THRESHOLD,
            "bigint",
            "gauge",
            "grstats_flow_control_excess_over_threshold",
            "Transactions the member's largest queue exceeds its flow-control threshold by "
            "(0 when under).",
        ),
        _flow(
            GROUP_QUOTA,
            "bigint unsigned",
            "gauge",
            "grstats_flow_control_group_quota",
            "The per-writer quota the group computes this period (0 = unlimited).",
        ),
        _flow(
            THROTTLING,
            "tinyint",
            "gauge",
            "grstats_flow_control_throttling",
            "1 while the flow-control quota is active (quota > 0); writers are held only "
            "when they reach it (grstats_flow_control_writers_held).",
        ),
        _flow(
            WRITERS_HELD,
            "tinyint",
            "gauge",
            "grstats_flow_control_writers_held",
            "1 while a writer's commits reach the quota, so that its next commits wait "
            "(what Gr_flow_control_throttle_count counts).",
        ),
        Column(BOTTLENECK_SINCE, "timestamp(6)", "timestamp", nullable=True),
        _flow(
            THROTTLED_SECONDS,
            "double",
            "counter",
            "grstats_flow_control_throttled_seconds_total",
            "Seconds writers were held by the quota while this member was a bottleneck "
            "(replayed by this daemon since it started).",
        ),
        _flow(CERTIFIER_QUEUE, "bigint unsigned", "gauge", None),
        _flow(APPLIER_QUEUE, "bigint unsigned", "gauge", None),
        _flow(INCOMING_RATE, "double", "gauge", None),
        _flow(APPLY_RATE, "double", "gauge", None),
        _flow(
            CATCH_UP_ETA_SECONDS,
            "double",
            "gauge",
            "grstats_member_catch_up_eta_seconds",
            "Seconds until the member's applier queue is empty under the current load "
            "(+Inf: never at this rate; not an alarm by itself).",
            keeps=(float("inf"),),  # "never" is a figure the rollup counts; NaN, -inf: NULL
        ),
        Column(CATCH_UP, "varchar(32)", nullable=True),
        _flow(APPLY_CAPACITY, "double", "gauge", None),
        _flow(
            FAILOVER_SECONDS,
            "double",
            "gauge",
            "grstats_member_failover_seconds",
            "Seconds to apply the member's applier queue if the writes stopped now (as "
            "after a failover to it): queue / its highest apply rate of the last minute "
            "(+Inf: its applier applied nothing).",
        ),
        _flow(
            FAILOVER_READY,
            "tinyint",
            "gauge",
            "grstats_member_failover_ready",
            "0 when applying the member's backlog, writes stopped, would take longer than "
            "failover_catch_up_limit.",
        ),
        _flow(SERVER_THROTTLE_COUNT, "bigint unsigned", "counter", None),
        _flow(SERVER_THROTTLE_TIME_SUM, "bigint unsigned", "counter", None),
        _flow(SERVER_THROTTLE_ACTIVE_COUNT, "bigint unsigned", "gauge", None),
        Column(SERVER_THROTTLE_LAST, "varchar(32)", nullable=True),
    ),
)

# -- WL#15620 --------------------------------------------------------------------
# Times are nanoseconds in MySQL and in these tables; /metrics exports seconds
# (NANOSECOND_COLUMNS). Every number is nullable here: a server without the
# WL#15620 tables shows NULL for what its 8.0 tables cannot tell (the seed's
# NOT NULL columns included), TRANSACTIONS_PENDING_* also while MySQL itself
# has not computed them.
_APPLIER_METRIC = "grstats_applier_"
_WAITS = _APPLIER_METRIC + "waits_total"
_WAIT_SECONDS = _APPLIER_METRIC + "wait_seconds_total"


# History columns keep the names they were first stored under: three applier
# columns were declared with the worklog's draft names before MySQL's shipped
# ones were checked (MySQL name -> stored history column). Parquet files, the
# Spark rollups and their reports use the stored names.
_HISTORY_DRAFT_NAMES: Final = {
    WAITS_FOR_WORKER_QUEUE_MEMORY_COUNT: "waits_for_worker_queues_memory_count",
    WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME: "waits_for_worker_queues_memory_sum_time",
    TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME: "read_from_relay_log_sum_time",
}


def _applier(  # noqa: PLR0917 - a declaration table reads best positionally
    name: str,
    kind: ColumnKind,
    metric: str,
    help_: str = "",
    labels: tuple[tuple[str, str], ...] = (),
    sql_type: str = "bigint",
) -> Column:
    return Column(
        name,
        sql_type,
        kind,
        history=_HISTORY_DRAFT_NAMES.get(name, name.lower()),
        metric=metric,
        help=help_,
        nullable=True,
        metric_labels=labels,
    )


def _wait(name: str, what: str, help_count: str = "", help_time: str = "") -> tuple[Column, Column]:
    return (
        _applier(f"{name}_COUNT", "counter", _WAITS, help_count, (("wait", what),)),
        _applier(f"{name}_SUM_TIME", "counter", _WAIT_SECONDS, help_time, (("wait", what),)),
    )


APPLIER_METRICS = TableDef(
    name="replication_applier_metrics",
    schema="performance_schema",
    columns=(
        Column(MEMBER_ID, "char(36)", "id"),
        Column(CHANNEL_NAME, "char(64)", "id"),
        _applier(
            TOTAL_ACTIVE_TIME_DURATION,
            "counter",
            _APPLIER_METRIC + "active_seconds_total",
            "Total time the channel's applier has been running since its metrics were reset.",
        ),
        Column(
            LAST_APPLIER_START,
            "timestamp",
            "timestamp",
            metric=_APPLIER_METRIC + "last_start_timestamp_seconds",
            help="When the channel's applier was last started (Unix seconds).",
            nullable=True,
        ),
        _applier(
            TRANSACTIONS_COMMITTED_COUNT,
            "counter",
            _APPLIER_METRIC + "transactions_committed_total",
            "Transactions the channel's applier committed.",
        ),
        _applier(
            TRANSACTIONS_ONGOING_COUNT,
            "gauge",
            _APPLIER_METRIC + "transactions_ongoing",
            "Transactions being applied by workers now.",
        ),
        _applier(
            TRANSACTIONS_PENDING_COUNT,
            "gauge",
            _APPLIER_METRIC + "transactions_pending",
            "Transactions queued and not yet committed (ongoing ones included).",
        ),
        _applier(
            TRANSACTIONS_COMMITTED_SIZE_BYTES_SUM,
            "counter",
            _APPLIER_METRIC + "committed_bytes_total",
            "Size of the transactions committed.",
        ),
        _applier(
            TRANSACTIONS_ONGOING_FULL_SIZE_BYTES_SUM,
            "gauge",
            _APPLIER_METRIC + "ongoing_bytes",
            "Size of the transactions being applied now.",
        ),
        _applier(
            TRANSACTIONS_ONGOING_PROGRESS_SIZE_BYTES_SUM,
            "gauge",
            _APPLIER_METRIC + "ongoing_applied_bytes",
            "Size of the already executed events of the transactions being applied.",
        ),
        _applier(
            TRANSACTIONS_PENDING_SIZE_BYTES_SUM,
            "gauge",
            _APPLIER_METRIC + "pending_bytes",
            "Size of the transactions queued and not yet committed.",
        ),
        _applier(
            EVENTS_COMMITTED_COUNT,
            "counter",
            _APPLIER_METRIC + "events_committed_total",
            "Events of the committed transactions (embedded events of compressed ones).",
        ),
        *_wait(
            "WAITS_FOR_WORK_FROM_SOURCE",
            "work_from_source",
            "Times the applier waited, by reason (WL#15620's WAITS_*_COUNT).",
            "Time the applier waited, by reason (WL#15620's WAITS_*_SUM_TIME).",
        ),
        *_wait("WAITS_FOR_AVAILABLE_WORKER", "available_worker"),
        *_wait("WAITS_COMMIT_SCHEDULE_DEPENDENCY", "commit_schedule_dependency"),
        *_wait("WAITS_FOR_WORKER_QUEUE_MEMORY", "worker_queues_memory"),
        *_wait("WAITS_WORKER_QUEUES_FULL", "worker_queues_full"),
        *_wait("WAITS_DUE_TO_COMMIT_ORDER", "commit_order"),
        _applier(
            TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME,
            "counter",
            _APPLIER_METRIC + "relay_log_read_seconds_total",
            "Time the applier spent reading events from the relay log.",
        ),
    ),
)

APPLIER_PROGRESS_BY_WORKER = TableDef(
    name="replication_applier_progress_by_worker",
    schema="performance_schema",
    metrics=MetricPolicy(keys=(CHANNEL_NAME, WORKER_ID)),
    columns=(
        Column(MEMBER_ID, "char(36)", "id"),
        Column(CHANNEL_NAME, "char(64)", "id"),
        Column(WORKER_ID, "bigint", "number"),
        Column(THREAD_ID, "bigint", "number", nullable=True),
        Column(ONGOING_TRANSACTION_TYPE, "enum('UNASSIGNED','DML','DDL')", nullable=True),
        _applier(
            ONGOING_TRANSACTION_FULL_SIZE_BYTES,
            "gauge",
            _APPLIER_METRIC + "worker_ongoing_bytes",
            "Size of the transaction the worker is applying (0 when idle).",
        ),
        _applier(
            ONGOING_TRANSACTION_APPLIED_SIZE_BYTES,
            "gauge",
            _APPLIER_METRIC + "worker_ongoing_applied_bytes",
            "Size of the executed events of the transaction the worker is applying.",
        ),
    ),
)

NANOSECOND_COLUMNS: Final = frozenset(
    c.name
    for c in APPLIER_METRICS.columns
    if c.name.endswith("_SUM_TIME") or c.name == TOTAL_ACTIVE_TIME_DURATION
)

# -- grstats_member_gtids (issue 26) ---------------------------------------------
# Each member's @@gtid_executed / @@gtid_purged (ext.gtids) and the divergence
# rules of `core.gtid_divergence`: errant GTIDs (executed there and lacking on a
# witness that has applied past them since -- a witness: an ONLINE member the local
# server's view lists, with a sane clock), missing ones, and how it would rejoin today:
# INCREMENTAL (and from which donors), CLONE (no donor holds what it lacks, or it lacks
# group_replication_clone_threshold or more), REPROVISION (it has errant GTIDs: GR
# refuses it). TESTIMONY says why its own sets do not count against the others' (NULL
# when they do). A member whose daemon sends no ext.gtids has no row. The history keeps
# the counts and the method (`gtid_<name>`, appended last), never the sets.
GTID_EXECUTED: Final = "GTID_EXECUTED"
GTID_PURGED: Final = "GTID_PURGED"
GTIDS_READ_AT: Final = "GTIDS_READ_AT"
ERRANT_TRANSACTIONS: Final = "ERRANT_TRANSACTIONS"
ERRANT_COUNT: Final = "ERRANT_COUNT"
ERRANT_SINCE: Final = "ERRANT_SINCE"
MISSING_COUNT: Final = "MISSING_COUNT"
MISSING_FIRST_UUID: Final = "MISSING_FIRST_UUID"
RECOVERY_METHOD: Final = "RECOVERY_METHOD"
DONORS: Final = "DONORS"
TESTIMONY: Final = "TESTIMONY"
RECOVERY_METHODS: Final = ("INCREMENTAL", "CLONE", "REPROVISION")

MEMBER_GTIDS = TableDef(
    name="grstats_member_gtids",
    schema="grstats",
    metrics=MetricPolicy(keys=()),
    columns=(
        Column(MEMBER_ID, "char(36)", "id"),
        Column(GTID_EXECUTED, "longtext"),
        Column(GTID_PURGED, "longtext"),
        Column(GTIDS_READ_AT, "timestamp(6)", "timestamp"),
        Column(ERRANT_TRANSACTIONS, "longtext", nullable=True),  # NULL: not judged yet
        Column(
            ERRANT_COUNT,
            "bigint unsigned",
            "gauge",
            history="gtid_errant_count",
            metric="grstats_member_errant_transactions",
            help="GTIDs the member executed that a witness (an ONLINE member the server's "
            "view lists) lacks though it has applied past them since (errant transactions).",
            nullable=True,
        ),
        Column(ERRANT_SINCE, "timestamp(6)", "timestamp", nullable=True),
        Column(
            MISSING_COUNT,
            "bigint unsigned",
            "gauge",
            history="gtid_missing_count",
            metric="grstats_member_missing_transactions",
            help="GTIDs every other ONLINE member executed and this member has not.",
            nullable=True,
        ),
        Column(MISSING_FIRST_UUID, "char(36)", nullable=True),
        Column(
            RECOVERY_METHOD,
            "varchar(16)",
            history="gtid_recovery_method",
            metric="grstats_member_recovery_method",
            help="1 for the method the member would rejoin with today (INCREMENTAL: a "
            "donor still holds every GTID it lacks; CLONE: none does, or it lacks "
            "group_replication_clone_threshold or more; REPROVISION: it has errant "
            "transactions, which Group Replication refuses).",
            nullable=True,
            metric_enum=("method", RECOVERY_METHODS),
        ),
        Column(DONORS, "text", nullable=True),
        Column(TESTIMONY, "varchar(64)", nullable=True),
    ),
)


# -- grstats_member_commit_path (issue 27) ------------------------------------
# Where each member's commit time went over its last period, from MySQL's Gr_*
# status variables (8.1.0+; protocol.commit_path). Per operation: how many per
# second, the mean time of one, the share of the member's commit path (its time
# over the summed time of the operations in COMMIT_PATH_SHARED; the message
# round trip contains the consensus round, so it is shown but not shared out),
# and the running total in seconds (a counter). NULL where the server shows no
# figure or the period had none of that operation.
COMMIT_PATH_OPS: Final = (
    ("CONSENSUS", "consensus rounds (Gr_all_consensus_*)"),
    ("ROUND_TRIP", "messages sent, send to delivery on the sender (Gr_*_messages_sent_*)"),
    ("CERTIFICATION_GC", "certification garbage collector runs (Gr_certification_garbage_*)"),
    ("BEFORE_BEGIN", "consistency BEFORE waits (Gr_transactions_consistency_before_begin_*)"),
    (
        "AFTER_TERMINATION",
        "consistency AFTER waits for prepared acks (..._after_termination_*)",
    ),
    ("AFTER_SYNC", "waits on AFTER transactions of the primary (..._after_sync_*)"),
    ("FLOW_CONTROL", "transactions held by flow control (Gr_flow_control_throttle_*)"),
)
# the costs on one transaction's path (consensus: its message's round trip); the
# certification GC runs in the background and the round trip of every message contains
# the round: shown, not shared out (core.commitpath)
COMMIT_PATH_SHARED: Final = tuple(
    op for op, _ in COMMIT_PATH_OPS if op not in ("ROUND_TRIP", "CERTIFICATION_GC")
)
COMMIT_PATH_PERIOD: Final = "PERIOD_SECONDS"
COMMIT_PATH_DOMINANT: Final = "DOMINANT"
COMMIT_PATH_TRANSACTIONS: Final = "TRANSACTIONS_PER_SECOND"
COMMIT_PATH_OVERHEAD: Final = "COMMIT_OVERHEAD_SECONDS"


def _commit_path_columns() -> tuple[Column, ...]:
    out = [
        Column(MEMBER_ID, "char(36)", "id"),
        Column(COMMIT_PATH_PERIOD, "double", "gauge", nullable=True),
        Column(COMMIT_PATH_DOMINANT, "varchar(32)", nullable=True),
        Column(
            COMMIT_PATH_TRANSACTIONS,
            "double",
            "gauge",
            metric="grstats_commit_path_transactions_per_second",
            help="The member's own transactions (data messages sent) per second over the "
            "last period; 0: idle, its rounds are the group's stats messages.",
            nullable=True,
        ),
        Column(
            COMMIT_PATH_OVERHEAD,
            "double",
            "gauge",
            metric="grstats_commit_path_overhead_seconds",
            help="Mean commit overhead of one of the member's transactions over the last "
            "period: its message's round trip (the consensus round), consistency waits and "
            "flow-control holds.",
            nullable=True,
        ),
    ]
    for op, what in COMMIT_PATH_OPS:
        lower = op.lower()
        out.append(
            Column(
                f"{op}_PER_SECOND",
                "double",
                "gauge",
                metric=f"grstats_commit_path_{lower}_per_second",
                help=f"{what}: per second over the last period.",
                nullable=True,
            )
        )
        out.append(
            Column(
                f"{op}_MEAN_SECONDS",
                "double",
                "gauge",
                metric=f"grstats_commit_path_{lower}_mean_seconds",
                help=f"{what}: mean time of one over the last period.",
                nullable=True,
            )
        )
        if op in COMMIT_PATH_SHARED:
            out.append(
                Column(
                    f"{op}_SHARE",
                    "double",
                    "gauge",
                    metric=f"grstats_commit_path_{lower}_share",
                    help=f"{what}: share (0-1) of one transaction's commit overhead over the "
                    "last period.",
                    nullable=True,
                )
            )
        out.append(
            Column(
                f"{op}_SECONDS_TOTAL",
                "double",
                "counter",
                metric=f"grstats_commit_path_{lower}_seconds_total",
                help=f"{what}: time, as the server counts it since GR started there.",
                nullable=True,
            )
        )
    out.extend(_COMMUNICATION_COLUMNS)
    out.extend(_minute_columns())
    return tuple(out)


# The same rates, means and shares over the last minute (60-65 s: from the
# member's report about a minute old to its latest), for the table, SQL and
# /metrics (as gauges `grstats_commit_path_last_minute_*`: the mean time of one
# and the shares need the counts, which /metrics does not carry, so Prometheus
# cannot take them from the _seconds_total counters; and a minute does not
# flicker as a one-second period does). The span itself has no metric, as
# PERIOD_SECONDS has none.
COMMIT_PATH_MINUTE_SUFFIX: Final = "_1M"


def _minute_columns() -> list[Column]:
    minute = COMMIT_PATH_MINUTE_SUFFIX
    out = [
        Column(COMMIT_PATH_PERIOD + minute, "double", "number", nullable=True),
        Column(
            COMMIT_PATH_TRANSACTIONS + minute,
            "double",
            "gauge",
            metric="grstats_commit_path_last_minute_transactions_per_second",
            help="The member's own transactions per second over the last minute (60-65 s).",
            nullable=True,
        ),
        Column(
            COMMIT_PATH_OVERHEAD + minute,
            "double",
            "gauge",
            metric="grstats_commit_path_last_minute_overhead_seconds",
            help="Mean commit overhead of one of its transactions over the last minute.",
            nullable=True,
        ),
    ]
    for op, what in COMMIT_PATH_OPS:
        figures = [
            ("PER_SECOND", "per_second", "per second"),
            ("MEAN_SECONDS", "mean_seconds", "mean time of one"),
        ]
        if op in COMMIT_PATH_SHARED:
            figures.append(("SHARE", "share", "share (0-1) of a transaction's commit overhead"))
        out.extend(
            Column(
                f"{op}_{name}{COMMIT_PATH_MINUTE_SUFFIX}",
                "double",
                "gauge",
                metric=f"grstats_commit_path_last_minute_{op.lower()}_{metric}",
                help=f"{what}: {says} over the last minute (60-65 s).",
                nullable=True,
            )
            for name, metric, says in figures
        )
    return out


# replication_group_communication_information as the member's server shows it
# (8.0.23+; ext.commit_path_comm): who proposes the consensus rounds.
COMMIT_PATH_WRITE_CONCURRENCY: Final = "WRITE_CONCURRENCY"
COMMIT_PATH_PROTOCOL_VERSION: Final = "PROTOCOL_VERSION"
COMMIT_PATH_LEADERS_PREFERRED: Final = "WRITE_CONSENSUS_LEADERS_PREFERRED"
COMMIT_PATH_LEADERS_ACTUAL: Final = "WRITE_CONSENSUS_LEADERS_ACTUAL"
COMMIT_PATH_SINGLE_LEADER: Final = "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE"
_COMMUNICATION_COLUMNS: Final = (
    Column(
        COMMIT_PATH_WRITE_CONCURRENCY,
        "bigint unsigned",
        "gauge",
        metric="grstats_commit_path_write_concurrency",
        help="Consensus instances the group may run in parallel "
        "(replication_group_communication_information).",
        nullable=True,
    ),
    Column(COMMIT_PATH_PROTOCOL_VERSION, "varchar(16)", nullable=True),
    Column(COMMIT_PATH_LEADERS_PREFERRED, "text", nullable=True),
    Column(COMMIT_PATH_LEADERS_ACTUAL, "text", nullable=True),
    Column(
        COMMIT_PATH_SINGLE_LEADER,
        "tinyint",
        "gauge",
        metric="grstats_commit_path_single_leader_capable",
        help="1 when the group runs with a single consensus leader "
        "(group_replication_paxos_single_leader when the member joined).",
        nullable=True,
    ),
)


COMMIT_PATH = TableDef(
    name="grstats_member_commit_path",
    schema="grstats",
    columns=_commit_path_columns(),
    metrics=MetricPolicy(keys=()),  # a row per member: no channel to label
)

# What the history keeps of the commit path (appended after the flow-control
# block): per operation of COMMIT_PATH_OPS the server's cumulative count and
# summed time in microseconds, (operation, count column, time column). The
# counters themselves, not per-sample figures: the rollups take increases
# between samples (as for the applier counters), a lost sample loses nothing,
# and a slowly growing counter is what DELTA_BINARY_PACKED stores in a few bits.
# Only the first sample of each COMMIT_PATH_HISTORY_EVERY_S-second bucket keeps
# them (the others NULL: nearly free): the increases between kept samples add
# up to the same totals, an hour's figures move by at most one bucket at its
# edges, and a simulated day costs 0.75 instead of 4.9 bytes a sample.
COMMIT_PATH_HISTORY: Final = tuple(
    (op, f"cp_{op.lower()}_count", f"cp_{op.lower()}_us") for op, _ in COMMIT_PATH_OPS
)
COMMIT_PATH_HISTORY_EVERY_S: Final = 10

TABLES: Final = (
    MEMBER_STATS,
    MEMBERS,
    MEMBER_STATUS,
    MEMBER_LAG,
    FLOW_CONTROL,
    APPLIER_METRICS,
    APPLIER_PROGRESS_BY_WORKER,
    MEMBER_GTIDS,
    COMMIT_PATH,
)

# The stats columns carried by the Pipeline_stats message, in history file order.
STATS_ITEM_COLUMNS: Final = tuple(
    [c for c in MEMBER_STATS.columns if c.item is not None and c.numeric]
    + [c for c in MEMBER_STATS.columns if c.item is not None and not c.numeric]
)


# Every PipelineStats field -> the replication_group_member_stats column it feeds
# (None: P_S does not show it), in the message's field order (`grstats decode`).
# Built when first used: `protocol` is not imported by this module, so a process
# that needs only the column declarations (the history's child) does not load it.
PS_COLUMN_OF_FIELD: Mapping[str, str | None]  # (declared for type checkers)


def __getattr__(name: str) -> object:
    if name != "PS_COLUMN_OF_FIELD":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from protocol import PipelineStats  # noqa: PLC0415 - see PS_COLUMN_OF_FIELD

    value = MappingProxyType(
        {
            f.name: next((c.name for c in MEMBER_STATS.columns if c.item == f.name), None)
            for f in fields(PipelineStats)
        }
    )
    globals()[name] = value
    return value


def table_names() -> tuple[str, ...]:
    """The names of every declared table, in declaration order (read at call time)."""
    return tuple(t.name for t in TABLES)


def table(name: str) -> TableDef:
    """The declaration of table `name`; KeyError for an unknown table."""
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(name)
