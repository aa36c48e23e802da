"""`report`: the weekly conflict report of one ISO week, per group (DESIGN.md section 7).

Strategy: Spark reads the rollup tables with partition pruning (the week and
the week before) and does the aggregating (weekly member sums, day and hour
selections); the results are a few hundred rows at most, collected once and
handed to `render.py`, which writes Markdown, self-contained HTML (inline
CSS, PNG charts as data URIs) and one CSV per table shown.

Invariants:
- Weeks are ISO weeks (Monday 00:00 UTC to the next Monday); "previous week"
  is the ISO week before; its figures are shown only if it has rollups.
- Weekly coverage of a member = sum of its daily coverages / 7, i.e. samples
  / samples expected in the whole week (a member absent on a day counts 0).
- Rollback ratio = rollbacks / proposals (null when nothing was proposed);
  conflict rate = conflicts / checked (null when nothing was checked).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, GroupedData, SparkSession
from pyspark.sql import functions as F

from spark_rollups.applierreport import applier_section, collect_applier
from spark_rollups.flowreport import FlowWeek, collect_flow, flow_section
from spark_rollups.lagreport import LagWeek, collect_lag, lag_section
from spark_rollups.render import Report, Table, bar_chart, heatmap_chart, twin_chart, write_report
from spark_rollups.rollup import run_command
from spark_rollups.skippedreport import skipped_in_week, skipped_table
from spark_rollups.storage import list_partitions, local_path

__all__ = [
    "ReportError",
    "WeekData",
    "build_parser",
    "build_report",
    "collect_week",
    "iso_week",
    "main",
    "report",
]

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


class ReportError(Exception):
    """A user mistake or missing data, reported as one line (exit status 2)."""


def iso_week(text: str) -> tuple[dt.date, dt.date]:
    """Monday and the next Monday of an ISO week written `YYYY-Www`.

    Args:
        text: e.g. "2026-W47".

    Returns:
        (first day, first day of the next week).

    Raises:
        ReportError: not an ISO week.
    """
    match = _WEEK.match(text)
    if match is None:
        raise ReportError(f"expected an ISO week like 2026-W47, got {text!r}")
    try:
        monday = dt.date.fromisocalendar(int(match[1]), int(match[2]), 1)
    except ValueError:
        raise ReportError(f"no such ISO week: {text}") from None
    return monday, monday + dt.timedelta(days=7)


@dataclass
class WeekData:
    """Collected rows of one group and week (tiny: <= 168 hours, a few members)."""

    group: str
    week: str
    start: dt.date
    days: list[dict[str, Any]] = field(default_factory=list)  # group_day of the week
    hours: list[dict[str, Any]] = field(default_factory=list)  # group_hour of the week
    members: list[dict[str, Any]] = field(default_factory=list)  # weekly sums per member
    queues: list[dict[str, Any]] = field(default_factory=list)  # per day, over members
    totals: dict[str, Any] = field(default_factory=dict)  # weekly totals
    previous: dict[str, Any] | None = None  # weekly totals of the week before
    lag: LagWeek | None = None  # the lag section's rows (None: no lag figures)
    applier: list[dict[str, Any]] | None = None  # each member's applier week (None: none)
    flow: FlowWeek | None = None  # "who held the group back" (None: no flow tables)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # history files not read


def _table(spark: SparkSession, rollups: str, name: str) -> DataFrame:
    frame: DataFrame = spark.read.parquet(f"{rollups}/{name}")
    return frame


def _in_range(frame: DataFrame, start: dt.date, end: dt.date) -> DataFrame:
    # `date` is the (string) partition column: this filter prunes directories.
    return frame.where((F.col("date") >= start.isoformat()) & (F.col("date") < end.isoformat()))


def _rows(frame: DataFrame) -> list[dict[str, Any]]:
    # Arrow batches instead of pickled Row objects (the same Python values: the
    # timestamps reach here already formatted as UTC text).
    rows: list[dict[str, Any]] = frame.toArrow().to_pylist()
    return rows


def _utc_text(column: str) -> Any:
    return F.date_format(column, "yyyy-MM-dd HH:mm")


def _weekly_totals(grouped: GroupedData) -> DataFrame:
    return grouped.agg(
        *(
            F.sum(c).alias(c)
            for c in (
                "transactions_checked",
                "conflicts_detected",
                "transactions_local_proposed",
                "transactions_local_rollback",
                "resets",
                "restarts",
                "samples",
            )
        ),
        F.max("members").alias("members"),
        F.count("*").alias("days"),
    )


def collect_week(spark: SparkSession, rollups: str, week: str, group: str | None) -> list[WeekData]:
    """Aggregate the rollups of one week per group and collect the small results.

    Args:
        spark: the session.
        rollups: the rollup root (as written by `rollup`).
        week: ISO week, e.g. "2026-W47".
        group: only this group; None = every group with rollups that week.

    Returns:
        One WeekData per group, sorted by group name.

    Raises:
        ReportError: no rollups for the week (and group).
    """
    start, end = iso_week(week)
    previous_start = start - dt.timedelta(days=7)
    group_day = _table(spark, rollups, "group_day")
    group_hour = _table(spark, rollups, "group_hour")
    member_day = _table(spark, rollups, "member_day")
    if group is not None:
        group_day, group_hour, member_day = (
            t.where(F.col("group_name") == group) for t in (group_day, group_hour, member_day)
        )
    days = _in_range(group_day, start, end)
    groups = sorted(r["group_name"] for r in days.select("group_name").distinct().collect())
    if not groups:
        which = "" if group is None else f" of group {group}"
        raise ReportError(f"no rollups{which} for week {week} ({start} .. {end})")
    hours = _in_range(group_hour, start, end)
    mdays = _in_range(member_day, start, end)
    previous = _in_range(group_day, previous_start, start)

    day_rows = days.select(
        "group_name",
        "date",
        F.date_format("bucket_start", "E").alias("weekday"),
        "members",
        "transactions_checked",
        "conflicts_detected",
        "conflict_rate",
        "transactions_local_proposed",
        "transactions_local_rollback",
        "transactions_in_queue_max",
        "transactions_remote_in_applier_queue_max",
        "coverage",
        "resets",
        "restarts",
    )
    hour_rows = hours.select(
        "group_name",
        _utc_text("bucket_start").alias("hour"),
        "date",
        F.hour("bucket_start").alias("hour_of_day"),
        "transactions_checked",
        "conflicts_detected",
        "conflict_rate",
        "transactions_in_queue_max",
        "transactions_remote_in_applier_queue_max",
    )
    proposed, rollbacks = F.col("transactions_local_proposed"), F.col("transactions_local_rollback")
    member_rows = mdays.groupBy("group_name", "member_id").agg(
        F.sum("transactions_local_proposed").alias("transactions_local_proposed"),
        F.sum("transactions_local_rollback").alias("transactions_local_rollback"),
        F.sum("conflicts_detected").alias("conflicts_detected"),
        F.sum("samples").alias("samples"),
        (F.sum("coverage") / 7).alias("coverage"),
        F.sum("resets").alias("resets"),
        F.sum("restarts").alias("restarts"),
        F.count("*").alias("days_present"),
        F.max("transactions_in_queue_p95").alias("transactions_in_queue_p95_max"),
        F.max("transactions_remote_in_applier_queue_p95").alias(
            "transactions_remote_in_applier_queue_p95_max"
        ),
    )
    member_rows = member_rows.withColumn(
        "rollback_ratio", F.when(proposed > 0, rollbacks / proposed)
    )
    queue_rows = mdays.groupBy("group_name", "date").agg(
        F.max("transactions_in_queue_p95").alias("transactions_in_queue_p95"),
        F.max("transactions_in_queue_max").alias("transactions_in_queue_max"),
        F.max("transactions_remote_in_applier_queue_p95").alias(
            "transactions_remote_in_applier_queue_p95"
        ),
        F.max("transactions_remote_in_applier_queue_max").alias(
            "transactions_remote_in_applier_queue_max"
        ),
    )
    totals_now, totals_before = (
        {r["group_name"]: r for r in _rows(_weekly_totals(frame.groupBy("group_name")))}
        for frame in (days, previous)
    )
    result = {
        g: WeekData(
            group=g, week=week, start=start, totals=totals_now[g], previous=totals_before.get(g)
        )
        for g in groups
    }
    for row in _rows(day_rows.orderBy("date")):
        result[row["group_name"]].days.append(row)
    for row in _rows(hour_rows.orderBy("hour")):
        result[row["group_name"]].hours.append(row)
    for row in _rows(member_rows.orderBy(F.desc("transactions_local_rollback"), "member_id")):
        result[row["group_name"]].members.append(row)
    for row in _rows(queue_rows.orderBy("date")):
        result[row["group_name"]].queues.append(row)
    # mergeSchema: rollups written before the lag columns existed lack them
    member_hour = spark.read.option("mergeSchema", "true").parquet(f"{rollups}/member_hour")
    if group is not None:
        member_hour = member_hour.where(F.col("group_name") == group)
    for name, lag in collect_lag(_in_range(member_hour, start, end)).items():
        if name in result:
            result[name].lag = lag
    # none before issue 11, and no partition at all for a history without applier figures
    if list_partitions(spark, f"{rollups}/applier_member_day"):
        applier_day = _table(spark, rollups, "applier_member_day")
        if group is not None:
            applier_day = applier_day.where(F.col("group_name") == group)
        for name, members in collect_applier(_in_range(applier_day, start, end)).items():
            if name in result:
                result[name].applier = members
    for name, flow in collect_flow(spark, rollups, start, end, group).items():
        if name in result:
            result[name].flow = flow
    for name in groups:
        result[name].skipped = skipped_in_week(spark, rollups, name, start, end)
    return [result[g] for g in groups]


# ------------------------------------------------------------------- build


def _ratio(numerator: Any, denominator: Any) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def _change(now: Any, before: Any) -> float | None:
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


def _totals(data: WeekData) -> Table:
    now = data.totals
    before = data.previous or {}
    rows: list[list[Any]] = [
        [label, now[key], before.get(key), _change(now[key], before.get(key))]
        for label, key in _TOTAL_METRICS
    ]
    for label, num, den in (
        ("conflict rate", "conflicts_detected", "transactions_checked"),
        ("rollback ratio", "transactions_local_rollback", "transactions_local_proposed"),
    ):
        rate_now, rate_before = _ratio(now[num], now[den]), _ratio(before.get(num), before.get(den))
        rows.append([label, rate_now, rate_before, _change(rate_now, rate_before)])
    note = (
        "previous week: no rollups"
        if data.previous is None
        else f"previous week: {data.previous['days']} day(s) of rollups"
    )
    return Table(
        "totals",
        "Week totals and week-over-week change",
        ["metric", "this week", "previous week", "change"],
        rows,
        note=note,
        percent=frozenset({"change", "conflict rate", "rollback ratio"}),
    )


def _short_labels(ids: list[str]) -> list[str]:
    """Member ids short enough for a chart axis while still telling them apart."""
    for labels in ([i[:8] for i in ids], [i[-12:] for i in ids]):
        if len(set(labels)) == len(set(ids)):
            return labels
    return ids


def build_report(data: WeekData) -> Report:
    """Tables and charts of one group's week.

    Args:
        data: the collected week.

    Returns:
        The report, ready for `write_report`.
    """
    end = data.start + dt.timedelta(days=6)
    report = Report(
        title=f"Conflict report {data.week} - group {data.group}",
        subtitle=(
            f"ISO week {data.week}: {data.start} .. {end} (UTC). Group checked/conflicts are "
            "one member's view (max over members), proposals and rollbacks sum over "
            "originating members."
        ),
    )
    report.sections.append(("Totals", [_totals(data)]))

    # conflicts by day
    by_day = Table(
        "conflicts_by_day",
        "Conflicts by day",
        ["date", "weekday", "checked", "conflicts", "conflict rate", "rollbacks", "members"],
        [
            [
                d["date"],
                d["weekday"],
                d["transactions_checked"],
                d["conflicts_detected"],
                d["conflict_rate"],
                d["transactions_local_rollback"],
                d["members"],
            ]
            for d in data.days
        ],
        percent=frozenset({"conflict rate"}),
    )
    day_chart = bar_chart(
        "conflicts_by_day",
        "Conflicts detected per day",
        [f"{d['weekday']} {d['date'][5:]}" for d in data.days],
        [d["conflicts_detected"] or 0 for d in data.days],
        "conflicts",
    )
    report.sections.append(("Conflicts by day", [day_chart, by_day]))

    # day x hour heatmap
    dates = [(data.start + dt.timedelta(days=i)).isoformat() for i in range(7)]
    matrix = [[0.0] * 24 for _ in dates]
    for h in data.hours:
        if h["date"] in dates:
            matrix[dates.index(h["date"])][h["hour_of_day"]] = float(h["conflicts_detected"] or 0)
    labels = [dt.date.fromisoformat(d).strftime("%a %m-%d") for d in dates]
    heat = heatmap_chart("heatmap", "Conflicts by day and hour (UTC)", labels, matrix)
    heat_table = Table(
        "heatmap",
        "Conflicts by day (rows) and hour of day (columns)",
        ["date", *(f"{h:02d}" for h in range(24))],
        [[d, *(int(v) for v in row)] for d, row in zip(dates, matrix, strict=True)],
    )
    report.sections.append(("Day x hour heatmap", [heat, heat_table]))

    # top conflict hours
    top = sorted(data.hours, key=lambda h: (-(h["conflicts_detected"] or 0), h["hour"]))[:10]
    report.sections.append(
        (
            "Top conflict hours",
            [
                Table(
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
            ],
        )
    )

    # rollbacks by originating member
    members = Table(
        "rollbacks_by_member",
        "Rollbacks and rollback ratio by originating member",
        ["member", "proposed", "rolled back", "rollback ratio"],
        [
            [
                m["member_id"],
                m["transactions_local_proposed"],
                m["transactions_local_rollback"],
                m["rollback_ratio"],
            ]
            for m in data.members
        ],
        percent=frozenset({"rollback ratio"}),
    )
    member_chart = bar_chart(
        "rollbacks_by_member",
        "Rolled-back local transactions by member",
        _short_labels([m["member_id"] for m in data.members]),
        [m["transactions_local_rollback"] or 0 for m in data.members],
        "rollbacks",
    )
    report.sections.append(("Rollbacks by originating member", [member_chart, members]))

    # queue pressure beside conflicts
    conflicts_by_date = {d["date"]: d["conflicts_detected"] for d in data.days}
    queue_table = Table(
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
    hourly = [slots.get((d, hour)) for d in dates for hour in range(24)]
    queue_chart = twin_chart(
        "queue_pressure",
        "Conflicts per hour beside the largest queues",
        bars=[float(h["conflicts_detected"] or 0) if h else 0.0 for h in hourly],
        bar_label="conflicts per hour",
        lines={
            "applier queue max": [
                h["transactions_remote_in_applier_queue_max"] if h else None for h in hourly
            ],
            "certifier queue max": [h["transactions_in_queue_max"] if h else None for h in hourly],
        },
        line_axis="transactions queued",
        ticks=[(24 * i, label) for i, label in enumerate(labels)],
    )
    report.sections.append(("Queue pressure beside conflicts", [queue_chart, queue_table]))

    # data quality
    quality = Table(
        "data_quality",
        "Data quality by member",
        ["member", "days present", "samples", "coverage", "counter resets", "daemon restarts"],
        [
            [
                m["member_id"],
                m["days_present"],
                m["samples"],
                m["coverage"],
                m["resets"],
                m["restarts"],
            ]
            for m in sorted(data.members, key=lambda m: m["member_id"])
        ],
        note=(
            "coverage = samples / samples expected in the week; counter resets are "
            "server restarts (counters dropped), daemon restarts are new incarnations."
        ),
        percent=frozenset({"coverage"}),
    )
    report.sections.append(lag_section(data.lag, data.start))
    heading, items = applier_section(data.applier)
    report.sections.append((heading, [*items]))
    report.sections.append(flow_section(data.flow))
    report.sections.append(("Data quality", [quality, *skipped_table(data.skipped)]))
    return report


def _safe_name(group: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", group) or "_"


def report(
    spark: SparkSession, rollups: str, week: str, out: Path, group: str | None = None
) -> dict[str, list[Path]]:
    """Write the weekly report of every group (or one) under `out/<group>/`.

    Args:
        spark: the session.
        rollups: the rollup root.
        week: ISO week, e.g. "2026-W47".
        out: output directory.
        group: only this group; None = all groups with rollups that week.

    Returns:
        Group -> files written.

    Raises:
        ReportError: bad week or no rollups for it.
    """
    written: dict[str, list[Path]] = {}
    for data in collect_week(spark, rollups, week, group):
        written[data.group] = write_report(build_report(data), out / _safe_name(data.group))
    return written


def build_parser() -> argparse.ArgumentParser:
    """The `report` command line.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(
        prog="python -m spark_rollups report",
        description="Write the weekly conflict report (Markdown, HTML with PNG charts, CSV) "
        "of one ISO week from the rollup tables, one directory per group.",
        epilog=(
            "examples:\n"
            "  python -m spark_rollups report --rollups rollups --week 2026-W47 --out report\n"
            "  python -m spark_rollups report --rollups rollups --week 2026-W47 "
            "--group prod --out report\n"
            "Output: <out>/<group>/report.md, report.html (self-contained), *.png, *.csv"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rollups", required=True, metavar="DIR", help="rollup root written by `rollup`"
    )
    parser.add_argument("--week", required=True, metavar="YYYY-Www", help="ISO week, e.g. 2026-W47")
    parser.add_argument("--group", metavar="NAME", help="only this group")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="output directory")
    parser.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `report`.

    Args:
        argv: arguments after the command name; None = sys.argv[1:].

    Returns:
        0 on success, 2 on a user error or a missing rollup directory.
    """
    args = build_parser().parse_args(argv)
    try:
        iso_week(args.week)
    except ReportError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    rollups = local_path(args.rollups)
    if rollups is not None and not os.path.isdir(os.path.join(rollups, "group_day")):
        print(f"report: no rollups found in {args.rollups} (missing group_day/)", file=sys.stderr)
        return 2

    def work(spark: SparkSession, started: float) -> None:
        written = report(spark, args.rollups, args.week, args.out, args.group)
        for group, files in written.items():
            html_file = next(f for f in files if f.name == "report.html")
            print(f"report: group {group}: {len(files)} files, {html_file}", flush=True)
        print(f"report: done in {time.monotonic() - started:.1f} s", flush=True)

    return run_command("report", args.master, "grstats-report", work, (ReportError,))
