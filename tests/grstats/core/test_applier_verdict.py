"""The applier verdict from hand-made wait breakdowns (shares computed by hand)."""

from __future__ import annotations

import pytest

from grstats.core import columns as col
from grstats.core.applier_verdict import explain

S = 1_000_000_000  # 1 s in ns


def _row(work: int, **waits: int) -> dict[str, object]:
    row: dict[str, object] = {
        col.TOTAL_ACTIVE_TIME_DURATION: 100 * S,
        col.WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME: work * S,
        col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME: 0,
        col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME: 0,
        col.WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME: 0,
        col.WAITS_WORKER_QUEUES_FULL_SUM_TIME: 0,
        col.WAITS_FOR_AVAILABLE_WORKER_SUM_TIME: 0,
        col.TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME: 0,
    }
    names = {
        "co": col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME,
        "dep": col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME,
        "mem": col.WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME,
        "full": col.WAITS_WORKER_QUEUES_FULL_SUM_TIME,
        "wkr": col.WAITS_FOR_AVAILABLE_WORKER_SUM_TIME,
        "read": col.TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME,
    }
    for key, seconds in waits.items():
        row[names[key]] = seconds * S
    return row


@pytest.mark.parametrize(
    ("row", "kind"),
    [
        (_row(90, co=5), "starved"),
        (_row(50, co=40), "starved"),  # exactly 50 % waiting for work
        (_row(20, co=50, dep=25), "commit_order"),
        (_row(20, co=25, dep=50), "dependencies"),
        (_row(10, mem=15, full=10, wkr=20), "queue_memory"),  # 25 % memory + full
        (_row(10, wkr=60), "too_few_workers"),
        (_row(10, read=30), "relay_log_read"),
        (_row(30, co=19, dep=19, wkr=19), "busy"),  # no wait reaches 20 %
        (_row(20, co=30, dep=30), "commit_order"),  # a tie goes to commit order
    ],
)
def test_verdicts(row: dict[str, object], kind: str) -> None:
    assert explain(row).kind == kind


def test_the_numbers_behind_a_verdict() -> None:
    verdict = explain(_row(20, co=50, dep=25))
    assert verdict.active_s == 100.0
    assert verdict.shares["work_from_source"] == 0.2
    assert verdict.shares["commit_order"] == 0.5
    assert verdict.shares["dependencies"] == 0.25
    assert "replica_preserve_commit_order" in verdict.advice


def test_null_waits_from_an_80_server_are_unknown() -> None:
    row = _row(90)
    row[col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME] = None
    assert explain(row).kind == "unknown"
    assert explain({}).kind == "unknown"


def test_two_readings_judge_the_increase() -> None:
    before = _row(90)  # a long idle past ...
    after = _row(90 + 10, co=80)  # ... then 100 s more active: 10 s idle, 80 s commit order
    after[col.TOTAL_ACTIVE_TIME_DURATION] = 200 * S
    assert explain(after).kind == "starved"  # totals: 100/200 waiting for work
    verdict = explain(after, before)
    assert verdict.kind == "commit_order"
    assert verdict.shares["commit_order"] == 0.8
