"""The weekly report's "Who held the group back" section (flow control, issue 13).

Strategy: Spark reads the week of the three flow-control tables
(flowrollup.py) and collects small results: the group's seconds with writers
held (what MySQL counts as throttled, Gr_flow_control_throttle_count), with
the quota merely active, attributed and unattributed; per member the held
seconds it caused, its largest queues, the time it was a bottleneck while no
writer was held (flow control not containing it), its apply capacity and the
applier threshold, and its catch-up ETA distribution (member-seconds per
bucket, the worst hourly p95); and the `WORST` longest sustained held
periods (flowperiods.py: a member's episodes merged across the quota's
release cycles, which also joins the pieces the rollup cut at UTC midnight).

Invariants: a member's share is its caused seconds over the group's held
seconds of the week; shares can add up to more than 100 % (a second caused
by two members counts for both) or less (the quota's release tail holds
writers but is caused by nobody: "unattributed").  Rollups written before
issue 13 have no flow-control tables, those before issue 38 no held seconds
(read as none): the section says so, as it says when no writer was held.
Members are listed in host:port order; durations read as `4 h 23 min`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from protocol.humanize import duration
from spark_rollups import frames
from spark_rollups.flowperiods import SUSTAINED_GAP_S, sustained_periods
from spark_rollups.flowrollup import CATCH_UP_BUCKETS
from spark_rollups.render import Item, Table, bar_chart
from spark_rollups.week import FlowWeek, member

__all__ = [
    "HEADING",
    "WORST",
    "FlowWeek",
    "collect_flow",
    "containing_threshold",
    "culprits",
    "floor_quota",
    "flow_section",
    "uncontained",
    "utc_text",
]

WORST = 10
HEADING = "Who held the group back"
#: flow control's floor: a hold grants at least this share of the smaller threshold
#: (PROTOCOL.md section 9; pipeline_stats.cc flow_control_step, lim_throttle)
FLOOR_SHARE = 0.05
HOLD_FACTOR = 0.9  # 1 - group_replication_flow_control_hold_percent (10) / 100


def containing_threshold(capacity: float) -> int:
    """The largest applier threshold whose floor is within `capacity` tx per period.

    A hold grants at least int(0.05 x threshold) per period (the floor), less
    10 %; with the floor at or under what the slow member applies, the quota
    (its apply rate less 10 %) is below its capacity and its queue shrinks.
    int(0.05 x T) <= C holds for T <= 20 C + 19.
    """
    return 20 * int(capacity) + 19


def floor_quota(threshold: int) -> int:
    """The least quota a hold grants the group per period at `threshold`."""
    return int(int(FLOOR_SHARE * threshold) * HOLD_FACTOR)


def _column(frame: DataFrame, name: str) -> Any:
    """A column, or NULL for rollups written before it existed."""
    return F.col(name) if name in frame.columns else F.lit(None)


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
        ),
        F.sum(_column(group_hour, "quota_active_seconds")).alias("quota_active_seconds"),
    )
    busy = F.coalesce(_column(member_hour, "uncontained_seconds"), F.lit(0)) > 0
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
        F.sum(_column(member_hour, "uncontained_seconds")).alias("uncontained_seconds"),
        # its capacity: the best hourly apply rate while its queue stayed over the threshold
        F.max(F.when(busy, _column(member_hour, "apply_rate"))).alias("apply_capacity"),
        F.max(_column(member_hour, "applier_threshold")).alias("applier_threshold"),
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
    """The members that caused held time, most first."""
    members = sorted(
        flow.members, key=lambda m: (-(m["throttled_seconds_caused"] or 0), m["member_id"])
    )
    return [m for m in members if m["throttled_seconds_caused"]]


def uncontained(flow: FlowWeek) -> list[dict[str, Any]]:
    """Members whose queue was over its threshold while flow control held no writer.

    Only members that never held the group back themselves: a member that caused
    held time was, at least then, contained. Longest first.
    """
    found = [
        m
        for m in flow.members
        if m.get("uncontained_seconds") and not m["throttled_seconds_caused"]
    ]
    return sorted(found, key=lambda m: (-(m["uncontained_seconds"] or 0), m["member_id"]))


def _by_label(members: list[dict[str, Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    return sorted(members, key=lambda m: (str(member(names, m["member_id"])), m["member_id"]))


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
    active = totals.get("quota_active_seconds")  # None: rollups from before issue 38
    members = _by_label(flow.members, names)
    items: list[Item] = []
    if throttled == 0:
        items.append(
            "No writer was held by flow control this week (QUOTA mode, as replayed by the "
            "daemons)"
            + (
                f"; its quota was active for {duration(active)}, always above what the "
                "writers committed."
                if active
                else ": no member's certifier or applier queue exceeded its threshold."
            )
        )
    else:
        top = next(iter(culprits(flow)), None)
        share = f"{throttled / totals['seconds']:.1%} of the seconds with figures"
        if active is not None:
            share += f"; the quota was active for {duration(active)}"
        summary = (
            f"Writers were held by flow control for {duration(throttled)} this week ({share}). "
        )
        if top is not None:
            summary += (
                f"Most of it was caused by member **{member(names, top['member_id'])}**: "
                f"{duration(top['throttled_seconds_caused'])} "
                f"({top['throttled_seconds_caused'] / throttled:.1%} of the held time). "
            )
        summary += (
            f"Unattributed (the quota growing back after the queues went under the "
            f"threshold): {duration(totals['unattributed_seconds'] or 0)}."
        )
        items.append(summary)
        items.append(
            bar_chart(
                "flow_throttled_by_member",
                "Minutes writers were held, caused by member",
                [str(member(names, m["member_id"])) for m in members],
                [_minutes(m["throttled_seconds_caused"]) for m in members],
                "minutes",
            )
        )
        items.append(_caused_table(members, names, throttled))
        items.append(_periods_table(flow.periods, names))
    if uncontained(flow):
        items.append(_uncontained_table(members, names))
    items.append(_catch_up_table(members, names))
    return HEADING, items


def _caused_table(members: list[dict[str, Any]], names: Mapping[str, str], held: int) -> Table:
    return Table(
        "flow_by_member",
        "Held time caused per member (a second counts for every member that was a "
        "bottleneck in it)",
        [
            "member",
            "held minutes caused",
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
                (m["throttled_seconds_caused"] or 0) / held,
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


def _uncontained_table(members: list[dict[str, Any]], names: Mapping[str, str]) -> Table:
    rows = []
    for m in members:
        if not m.get("uncontained_seconds"):
            continue
        threshold, capacity = m.get("applier_threshold"), m.get("apply_capacity")
        rows.append(
            [
                member(names, m["member_id"]),
                _minutes(m["uncontained_seconds"]),
                m["applier_queue_max"],
                threshold,
                None if threshold is None else floor_quota(int(threshold)),
                None if capacity is None else round(capacity, 1),
                None if capacity is None else containing_threshold(capacity),
            ]
        )
    return Table(
        "flow_not_containing",
        "Flow control not containing a queue: minutes a member's queue was over its "
        "threshold while no writer was held",
        [
            "member",
            "over threshold, no writer held (min)",
            "max applier queue",
            "applier threshold",
            "least quota per period",
            "apply capacity (tx/s)",
            "threshold that would hold the writers",
        ],
        rows,
        note="Least quota = what a hold grants at the least: 5 % of the threshold, less "
        "group_replication_flow_control_hold_percent (10 %); while it is above what the "
        "writers commit, no commit waits. Apply capacity = the member's best hourly apply "
        "rate while its queue was over the threshold. A threshold at most 20 x capacity + 19 "
        "puts the least quota at or under that capacity.",
    )


def _periods_table(periods: list[dict[str, Any]], names: Mapping[str, str]) -> Table:
    return Table(
        "flow_sustained_periods",
        f"The {WORST} longest sustained held periods, by the member that caused them",
        [
            "member",
            "start (UTC)",
            "end (UTC)",
            "length",
            "held share",
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
                duration(p["length_s"]),
                p["throttled_share"],
                p["episodes"],
                p["bottleneck"],
                p["certifier_queue_max"],
                p["applier_queue_max"],
            ]
            for p in periods
        ],
        note=f"A sustained period joins a member's held episodes (runs of seconds it "
        f"caused) while the gap between them is at most {SUSTAINED_GAP_S // 60} minutes: "
        "MySQL's quota holds and releases in cycles of seconds. Held share = "
        "seconds it caused / the period's length. The per-second episodes are in the "
        "flow_control_episodes rollup table.",
        percent=frozenset({"held share"}),
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
        note="Catch-up ETA = applier queue / (apply rate - incoming rate), under the load "
        "of the moment; never: the queue was not shrinking (no alarm by itself); unknown: "
        "no rate yet. p95 over finite ETAs. Not failover-ready: applying the backlog with "
        "the writes stopped (queue / apply capacity of the last minute) would have taken "
        "longer than failover_catch_up_limit.",
        percent=frozenset(bucket_titles),
    )
