"""The "Where commit time went" section and its finding, on a hand-made week (no Spark).

Three members a, b, c over four hours of Monday 2026-11-16 (times in µs):

- 09:00 every member 1 000 rounds of 2 ms: nobody dominates;
- 10:00 c's link is slow: 1 000 rounds of 51 ms = 51 s of the group's 55.18 s
  (92 %), 25.5 times the others' 2 ms: c dominates;
- 11:00 a single primary a proposes the most: 16 s of 20.18 s (79 %), but at
  the others' 2 ms a round: not a slow link;
- 12:00 c takes 3 s of 5.18 s (58 %) at 3 ms a round, only 1.5 times the
  others' 2 ms: not named either.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from spark_rollups.commitreport import (
    CommitWeek,
    commit_findings,
    commit_section,
    dominating_hours,
)
from spark_rollups.findings import findings
from spark_rollups.render import Chart, Table
from spark_rollups.week import WeekData

MONDAY = dt.date(2026, 11, 16)
LABELS = {"a": "db-a:3306", "b": "db-b:3306", "c": "db-c:3306"}
GC_US = 60_000  # every member, every hour


def _row(m: str, hour: int, rounds: int, consensus_us: int) -> dict[str, Any]:
    return {
        "group_name": "g",
        "member_id": m,
        "hour": f"2026-11-16 {hour:02d}:00",
        "consensus_count": rounds,
        "consensus_us": consensus_us,
        "certification_gc_us": GC_US,
        "before_begin_us": 0,
        "after_termination_us": 0,
        "after_sync_us": None,  # unknown: counts 0
        "flow_control_us": 0,
        "dominant": "consensus",
    }


WEEK = CommitWeek(
    hours=[
        *(_row(m, 9, 1_000, 2_000_000) for m in "abc"),
        _row("a", 10, 1_000, 2_000_000),
        _row("b", 10, 1_000, 2_000_000),
        _row("c", 10, 1_000, 51_000_000),
        _row("a", 11, 8_000, 16_000_000),
        _row("b", 11, 1_000, 2_000_000),
        _row("c", 11, 1_000, 2_000_000),
        _row("a", 12, 500, 1_000_000),
        _row("b", 12, 500, 1_000_000),
        _row("c", 12, 1_000, 3_000_000),
    ]
)


def test_only_the_slow_link_hour_is_dominated() -> None:
    assert dominating_hours(WEEK) == {"c": ["2026-11-16 10:00"]}


def test_the_finding_names_the_member_the_hours_and_what_to_check() -> None:
    data = WeekData(group="g", week="2026-W47", start=MONDAY, commit=WEEK)
    (sentence,) = commit_findings(data, LABELS)
    assert "**db-c:3306**" in sentence
    assert "1 hour(s) (Mon 11-16 10:00 to 11:00 UTC" in sentence
    # c over the week: (2 + 51 + 2 + 3) s over 4 000 rounds = 14.5 ms a round
    assert "14.50 ms a round" in sentence
    assert "round trips" in sentence
    assert sentence in findings(data, LABELS)


def test_a_week_without_the_table_has_no_finding_and_a_one_line_section() -> None:
    data = WeekData(group="g", week="2026-W47", start=MONDAY)
    assert commit_findings(data, LABELS) == []
    heading, items = commit_section(None, MONDAY, LABELS)
    assert heading == "Where commit time went"
    assert len(items) == 1 and "No commit-path figures" in str(items[0])


def test_the_section_has_a_stacked_chart_per_member_and_names_the_dominant_cost() -> None:
    heading, items = commit_section(WEEK, MONDAY, LABELS)
    assert heading == "Where commit time went"
    charts = [i for i in items if isinstance(i, Chart)]
    assert [c.name for c in charts] == ["commit_path_1", "commit_path_2", "commit_path_3"]
    assert all(c.png.startswith(b"\x89PNG") for c in charts)
    assert "db-c:3306: mostly consensus rounds" in charts[2].title
    members = next(i for i in items if isinstance(i, Table) and i.name == "commit_path_members")
    rows = {str(r[0]): r for r in members.rows}
    c = rows["db-c:3306"]
    assert c[1] == "consensus rounds"
    # c: 58 s of consensus, 4 x 0.06 s of GC
    assert c[2] == 58_000_000 / (58_000_000 + 4 * GC_US)
    assert c[3] == 14.5  # ms a round
    assert c[-2] == "Mon 11-16 10:00 to 11:00"
    assert rows["db-a:3306"][-2] == ""  # the primary of 11:00 is not a slow link
    hours = next(i for i in items if isinstance(i, Table) and i.name == "commit_path_hours")
    assert not hours.shown and len(hours.rows) == 12


def _members_table(week: CommitWeek) -> dict[str, list[Any]]:
    _, items = commit_section(week, MONDAY, LABELS)
    table = next(i for i in items if isinstance(i, Table) and i.name == "commit_path_members")
    return {str(r[0]): r for r in table.rows}


def test_a_healthy_week_names_no_dominant_cost_and_no_check() -> None:
    # 2 ms rounds everywhere, the primary a proposing eight times as many: consensus is
    # the largest cost of every member, and normal -- nobody is told to check the network
    healthy = CommitWeek(
        hours=[_row("a", h, 8_000, 16_000_000) for h in (9, 10)]
        + [_row(m, h, 1_000, 2_000_000) for m in "bc" for h in (9, 10)]
    )
    rows = _members_table(healthy)
    assert {r[1] for r in rows.values()} == {"none abnormal"}
    assert {r[-1] for r in rows.values()} == {"nothing: as the other members'"}
    data = WeekData(group="g", week="2026-W47", start=MONDAY, commit=healthy)
    assert commit_findings(data, LABELS) == []


def test_the_slow_link_member_alone_is_named_over_the_week() -> None:
    # c's rounds over the week: 58 s / 4 000 = 14.5 ms against a's 21 s / 10 500 = 2 ms and
    # b's 7 s / 3 500 = 2 ms (median 2 ms): over 2 x 2 ms and 12.5 ms above
    rows = _members_table(WEEK)
    assert rows["db-c:3306"][1] == "consensus rounds"
    assert rows["db-c:3306"][-1] == "the network: which member's round trips are high"
    assert rows["db-a:3306"][1] == rows["db-b:3306"][1] == "none abnormal"
