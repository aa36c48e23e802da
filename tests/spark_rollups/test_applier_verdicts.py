"""The report's verdict of one member's week: rollup columns -> shares -> the shared rule.

Figures by hand; no Spark session (the function is pure Python over one row).
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_rollups.applierreport import verdict

NS = 1_000_000_000


def _week(**waits: int | None) -> dict[str, Any]:
    week: dict[str, Any] = {
        "active_ns": 100 * NS,
        "work_from_source_wait_ns": 10 * NS,
        "commit_order_wait_ns": 0,
        "commit_schedule_dependency_wait_ns": 0,
        "worker_queues_memory_wait_ns": 0,
        "worker_queues_full_wait_ns": 0,
        "available_worker_wait_ns": 0,
        "relay_log_read_wait_ns": 0,
    }
    week.update(waits)
    return week


def test_waiting_for_work_half_the_time_is_starved() -> None:
    kind, shares = verdict(_week(work_from_source_wait_ns=50 * NS, commit_order_wait_ns=45 * NS))
    assert kind == "starved"
    assert shares["work_from_source"] == pytest.approx(0.5)


def test_queue_memory_is_the_memory_and_the_full_queue_waits_together() -> None:
    # 12 % + 12 % = 24 %: over the 20 % bound only together
    kind, shares = verdict(
        _week(worker_queues_memory_wait_ns=12 * NS, worker_queues_full_wait_ns=12 * NS)
    )
    assert kind == "queue_memory"
    assert shares["queue_memory"] == pytest.approx(0.24)


def test_a_tie_goes_to_the_commit_order() -> None:
    kind, _ = verdict(
        _week(commit_order_wait_ns=30 * NS, commit_schedule_dependency_wait_ns=30 * NS)
    )
    assert kind == "commit_order"


def test_no_wait_over_the_bound_is_busy() -> None:
    kind, _ = verdict(_week(available_worker_wait_ns=19 * NS, relay_log_read_wait_ns=19 * NS))
    assert kind == "busy"


@pytest.mark.parametrize(
    "week",
    [_week(active_ns=0), _week(active_ns=None), _week(relay_log_read_wait_ns=None)],
    ids=["no active time", "active time unknown", "a wait unknown"],
)
def test_partial_figures_are_unknown(week: dict[str, Any]) -> None:
    assert verdict(week) == ("unknown", {})
