"""The immutable view of a daemon's state that readers share.

Strategy: the event loop builds a new `DaemonSnapshot` after every change it
cares about and swaps the reference; the HTTP API, the Prometheus collector and
the CLI only ever read a snapshot, so they never race the loop.

Column names of the two MySQL-shaped tables are exactly performance_schema's.
grstats' own facts about each member live in `grstats_member_status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Cell = str | int | float | None
Row = Mapping[str, Cell]

MEMBER_STATS_TABLE = "replication_group_member_stats"
MEMBERS_TABLE = "replication_group_members"
MEMBER_STATUS_TABLE = "grstats_member_status"
TABLE_NAMES = (MEMBER_STATS_TABLE, MEMBERS_TABLE, MEMBER_STATUS_TABLE)

MEMBER_STATS_COLUMNS = (
    "CHANNEL_NAME",
    "VIEW_ID",
    "MEMBER_ID",
    "COUNT_TRANSACTIONS_IN_QUEUE",
    "COUNT_TRANSACTIONS_CHECKED",
    "COUNT_CONFLICTS_DETECTED",
    "COUNT_TRANSACTIONS_ROWS_VALIDATING",
    "TRANSACTIONS_COMMITTED_ALL_MEMBERS",
    "LAST_CONFLICT_FREE_TRANSACTION",
    "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE",
    "COUNT_TRANSACTIONS_REMOTE_APPLIED",
    "COUNT_TRANSACTIONS_LOCAL_PROPOSED",
    "COUNT_TRANSACTIONS_LOCAL_ROLLBACK",
)

MEMBERS_COLUMNS = (
    "CHANNEL_NAME",
    "MEMBER_ID",
    "MEMBER_HOST",
    "MEMBER_PORT",
    "MEMBER_STATE",
    "MEMBER_ROLE",
    "MEMBER_VERSION",
    "MEMBER_COMMUNICATION_STACK",
)

# Why an envelope was refused; each reason is counted per member and in total.
REJECT_REASONS = ("malformed", "oversized", "spoofed", "other_group", "stale")

MEMBER_STATUS_COLUMNS = (
    "GROUP_NAME",
    "MEMBER_ID",
    "IS_LOCAL",  # 1 for the daemon's own member
    "LAST_SEEN_AGE_SECONDS",  # float, None for the local member before its first sample
    "INCARNATION",
    "SEQ",
    "ACCEPTED",
    *(f"REJECTED_{reason.upper()}" for reason in REJECT_REASONS),
)

GROUP_REPLICATION_CHANNEL = "group_replication_applier"


@dataclass(frozen=True, slots=True)
class DaemonSnapshot:
    """Everything a reader may show, frozen at `taken_at_us`.

    `counters` holds the daemon's own health as monotonically increasing
    totals: "envelopes_accepted", "envelopes_rejected_<reason>" for every
    reason in REJECT_REASONS, "bus_reconnects", "messages_published".
    `gauges` holds point-in-time values: "bus_connected" (0/1), "members_known".
    """

    taken_at_us: int
    group_name: str
    local_member_id: str
    member_stats: tuple[Row, ...] = ()
    members: tuple[Row, ...] = ()
    member_status: tuple[Row, ...] = ()
    counters: Mapping[str, int] = field(default_factory=dict)
    gauges: Mapping[str, float] = field(default_factory=dict)

    def table(self, name: str) -> tuple[Row, ...]:
        """Rows of one of TABLE_NAMES; KeyError for any other name."""
        if name == MEMBER_STATS_TABLE:
            return self.member_stats
        if name == MEMBERS_TABLE:
            return self.members
        if name == MEMBER_STATUS_TABLE:
            return self.member_status
        raise KeyError(name)
