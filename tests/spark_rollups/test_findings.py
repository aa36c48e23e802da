"""findings.py on hand-made weeks of rollups (no Spark): the sentences, their order, a quiet week.

The busy week, by hand: member C (db3:3306) caused 186,624 of the group's
291,600 seconds with writers held (64 %; 81 h = 3 d 9 h), in one sustained
period on Tuesday 2026-11-17 from 10:00:00 to 22:59:59 UTC (46,800 s = 13 h); its
applier waited for the commit order 1.5e12 ns of 1e12 ns active (150 %) and
for work only 10 %; its p95 apply lag is 2,000 s from 10:00 to 22:59 on Monday
to Friday, 0.5 s otherwise (worst: 33 min 20 s, first reached Monday 10:00), while the
group writes 3,000 transactions an hour from 10:00 to 12:00 and 1,000 in the
other hours (3.0 times its median hour); the conflict rate went from 100 /
100,000 (0.10 %)
to 300 / 100,000 (0.30 %), +200 %; Sunday has no rollups and member B
reported 5 of 7 days (71 %).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from spark_rollups.findings import QUIET, findings, findings_section
from spark_rollups.flowreport import FlowWeek
from spark_rollups.lagreport import LagWeek
from spark_rollups.render import Bullets
from spark_rollups.week import WeekData

A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
C = "cccccccc-0000-4000-8000-000000000003"
LABELS = {A: "db1:3306", B: "db2:3306", C: "db3:3306"}
MONDAY = dt.date(2026, 11, 16)
TUESDAY_S = 1_794_873_600  # 2026-11-17 00:00 UTC: 2025-11-17 (1_763_337_600) + 365 days
WAITS = (
    "work_from_source_wait_ns",
    "commit_order_wait_ns",
    "commit_schedule_dependency_wait_ns",
    "worker_queues_memory_wait_ns",
    "worker_queues_full_wait_ns",
    "available_worker_wait_ns",
    "relay_log_read_wait_ns",
)


def _member(member_id: str, coverage: float = 1.0, days: int = 7) -> dict[str, Any]:
    return {"member_id": member_id, "coverage": coverage, "days_present": days}


def _applier(member_id: str, **waits: float) -> dict[str, Any]:
    return {"member_id": member_id, "active_ns": 1e12, **dict.fromkeys(WAITS, 0.0), **waits}


def _flow_member(member_id: str, caused: int) -> dict[str, Any]:
    return {
        "member_id": member_id,
        "throttled_seconds_caused": caused,
        "throttled_seconds_caused_certifier": 0,
        "throttled_seconds_caused_applier": caused,
    }


def _quiet_week() -> WeekData:
    dates = [(MONDAY + dt.timedelta(days=i)).isoformat() for i in range(7)]
    return WeekData(
        group="g",
        week="2026-W47",
        start=MONDAY,
        days=[{"date": d} for d in dates],
        members=[_member(A), _member(B), _member(C)],
        totals={"transactions_checked": 100_000, "conflicts_detected": 100},
        previous={"transactions_checked": 100_000, "conflicts_detected": 110},
    )


def _busy_week() -> WeekData:
    week = _quiet_week()
    week.days = week.days[:6]  # no rollups on Sunday
    week.members = [_member(A), _member(B, coverage=5 / 7, days=5), _member(C)]
    week.totals = {"transactions_checked": 100_000, "conflicts_detected": 300}
    week.previous = {"transactions_checked": 100_000, "conflicts_detected": 100}
    week.flow = FlowWeek(
        totals={"seconds": 604_800, "throttled_seconds": 291_600},
        members=[_flow_member(A, 1_000), _flow_member(B, 0), _flow_member(C, 186_624)],
        periods=[
            {
                "member_id": C,
                "start_s": TUESDAY_S + 10 * 3600,
                "end_s": TUESDAY_S + 23 * 3600 - 1,
                "length_s": 46_800,
            },
            {"member_id": A, "start_s": TUESDAY_S, "end_s": TUESDAY_S + 99, "length_s": 100},
        ],
    )
    week.applier = [
        _applier(A, work_from_source_wait_ns=0.9e12),
        _applier(C, work_from_source_wait_ns=0.1e12, commit_order_wait_ns=1.5e12),
    ]
    hours = []
    for day in range(7):
        date = (MONDAY + dt.timedelta(days=day)).isoformat()
        for hour in range(24):
            slow = 2_000.0 if day < 5 and 10 <= hour <= 22 else 0.5
            hours.append({"member_id": C, "date": date, "hour_of_day": hour, "p95": slow})
            hours.append({"member_id": A, "date": date, "hour_of_day": hour, "p95": 0.2})
    week.lag = LagWeek(hours=hours)
    week.hours = [
        {"hour_of_day": hour, "transactions_checked": 3_000 if hour in (10, 11) else 1_000}
        for _ in range(7)
        for hour in range(24)
    ]
    return week


def test_a_busy_week_gives_five_ranked_sentences_from_the_sections_verdicts() -> None:
    assert findings(_busy_week(), LABELS) == [
        "**db3:3306** held the group back: it caused 64% of the 3 d 9 h writers were held by "
        "flow control, longest 13 h from Tue 11-17 10:00 to 22:59 UTC; make its applier keep "
        "up (its verdict below) before raising "
        "group_replication_flow_control_applier_threshold.",
        "**db3:3306**'s applier is commit order bound: those waits take 150% of its active "
        "time this week; break up its large transactions and have the sources track "
        "dependencies by WRITESET (keep replica_preserve_commit_order=ON, which GR requires).",
        "**db3:3306** lags: its p95 apply lag reaches 33 min 20 s (Mon 11-16 10:00 UTC); the "
        "load that builds it arrives 10:00 to 12:00 UTC, when the group writes up to 3.0 "
        "times its median hour: move batch writes out of those hours or speed up its applier.",
        "The conflict rate rose from 0.10% to 0.30% week over week (+200%); see the top "
        "conflict hours and the rollbacks by member for the rows written concurrently.",
        "No data on Sun: the week's figures cover 6 of 7 days; check that every member's "
        "history reached the rollup.",
    ]  # the sixth, member B's 71 % coverage, is past the five


def test_data_gaps_name_the_member_and_its_coverage() -> None:
    week = _quiet_week()
    week.members = [_member(A), _member(B, coverage=5 / 7, days=5), _member(C)]
    assert findings(week, LABELS) == [
        "**db2:3306** reported 71% of the week's samples (5 of 7 days); check its daemon's "
        "/healthz and history."
    ]


def test_a_quiet_week_says_so_in_one_line() -> None:
    heading, items = findings_section(_quiet_week(), LABELS)
    assert heading == "Findings"
    assert items == [QUIET]
    assert QUIET.startswith("A quiet week: no member held the group back")


def test_findings_are_a_numbered_list_when_there_are_some() -> None:
    _, items = findings_section(_busy_week(), LABELS)
    assert len(items) == 1 and isinstance(items[0], Bullets) and items[0].ordered
    assert len(items[0].items) == 5


def test_a_queue_flow_control_never_contained_is_a_finding_with_the_threshold_that_would() -> None:
    # the issue's week at MySQL's default thresholds: db3's applier queue over 25,000 for
    # 80 h (288,000 s) up to 1,900,000, its p95 apply lag 4 h 23 min (15,780 s), and not
    # one held writer; the hold's least quota is int(int(0.05 x 25,000) x 0.9) = 1,125.
    # Its capacity, 47.6 tx/s: int(0.05 x T) <= 47 for T <= 20 x 47 + 19 = 959.
    week = _quiet_week()
    week.flow = FlowWeek(
        totals={"seconds": 604_800, "throttled_seconds": 0, "quota_active_seconds": 303_120},
        members=[
            {**_flow_member(A, 0), "uncontained_seconds": 0},
            {
                **_flow_member(C, 0),
                "uncontained_seconds": 288_000,
                "applier_queue_max": 1_900_000,
                "applier_threshold": 25_000,
                "apply_capacity": 47.6,
            },
        ],
    )
    week.lag = LagWeek(
        hours=[{"member_id": C, "date": "2026-11-18", "hour_of_day": 20, "p95": 15_780.0}]
    )
    found = findings(week, LABELS)
    assert found[0] == (
        "Flow control did not contain **db3:3306**: its applier queue stayed over its "
        "threshold for 3 d 8 h (up to 1,900,000 transactions, p95 apply lag up to 4 h 23 min) "
        "and no writer was held: at a threshold of 25,000 a hold grants at least 1,125 "
        "transactions per period, more than the writers commit; at its apply capacity of "
        "47.6 tx/s, group_replication_flow_control_applier_threshold at most 959 would hold "
        "the writers to what it applies (or speed up its applier, its verdict below)."
    )
    assert not any("held the group back" in f for f in found)
