"""`report`: the weekly conflict report of one ISO week, per group (DESIGN.md section 7).

Strategy: Spark reads the rollup tables with partition pruning (the week and
the week before) and does the aggregating (weekly member sums, day and hour
selections); the results are a few hundred rows at most, collected once
into a `WeekData` (week.py).  `build_report` lays out the sections, each a
pure function of it in its own module -- findings first (findings.py), the
conflict sections (conflictreport.py), lag, applier, flow control, data
quality and the members appendix -- and `render.py` writes Markdown,
self-contained HTML (inline CSS, PNG charts as data URIs) and one CSV per
table.  Members are labelled `host:port` from the members dimension
(memberdim.py).

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, GroupedData, SparkSession
from pyspark.sql import functions as F

from spark_rollups import conflictreport as C
from spark_rollups import frames
from spark_rollups.applierreport import applier_section, collect_applier
from spark_rollups.commitreport import collect_commit, commit_section
from spark_rollups.commitrollup import COMMIT_TABLES
from spark_rollups.findings import findings_section
from spark_rollups.flowreport import collect_flow, flow_section
from spark_rollups.flowrollup import FLOW_TABLES
from spark_rollups.gtidreport import collect_gtids, gtid_section
from spark_rollups.gtidrollup import GTID_TABLES
from spark_rollups.lagreport import collect_lag, lag_section
from spark_rollups.memberdim import MEMBER_HOSTS, address, collect_member_hosts
from spark_rollups.render import Item, Report, Table, write_report
from spark_rollups.session import run_command
from spark_rollups.skippedreport import skipped_in_week, skipped_table
from spark_rollups.storage import local_path
from spark_rollups.week import ReportError, WeekData, iso_week, member

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


def _table(spark: SparkSession, rollups: str, name: str) -> DataFrame:
    frame: DataFrame = spark.read.parquet(f"{rollups}/{name}")
    return frame


def _in_range(frame: DataFrame, start: dt.date, end: dt.date) -> DataFrame:
    # `date` is the (string) partition column: this filter prunes directories.
    return frame.where((F.col("date") >= start.isoformat()) & (F.col("date") < end.isoformat()))


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
    previous_members = (
        _in_range(member_day, previous_start, start)
        .groupBy("group_name", "member_id")
        .agg(F.sum("transactions_local_rollback").alias("transactions_local_rollback"))
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
        {r["group_name"]: r for r in frames.rows(_weekly_totals(frame.groupBy("group_name")))}
        for frame in (days, previous)
    )
    result = {
        g: WeekData(
            group=g, week=week, start=start, totals=totals_now[g], previous=totals_before.get(g)
        )
        for g in groups
    }
    for row in frames.rows(day_rows.orderBy("date")):
        result[row["group_name"]].days.append(row)
    for row in frames.rows(hour_rows.orderBy("hour")):
        result[row["group_name"]].hours.append(row)
    for row in frames.rows(member_rows.orderBy(F.desc("transactions_local_rollback"), "member_id")):
        result[row["group_name"]].members.append(row)
    for row in frames.rows(queue_rows.orderBy("date")):
        result[row["group_name"]].queues.append(row)
    for row in frames.rows(previous_members.orderBy("member_id")):
        if row["group_name"] in result:
            result[row["group_name"]].previous_members.append(row)
    # mergeSchema: rollups written before the lag columns existed lack them
    member_hour = spark.read.option("mergeSchema", "true").parquet(f"{rollups}/member_hour")
    if group is not None:
        member_hour = member_hour.where(F.col("group_name") == group)

    def read(table: str) -> DataFrame | None:
        return frames.read_week(spark, f"{rollups}/{table}", start, end, group)

    def section(found: Mapping[str, Any], attribute: str) -> None:
        for name, collected in found.items():
            if name in result:
                setattr(result[name], attribute, collected)

    # Tables written after the first rollups: read_week is None for rollups from
    # before them, and for a history without their figures (no file written).
    for table, collect, attribute in (
        (MEMBER_HOSTS, collect_member_hosts, "hosts"),
        ("applier_member_day", collect_applier, "applier"),
        (GTID_TABLES[0], collect_gtids, "gtids"),
        (COMMIT_TABLES[0], collect_commit, "commit"),
    ):
        frame = read(table)
        section({} if frame is None else collect(frame), attribute)
    section(collect_lag(_in_range(member_hour, start, end)), "lag")
    section(collect_flow(*(read(t) for t in FLOW_TABLES)), "flow")
    for name in groups:
        result[name].skipped = skipped_in_week(spark, rollups, name, start, end)
    return [result[g] for g in groups]


# ------------------------------------------------------------------- build


def _members_appendix(data: WeekData, labels: Mapping[str, str]) -> tuple[str, list[Item]]:
    """Every member's label, UUID and the addresses, roles and versions it had in the week."""
    rows: list[list[Any]] = [
        [
            member(labels, h["member_id"]),
            h["member_id"],
            address(h),
            h["roles"],
            h["versions"],
            h["first_seen"],
            h["last_seen"],
            h["samples"],
        ]
        for h in sorted(
            data.hosts, key=lambda h: (str(member(labels, h["member_id"])), h["member_id"])
        )
    ]
    known = {h["member_id"] for h in data.hosts}
    rows += [
        [member(labels, m), m, None, None, None, None, None, None]
        for m in sorted(labels, key=lambda m: (str(member(labels, m)), m))
        if m not in known
    ]
    table = Table(
        "members",
        "Members: label, UUID and each address they had this week",
        [
            "member",
            "UUID",
            "host:port",
            "roles",
            "versions",
            "first seen (UTC)",
            "last seen (UTC)",
            "samples",
        ],
        rows,
        note="A member is labelled by the host:port it had last this week (with its UUID's "
        "first 8 characters when two members share it); n/a: rollups written before the "
        "members dimension.",
    )
    return "Appendix: members", [table]


def build_report(data: WeekData) -> Report:
    """Tables and charts of one group's week, findings first.

    Args:
        data: the collected week.

    Returns:
        The report, ready for `write_report`.
    """
    end = data.start + dt.timedelta(days=6)
    labels = data.labels()
    report = Report(
        title=f"Conflict report {data.week} - group {data.group}",
        subtitle=(
            f"ISO week {data.week}: {data.start} .. {end} (UTC). Group checked/conflicts are "
            "one member's view (max over members), proposals and rollbacks sum over "
            "originating members. Members are named host:port (UUIDs in the appendix)."
        ),
    )
    report.sections += [
        findings_section(data, labels),
        C.totals_section(data),
        C.by_day_section(data),
        C.heatmap_section(data),
        C.top_hours_section(data),
        C.members_section(data, labels),
        C.queue_section(data),
        lag_section(data.lag, data.start, labels, data.hours),
        applier_section(data.applier, labels),
        flow_section(data.flow, labels),
        gtid_section(data.gtids, labels),
        commit_section(data.commit, data.start, labels),
    ]

    # data quality
    quality = Table(
        "data_quality",
        "Data quality by member",
        ["member", "days present", "samples", "coverage", "counter resets", "daemon restarts"],
        [
            [
                member(labels, m["member_id"]),
                m["days_present"],
                m["samples"],
                m["coverage"],
                m["resets"],
                m["restarts"],
            ]
            for m in sorted(
                data.members, key=lambda m: (str(member(labels, m["member_id"])), m["member_id"])
            )
        ],
        note=(
            "coverage = samples / samples expected in the week; counter resets are "
            "server restarts (counters dropped), daemon restarts are new incarnations."
        ),
        percent=frozenset({"coverage"}),
    )
    report.sections.append(("Data quality", [quality, *skipped_table(data.skipped)]))
    report.sections.append(_members_appendix(data, labels))
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
