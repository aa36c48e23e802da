"""The "Replication lag" section from collected rows (no Spark): scales and the load table.

By hand: member b lags up to 3 s, member c up to 4 h 23 min (15,780 s); the group writes
3,000 transactions an hour at 10:00 and 11:00, 1,000 in every other hour.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from spark_rollups import lagreport
from spark_rollups.lagreport import LagWeek, busy_hours, lag_section, writes_by_hour
from spark_rollups.render import Table

MONDAY = dt.date(2026, 11, 16)
LABELS = {"b": "db2:3306", "c": "db3:3306"}
HOURS = [
    {"hour_of_day": h, "transactions_checked": 3_000 if h in (10, 11) else 1_000}
    for _ in range(7)
    for h in range(24)
]


def _lag() -> LagWeek:
    rows: list[dict[str, Any]] = []
    for h in range(24):
        rows.append({"member_id": "b", "date": "2026-11-18", "hour_of_day": h, "p95": 3.0})
        lagging = 15_780.0 if h == 20 else 60.0
        rows.append({"member_id": "c", "date": "2026-11-18", "hour_of_day": h, "p95": lagging})
    return LagWeek(hours=rows)


def test_the_busy_hours_are_where_the_writes_arrive() -> None:
    writes = writes_by_hour(HOURS)
    assert writes[10] == 3_000.0 and writes[3] == 1_000.0
    # the median hour writes 1,000: 10:00 and 11:00 are 3 times it, over 1.5
    assert busy_hours(writes) == ([10, 11], 3.0)
    assert busy_hours([1_000.0] * 24) == ([], 1.0)  # even: nothing to move
    assert busy_hours([None] * 24) == ([], 0.0)


def test_each_member_has_its_own_scale_and_the_load_table_is_in_host_port_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn: list[tuple[str, float | None]] = []
    draw = lagreport.heatmap_chart

    def chart(name: str, title: str, *args: Any, vmax: float | None = None, **kw: Any) -> Any:
        drawn.append((title, vmax))
        return draw(name, title, *args, vmax=vmax, **kw)

    monkeypatch.setattr(lagreport, "heatmap_chart", chart, raising=True)
    _, items = lag_section(_lag(), MONDAY, LABELS, HOURS)
    # b's map scales to its own 3 s, not c's 15,780 s (which left it blank)
    assert [vmax for _, vmax in drawn] == [3.0, 15_780.0]
    assert "db2:3306 (max 3.0 s)" in drawn[0][0]
    assert "db3:3306 (max 4 h 23 min)" in drawn[1][0]
    table = next(i for i in items if isinstance(i, Table) and i.name == "lag_by_hour_of_day")
    assert table.columns[3:] == ["db2:3306", "db3:3306"]
    rows = {r[0]: r for r in table.rows}
    assert rows["10:00"][1:] == [3_000, "yes", 3.0, 60.0]
    assert rows["20:00"][1:] == [1_000, "", 3.0, 15_780.0]
