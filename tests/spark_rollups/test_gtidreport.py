"""The "GTID divergence this week" section and its finding from collected rows (no Spark)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from spark_rollups.findings import findings
from spark_rollups.gtidreport import GtidWeek, errant_findings, gtid_section
from spark_rollups.render import Table
from spark_rollups.week import WeekData

TUE = 1_794_873_600  # 2026-11-17 00:00:00 UTC, by hand: 20774 days after the epoch
LABELS = {"a": "db1:3306", "b": "db2:3306", "c": "db3:3306"}


def _member(name: str, **figures: Any) -> dict[str, Any]:
    row = {
        "member_id": name,
        "minutes": 120,
        "errant_minutes": 0,
        "clone_minutes": 0,
        "errant_max": 0,
        "missing_max": 0,
        "first_errant_s": None,
        "last_errant_s": None,
    }
    return {**row, **figures}


def _cells(table: Table) -> list[list[str]]:
    return [table.cells(r) for r in table.rows]


def test_the_epoch_constant_is_tuesday() -> None:
    assert dt.datetime.fromtimestamp(TUE, dt.UTC).isoformat() == "2026-11-17T00:00:00+00:00"


def test_no_figures_is_not_reported_as_a_clean_week() -> None:
    heading, items = gtid_section(None)
    assert heading == "GTID divergence this week"
    assert len(items) == 1 and str(items[0]).startswith("No GTID divergence figures")


def test_a_clean_week_says_so_in_one_line() -> None:
    _, items = gtid_section(GtidWeek([_member("a"), _member("b"), _member("c")]), LABELS)
    assert items == [
        "No errant transactions and no member that would have needed clone this week "
        "(3 members judged by their daemons)."
    ]
    assert errant_findings(GtidWeek([_member("a")]), LABELS) == []


def test_errant_and_clone_members_are_tabled_with_when_and_how_many() -> None:
    week = GtidWeek(
        [
            _member(
                "a",
                errant_minutes=34,
                clone_minutes=34,
                errant_max=3,
                first_errant_s=TUE + 10 * 3600 + 6 * 60,
                last_errant_s=TUE + 10 * 3600 + 39 * 60 + 50,
            ),
            _member("b"),
            _member("c", clone_minutes=30, missing_max=1_200),
        ]
    )
    _, items = gtid_section(week, LABELS)
    summary, errant, clone = items
    assert str(summary).startswith(
        "1 of 3 members had errant transactions (GTIDs executed there that a member the "
        "servers' view listed lacked, though it had applied past them); 2 would have needed "
        "clone"
    )
    assert isinstance(errant, Table) and isinstance(clone, Table)
    assert _cells(errant) == [["db1:3306", "2026-11-17 10:06", "2026-11-17 10:39", "34", "3"]]
    # most clone-needed minutes first; shares of 120 judged minutes: 34/120, 30/120
    assert _cells(clone) == [
        ["db1:3306", "34", "28.33%", "0"],
        ["db3:3306", "30", "25.00%", "1,200"],
    ]


def test_an_errant_member_is_the_first_finding() -> None:
    week = GtidWeek(
        [
            _member(
                "b",
                errant_minutes=5,
                errant_max=1,
                first_errant_s=TUE + 2 * 86_400 + 9 * 3600 + 5 * 60,
                last_errant_s=TUE + 3 * 86_400 + 9 * 3600 + 9 * 60,
            )
        ]
    )
    data = WeekData(group="g1", week="2026-W47", start=dt.date(2026, 11, 16), gtids=week)
    found = findings(data, LABELS)
    assert found[0] == (
        "**db2:3306** had errant transactions (up to 1 GTID a member that had applied past "
        "them lacked) from Thu 11-19 09:05 to Fri 11-20 09:09 UTC, 5 min in all; inject "
        "empty transactions for them on the primary (`grstats gtids --explain`) or "
        "re-provision it before it is promoted or rejoins (Group Replication refuses it as "
        "it is)."
    )
