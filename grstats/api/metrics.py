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

Member state is the gauge `mysql_perf_schema_replication_group_member_state`
with the mapping of Percona's group-replication queries for mysqld_exporter
(see MEMBER_STATE_VALUES): 0 unknown/empty, 1 ONLINE, 2 RECOVERING, 3 OFFLINE,
4 ERROR, 5 UNREACHABLE. `mysql_perf_schema_replication_group_member_info` is
exactly mysqld_exporter's (perf_schema.replication_group_members): a gauge of
value 1 per row whose labels are every column of replication_group_members,
lower-cased, the state included (so it changes series when the state
changes, as there) and NULL as "". Like mysqld_exporter's it has no `group`
label; join on `member_id` (a server UUID) for it.

The daemon's own member is marked by `grstats_local_member_info{group,
member_id}` (one series, value 1), because every daemon exports every member:
a dashboard or a recording rule uses it to pick the daemon that speaks for a
member. When a member was last heard of is the Unix time
`grstats_member_last_seen_timestamp_seconds` (snapshot time minus the age),
so it does not move while nothing is heard and `time() - x` is the age.

Invariants: a cell that is None or not a number is skipped (no series), never
reported as 0; a row without MEMBER_ID is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector, CollectorRegistry

from grstats.api.applier_metrics import applier_families
from grstats.api.flow_metrics import flow_families
from grstats.api.gtid_metrics import gtid_families
from grstats.api.health import ApiStats, health_reasons, tracked_health_reasons
from grstats.api.lag_metrics import lag_families
from grstats.api.self_metrics import register_process_collectors
from grstats.api.table_metrics import declared_families
from grstats.core import columns as col
from grstats.core.snapshot import MEMBERS_COLUMNS, REJECT_REASONS, DaemonSnapshot, Row

__all__ = [
    "MEMBER_STATE_VALUES",
    "MEMBER_STATS_METRICS",
    "SnapshotCollector",
    "build_registry",
    "snapshot_registry",
]

# Percona mysqld_exporter (queries-mysqld-group-replication.yml) member_state mapping.
MEMBER_STATE_VALUES: Mapping[str, int] = {
    "ONLINE": 1,
    "RECOVERING": 2,
    "OFFLINE": 3,
    "ERROR": 4,
    "UNREACHABLE": 5,
}

# column -> (metric name as exposed, kind, help), from the column registry;
# kind is "counter" or "gauge".
MEMBER_STATS_METRICS: tuple[tuple[str, str, str, str], ...] = tuple(
    (c.name, c.metric, c.kind, c.help) for c in col.MEMBER_STATS.columns if c.metric is not None
)

_MEMBER_LABELS = ("group", "member_id")
# mysqld_exporter: every replication_group_members column, lower-cased, in table order.
_INFO_LABELS = tuple(column.lower() for column in MEMBERS_COLUMNS)


def _strip_total(name: str) -> str:
    # prometheus_client appends "_total" to counter samples itself.
    return name.removesuffix("_total")


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


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
        yield from _member_stats_families(snapshot)
        yield from _member_families(snapshot)
        yield from lag_families(snapshot, _group_of(snapshot))
        yield from flow_families(snapshot, _group_of(snapshot))
        yield from applier_families(snapshot, _group_of(snapshot))
        yield from gtid_families(snapshot, _group_of(snapshot))
        yield from declared_families(snapshot, _group_of(snapshot), col.COMMIT_PATH)
        yield from _health_families(snapshot)


def _counter_by(
    name: str, help_text: str, label: str, counts: Mapping[str, int] | Mapping[int, int]
) -> Metric:
    """One counter family with a series per `label` value (sorted), from `counts`."""
    family = CounterMetricFamily(name, help_text, labels=(label,))
    for key, count in sorted(counts.items()):
        family.add_metric([str(key)], count)
    return family


def _group_of(snapshot: DaemonSnapshot) -> dict[str, str]:
    # grstats_member_status carries the group per member (collector mode may
    # see several groups); fall back to the daemon's own group.
    groups: dict[str, str] = {}
    for row in snapshot.table(col.MEMBER_STATUS.name):
        member_id = _text(row.get(col.MEMBER_ID))
        group = _text(row.get(col.GROUP_NAME))
        if member_id and group:
            groups[member_id] = group
    return groups


def _labels(row: Row, groups: Mapping[str, str], default_group: str) -> list[str] | None:
    member_id = _text(row.get(col.MEMBER_ID))
    if not member_id:
        return None
    return [groups.get(member_id, default_group), member_id]


def _member_stats_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    groups = _group_of(snapshot)
    # An OFFLINE member is not in the group (MySQL shows it zeroed): no series, so
    # its counters do not fall to 0 and come back as a bogus reset.
    offline = {
        _text(r.get(col.MEMBER_ID))
        for r in snapshot.table(col.MEMBERS.name)
        if r.get(col.MEMBER_STATE) == "OFFLINE"
    }
    for column, name, kind, help_text in MEMBER_STATS_METRICS:
        family: CounterMetricFamily | GaugeMetricFamily
        if kind == "counter":
            family = CounterMetricFamily(_strip_total(name), help_text, labels=_MEMBER_LABELS)
        else:
            family = GaugeMetricFamily(name, help_text, labels=_MEMBER_LABELS)
        for row in snapshot.table(col.MEMBER_STATS.name):
            if _text(row.get(col.MEMBER_ID)) in offline:
                continue
            labels = _labels(row, groups, snapshot.group_name)
            value = _number(row.get(column))
            if labels is not None and value is not None:
                family.add_metric(labels, value)
        yield family


def _member_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    groups = _group_of(snapshot)
    state = GaugeMetricFamily(
        "mysql_perf_schema_replication_group_member_state",
        "Member state: 0 unknown, 1 ONLINE, 2 RECOVERING, 3 OFFLINE, 4 ERROR, 5 UNREACHABLE.",
        labels=_MEMBER_LABELS,
    )
    info = GaugeMetricFamily(
        "mysql_perf_schema_replication_group_member_info",
        "Information about the replication group member: channel_name, member_id, "
        "member_host, member_port, member_state. (member_role and member_version "
        "where available)",
        labels=_INFO_LABELS,
    )
    local = GaugeMetricFamily(
        "grstats_local_member_info",
        "The member this daemon speaks for (publishes for); 1.",
        labels=_MEMBER_LABELS,
    )
    for row in snapshot.table(col.MEMBERS.name):
        labels = _labels(row, groups, snapshot.group_name)
        if labels is None:
            continue
        state.add_metric(labels, MEMBER_STATE_VALUES.get(_text(row.get(col.MEMBER_STATE)), 0))
        info.add_metric([_text(row.get(column)) for column in MEMBERS_COLUMNS], 1)
    if snapshot.local_member_id:
        group = groups.get(snapshot.local_member_id, snapshot.group_name)
        local.add_metric([group, snapshot.local_member_id], 1)
    departed = GaugeMetricFamily(
        "grstats_member_departed",
        "1 for a member that departed (state: OFFLINE or ERROR, it left; UNREACHABLE, it was "
        "silent for forget_after) and has not come back; it is in no table and no other "
        "per-member series.",
        labels=(*_MEMBER_LABELS, "state"),
    )
    for gone in snapshot.departed:
        departed.add_metric([gone.group, gone.member_id, gone.state], 1)
    yield state
    yield info
    yield local
    yield departed


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
        value=gauges.get("members_known", len(snapshot.table(col.MEMBERS.name))),
    )
    yield CounterMetricFamily(
        "grstats_envelopes_clamped",
        "Accepted envelopes whose negative queue sizes were shown as 0.",
        value=counters.envelopes_clamped,
    )
    yield CounterMetricFamily(
        "grstats_envelopes_lag_malformed",
        "Accepted envelopes whose ext.lag section was refused (stats applied, lag not).",
        value=counters.envelopes_lag_malformed,
    )
    yield CounterMetricFamily(
        "grstats_envelopes_applier_malformed",
        "Accepted envelopes whose ext.applier section was refused (stats applied, applier not).",
        value=counters.envelopes_applier_malformed,
    )
    yield CounterMetricFamily(
        "grstats_envelopes_gtids_malformed",
        "Accepted envelopes whose ext.gtids section was refused (stats applied, GTID state not).",
        value=counters.envelopes_gtids_malformed,
    )
    yield CounterMetricFamily(
        "grstats_applier_workers_dropped",
        "Local applier workers left out of published ext.applier sections "
        "(past the wire's bound of 256 workers), summed over envelopes.",
        value=counters.applier_workers_dropped,
    )
    yield _counter_by(
        "grstats_ext_sections_unsendable",
        "Local samples published without their ext section because the wire refused "
        "one of its figures, by section.",
        "section",
        counters.sections_unsendable,
    )
    yield _counter_by(
        "grstats_ext_sections_dropped",
        "Unknown ext sections of received envelopes skipped unread at admission "
        "(never stored), by section name.",
        "section",
        counters.ext_dropped,
    )
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
    yield _counter_by(
        "grstats_server_oracle_disagreements",
        "Those comparisons that disagreed, by column: the bus did not carry what MySQL received.",
        "column",
        counters.oracle_disagreements,
    )
    yield from _source_families(snapshot)
    yield from _history_families(snapshot)
    yield from _sql_families(snapshot)
    yield from _member_status_families(snapshot)


def _history_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    h = snapshot.history
    if h is None:
        return
    yield CounterMetricFamily(
        "grstats_history_rows_written",
        "History rows fsynced to the write-ahead log.",
        value=h.rows_written,
    )
    yield _counter_by(
        "grstats_history_rows_dropped",
        "History rows that will never be stored, by reason.",
        "reason",
        h.dropped,
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
    yield _counter_by(
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
SQL_PROCESS_STATES = ("starting", "up", "unresponsive", "restarting", "stopped")


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
    yield _counter_by(
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
    yield _counter_by(
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
            "Times the SQL endpoint's process was started again after it ended.",
            value=q.process_restarts,
        )
        yield CounterMetricFamily(
            "grstats_sql_snapshots_sent",
            "Live-table snapshots written to the SQL endpoint's process.",
            value=q.snapshots_sent,
        )
        yield _counter_by(
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
    active = set(health_reasons(snapshot))
    for reason in dict.fromkeys((*tracked_health_reasons(snapshot), *sorted(active))):
        status.add_metric([reason], 1 if reason in active else 0)
    yield status


def _member_status_families(snapshot: DaemonSnapshot) -> Iterator[Metric]:
    last_seen = GaugeMetricFamily(
        "grstats_member_last_seen_timestamp_seconds",
        "Unix time of the last accepted envelope (or sample, for the local member).",
        labels=_MEMBER_LABELS,
    )
    taken_at_s = snapshot.taken_at_us / 1e6
    member_accepted = CounterMetricFamily(
        "grstats_member_envelopes_accepted",
        "Envelopes accepted from this member.",
        labels=_MEMBER_LABELS,
    )
    member_rejected = CounterMetricFamily(
        "grstats_member_envelopes_rejected",
        "Envelopes refused on this member's topics, by reason.",
        labels=(*_MEMBER_LABELS, "reason"),
    )
    from_server = GaugeMetricFamily(
        "grstats_member_from_server",
        "1 when the member's rows come from the local server's view only (no grstats "
        "daemon publishes for it), 0 when from its daemon.",
        labels=_MEMBER_LABELS,
    )
    for row in snapshot.table(col.MEMBER_STATUS.name):
        labels = _labels(row, {}, _text(row.get(col.GROUP_NAME)) or snapshot.group_name)
        if labels is None:
            continue
        from_server.add_metric(labels, 1 if row.get(col.ROW_ORIGIN) == col.ORIGIN_SERVER else 0)
        age = _number(row.get(col.LAST_SEEN_AGE_SECONDS))
        if age is not None:
            last_seen.add_metric(labels, taken_at_s - age)
        count = _number(row.get(col.ACCEPTED))
        if count is not None:
            member_accepted.add_metric(labels, count)
        for reason in REJECT_REASONS:
            count = _number(row.get(col.rejected_column(reason)))
            if count is not None:
                member_rejected.add_metric([*labels, reason], count)
    yield last_seen
    yield member_accepted
    yield member_rejected
    yield from_server


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
