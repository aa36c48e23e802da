"""Prometheus exposition of a daemon snapshot.

Strategy: one custom `Collector` registered in its own `CollectorRegistry`
(nothing is registered at import). `collect()` calls `get_snapshot()` once and
turns that immutable `DaemonSnapshot` into metric families; it never awaits,
queries MySQL or touches the bus, so a scrape cannot race the event loop nor
slow it down.

Names follow prometheus/mysqld_exporter's
`perf_schema.replication_group_member_stats` collector where the meaning is the
same (`mysql_perf_schema_transactions_in_queue`,
`mysql_perf_schema_transactions_checked_total`, ...). One deliberate
difference: mysqld_exporter exports COUNT_TRANSACTIONS_ROWS_VALIDATING as a
counter `..._transactions_rows_validating_total`, but the column is a size that
drops at certification garbage collection, so here it is the gauge
`mysql_perf_schema_transactions_rows_validating` (a `rate()` over it would be
wrong). Every per-member series carries `group` and `member_id` labels, because
unlike mysqld_exporter (which scrapes only `@@server_uuid`'s row) every grstats
daemon knows every member.

Every declared table's families come from its declaration, one path
(`api.table_metrics`; the member tables' info series in `api.member_metrics`).

Invariants: a cell that is None or not a number is skipped (no series), never
reported as 0; a row without MEMBER_ID is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector, CollectorRegistry

from grstats.api.health import ApiStats
from grstats.api.member_metrics import MEMBER_STATE_VALUES
from grstats.api.section_metrics import counter_by, section_families
from grstats.api.self_metrics import register_process_collectors
from grstats.api.table_metrics import table_families
from grstats.core import columns as col
from grstats.core.snapshot import MEMBER_STATUS_TABLE, MEMBERS_TABLE, REJECT_REASONS, DaemonSnapshot

__all__ = [
    "MEMBER_STATE_VALUES",
    "SnapshotCollector",
    "build_registry",
    "snapshot_registry",
]


def _text(value: object) -> str:
    return "" if value is None else str(value)


class SnapshotCollector(Collector):
    """Exposes one `DaemonSnapshot` per scrape; reads only, never blocks."""

    def __init__(self, get_snapshot: Callable[[], DaemonSnapshot]) -> None:
        self._get_snapshot = get_snapshot

    def describe(self) -> Iterator[Metric]:
        # An empty describe() keeps register() from calling collect() at
        # registration time, when the daemon may not have a snapshot yet.
        return iter(())

    def collect(self) -> Iterator[Metric]:
        snapshot = self._get_snapshot()
        groups = _group_of(snapshot)
        for table in col.TABLES:
            yield from table_families(snapshot, groups, table)
        yield from _health_families(snapshot)


def _group_of(snapshot: DaemonSnapshot) -> dict[str, str]:
    # grstats_member_status carries the group per member (collector mode may
    # see several groups); fall back to the daemon's own group.
    groups: dict[str, str] = {}
    for row in snapshot.table(MEMBER_STATUS_TABLE):
        member_id = _text(row.get(col.MEMBER_ID))
        group = _text(row.get(col.GROUP_NAME))
        if member_id and group:
            groups[member_id] = group
    return groups


def _health_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    counters = snapshot.counters
    gauges = snapshot.gauges
    accepted = CounterMetricFamily(
        "grstats_envelopes_accepted",
        "Envelopes received from the bus, decoded and applied to the tables.",
        value=counters.envelopes_accepted,
    )
    yield accepted
    rejected = CounterMetricFamily(
        "grstats_envelopes_rejected",
        "Envelopes received from the bus and refused, by reason.",
        labels=("reason",),
    )
    for reason in REJECT_REASONS:
        rejected.add_metric([reason], counters.rejected.get(reason, 0))
    yield rejected
    yield CounterMetricFamily(
        "grstats_bus_reconnects",
        "Times the daemon reconnected to the broker after losing it.",
        value=counters.bus_reconnects,
    )
    yield CounterMetricFamily(
        "grstats_messages_published",
        "Envelopes this daemon published for its local member.",
        value=counters.messages_published,
    )
    yield GaugeMetricFamily(
        "grstats_bus_connected",
        "1 while the daemon is connected to the broker, else 0.",
        value=gauges.get("bus_connected", 0),
    )
    yield GaugeMetricFamily(
        "grstats_members_known",
        "Members in the daemon's tables, the local one included.",
        value=gauges.get("members_known", len(snapshot.table(MEMBERS_TABLE))),
    )
    yield CounterMetricFamily(
        "grstats_envelopes_clamped",
        "Accepted envelopes whose negative queue sizes were shown as 0.",
        value=counters.envelopes_clamped,
    )
    yield from section_families(counters)
    yield CounterMetricFamily(
        "grstats_pending_gtids_refused",
        "gtids envelopes refused because the pending table was at its byte bound.",
        value=counters.pending_gtids_refused,
    )
    yield CounterMetricFamily(
        "grstats_pending_gtids_expired",
        "Pending gtids envelopes dropped after forget_after without their member's stats.",
        value=counters.pending_gtids_expired,
    )
    yield GaugeMetricFamily(
        "grstats_pending_gtids_bytes",
        "Bytes held by gtids envelopes waiting for their member's first stats message.",
        value=snapshot.gauges.get("pending_gtids_bytes", 0.0),
    )
    yield CounterMetricFamily(
        "grstats_server_oracle_comparisons",
        "Columns compared between the local server's view of a member and what its daemon "
        "published (ranges of the last periods; GTID texts as sets).",
        value=counters.oracle_comparisons,
    )
    yield counter_by(
        "grstats_server_oracle_disagreements",
        "Those comparisons that disagreed, by column: the bus did not carry what MySQL received.",
        "column",
        counters.oracle_disagreements,
    )
    yield from _source_families(snapshot)
    yield from _history_families(snapshot)
    yield from _sql_families(snapshot)


def _history_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    h = snapshot.history
    if h is None:
        return
    yield CounterMetricFamily(
        "grstats_history_rows_written",
        "History rows fsynced to the write-ahead log.",
        value=h.rows_written,
    )
    yield counter_by(
        "grstats_history_rows_dropped",
        "History rows that will never be stored, by reason.",
        "reason",
        h.dropped.by_reason(),
    )
    yield GaugeMetricFamily(
        "grstats_history_rows_buffered",
        "History rows recorded and not yet fsynced (bounded by [history] max_buffer_rows).",
        value=h.rows_buffered,
    )
    yield GaugeMetricFamily(
        "grstats_history_wal_bytes",
        "Write-ahead log bytes not yet turned into Parquet segments.",
        value=h.wal_bytes,
    )
    yield CounterMetricFamily(
        "grstats_history_segments_written",
        "Parquet segments written.",
        value=h.segments_written,
    )
    fsync = SummaryMetricFamily(
        "grstats_history_fsync_seconds",
        "Write-ahead log fsync latency.",
        count_value=h.fsyncs,
        sum_value=h.fsync_seconds_sum,
    )
    yield fsync
    yield GaugeMetricFamily(
        "grstats_history_fsync_seconds_max",
        "The slowest write-ahead log fsync since start.",
        value=h.fsync_seconds_max,
    )
    yield CounterMetricFamily(
        "grstats_history_errors",
        "Failed history write, segment or housekeeping attempts.",
        value=h.errors,
    )
    yield counter_by(
        "grstats_history_values_nulled",
        "History values stored as NULL because their column cannot hold them, by column.",
        "column",
        h.values_nulled,
    )
    yield CounterMetricFamily(
        "grstats_history_files_quarantined",
        "Unreadable history files moved (damaged write-ahead logs copied) to <dir>/quarantine.",
        value=h.files_quarantined,
    )


# the states of the SQL endpoint's process (grstats.daemon.sqlchild)
SQL_PROCESS_STATES = ("idle", "starting", "up", "unresponsive", "restarting", "stopped")


def _sql_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    q = snapshot.sql
    if q is None:
        return
    yield GaugeMetricFamily(
        "grstats_sql_up",
        "1 while the SQL endpoint ([sql]) accepts connections, else 0.",
        value=1 if q.serving else 0,
    )
    yield GaugeMetricFamily(
        "grstats_sql_connections_open", "SQL endpoint connections now.", value=q.connections_open
    )
    yield GaugeMetricFamily(
        "grstats_sql_connections_max",
        "The SQL endpoint's connection cap ([sql] max_connections).",
        value=q.max_connections,
    )
    yield CounterMetricFamily(
        "grstats_sql_connections_accepted",
        "SQL endpoint connections admitted under the cap.",
        value=q.connections_accepted,
    )
    yield CounterMetricFamily(
        "grstats_sql_connections_refused",
        "SQL endpoint connections refused at max_connections (MySQL error 1040).",
        value=q.connections_refused,
    )
    yield CounterMetricFamily(
        "grstats_sql_tls_handshake_failures",
        "SQL endpoint connections whose TLS handshake failed.",
        value=q.tls_handshake_failures,
    )
    yield CounterMetricFamily(
        "grstats_sql_queries",
        "Statements the SQL endpoint's engine was given (refused ones included).",
        value=q.queries,
    )
    yield CounterMetricFamily(
        "grstats_sql_queries_interrupted",
        "Statements stopped at [sql] query_timeout (MySQL error 3024).",
        value=q.queries_interrupted,
    )
    yield counter_by(
        "grstats_sql_results_refused",
        "Results refused at a size limit ([sql] max_rows, max_result_bytes; MySQL error 1104).",
        "limit",
        q.results_refused,
    )
    yield CounterMetricFamily(
        "grstats_sql_writes_refused",
        "Statements refused because the endpoint is read-only (MySQL error 1290).",
        value=q.writes_refused,
    )
    yield counter_by(
        "grstats_sql_errors",
        "Error packets the SQL endpoint sent, by MySQL error number.",
        "code",
        q.errors,
    )
    yield CounterMetricFamily(
        "grstats_sql_handshake_timeouts",
        "SQL endpoint connections ended for not logging in within [sql] handshake_timeout.",
        value=q.handshake_timeouts,
    )
    yield CounterMetricFamily(
        "grstats_sql_logins_delayed",
        "SQL endpoint login attempts made to wait after failed logins from their address.",
        value=q.logins_delayed,
    )
    yield CounterMetricFamily(
        "grstats_sql_connections_evicted",
        "SQL endpoint connections still logging in, ended to give a new connection a slot.",
        value=q.connections_evicted,
    )
    yield GaugeMetricFamily(
        "grstats_sql_history_tail_files_left_out",
        "Unflushed write-ahead log files left out of grstats.history now (past its bound).",
        value=q.tail_skipped_files,
    )
    yield CounterMetricFamily(
        "grstats_sql_history_tail_skipped_files",
        "Unflushed write-ahead log files ever left out of grstats.history, each once.",
        value=q.tail_skipped_total,
    )
    if q.process_state:  # the endpoint's own process (grstats run / collect)
        yield GaugeMetricFamily(
            "grstats_sql_process_up",
            "1 while the SQL endpoint's process runs and reports, else 0.",
            value=1 if q.process_state == "up" else 0,
        )
        state = GaugeMetricFamily(
            "grstats_sql_process_state",
            "1 for the SQL endpoint process's state now, 0 for the others.",
            labels=("state",),
        )
        for name in SQL_PROCESS_STATES:
            state.add_metric([name], 1 if q.process_state == name else 0)
        yield state
        yield CounterMetricFamily(
            "grstats_sql_process_restarts",
            "Times the SQL endpoint's process was started again after it ended "
            "(other than for child_idle_stop).",
            value=q.process_restarts,
        )
        yield CounterMetricFamily(
            "grstats_sql_snapshots_sent",
            "Live-table snapshots written to the SQL endpoint's process.",
            value=q.snapshots_sent,
        )
        yield counter_by(
            "grstats_sql_snapshots_dropped",
            "Live-table snapshots not delivered, by reason (child_slow, too_large, ...).",
            "reason",
            q.snapshots_dropped,
        )


def _source_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    gauges = snapshot.gauges
    if "source_up" in gauges:
        yield GaugeMetricFamily(
            "grstats_source_up",
            "1 when the last read of the local member's statistics succeeded, else 0 "
            "(like mysql_up).",
            value=gauges["source_up"],
        )
    if "history_healthy" in gauges:
        yield GaugeMetricFamily(
            "grstats_history_healthy",
            "1 while history is being written, 0 when writes fail or are dropped.",
            value=gauges["history_healthy"],
        )
    status = GaugeMetricFamily(
        "grstats_health_status",
        "1 while this reason degrades /healthz, else 0 (one series per tracked reason).",
        labels=("reason",),
    )
    for reason, active in snapshot.health.status().items():
        status.add_metric([reason], active)
    yield status


def snapshot_registry(get_snapshot: Callable[[], DaemonSnapshot]) -> CollectorRegistry:
    """A fresh registry exposing only the daemon's snapshot (nothing global is touched).

    Its exposition depends on the snapshot alone, so one rendering can serve
    every scrape of the same snapshot.

    Args:
        get_snapshot: returns the current immutable snapshot; called once per
            scrape, from whatever thread serves the scrape. It must not block.

    Returns:
        A `CollectorRegistry` holding only the snapshot collector; serve it with
        `prometheus_client.generate_latest(registry)`.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(get_snapshot))
    return registry


def build_registry(
    get_snapshot: Callable[[], DaemonSnapshot], get_api_stats: Callable[[], ApiStats] = ApiStats
) -> CollectorRegistry:
    """One registry with everything /metrics shows: the snapshot and the process.

    Args:
        get_snapshot: as for `snapshot_registry`.
        get_api_stats: the API server's counters now; zeros by default.

    Returns:
        A fresh `CollectorRegistry` (nothing global is touched).
    """
    registry = snapshot_registry(get_snapshot)
    register_process_collectors(registry, get_api_stats)
    return registry
