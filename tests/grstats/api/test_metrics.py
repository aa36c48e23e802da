"""/metrics exposition: parsed with prometheus_client's own parser, snapshots built by hand."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import build_registry
from grstats.api.self_metrics import BoottimeProcessCollector
from grstats.core.health import Health
from grstats.core.history_figures import DropCounts, HistoryFigures
from grstats.core.snapshot import (
    DaemonSnapshot,
    Departed,
)
from tests.fixtures.metrics_snapshot import (
    GROUP,
    M1,
    M2,
    member_row,
    metric_samples,
    metric_types,
    sample_snapshot,
    stats_row,
)


def _member(member_id: str, **extra: str) -> frozenset[tuple[str, str]]:
    return frozenset({"group": GROUP, "member_id": member_id, **extra}.items())


def test_member_stats_columns_use_mysqld_exporter_names_per_member() -> None:
    samples = metric_samples(sample_snapshot())
    expected = {
        "mysql_perf_schema_transactions_in_queue": 1,
        "mysql_perf_schema_transactions_checked_total": 2,
        "mysql_perf_schema_conflicts_detected_total": 3,
        "mysql_perf_schema_transactions_rows_validating": 4,
        "mysql_perf_schema_transactions_remote_in_applier_queue": 5,
        "mysql_perf_schema_transactions_remote_applied_total": 6,
        "mysql_perf_schema_transactions_local_proposed_total": 7,
        "mysql_perf_schema_transactions_local_rollback_total": 8,
    }
    for name, offset in expected.items():
        assert samples[(name, _member(M1))] == 100 + offset, name
        assert samples[(name, _member(M2))] == 200 + offset, name


def test_counters_are_counters_and_queues_and_rows_validating_are_gauges() -> None:
    types = metric_types(sample_snapshot())
    assert types["mysql_perf_schema_transactions_checked"] == "counter"
    assert types["mysql_perf_schema_conflicts_detected"] == "counter"
    assert types["mysql_perf_schema_transactions_local_rollback"] == "counter"
    assert types["mysql_perf_schema_transactions_in_queue"] == "gauge"
    assert types["mysql_perf_schema_transactions_rows_validating"] == "gauge"
    assert types["mysql_perf_schema_transactions_remote_in_applier_queue"] == "gauge"


def test_member_state_is_numeric_with_documented_mapping() -> None:
    samples = metric_samples(sample_snapshot())
    assert samples[("mysql_perf_schema_replication_group_member_state", _member(M1))] == 1
    assert samples[("mysql_perf_schema_replication_group_member_state", _member(M2))] == 5


def test_member_info_is_mysqld_exporters_every_column_lower_cased_value_one() -> None:
    # prometheus/mysqld_exporter collector/perf_schema_replication_group_members.go:
    # SELECT * ... ; label = strings.ToLower(column), value 1, gauge; no group label.
    samples = metric_samples(sample_snapshot())
    labels = frozenset(
        {
            "channel_name": "group_replication_applier",
            "member_id": M2,
            "member_host": "127.0.0.1",
            "member_port": "3307",
            "member_state": "UNREACHABLE",
            "member_role": "SECONDARY",
            "member_version": "8.4.3",
            "member_communication_stack": "XCom",
        }.items()
    )
    assert samples[("mysql_perf_schema_replication_group_member_info", labels)] == 1
    assert (
        metric_types(sample_snapshot())["mysql_perf_schema_replication_group_member_info"]
        == "gauge"
    )


def test_member_info_reports_a_null_cell_as_an_empty_label() -> None:
    row: dict[str, str | int | None] = {**member_row(M2, 3307, "ONLINE", "SECONDARY")}
    row["MEMBER_COMMUNICATION_STACK"] = None
    snapshot = DaemonSnapshot(
        taken_at_us=0,
        group_name=GROUP,
        local_member_id=M1,
        tables={"replication_group_members": (row,)},
    )
    infos = [
        dict(labels)
        for (name, labels), _ in metric_samples(snapshot).items()
        if name == "mysql_perf_schema_replication_group_member_info"
    ]
    assert [info["member_communication_stack"] for info in infos] == [""]


def test_local_member_is_marked_once() -> None:
    samples = metric_samples(sample_snapshot())
    local = {labels for (name, labels) in samples if name == "grstats_local_member_info"}
    assert local == {_member(M1)}


def test_daemon_health_counters_and_rejections_by_reason() -> None:
    samples = metric_samples(sample_snapshot())
    assert samples[("grstats_envelopes_accepted_total", frozenset())] == 90
    assert samples[("grstats_bus_reconnects_total", frozenset())] == 2
    assert samples[("grstats_bus_connected", frozenset())] == 1
    by_reason = {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "grstats_envelopes_rejected_total"
    }
    assert by_reason == {
        "malformed": 4,
        "oversized": 0,
        "spoofed": 1,
        "other_group": 0,
        "stale": 3,
        "invalid_id": 0,
        "out_of_range": 0,
        "future": 0,
        "over_limit": 0,
    }


def test_last_seen_is_a_unix_timestamp_per_member_and_absent_when_unknown() -> None:
    samples = metric_samples(sample_snapshot())  # taken at 1_700_000_000 s; M2 heard 2.5 s before
    name = "grstats_member_last_seen_timestamp_seconds"
    assert samples[(name, _member(M2))] == 1_699_999_997.5
    assert (name, _member(M1)) not in samples


def test_source_up_and_history_healthy_are_absent_until_the_daemon_tracks_them() -> None:
    names = {name for name, _ in metric_samples(sample_snapshot())}
    assert "grstats_source_up" not in names
    assert "grstats_history_healthy" not in names


def test_source_up_history_healthy_and_health_reasons_follow_the_gauges() -> None:
    snapshot = DaemonSnapshot(
        taken_at_us=0,
        group_name=GROUP,
        local_member_id=M1,
        gauges={"bus_connected": 1, "source_up": 0, "history_healthy": 1},
        health=Health()
        .check("bus_disconnected")
        .check("source_down", "source: not connected")
        .check("history_degraded")
        .check("disk", "disk: full", "disk: still full"),
    )
    samples = metric_samples(snapshot)
    assert samples[("grstats_source_up", frozenset())] == 0
    assert samples[("grstats_history_healthy", frozenset())] == 1
    status = {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "grstats_health_status"
    }
    assert status == {
        "bus_disconnected": 0,
        "source_down": 1,
        "history_degraded": 0,
        "disk": 1,
    }


def test_build_info_process_and_python_metrics_are_in_the_registry() -> None:
    samples = metric_samples(sample_snapshot())
    build = [dict(labels) for (name, labels) in samples if name == "grstats_build_info"]
    assert len(build) == 1
    assert build[0]["version"]
    assert build[0]["python"].count(".") == 2
    names = {name for name, _ in samples}
    assert {"process_resident_memory_bytes", "process_open_fds", "python_info"} <= names
    assert "python_gc_collections_total" in names


def test_api_connection_counters_are_exposed_even_without_a_server() -> None:
    samples = metric_samples(sample_snapshot())
    assert samples[("grstats_api_connections_open", frozenset())] == 0
    refused = {
        dict(labels)["reason"]
        for (name, labels) in samples
        if name == "grstats_api_connections_refused_total"
    }
    assert refused == {"limit", "too_large", "bad_request"}


def test_registries_are_independent_and_the_global_one_is_untouched() -> None:
    from prometheus_client import REGISTRY  # noqa: PLC0415 - only this test looks at it

    before = {family.name for family in REGISTRY.collect()}
    build_registry(sample_snapshot)
    build_registry(sample_snapshot)  # a second one: no duplicate-registration error
    assert {family.name for family in REGISTRY.collect()} == before
    assert "grstats_build_info" not in before


def test_null_cell_gives_no_series_rather_than_zero() -> None:
    row = stats_row(M2, 0)
    row["COUNT_TRANSACTIONS_IN_QUEUE"] = None
    snapshot = DaemonSnapshot(
        taken_at_us=0,
        group_name=GROUP,
        local_member_id=M1,
        tables={"replication_group_member_stats": (row,)},
    )
    samples = metric_samples(snapshot)
    assert ("mysql_perf_schema_transactions_in_queue", _member(M2)) not in samples
    assert samples[("mysql_perf_schema_transactions_checked_total", _member(M2))] == 2


def test_every_scrape_reads_the_current_snapshot() -> None:
    current = [sample_snapshot()]
    registry = build_registry(lambda: current[0])
    generate_latest(registry)
    current[0] = DaemonSnapshot(taken_at_us=1, group_name=GROUP, local_member_id=M1)
    text = generate_latest(registry).decode()
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert "mysql_perf_schema_transactions_in_queue" not in names
    assert "grstats_envelopes_accepted_total" in names


def test_empty_snapshot_before_first_sample_still_exposes_health() -> None:
    snapshot = DaemonSnapshot(taken_at_us=0, group_name="", local_member_id="")
    samples = metric_samples(snapshot)
    assert samples[("grstats_envelopes_accepted_total", frozenset())] == 0
    assert samples[("grstats_bus_connected", frozenset())] == 0


def test_process_metrics_survive_a_proc_without_stat(tmp_path: Path) -> None:
    # systemd's ProcSubset=pid hides /proc/stat (the boot time); /proc/self stays.
    (tmp_path / "self").symlink_to("/proc/self")
    registry = CollectorRegistry(auto_describe=False)
    BoottimeProcessCollector(proc=str(tmp_path), registry=registry)
    families = {f.name: f for f in registry.collect()}
    start = families["process_start_time_seconds"].samples[0].value
    assert 0 < start <= time.time()
    assert families["process_resident_memory_bytes"].samples[0].value > 0


def test_history_figures_are_exported_when_history_is_on() -> None:
    figures = HistoryFigures(
        rows_written=1234,
        rows_buffered=7,
        dropped=DropCounts(buffer_full=3, invalid=2, duplicate=9),
        wal_bytes=4096,
        segments_written=5,
        fsyncs=10,
        fsync_seconds_sum=0.25,
        fsync_seconds_max=0.1,
        errors=4,
    )
    samples = metric_samples(dataclasses.replace(sample_snapshot(), history=figures))
    assert samples[("grstats_history_rows_written_total", frozenset())] == 1234
    assert samples[("grstats_history_rows_buffered", frozenset())] == 7
    dropped = {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "grstats_history_rows_dropped_total"
    }
    # every reason has its series, 0 or not
    assert dropped == {"buffer_full": 3, "disk_full": 0, "invalid": 2, "duplicate": 9, "corrupt": 0}
    assert samples[("grstats_history_fsync_seconds_count", frozenset())] == 10
    assert samples[("grstats_history_fsync_seconds_sum", frozenset())] == 0.25
    assert samples[("grstats_history_fsync_seconds_max", frozenset())] == 0.1
    assert samples[("grstats_history_segments_written_total", frozenset())] == 5
    assert samples[("grstats_history_errors_total", frozenset())] == 4


def test_history_values_nulled_and_files_quarantined_are_exported() -> None:
    figures = HistoryFigures(
        dropped=DropCounts(corrupt=1), values_nulled={"apply_lag_seconds": 3}, files_quarantined=2
    )
    samples = metric_samples(dataclasses.replace(sample_snapshot(), history=figures))
    nulled = ("grstats_history_values_nulled_total", frozenset({("column", "apply_lag_seconds")}))
    assert samples[nulled] == 3
    assert samples[("grstats_history_files_quarantined_total", frozenset())] == 2
    corrupt = ("grstats_history_rows_dropped_total", frozenset({("reason", "corrupt")}))
    assert samples[corrupt] == 1


def test_no_history_series_when_history_is_off() -> None:
    assert not any(
        name.startswith("grstats_history_rows") for name, _ in metric_samples(sample_snapshot())
    )


def test_departed_members_have_only_their_departure_series() -> None:
    gone = (
        Departed(
            GROUP, "44444444-4444-4444-4444-444444444444", "UNREACHABLE", 1_600_000_000_000_000
        ),
        Departed(GROUP, "55555555-5555-5555-5555-555555555555", "OFFLINE", 1_650_000_000_000_000),
    )
    samples = metric_samples(dataclasses.replace(sample_snapshot(), departed=gone))
    state = "mysql_perf_schema_replication_group_member_state"
    seen = "grstats_member_last_seen_timestamp_seconds"
    for member, how in (("4" * 8, "UNREACHABLE"), ("5" * 8, "OFFLINE")):
        member_id = "-".join((member, member[:4], member[:4], member[:4], member + member[:4]))
        assert (state, _member(member_id)) not in samples
        assert (seen, _member(member_id)) not in samples
        assert samples[("grstats_member_departed", _member(member_id, state=how))] == 1
