"""conflictreport.py on a hand-made partial week (no Spark): no data is never 0."""

from __future__ import annotations

import datetime as dt
from typing import Any

from spark_rollups.conflictreport import by_day_section, heatmap_section, members_section
from spark_rollups.render import Table
from spark_rollups.week import WeekData

MONDAY = dt.date(2026, 11, 16)


def _day(date: str, conflicts: int) -> dict[str, Any]:
    return {
        "date": date,
        "transactions_checked": 1_000,
        "conflicts_detected": conflicts,
        "conflict_rate": conflicts / 1_000,
        "transactions_local_rollback": conflicts,
        "members": 3,
    }


def _partial_week() -> WeekData:
    # data from Thursday on: Monday to Wednesday have no rollups; Thursday 10:00 had 0
    # conflicts (a real 0), Friday 11:00 had 7
    return WeekData(
        group="g",
        week="2026-W47",
        start=MONDAY,
        days=[_day(f"2026-11-{d}", c) for d, c in ((19, 0), (20, 7), (21, 0), (22, 0))],
        hours=[
            {"date": "2026-11-19", "hour_of_day": 10, "conflicts_detected": 0},
            {"date": "2026-11-20", "hour_of_day": 11, "conflicts_detected": 7},
        ],
    )


def _table(items: list[Any]) -> Table:
    return next(i for i in items if isinstance(i, Table))


def test_days_without_rollups_are_no_data_in_the_table_not_zero() -> None:
    _, items = by_day_section(_partial_week())
    table = _table(items)
    cells = [table.cells(r) for r in table.rows]
    assert [c[:4] for c in cells[:4]] == [
        ["2026-11-16", "Mon", "n/a", "n/a"],
        ["2026-11-17", "Tue", "n/a", "n/a"],
        ["2026-11-18", "Wed", "n/a", "n/a"],
        ["2026-11-19", "Thu", "1,000", "0"],
    ]
    assert table.note == "n/a: no data on Mon 11-16, Tue 11-17, Wed 11-18"


def test_the_heatmap_matrix_keeps_a_real_zero_apart_from_no_data() -> None:
    _, items = heatmap_section(_partial_week())
    table = _table(items)
    assert table.shown is False  # the chart draws it; the figures are in heatmap.csv
    rows = {r[0]: r[1:] for r in table.rows}
    assert rows["2026-11-16"] == [None] * 24
    assert rows["2026-11-19"][10] == 0 and rows["2026-11-19"][9] is None
    assert rows["2026-11-20"][11] == 7


def test_rollbacks_by_member_show_the_previous_week_and_the_change() -> None:
    week = _partial_week()
    week.members = [
        {
            "member_id": "aaaaaaaa-0000-4000-8000-000000000001",
            "transactions_local_proposed": 1_000,
            "transactions_local_rollback": 30,
            "rollback_ratio": 0.03,
        }
    ]
    week.previous = {"days": 7}
    week.previous_members = [
        {"member_id": "aaaaaaaa-0000-4000-8000-000000000001", "transactions_local_rollback": 20}
    ]
    _, items = members_section(week, {"aaaaaaaa-0000-4000-8000-000000000001": "db1:3306"})
    table = _table(items)
    # 30 this week, 20 the week before: +50 %
    assert table.cells(table.rows[0]) == ["db1:3306", "1,000", "30", "3.00%", "20", "50.00%"]
