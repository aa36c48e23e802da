"""core.health: one typed health, read alike by /healthz, /metrics and sd_notify."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import build_registry
from grstats.api.options import ApiOptions
from grstats.api.server import ApiServer
from grstats.core.health import UNCHECKED, Health, HealthReason
from grstats.core.history_figures import HistoryFigures, HistoryHealth
from grstats.core.snapshot import DaemonSnapshot, status_of
from grstats.daemon.health import DaemonParts, assemble_snapshot
from grstats.daemon.notify import status_text
from tests.fixtures.member_tables import make_tables


def test_a_code_degraded_twice_is_one_code_with_two_details() -> None:
    health = Health().check("a").check("b", "b: one", "b: two").check("c", "c: x")
    assert health.codes() == ("b", "c")
    assert health.details() == ("b: one", "b: two", "c: x")
    assert health.reasons[0] == HealthReason("b", "b: one")
    assert not health.ok


def test_every_checked_code_has_a_status_active_or_not() -> None:
    health = Health().check("a").check("b", "b: down")
    assert health.status() == {"a": 0, "b": 1}
    assert UNCHECKED.ok and UNCHECKED.status() == {}


def test_merge_keeps_both_checks_once() -> None:
    merged = Health().check("a", "a: x").merge(Health().check("a").check("b"))
    assert merged.checked == ("a", "b")
    assert merged.details() == ("a: x",)


class _History:
    """A history writer as the daemon sees it, with data faults."""

    stats = HistoryFigures(rows_written=3)

    async def start(self) -> None: ...

    def record(self, row: object) -> None: ...

    async def close(self) -> None: ...

    def health(self) -> HistoryHealth:
        return HistoryHealth(True, faults=("2 rows dropped (buffer full)", "1 file quarantined"))


def _views(health_snapshot: DaemonSnapshot) -> tuple[dict[str, Any], dict[str, float], str]:
    server = ApiServer(ApiOptions(port=0), lambda: health_snapshot)
    status, _, body = server.route("/healthz")
    healthz = json.loads(b"".join(body))
    text = generate_latest(build_registry(lambda: health_snapshot)).decode()
    metric = {
        s.labels["reason"]: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "grstats_health_status"
    }
    return {**healthz, "http": status}, metric, status_text(status_of(health_snapshot))


def test_the_daemons_health_reaches_healthz_metrics_and_systemd_alike() -> None:
    snapshot = assemble_snapshot(
        make_tables(),
        DaemonParts(history=_History()),  # type: ignore[arg-type]
    )
    assert snapshot.history == HistoryFigures(rows_written=3)  # the writer's own figures
    healthz, metric, systemd = _views(snapshot)
    assert healthz["http"] == 503 and healthz["status"] == "degraded"
    assert healthz["reasons"] == ["bus_disconnected", "history_data"]
    assert healthz["details"] == [
        "bus: disconnected",
        "history: 2 rows dropped (buffer full)",
        "history: 1 file quarantined",
    ]
    assert metric == {
        "bus_disconnected": 1,
        "history_degraded": 0,
        "history_data": 1,
        "pending_gtids_full": 0,
        "sections_over_cadence": 0,
        "server_oracle": 0,  # the tables check their own
    }
    assert systemd.endswith(
        " degraded: bus: disconnected; history: 2 rows dropped (buffer full); "
        "history: 1 file quarantined"
    )


def test_no_gauge_decodes_into_a_reason() -> None:
    # the old second vocabulary: a `degraded_<x>` gauge read back as reason <x>
    snapshot = assemble_snapshot(make_tables(), DaemonParts())
    assert not any(key.startswith("degraded_") for key in snapshot.gauges)
