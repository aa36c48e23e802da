"""The weekly report's "Who held the group back" section (flow control, issue 13).

Strategy: Spark reads the week of the three flow-control tables
(flowrollup.py) and collects small results: the group's throttled,
attributed and unattributed seconds; per member the throttled seconds it
caused, its largest queues and its catch-up ETA distribution (member-seconds
per bucket, the worst hourly p95); and the `WORST` longest sustained
throttled periods (flowperiods.py: a member's episodes merged across the
quota's release cycles, which also joins the pieces the rollup cut at UTC
midnight).

Invariants: a member's share is its caused seconds over the group's
throttled seconds of the week; shares can add up to more than 100 % (a
second caused by two members counts for both) or less (the quota's release
tail is throttled but caused by nobody: "unattributed").  Rollups written
before issue 13 have no flow-control tables: the section says so, as it says
when the week had no throttled second at all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_rollups import frames
from spark_rollups.flowperiods import SUSTAINED_GAP_S, sustained_periods
from spark_rollups.flowrollup import CATCH_UP_BUCKETS
from spark_rollups.render import Item, Table, bar_chart
from spark_rollups.week import FlowWeek, member

__all__ = ["HEADING", "WORST", "FlowWeek", "collect_flow", "culprits", "flow_section", "utc_text"]

WORST = 10
HEADING = "Who held the group back"


def collect_flow(
    group_hour: DataFrame | None, member_hour: DataFrame | None, episodes: DataFrame | None
) -> dict[str, FlowWeek]:
    """The flow-control rows of every group: week sums and the longest periods.

    Args:
        group_hour: the week's `flow_control_group_hour` rows (frames.read_week).
        member_hour: the week's `flow_control_member_hour` rows.
        episodes: the week's `flow_control_episodes` rows.
        Each None when the rollups have no such table.

    Returns:
        Group -> its FlowWeek; empty without the hour tables (rollups from
        before issue 13, or a history without figures).
    """
    if group_hour is None or member_hour is None:
        return {}
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
    if episodes is None:  # no member ever caused a throttled second
        return _collect(totals, members, None)
    episodes = episodes.select(
        "group_name",
        "member_id",
        F.unix_timestamp("episode_start").alias("start_s"),
        F.unix_timestamp("episode_end").alias("end_s"),
        "throttled_seconds",
        "bottleneck",
        "excess_max",
        "certifier_queue_max",
        "applier_queue_max",
    )
    order = Window.partitionBy("group_name").orderBy(
        F.desc("length_s"), F.desc("throttled_seconds"), "start_s", "member_id"
    )
    ranked = sustained_periods(episodes).withColumn("_rank", F.row_number().over(order))
    longest = ranked.where(F.col("_rank") <= WORST).drop("_rank")
    return _collect(totals, members, longest.orderBy("group_name", F.desc("length_s"), "start_s"))


def _collect(
    totals: DataFrame, members: DataFrame, periods: DataFrame | None
) -> dict[str, FlowWeek]:
    by_group = [frames.rows_by_group(f) for f in (totals, members.orderBy("member_id"))]
    by_group.append({} if periods is None else frames.rows_by_group(periods))
    return {
        name: FlowWeek(
            totals=next(iter(by_group[0].get(name, [])), {}),
            members=by_group[1].get(name, []),
            periods=by_group[2].get(name, []),
        )
        for name in sorted({name for found in by_group for name in found})
    }


def utc_text(seconds: int) -> str:
    """`YYYY-MM-DD HH:MM:SS` (UTC) of Unix seconds."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _minutes(seconds: Any) -> float:
    return round((seconds or 0) / 60, 1)


def _hours(seconds: Any) -> float:
    return (seconds or 0) / 3600


def culprits(flow: FlowWeek) -> list[dict[str, Any]]:
    """The members that caused throttled time, most first."""
    members = sorted(
        flow.members, key=lambda m: (-(m["throttled_seconds_caused"] or 0), m["member_id"])
    )
    return [m for m in members if m["throttled_seconds_caused"]]


def flow_section(
    flow: FlowWeek | None, labels: Mapping[str, str] | None = None
) -> tuple[str, list[Item]]:
    """The report section of one group's week.

    Args:
        flow: its collected rows (None: no flow-control figures).
        labels: member id -> `host:port` (absent: the short id).

    Returns:
        (heading, items).
    """
    names = labels or {}
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
    top = next(iter(culprits(flow)), None)
    summary = (
        f"Writers were throttled for {_hours(throttled):,.1f} hours this week "
        f"({throttled / totals['seconds']:.1%} of the seconds with figures). "
    )
    if top is not None:
        summary += (
            f"Most of it was caused by member **{member(names, top['member_id'])}**: "
            f"{_hours(top['throttled_seconds_caused']):,.1f} hours "
            f"({top['throttled_seconds_caused'] / throttled:.1%} of the throttled time). "
        )
    summary += (
        f"Unattributed (the quota growing back after the queues went under the "
        f"threshold): {_hours(totals['unattributed_seconds']):,.1f} hours."
    )
    items: list[Item] = [summary]
    items.append(
        bar_chart(
            "flow_throttled_by_member",
            "Throttled minutes caused, by member",
            [str(member(names, m["member_id"])) for m in members],
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
                    member(names, m["member_id"]),
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
    items.append(_periods_table(flow.periods, names))
    items.append(_catch_up_table(members, names))
    return HEADING, items


def _periods_table(periods: list[dict[str, Any]], names: Mapping[str, str]) -> Table:
    return Table(
        "flow_sustained_periods",
        f"The {WORST} longest sustained throttled periods, by the member that caused them",
        [
            "member",
            "start (UTC)",
            "end (UTC)",
            "length (h)",
            "throttled share",
            "episodes",
            "bottleneck",
            "max certifier queue",
            "max applier queue",
        ],
        [
            [
                member(names, p["member_id"]),
                utc_text(p["start_s"]),
                utc_text(p["end_s"]),
                _hours(p["length_s"]),
                p["throttled_share"],
                p["episodes"],
                p["bottleneck"],
                p["certifier_queue_max"],
                p["applier_queue_max"],
            ]
            for p in periods
        ],
        note=f"A sustained period joins a member's throttled episodes (runs of seconds it "
        f"caused) while the gap between them is at most {SUSTAINED_GAP_S // 60} minutes: "
        "MySQL's quota throttles and releases in cycles of seconds. Throttled share = "
        "seconds it caused / the period's length. The per-second episodes are in the "
        "flow_control_episodes rollup table.",
        percent=frozenset({"throttled share"}),
    )


def _catch_up_table(members: list[dict[str, Any]], names: Mapping[str, str]) -> Table:
    bucket_titles = ["0 s", "< 10 s", "10-60 s", "> 60 s", "never", "unknown"]
    rows = []
    for m in members:
        total = sum(m[b] or 0 for b in CATCH_UP_BUCKETS)
        rows.append(
            [
                member(names, m["member_id"]),
                *((m[b] or 0) / total if total else None for b in CATCH_UP_BUCKETS),
                m["catch_up_eta_p95"],
                _minutes(m["failover_unready_seconds"]),
            ]
        )
    return Table(
        "flow_catch_up",
        "Catch-up ETA distribution per member (share of the seconds with figures)",
        ["member", *bucket_titles, "worst hourly p95 (s)", "not failover-ready (min)"],
        rows,
        note="ETA = applier queue / (apply rate - incoming rate); never: the queue "
        "was not shrinking; unknown: no rate yet. p95 over finite ETAs.",
        percent=frozenset(bucket_titles),
    )
