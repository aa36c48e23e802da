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

from dataclasses import dataclass
from typing import Final, Literal

ColumnKind = Literal["text", "id", "counter", "gauge", "number"]

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
    """

    name: str
    sql_type: str
    kind: ColumnKind = "text"
    item: str | None = None
    history: str | None = None
    metric: str | None = None
    help: str = ""
    nullable: bool = False

    @property
    def numeric(self) -> bool:
        """True for counters, gauges and other numbers."""
        return self.kind in ("counter", "gauge", "number")


@dataclass(frozen=True, slots=True)
class TableDef:
    """A table: its name, the schema the SQL endpoint shows it in, its columns in order."""

    name: str
    schema: str
    columns: tuple[Column, ...]

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
    columns=(
        Column(GROUP_NAME, "char(36)", "id"),
        Column(MEMBER_ID, "char(36)", "id"),
        Column(IS_LOCAL, "tinyint", "number"),
        Column(LAST_SEEN_AGE_SECONDS, "double", "number", nullable=True),
        Column(INCARNATION, "bigint unsigned", "number", nullable=True),
        Column(SEQ, "bigint unsigned", "number", nullable=True),
        Column(ACCEPTED, "bigint unsigned", "counter"),
        *(Column(rejected_column(r), "bigint unsigned", "counter") for r in REJECT_REASONS),
    ),
)

TABLES: Final = (MEMBER_STATS, MEMBERS, MEMBER_STATUS)

# The stats columns carried by the Pipeline_stats message, in history file order.
STATS_ITEM_COLUMNS: Final = tuple(
    [c for c in MEMBER_STATS.columns if c.item is not None and c.numeric]
    + [c for c in MEMBER_STATS.columns if c.item is not None and not c.numeric]
)


def table(name: str) -> TableDef:
    """The declaration of table `name`; KeyError for an unknown table."""
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(name)
