"""The weekly report's "Who held the group back" section (flow control, issue 13).

Strategy: Spark reads the week of the three flow-control tables
(flowrollup.py) and collects small results: the group's throttled,
attributed and unattributed seconds; per member the throttled seconds it
caused, its largest queues and its catch-up ETA distribution (member-seconds
per bucket, the worst hourly p95); and the episodes that can be among the
worst -- the `WORST` longest per group plus every episode touching a
midnight, since the rollup cuts episodes at UTC midnight and they are joined
here again (a joined episode is made of such pieces only, so the longest
joined episodes are all among what is collected).

Invariants: a member's share is its caused seconds over the group's
throttled seconds of the week; shares can add up to more than 100 % (a
second caused by two members counts for both) or less (the quota's release
tail is throttled but caused by nobody: "unattributed").  Rollups written
before issue 13 have no flow-control tables: the section says so, as it says
when the week had no throttled second at all.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_rollups.flowrollup import CATCH_UP_BUCKETS, EPISODE_GAP_S, FLOW_TABLES
from spark_rollups.render import Chart, Table, bar_chart
from spark_rollups.storage import hadoop_fs

__all__ = ["WORST", "FlowWeek", "collect_flow", "flow_section", "join_episodes"]

WORST = 10
HEADING = "Who held the group back"
_DAY_S = 86_400


@dataclass
class FlowWeek:
    """Collected flow-control rows of one group and week."""

    totals: dict[str, Any] = field(default_factory=dict)  # the group's seconds
    members: list[dict[str, Any]] = field(default_factory=list)  # per member, week sums
    episodes: list[dict[str, Any]] = field(default_factory=list)  # candidates (see module)


def _has_files(spark: SparkSession, table: str) -> bool:
    """Whether a rollup table has a Parquet file (a history without figures writes none)."""
    fs, pattern = hadoop_fs(spark, f"{table}/group=*/date=*/*.parquet")
    found = fs.globStatus(pattern)
    return found is not None and len(found) > 0


def _week(frame: DataFrame, start: dt.date, end: dt.date, group: str | None) -> DataFrame:
    frame = frame.where((F.col("date") >= start.isoformat()) & (F.col("date") < end.isoformat()))
    return frame if group is None else frame.where(F.col("group_name") == group)


def collect_flow(
    spark: SparkSession, rollups: str, start: dt.date, end: dt.date, group: str | None
) -> dict[str, FlowWeek]:
    """The flow-control rows of every group for the week [start, end).

    Args:
        spark: the session.
        rollups: the rollup root.
        start: the Monday of the week.
        end: the Monday after.
        group: only this group; None = all.

    Returns:
        Group -> its FlowWeek; empty when the rollups have no flow-control tables.
    """
    paths = {t: f"{rollups}/{t}" for t in FLOW_TABLES}
    present = {t: _has_files(spark, p) for t, p in paths.items()}
    group_table, member_table, episode_table = FLOW_TABLES
    if not (present[group_table] and present[member_table]):
        return {}  # rollups from before issue 13, or a history without figures
    group_hour, member_hour = (
        _week(spark.read.parquet(paths[t]), start, end, group) for t in (group_table, member_table)
    )
    totals = group_hour.groupBy("group_name").agg(
        *(
            F.sum(c).alias(c)
            for c in (
                "seconds",
                "throttled_seconds",
                "attributed_seconds",
                "unattributed_seconds",
                "shared_seconds",
            )
        )
    )
    members = member_hour.groupBy("group_name", "member_id").agg(
        *(
            F.sum(c).alias(c)
            for c in (
                "seconds",
                "bottleneck_seconds",
                "throttled_seconds_caused",
                "throttled_seconds_caused_certifier",
                "throttled_seconds_caused_applier",
                "failover_unready_seconds",
                *CATCH_UP_BUCKETS,
            )
        ),
        *(
            F.max(c).alias(c)
            for c in ("excess_max", "certifier_queue_max", "applier_queue_max", "catch_up_eta_p95")
        ),
    )
    if not present[episode_table]:  # no member ever caused a throttled second
        return _collect(totals, members, None)
    episodes = _week(spark.read.parquet(paths[episode_table]), start, end, group)
    start_s = F.unix_timestamp("episode_start")
    end_s = F.unix_timestamp("episode_end")
    touches_midnight = (F.pmod(start_s, _DAY_S) <= EPISODE_GAP_S) | (
        F.pmod(end_s, _DAY_S) >= _DAY_S - 1 - EPISODE_GAP_S
    )
    order = Window.partitionBy("group_name").orderBy(
        F.desc("throttled_seconds"), "episode_start", "member_id"
    )
    ranked = episodes.withColumn("_rank", F.row_number().over(order))
    candidates = ranked.where(touches_midnight | (F.col("_rank") <= WORST)).select(
        "group_name",
        "member_id",
        start_s.alias("start_s"),
        end_s.alias("end_s"),
        "throttled_seconds",
        "bottleneck",
        "excess_max",
        "certifier_queue_max",
        "applier_queue_max",
    )
    return _collect(totals, members, candidates.orderBy("member_id", "start_s"))


def _collect(
    totals: DataFrame, members: DataFrame, episodes: DataFrame | None
) -> dict[str, FlowWeek]:
    result: dict[str, FlowWeek] = {}
    for row in totals.toArrow().to_pylist():
        result.setdefault(row["group_name"], FlowWeek()).totals = row
    for row in members.orderBy("member_id").toArrow().to_pylist():
        result.setdefault(row["group_name"], FlowWeek()).members.append(row)
    for row in [] if episodes is None else episodes.toArrow().to_pylist():
        result.setdefault(row["group_name"], FlowWeek()).episodes.append(row)
    return result


def join_episodes(pieces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join a member's episodes cut at midnight (at most EPISODE_GAP_S apart).

    Args:
        pieces: episodes with member_id, start_s, end_s, throttled_seconds,
            bottleneck and the *_max figures.

    Returns:
        The joined episodes, longest first (then earliest).
    """
    joined: list[dict[str, Any]] = []
    for e in sorted(pieces, key=lambda e: (e["member_id"], e["start_s"])):
        last = joined[-1] if joined else None
        if (
            last is not None
            and last["member_id"] == e["member_id"]
            and 0 < e["start_s"] - last["end_s"] <= EPISODE_GAP_S
        ):
            last["end_s"] = e["end_s"]
            last["throttled_seconds"] += e["throttled_seconds"]
            kinds = set(last["bottleneck"].split("+")) | set(e["bottleneck"].split("+"))
            last["bottleneck"] = "+".join(sorted(k for k in kinds if k))
            for k in ("excess_max", "certifier_queue_max", "applier_queue_max"):
                last[k] = max(v for v in (last[k], e[k]) if v is not None)
        else:
            joined.append(dict(e))
    return sorted(joined, key=lambda e: (-e["throttled_seconds"], e["start_s"], e["member_id"]))


def _utc(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _label(member: str) -> str:
    return member[:8] if len(member) > 8 else member


def _minutes(seconds: Any) -> float:
    return round((seconds or 0) / 60, 1)


def flow_section(flow: FlowWeek | None) -> tuple[str, list[Table | Chart | str]]:
    """The report section of one group's week.

    Args:
        flow: its collected rows (None: no flow-control figures).

    Returns:
        (heading, items).
    """
    if flow is None or not flow.totals or not flow.totals.get("seconds"):
        return HEADING, [
            "No flow-control figures this week (the history predates them, or was "
            "recorded by a collector, which does not replay flow control)."
        ]
    totals = flow.totals
    throttled = totals["throttled_seconds"] or 0
    if throttled == 0:
        return HEADING, [
            "No throttled time this week: flow control (QUOTA mode, as replayed by the "
            "daemons) never limited the writers -- no member's certifier or applier "
            "queue exceeded its flow-control threshold."
        ]
    members = sorted(
        flow.members, key=lambda m: (-(m["throttled_seconds_caused"] or 0), m["member_id"])
    )
    culprits = [m for m in members if m["throttled_seconds_caused"]]
    top = culprits[0] if culprits else None
    summary = (
        f"Writers were throttled for {_minutes(throttled):,} minutes this week "
        f"({throttled / totals['seconds']:.1%} of the seconds with figures). "
    )
    if top is not None:
        summary += (
            f"Most of it was caused by member {top['member_id']}: "
            f"{_minutes(top['throttled_seconds_caused']):,} minutes "
            f"({top['throttled_seconds_caused'] / throttled:.1%} of the throttled time). "
        )
    summary += (
        f"Unattributed (the quota growing back after the queues went under the "
        f"threshold): {_minutes(totals['unattributed_seconds']):,} minutes."
    )
    items: list[Table | Chart | str] = [summary]
    items.append(
        bar_chart(
            "flow_throttled_by_member",
            "Throttled minutes caused, by member",
            [_label(m["member_id"]) for m in members],
            [_minutes(m["throttled_seconds_caused"]) for m in members],
            "minutes",
        )
    )
    items.append(
        Table(
            "flow_by_member",
            "Throttled time caused per member (a second counts for every member that was "
            "a bottleneck in it)",
            [
                "member",
                "throttled minutes caused",
                "share",
                "as certifier (min)",
                "as applier (min)",
                "bottleneck minutes",
                "max excess over threshold",
                "max certifier queue",
                "max applier queue",
            ],
            [
                [
                    m["member_id"],
                    _minutes(m["throttled_seconds_caused"]),
                    (m["throttled_seconds_caused"] or 0) / throttled,
                    _minutes(m["throttled_seconds_caused_certifier"]),
                    _minutes(m["throttled_seconds_caused_applier"]),
                    _minutes(m["bottleneck_seconds"]),
                    m["excess_max"],
                    m["certifier_queue_max"],
                    m["applier_queue_max"],
                ]
                for m in members
            ],
            percent=frozenset({"share"}),
        )
    )
    worst = join_episodes(flow.episodes)[:WORST]
    items.append(
        Table(
            "flow_worst_episodes",
            f"The {WORST} longest throttled episodes, by the member that caused them",
            [
                "member",
                "start (UTC)",
                "end (UTC)",
                "throttled minutes",
                "bottleneck",
                "max excess",
                "max certifier queue",
                "max applier queue",
            ],
            [
                [
                    e["member_id"],
                    _utc(e["start_s"]),
                    _utc(e["end_s"]),
                    _minutes(e["throttled_seconds"]),
                    e["bottleneck"],
                    e["excess_max"],
                    e["certifier_queue_max"],
                    e["applier_queue_max"],
                ]
                for e in worst
            ],
            note=f"An episode is a run of seconds the member caused, gaps of at most "
            f"{EPISODE_GAP_S} s included.",
        )
    )
    bucket_titles = ["0 s", "< 10 s", "10-60 s", "> 60 s", "never", "unknown"]
    rows = []
    for m in members:
        total = sum(m[b] or 0 for b in CATCH_UP_BUCKETS)
        rows.append(
            [
                m["member_id"],
                *((m[b] or 0) / total if total else None for b in CATCH_UP_BUCKETS),
                m["catch_up_eta_p95"],
                _minutes(m["failover_unready_seconds"]),
            ]
        )
    items.append(
        Table(
            "flow_catch_up",
            "Catch-up ETA distribution per member (share of the seconds with figures)",
            ["member", *bucket_titles, "worst hourly p95 (s)", "not failover-ready (min)"],
            rows,
            note="ETA = applier queue / (apply rate - incoming rate); never: the queue "
            "was not shrinking; unknown: no rate yet. p95 over finite ETAs.",
            percent=frozenset(bucket_titles),
        )
    )
    return HEADING, items
