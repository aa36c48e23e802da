"""The immutable view of a daemon's state that readers share.

Strategy: the event loop builds a new `DaemonSnapshot` after every change it
cares about and swaps the reference; the HTTP API, the Prometheus collector and
the CLI only ever read a snapshot, so they never race the loop.

Column names of the MySQL-shaped tables are exactly performance_schema's
(declared in `grstats.core.columns`; replication_group_member_lag adds its
derived figures). grstats' own facts about each member
live in `grstats_member_status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from grstats.core import columns
from grstats.core.health import UNCHECKED, Health
from grstats.core.history_figures import HistoryFigures

Cell = str | int | float | None
Row = Mapping[str, Cell]

MEMBER_STATS_TABLE = columns.MEMBER_STATS.name
MEMBERS_TABLE = columns.MEMBERS.name
MEMBER_STATUS_TABLE = columns.MEMBER_STATUS.name
MEMBER_LAG_TABLE = columns.MEMBER_LAG.name
FLOW_CONTROL_TABLE = columns.FLOW_CONTROL.name
APPLIER_METRICS_TABLE = columns.APPLIER_METRICS.name
APPLIER_WORKERS_TABLE = columns.APPLIER_PROGRESS_BY_WORKER.name
MEMBER_GTIDS_TABLE = columns.MEMBER_GTIDS.name
COMMIT_PATH_TABLE = columns.COMMIT_PATH.name

MEMBER_STATS_COLUMNS = columns.MEMBER_STATS.names
MEMBERS_COLUMNS = columns.MEMBERS.names
MEMBER_STATUS_COLUMNS = columns.MEMBER_STATUS.names
MEMBER_LAG_COLUMNS = columns.MEMBER_LAG.names
FLOW_CONTROL_COLUMNS = columns.FLOW_CONTROL.names
APPLIER_METRICS_COLUMNS = columns.APPLIER_METRICS.names
APPLIER_WORKERS_COLUMNS = columns.APPLIER_PROGRESS_BY_WORKER.names
MEMBER_GTIDS_COLUMNS = columns.MEMBER_GTIDS.names
COMMIT_PATH_COLUMNS = columns.COMMIT_PATH.names
REJECT_REASONS = columns.REJECT_REASONS
GROUP_REPLICATION_CHANNEL = columns.GROUP_REPLICATION_CHANNEL


def _zero_rejections() -> Mapping[str, int]:
    return dict.fromkeys(REJECT_REASONS, 0)


@dataclass(frozen=True, slots=True)
class DaemonCounters:
    """The daemon's own totals since it started (each only ever grows).

    Attributes:
        envelopes_accepted: stats envelopes applied to the tables.
        envelopes_own: our own envelopes heard back from the broker.
        envelopes_clamped: accepted envelopes whose negative sizes were shown as 0.
        malformed: accepted envelopes one of whose `ext` sections was refused (their
            stats were applied, that section was not), by the section's counter
            (`core.sections`: lag, applier, gtids, commit_path).
        rejected: refused messages by reason (every reason of REJECT_REASONS).
        bus_reconnects: broker connections after the first.
        messages_published: stats envelopes handed to the broker.
        left_out: items of the local member left out of published sections to fit
            the wire, by counter (`applier_workers_dropped`: workers past
            protocol.MAX_APPLIER_WORKERS, summed over envelopes; the local tables
            still show them all).
        sections_unsendable: samples published without their `ext` section
            because the wire refused a figure in it, by section.
        over_cadence: sections of received envelopes dropped unread because their
            member sent them sooner than their cadence allows, by section (core.cadence).
        ext_dropped: unknown `ext` sections of received envelopes skipped unread,
            by section name (names bounded; see `core.receive_counts.count_dropped_ext`).
        pending_gtids_refused: gtids envelopes refused at the pending table's byte bound.
        pending_gtids_expired: pending gtids envelopes dropped after forget_after.
        oracle_comparisons: columns compared between the local server's view of
            a member and what its daemon published (core.oracle).
        oracle_disagreements: those comparisons that disagreed, by column.
    """

    envelopes_accepted: int = 0
    envelopes_own: int = 0
    envelopes_clamped: int = 0
    malformed: Mapping[str, int] = field(default_factory=dict)
    rejected: Mapping[str, int] = field(default_factory=_zero_rejections)
    bus_reconnects: int = 0
    messages_published: int = 0
    left_out: Mapping[str, int] = field(default_factory=dict)
    sections_unsendable: Mapping[str, int] = field(default_factory=dict)
    over_cadence: Mapping[str, int] = field(default_factory=dict)
    ext_dropped: Mapping[str, int] = field(default_factory=dict)
    pending_gtids_refused: int = 0
    pending_gtids_expired: int = 0
    oracle_comparisons: int = 0
    oracle_disagreements: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        """Flat names for JSON (`/healthz`): `envelopes_rejected_<reason>` per reason."""
        out = {
            "envelopes_accepted": self.envelopes_accepted,
            "envelopes_own": self.envelopes_own,
            "envelopes_clamped": self.envelopes_clamped,
        }
        for counter, count in self.malformed.items():
            out[f"envelopes_{counter}_malformed"] = count
        out["bus_reconnects"] = self.bus_reconnects
        out["messages_published"] = self.messages_published
        out.update(self.left_out)
        for section, count in sorted(self.sections_unsendable.items()):
            out[f"ext_{section}_unsendable"] = count
        for section, count in sorted(self.over_cadence.items()):
            out[f"ext_{section}_over_cadence"] = count
        out["ext_sections_dropped"] = sum(self.ext_dropped.values())
        out["pending_gtids_refused"] = self.pending_gtids_refused
        out["pending_gtids_expired"] = self.pending_gtids_expired
        for reason in REJECT_REASONS:
            out[f"envelopes_rejected_{reason}"] = self.rejected.get(reason, 0)
        if self.oracle_comparisons:
            out["oracle_comparisons"] = self.oracle_comparisons
            for column, count in sorted(self.oracle_disagreements.items()):
                out[f"oracle_disagreements_{column.lower()}"] = count
        return out


@dataclass(frozen=True, slots=True)
class SqlFigures:
    """The SQL endpoint's figures ([sql]), for /metrics and /healthz.

    Attributes:
        serving: True while the endpoint accepts connections.
        reason: why it is not serving ("" while it is).
        connections_open, max_connections: connections now, and the cap.
        connections_accepted: connections admitted since start (under the cap).
        connections_refused: connections refused at the cap (error 1040).
        tls_handshake_failures: connections that asked for TLS and failed its handshake.
        queries: statements run on the engine.
        queries_interrupted: statements stopped at query_timeout (error 3024).
        results_refused: results refused at max_rows or max_result_bytes, by limit.
        writes_refused: statements refused because the endpoint is read-only (1290).
        errors: error packets sent, by MySQL error number.
        handshake_timeouts: connections ended for not logging in within
            [sql] handshake_timeout (also counted as errors 1043).
        logins_delayed: login attempts made to wait after failed logins from
            their address.
        process_*: the endpoint's child process of a daemon (DAEMON_SQL_FIELDS):
            its state, pid, restarts and why it last ended.
        snapshots_sent, snapshots_dropped: live-table snapshots written to the
            child process, and those dropped by reason.
        snapshot_unsent: why the latest snapshot could not be encoded (over
            [sql] max_snapshot_bytes): the endpoint's live tables are stale.
        tail_skipped_files, tail_skipped_total: write-ahead log files left out of
            grstats.history (past the tail's byte bound): now, and ever (each once).
    """

    serving: bool = False
    reason: str = ""
    connections_open: int = 0
    max_connections: int = 0
    connections_accepted: int = 0
    connections_refused: int = 0
    tls_handshake_failures: int = 0
    queries: int = 0
    queries_interrupted: int = 0
    results_refused: Mapping[str, int] = field(default_factory=dict)
    writes_refused: int = 0
    errors: Mapping[int, int] = field(default_factory=dict)
    handshake_timeouts: int = 0
    logins_delayed: int = 0
    connections_evicted: int = 0  # connections logging in, ended for a new one's slot
    tail_skipped_files: int = 0  # WAL files left out of grstats.history now (past its bound)
    tail_skipped_total: int = 0  # WAL files ever left out, each once
    limits_unset: str = ""  # the child's limits it could not set, and why ("" when all are)
    # the endpoint's own process (`grstats run` / `collect`; "" when served in-process)
    # "idle" (no process: the next connection starts one), "starting", "up", "unresponsive",
    # "restarting" or "stopped"
    process_state: str = ""
    process_pid: int = 0
    process_restarts: int = 0
    process_last_exit: str = ""  # why the process last ended ("" before it ever did)
    snapshots_sent: int = 0  # live-table snapshots written to the process
    snapshots_dropped: Mapping[str, int] = field(default_factory=dict)  # by reason
    snapshot_unsent: str = ""  # why the live tables cannot be sent now ("" when they can)


# SqlFigures fields the daemon fills about its SQL child; the child fills the others
DAEMON_SQL_FIELDS = (
    "process_state",
    "process_pid",
    "process_restarts",
    "process_last_exit",
    "snapshots_sent",
    "snapshots_dropped",
    "snapshot_unsent",
)


@dataclass(frozen=True, slots=True)
class Departed:
    """A member no longer in the tables, remembered until it comes back.

    MySQL drops such a member from its tables, and so do we, and with them its
    per-member series; but a time series that just stops would end an alert
    as if the problem were solved. So /metrics reports the departure itself
    (`grstats_member_departed`: OFFLINE or ERROR, it left; UNREACHABLE, it
    went silent and was forgotten) until the member comes back. The rule is
    stated once, in `core.registry` ("departure").
    """

    group: str
    member_id: str
    state: str  # OFFLINE, ERROR or UNREACHABLE
    last_seen_us: int


@dataclass(frozen=True, slots=True)
class DaemonSnapshot:
    """Everything a reader may show, frozen at `taken_at_us`.

    `counters` holds the daemon's own totals (typed: a renamed counter is a
    type error, not a silent 0).
    `gauges` holds point-in-time values: "bus_connected" (0/1), "members_known",
    "source_up" and "history_healthy" (0/1, when the part exists).
    `health` is what the daemon checks and each reason it is degraded (core.health).
    `tables` holds the rows of every declared table by name; read them with
    `table(name)`.
    """

    taken_at_us: int
    group_name: str
    local_member_id: str
    # table name -> rows, every table of columns.TABLES (core.snapshot_builder.BUILDERS)
    tables: Mapping[str, tuple[Row, ...]] = field(default_factory=dict)
    counters: DaemonCounters = field(default_factory=DaemonCounters)
    gauges: Mapping[str, float] = field(default_factory=dict)
    health: Health = UNCHECKED  # what the daemon checks, and why it is degraded
    history: HistoryFigures | None = None  # None when history is off
    sql: SqlFigures | None = None  # None when [sql] is off
    departed: tuple[Departed, ...] = ()  # members gone from the tables, for /metrics

    def table(self, name: str) -> tuple[Row, ...]:
        """Rows of the declared table `name` (none when not built); KeyError for any other name."""
        rows = self.tables.get(name)
        if rows is None:
            columns.table(name)  # KeyError for an undeclared table
            return ()
        return rows


def with_tables(snapshot: DaemonSnapshot, tables: Mapping[str, tuple[Row, ...]]) -> DaemonSnapshot:
    """`snapshot` with the rows of the named tables replaced (declared names only).

    Raises:
        KeyError: a name that is not a declared table.
    """
    for name in tables:
        columns.table(name)
    return replace(snapshot, tables={**snapshot.tables, **tables})


@dataclass(frozen=True, slots=True)
class DaemonFigures:
    """What the daemon adds to its tables' view: its own counters, gauges and checks.

    The tables count what they received (`MemberTables.counters`); the bus,
    the publisher and the daemon's checks are the daemon's, handed to
    `MemberTables.snapshot` and `status_view` in one value.
    """

    bus_reconnects: int = 0
    messages_published: int = 0
    left_out: Mapping[str, int] = field(default_factory=dict)  # by counter (core.sections)
    sections_unsendable: Mapping[str, int] = field(default_factory=dict)
    gauges: Mapping[str, float] = field(default_factory=dict)  # "members_known" is the tables'
    health: Health = UNCHECKED  # the daemon's checks (the tables add their own)


NO_FIGURES: Final = DaemonFigures()


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    """What /healthz and sd_notify's STATUS= show: a snapshot without its tables.

    The daemon makes one per request from its counters and checks (nothing is
    rebuilt: a busy collector's tables change with every envelope), so its
    figures are those of now. `members` is the row count the members table
    would have (`gauges["members_known"]` of a snapshot taken now).
    """

    group_name: str
    local_member_id: str
    members: int = 0
    counters: DaemonCounters = field(default_factory=DaemonCounters)
    gauges: Mapping[str, float] = field(default_factory=dict)
    health: Health = UNCHECKED
    sql: SqlFigures | None = None


def status_of(snapshot: DaemonSnapshot) -> DaemonStatus:
    """The status a snapshot shows (its members table's row count as `members`)."""
    return DaemonStatus(
        group_name=snapshot.group_name,
        local_member_id=snapshot.local_member_id,
        members=len(snapshot.table(MEMBERS_TABLE)),
        counters=snapshot.counters,
        gauges=snapshot.gauges,
        health=snapshot.health,
        sql=snapshot.sql,
    )
