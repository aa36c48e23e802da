"""The weekly report's "Applier: why is it slow" section: a verdict per member.

Strategy: Spark sums each member's `applier_member_day` rows of the week
(increases are additive), the result -- one row per member -- is collected,
and each wait's share of the week's active time is judged by the one verdict
rule, `protocol.applier_verdict` (the rule `grstats applier --explain` uses
live; protocol/ is pure standard library, the one package grstats and this
one share).  Each member gets its verdict, the numbers behind it (committed,
active time, every share) and what an operator would change.

Invariants: rollups written before the applier tables existed have none (a
one-line note); a member whose week lacks the active time or any wait time
is `unknown`, never judged on partial figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from protocol.applier_verdict import ADVICE, BOTTLENECKS, UNKNOWN, WORK, judge
from spark_rollups import frames
from spark_rollups.render import Item, Table
from spark_rollups.schema import ACTIVE, APPLIER_COUNTERS
from spark_rollups.week import member

__all__ = [
    "HEADING",
    "VERDICT_WAITS",
    "applier_section",
    "behind",
    "collect_applier",
    "verdict",
]

HEADING = "Applier: why is it slow"
#: each share the rule judges -> the applier tables' wait time columns it sums
VERDICT_WAITS: Mapping[str, tuple[str, ...]] = {
    WORK: ("work_from_source_wait_ns",),
    "commit_order": ("commit_order_wait_ns",),
    "dependencies": ("commit_schedule_dependency_wait_ns",),
    "queue_memory": ("worker_queues_memory_wait_ns", "worker_queues_full_wait_ns"),
    "too_few_workers": ("available_worker_wait_ns",),
    "relay_log_read": ("relay_log_read_wait_ns",),
}
_SUMMED = (*(out for _, out in APPLIER_COUNTERS), "samples", "resets")
_WHY = {
    "starved": "waits for work from the source {work} of its active time",
    "busy": "no wait reaches {bound} of its active time; waits for work only {work}",
}


def collect_applier(applier_day: DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Each member's week: the sums of its applier_member_day rows.

    Args:
        applier_day: the week's applier_member_day rows.

    Returns:
        Group -> one dict per member (member_id, the summed increases,
        samples, resets, days), by member id.
    """
    weekly = applier_day.groupBy("group_name", "member_id").agg(
        *(F.sum(c).alias(c) for c in _SUMMED),
        F.countDistinct("date").alias("days"),
    )
    result: dict[str, list[dict[str, Any]]] = {}
    for row in frames.rows(weekly.orderBy("group_name", "member_id")):
        result.setdefault(row.pop("group_name"), []).append(row)
    return result


def verdict(week: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    """The verdict of one member's week and the shares behind it.

    Args:
        week: the member's summed increases (rollup column names).

    Returns:
        (verdict, shares by verdict name); `unknown` with no shares when the
        active time is 0 or unknown, or any wait time is unknown.
    """
    active = week.get(ACTIVE)
    times = {kind: [week.get(c) for c in columns] for kind, columns in VERDICT_WAITS.items()}
    if not active or any(t is None for ts in times.values() for t in ts):
        return UNKNOWN, {}
    shares = {kind: sum(t for t in ts if t is not None) / active for kind, ts in times.items()}
    return judge(shares), shares


def _percent(value: float) -> str:
    return f"{value:.1%}"


def behind(kind: str, shares: Mapping[str, float]) -> str:
    """The numbers a verdict rests on, in one clause."""
    if kind in BOTTLENECKS:
        return (
            f"{kind.replace('_', ' ')} waits take {_percent(shares[kind])} of its active time, "
            f"the largest bottleneck; waits for work only {_percent(shares[WORK])}"
        )
    if kind in _WHY:
        return _WHY[kind].format(work=_percent(shares[WORK]), bound=_percent(0.2))
    return "no wait breakdown in its history this week"


def applier_section(
    members: list[dict[str, Any]] | None, labels: Mapping[str, str] | None = None
) -> tuple[str, list[Item]]:
    """The section of one group's week.

    Args:
        members: the group's `collect_applier` rows (None: no applier tables).
        labels: member id -> `host:port` (absent: the short id).

    Returns:
        (heading, items): one paragraph per member (verdict, the numbers behind
        it, what to change) and the table of the week's figures.
    """
    if not members:
        return HEADING, [
            "No applier metrics this week (members without replication_applier_metrics, "
            "or history that predates the applier columns)."
        ]
    names = labels or {}
    items: list[Item] = [
        "Per member, the week of its group_replication_applier channel (WL#15620): each "
        "wait's share of the coordinator's active time decides why it is slow "
        "(commit-order waits are summed over workers, so that share can pass 100 %)."
    ]
    rows = []
    # in host:port order
    for m in sorted(members, key=lambda m: (str(member(names, m["member_id"])), m["member_id"])):
        kind, shares = verdict(m)
        items.append(
            f"**{member(names, m['member_id'])}: {kind}** -- {behind(kind, shares)}; "
            f"{m['transactions_committed'] or 0:,} transactions committed. {ADVICE[kind]}"
        )
        active = m.get(ACTIVE)
        rows.append(
            [
                member(names, m["member_id"]),
                kind,
                m["transactions_committed"],
                m["committed_bytes"],
                None if active is None else active / 3.6e12,
                *(shares.get(k) for k in VERDICT_WAITS),
                m["samples"],
                m["resets"],
            ]
        )
    share_columns = [f"{k.replace('_', ' ')} share" for k in VERDICT_WAITS]
    items.append(
        Table(
            "applier_verdicts",
            "Applier verdict per member, with the week's figures behind it",
            [
                "member",
                "verdict",
                "committed",
                "committed bytes",
                "active (h)",
                *share_columns,
                "readings",
                "resets",
            ],
            rows,
            note="share = the wait's time / the applier's active time over the week; "
            "readings = samples whose applier counters the history keeps (the last of each "
            "10 s, and both sides of a restart); resets = readings where the applier metrics "
            "restarted.",
            percent=frozenset(share_columns),
        )
    )
    return HEADING, items
