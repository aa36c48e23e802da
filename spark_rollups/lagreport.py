"""The weekly report's "Replication lag" section: heat maps and the worst periods.

Strategy: Spark selects, from `member_hour` of the week, each member's p95
apply lag per hour (the heat maps) and the ten (member, hour, stage) periods
with the highest p95 over the stages (applying = MySQL Shell's
replicationLag, queue, apply), ordered by p95 then max.  Both results are at
most members x 168 rows, collected once; `lag_section` turns them into
report items (one PNG per member, each on its own colour scale so that a
member lagging seconds is as readable as one lagging hours, one CSV per
table) and the table of *when the load arrives*: the group's writes by hour
of day beside each member's worst p95 lag then. A backlog peaks hours after
the load that built it (a slow applier works it off into the evening), so the
advice to move writes (findings.py) names the busy hours, never the hours the
lag peaks (`busy_hours`: the hours of day whose mean writes are at least
`BUSY_FACTOR` times the median hour's).

Invariants: rollups written before the lag columns existed have none; they
are read with `mergeSchema` (the columns are NULL there), and a week without
any lag figure gets a one-line note instead of empty charts.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from protocol.humanize import duration
from spark_rollups import frames
from spark_rollups.render import Item, Table, heatmap_chart
from spark_rollups.week import LagWeek, member

__all__ = [
    "BUSY_FACTOR",
    "HEAT_FIGURE",
    "STAGES",
    "LagWeek",
    "busy_hours",
    "collect_lag",
    "lag_section",
    "writes_by_hour",
]

# (stage shown in the report, member_hour column prefix)
STAGES: tuple[tuple[str, str], ...] = (
    ("applying", "replication_lag_seconds"),
    ("queue", "queue_lag_seconds"),
    ("apply", "apply_lag_seconds"),
)
HEAT_FIGURE = "apply_lag_seconds_p95"
WORST = 10
BUSY_FACTOR = 1.5


def writes_by_hour(hours: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """The group's mean transactions certified per hour, by UTC hour of day (None: no data).

    Args:
        hours: group_hour rows of the week (hour_of_day, transactions_checked).
    """
    sums = [0.0] * 24
    counts = [0] * 24
    for h in hours:
        if h.get("transactions_checked") is not None:
            sums[h["hour_of_day"]] += h["transactions_checked"]
            counts[h["hour_of_day"]] += 1
    return [sums[i] / counts[i] if counts[i] else None for i in range(24)]


def busy_hours(writes: Sequence[float | None]) -> tuple[list[int], float]:
    """The hours of day the load arrives in, and how many times the median hour they write.

    Returns:
        The hours whose mean writes are at least BUSY_FACTOR times the median hour's
        (none when the load is even or unknown), and the busiest hour's ratio.
    """
    known = sorted(w for w in writes if w is not None)
    if not known:
        return [], 0.0
    mid = len(known) // 2
    median = known[mid] if len(known) % 2 else (known[mid - 1] + known[mid]) / 2
    if median <= 0:
        return [], 0.0
    busy = [h for h, w in enumerate(writes) if w is not None and w >= BUSY_FACTOR * median]
    return busy, max(known) / median


def collect_lag(member_hour: DataFrame) -> dict[str, LagWeek]:
    """The lag rows of every group in `member_hour` (already limited to one week).

    Args:
        member_hour: the week's member_hour rows (read with mergeSchema).

    Returns:
        Group -> its LagWeek; groups without lag columns or figures are absent.
    """
    needed = {f"{prefix}_{s}" for _, prefix in STAGES for s in ("p95", "max")}
    if not needed <= set(member_hour.columns):  # rollups from before issue 10
        return {}
    heat = member_hour.where(F.col(HEAT_FIGURE).isNotNull()).select(
        "group_name",
        "member_id",
        "date",
        F.hour("bucket_start").alias("hour_of_day"),
        F.col(HEAT_FIGURE).alias("p95"),
    )
    periods = member_hour.select(
        "group_name",
        "member_id",
        F.date_format("bucket_start", "yyyy-MM-dd HH:mm").alias("hour"),
        F.inline(
            F.array(
                *(
                    F.struct(
                        F.lit(stage).alias("stage"),
                        F.col(f"{prefix}_p95").alias("p95"),
                        F.col(f"{prefix}_max").alias("max"),
                    )
                    for stage, prefix in STAGES
                )
            )
        ),
    ).where(F.col("p95").isNotNull())
    order = Window.partitionBy("group_name").orderBy(
        F.desc("p95"), F.desc("max"), "hour", "member_id", "stage"
    )
    worst = periods.withColumn("rank", F.row_number().over(order)).where(F.col("rank") <= WORST)
    result: dict[str, LagWeek] = {}
    for row in frames.rows(heat.orderBy("member_id", "date", "hour_of_day")):
        result.setdefault(row["group_name"], LagWeek()).hours.append(row)
    for row in frames.rows(worst.orderBy("rank")):
        result.setdefault(row["group_name"], LagWeek()).worst.append(row)
    return result


def lag_section(
    lag: LagWeek | None,
    start: dt.date,
    labels: Mapping[str, str] | None = None,
    hours: Sequence[Mapping[str, Any]] = (),
) -> tuple[str, list[Item]]:
    """The report section of one group's week.

    Args:
        lag: its collected rows (None: no lag figures).
        start: the Monday of the week.
        labels: member id -> `host:port` (absent: the short id).
        hours: the group's group_hour rows of the week (its writes by hour).

    Returns:
        (heading, items): per member a day x hour heat map of p95 apply lag on
        its own colour scale, titled with its largest p95; the matrix (CSV only),
        the group's writes by hour of day beside each member's worst p95, and the
        worst periods table.
    """
    heading = "Replication lag"
    names = labels or {}
    if lag is None or (not lag.hours and not lag.worst):
        return heading, [
            "No lag figures this week (members did not report lag, or their history "
            "predates the lag columns)."
        ]
    dates = [(start + dt.timedelta(days=i)).isoformat() for i in range(7)]
    day_labels = [dt.date.fromisoformat(d).strftime("%a %m-%d") for d in dates]
    members = sorted({h["member_id"] for h in lag.hours}, key=lambda m: (str(member(names, m)), m))
    cells: dict[str, list[list[float]]] = {m: [[math.nan] * 24 for _ in dates] for m in members}
    for h in lag.hours:
        if h["date"] in dates:
            cells[h["member_id"]][dates.index(h["date"])][h["hour_of_day"]] = float(h["p95"])
    peaks = {
        m: max((h["p95"] for h in lag.hours if h["member_id"] == m), default=0.0) for m in members
    }
    items: list[Item] = [
        "Per member and hour (UTC): p95 of the apply lag (end of apply minus the original "
        "commit of the last applied transaction, in seconds); grey: no data. Each map has "
        "its own colour scale, from 0 to the member's largest p95 (in its title; at least "
        "1 s), so that every member's pattern reads: compare figures, not colours, across "
        "members. Stages: applying = MySQL Shell's replicationLag, queue = end of queueing "
        "minus original commit, apply = end of apply minus original commit."
    ]
    for index, m in enumerate(members, start=1):
        label = str(member(names, m))
        items.append(
            heatmap_chart(
                f"lag_heatmap_{index}",
                f"p95 apply lag (s), {label} (max {duration(peaks[m])}), by day and hour (UTC)",
                day_labels,
                cells[m],
                unit="seconds",
                vmax=max(peaks[m], 1.0),
            )
        )
    items.append(
        Table(
            "lag_heatmap",
            "p95 apply lag (s) by member, day (rows) and hour of day (columns)",
            ["member", "date", *(f"{h:02d}" for h in range(24))],
            [
                [member(names, m), d, *(None if math.isnan(v) else v for v in row)]
                for m in members
                for d, row in zip(dates, cells[m], strict=True)
            ],
            shown=False,
        )
    )
    items.append(_load_table(lag, members, names, hours))
    items.append(
        Table(
            "lag_worst_periods",
            f"The {WORST} worst (member, hour, stage) periods by p95 lag",
            ["member", "hour (UTC)", "stage", "p95 (s)", "max (s)"],
            [
                [member(names, w["member_id"]), w["hour"], w["stage"], w["p95"], w["max"]]
                for w in lag.worst
            ],
        )
    )
    return heading, items


def _load_table(
    lag: LagWeek, members: list[str], names: Mapping[str, str], hours: Sequence[Mapping[str, Any]]
) -> Table:
    """The group's writes by hour of day beside each member's worst p95 lag in that hour."""
    writes = writes_by_hour(hours)
    busy, _ = busy_hours(writes)
    worst: dict[tuple[str, int], float] = {}
    for h in lag.hours:
        key = (h["member_id"], h["hour_of_day"])
        worst[key] = max(worst.get(key, 0.0), float(h["p95"]))
    return Table(
        "lag_by_hour_of_day",
        "When the load arrives: the group's writes by hour of day (UTC) and each member's "
        "worst p95 apply lag in that hour (s)",
        [
            "hour (UTC)",
            "transactions certified per hour (mean)",
            "busy",
            *(str(member(names, m)) for m in members),
        ],
        [
            [
                f"{hour:02d}:00",
                None if writes[hour] is None else round(writes[hour] or 0.0),
                "yes" if hour in busy else "",
                *(worst.get((m, hour)) for m in members),
            ]
            for hour in range(24)
        ],
        note=f"Busy: at least {BUSY_FACTOR:g} times the median hour's writes. A lag that "
        "peaks after the busy hours is the backlog they left: moving writes out of the busy "
        "hours is what shortens it.",
    )
