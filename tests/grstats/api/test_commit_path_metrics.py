"""grstats_member_commit_path on /metrics: the last minute's figures as gauges in
seconds, and the labels of every commit-path series (group and member_id, no
empty channel_name: the table has no channel); values by hand."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import snapshot_registry
from grstats.core.snapshot import DaemonSnapshot
from protocol import CommitPathReport
from tests.fixtures.commit_path import GROUP, NEW, OLD, REMOTE, T0, receive_report
from tests.fixtures.member_tables import local_sample, make_tables

PREFIX = "grstats_commit_path_"
MINUTE = PREFIX + "last_minute_"


def _snapshot() -> DaemonSnapshot:
    """The remote member's reports 0, 10 and 20 s: OLD, NEW, NEW again (nothing in 10 s)."""
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    reports = (OLD, NEW, NEW)
    for seq, counters in enumerate(reports, start=1):
        receive_report(tables, seq, CommitPathReport(T0 + (seq - 1) * 10_000_000, counters))
    return tables.snapshot(T0 + 20_000_000)


def _series(snapshot: DaemonSnapshot) -> dict[str, tuple[str, list[tuple[dict[str, str], float]]]]:
    """metric family -> (its type, [(labels, value)]) for every commit-path family."""
    text = generate_latest(snapshot_registry(lambda: snapshot)).decode()
    return {
        f.name: (f.type, [(s.labels, s.value) for s in f.samples])
        for f in text_string_to_metric_families(text)
        if f.name.startswith(PREFIX)
    }


def test_the_last_minutes_figures_are_gauges_in_seconds() -> None:
    families = _series(_snapshot())
    # over the minute so far (20 s): 500 rounds, 1.0 s of them; 600 messages, 2.2 s
    kind, ((labels, value),) = families[MINUTE + "consensus_mean_seconds"]
    assert kind == "gauge"
    assert labels["member_id"] == REMOTE
    assert value == pytest.approx(1.0 / 500)
    assert families[MINUTE + "consensus_per_second"][1][0][1] == pytest.approx(500 / 20)
    assert families[MINUTE + "round_trip_mean_seconds"][1][0][1] == pytest.approx(2.2 / 600)
    # per transaction (500 data messages): round trips 2.0 s of 2.0 + 0.2 (BEFORE) + 0.5
    # (flow control) s -- the GC's 0.1 s runs beside, not on a transaction's path
    assert families[MINUTE + "consensus_share"][1][0][1] == pytest.approx(2.0 / 2.7)
    assert families[MINUTE + "transactions_per_second"][1][0][1] == pytest.approx(500 / 20)
    assert families[MINUTE + "overhead_seconds"][1][0][1] == pytest.approx(2.7 / 500)
    # no AFTER-sync waits: 0 per second and no mean (NULL: no series)
    assert families[MINUTE + "after_sync_per_second"][1][0][1] == 0.0
    assert families[MINUTE + "after_sync_mean_seconds"][1] == []
    # the last period (10 s, nothing moved): 0 per second, while the minute keeps the figures
    assert families[PREFIX + "consensus_per_second"][1][0][1] == 0.0
    assert all(kind == "gauge" for name, (kind, _) in families.items() if name.startswith(MINUTE))


def test_commit_path_series_are_labelled_by_group_and_member_only() -> None:
    families = _series(_snapshot())
    assert families
    for name, (_, samples) in families.items():
        for labels, _ in samples:
            assert labels == {"group": GROUP, "member_id": REMOTE}, name
