"""The weekly report's conflict sections: totals, days, the day x hour heat map, members, queues.

Strategy: pure functions of a collected `WeekData` (week.py), one per
section, each returning (heading, items) like the sibling section modules.
The day x hour figures are drawn as a heat map; its full matrix is only in
`heatmap.csv` (a 25-column table is unreadable in a page).

Invariants: an hour or a day without rollup rows is "no data" -- grey in the
heat map, n/a in the tables, no bar in the chart -- never 0; week-over-week
changes are shown only when the previous week has rollups.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from spark_rollups.render import Chart, Item, Table, bar_chart, heatmap_chart, twin_chart
from spark_rollups.week import WeekData, member

__all__ = [
    "by_day_section",
    "change",
    "heatmap_section",
    "members_section",
    "queue_section",
    "ratio",
    "top_hours_section",
    "totals_section",
]


def ratio(numerator: Any, denominator: Any) -> float | None:
    """numerator / denominator, None without a denominator."""
    return numerator / denominator if numerator is not None and denominator else None


def change(now: Any, before: Any) -> float | None:
    """Relative change, None without a (non-zero) figure before."""
    return (now - before) / before if now is not None and before else None


_TOTAL_METRICS = (
    ("transactions checked", "transactions_checked"),
    ("conflicts detected", "conflicts_detected"),
    ("transactions proposed (local)", "transactions_local_proposed"),
    ("transactions rolled back (local)", "transactions_local_rollback"),
    ("counter resets (server restarts)", "resets"),
    ("daemon restarts", "restarts"),
    ("members (max per day)", "members"),
)


def totals_section(data: WeekData) -> tuple[str, list[Item]]:
    """Week totals beside the previous week's and the change."""
    now = data.totals
    before = data.previous or {}
    rows: list[list[Any]] = [
        [label, now[key], before.get(key), change(now[key], before.get(key))]
        for label, key in _TOTAL_METRICS
    ]
    for label, num, den in (
        ("conflict rate", "conflicts_detected", "transactions_checked"),
        ("rollback ratio", "transactions_local_rollback", "transactions_local_proposed"),
    ):
        rate_now, rate_before = ratio(now[num], now[den]), ratio(before.get(num), before.get(den))
        rows.append([label, rate_now, rate_before, change(rate_now, rate_before)])
    note = (
        "previous week: no rollups"
        if data.previous is None
        else f"previous week: {data.previous['days']} day(s) of rollups"
    )
    table = Table(
        "totals",
        "Week totals and week-over-week change",
        ["metric", "this week", "previous week", "change"],
        rows,
        note=note,
        percent=frozenset({"change", "conflict rate", "rollback ratio"}),
    )
    return "Totals", [table]


def _day_labels(data: WeekData) -> list[str]:
    return [dt.date.fromisoformat(d).strftime("%a %m-%d") for d in data.dates()]


def by_day_section(data: WeekData) -> tuple[str, list[Item]]:
    """Conflicts per day: every day of the week, those without rollups as no data."""
    found = {d["date"]: d for d in data.days}
    rows: list[list[Any]] = []
    for date, label in zip(data.dates(), _day_labels(data), strict=True):
        d = found.get(date, {})
        rows.append(
            [
                date,
                label[:3],
                d.get("transactions_checked"),
                d.get("conflicts_detected"),
                d.get("conflict_rate"),
                d.get("transactions_local_rollback"),
                d.get("members"),
            ]
        )
    missing = [
        label
        for date, label in zip(data.dates(), _day_labels(data), strict=True)
        if date not in found
    ]
    table = Table(
        "conflicts_by_day",
        "Conflicts by day",
        ["date", "weekday", "checked", "conflicts", "conflict rate", "rollbacks", "members"],
        rows,
        note=f"n/a: no data on {', '.join(missing)}" if missing else "",
        percent=frozenset({"conflict rate"}),
    )
    chart = bar_chart(
        "conflicts_by_day",
        "Conflicts detected per day (no bar: no data)",
        [
            label if date in found else f"{label} (no data)"
            for date, label in zip(data.dates(), _day_labels(data), strict=True)
        ],
        [math.nan if r[3] is None else r[3] for r in rows],
        "conflicts",
    )
    return "Conflicts by day", [chart, table]


def heatmap_section(data: WeekData) -> tuple[str, list[Item]]:
    """Day x hour heat map of conflicts (grey: no data); the matrix in heatmap.csv."""
    dates = data.dates()
    matrix = [[math.nan] * 24 for _ in dates]
    for h in data.hours:
        if h["date"] in dates and h["conflicts_detected"] is not None:
            matrix[dates.index(h["date"])][h["hour_of_day"]] = float(h["conflicts_detected"])
    heat = heatmap_chart(
        "heatmap", "Conflicts by day and hour (UTC); grey: no data", _day_labels(data), matrix
    )
    table = Table(
        "heatmap",
        "Conflicts by day (rows) and hour of day (columns)",
        ["date", *(f"{h:02d}" for h in range(24))],
        [
            [d, *(None if math.isnan(v) else int(v) for v in row)]
            for d, row in zip(dates, matrix, strict=True)
        ],
        shown=False,
    )
    return "Day x hour heatmap", [heat, table]


def top_hours_section(data: WeekData) -> tuple[str, list[Item]]:
    """The ten hours with the most conflicts."""
    busy = [h for h in data.hours if h["conflicts_detected"]]
    top = sorted(busy, key=lambda h: (-h["conflicts_detected"], h["hour"]))[:10]
    table = Table(
        "top_conflict_hours",
        "The ten hours with the most conflicts",
        [
            "hour (UTC)",
            "conflicts",
            "checked",
            "conflict rate",
            "in queue max",
            "applier queue max",
        ],
        [
            [
                h["hour"],
                h["conflicts_detected"],
                h["transactions_checked"],
                h["conflict_rate"],
                h["transactions_in_queue_max"],
                h["transactions_remote_in_applier_queue_max"],
            ]
            for h in top
        ],
        percent=frozenset({"conflict rate"}),
    )
    return "Top conflict hours", [table]


def members_section(data: WeekData, labels: Mapping[str, str]) -> tuple[str, list[Item]]:
    """Rollbacks by originating member, with the previous week's when it has rollups."""
    before = {m["member_id"]: m for m in data.previous_members}
    columns = ["member", "proposed", "rolled back", "rollback ratio"]
    if data.previous is not None:
        columns += ["rolled back, previous week", "change"]
    rows: list[list[Any]] = []
    for m in data.members:
        row: list[Any] = [
            member(labels, m["member_id"]),
            m["transactions_local_proposed"],
            m["transactions_local_rollback"],
            m["rollback_ratio"],
        ]
        if data.previous is not None:
            old = before.get(m["member_id"], {}).get("transactions_local_rollback")
            row += [old, change(m["transactions_local_rollback"], old)]
        rows.append(row)
    table = Table(
        "rollbacks_by_member",
        "Rollbacks and rollback ratio by originating member",
        columns,
        rows,
        percent=frozenset({"rollback ratio", "change"}),
    )
    chart = bar_chart(
        "rollbacks_by_member",
        "Rolled-back local transactions by member",
        [str(r[0]) for r in rows],
        [m["transactions_local_rollback"] or 0 for m in data.members],
        "rollbacks",
    )
    return "Rollbacks by originating member", [chart, table]


def queue_section(data: WeekData) -> tuple[str, list[Item]]:
    """Queue pressure beside conflicts, per day and (chart) per hour."""
    conflicts_by_date = {d["date"]: d["conflicts_detected"] for d in data.days}
    table = Table(
        "queue_pressure",
        "Queue pressure beside conflicts (max over members)",
        [
            "date",
            "conflicts",
            "in queue p95",
            "in queue max",
            "applier queue p95",
            "applier queue max",
        ],
        [
            [
                q["date"],
                conflicts_by_date.get(q["date"]),
                q["transactions_in_queue_p95"],
                q["transactions_in_queue_max"],
                q["transactions_remote_in_applier_queue_p95"],
                q["transactions_remote_in_applier_queue_max"],
            ]
            for q in data.queues
        ],
    )
    slots = {(h["date"], h["hour_of_day"]): h for h in data.hours}
    hourly = [slots.get((d, hour)) for d in data.dates() for hour in range(24)]
    chart: Chart = twin_chart(
        "queue_pressure",
        "Conflicts per hour beside the largest queues",
        bars=[float(h["conflicts_detected"] or 0) if h else math.nan for h in hourly],
        bar_label="conflicts per hour",
        lines={
            "applier queue max": [
                h["transactions_remote_in_applier_queue_max"] if h else None for h in hourly
            ],
            "certifier queue max": [h["transactions_in_queue_max"] if h else None for h in hourly],
        },
        line_axis="transactions queued",
        ticks=[(24 * i, label) for i, label in enumerate(_day_labels(data))],
    )
    return "Queue pressure beside conflicts", [chart, table]
