"""The weekly report's "Where commit time went": each member's commit path by hour.

Strategy: Spark selects the week's `commit_member_hour` rows (at most members
x 168, collected once); the rest is pure Python on them (`commit_section`,
`commit_findings`, `dominating_hours`), so it is tested on hand-made weeks.
Per member a stacked bar chart by hour shows the seconds each operation of
the commit path took (consensus rounds, certification GC, the consistency
waits, flow-control holds; the message round trip contains the consensus
round and is not stacked); a table names each member's dominant cost over
the week and the hours in which its consensus rounds dominated the group.

"Dominated the group" (a slow link): in that hour the member's consensus time
is more than `GROUP_SHARE` of the whole group's commit-path time, and its mean
round at least `SLOWER` times the other members' -- the second condition keeps
a single primary (which simply proposes the most) from being named.

A member's week names a dominant cost, and what to check, only when that cost
is abnormal for this group: per consensus round, at least `SLOWER` times and
`FLOOR_US` above the other members' median (`abnormal_costs`) -- on a healthy
group every member spends its time in rounds of the same length, and being
told to "check the network" there is noise. An idle member (its rounds are
the group's stats messages) is then no different from the others. The
certification GC runs in the background: charted, never named.

Invariants: rollups written before the commit-path tables have none (the
section says so in one line); an operation without figures counts 0 in a
chart and is "n/a" in the tables.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_rollups import frames
from spark_rollups.render import Item, Table, stacked_chart
from spark_rollups.schema import COMMIT_SHARED
from spark_rollups.week import CommitWeek, WeekData, member

__all__ = [
    "FLOOR_US",
    "GROUP_SHARE",
    "HEADING",
    "SLOWER",
    "CommitWeek",
    "abnormal_costs",
    "collect_commit",
    "commit_findings",
    "commit_section",
    "dominating_hours",
]

HEADING = "Where commit time went"
GROUP_SHARE = 0.5
SLOWER = 2.0
FLOOR_US = 1000.0  # per round: a cost this close to the others' is noise
_JUDGED = tuple(op for op in COMMIT_SHARED if op != "certification_gc")
_SHOWN = {
    "consensus": "consensus rounds",
    "certification_gc": "certification GC",
    "before_begin": "consistency: before begin",
    "after_termination": "consistency: after termination",
    "after_sync": "consistency: after sync",
    "flow_control": "flow-control holds",
}
_CHECK = {
    "consensus": "the network: which member's round trips are high",
    "certification_gc": "certification info size and group_replication_gtid_assignment_block_size",
    "before_begin": "the sessions' group_replication_consistency (BEFORE, BEFORE_AND_AFTER)",
    "after_termination": "the sessions' group_replication_consistency (AFTER, BEFORE_AND_AFTER)",
    "after_sync": "the primary's AFTER transactions this member waits for",
    "flow_control": "the bottleneck member in the flow-control section",
}


def collect_commit(week: DataFrame) -> dict[str, CommitWeek]:
    """The commit-path rows of every group, per member and hour.

    Args:
        week: the week's `commit_member_hour` rows (frames.read_week).

    Returns:
        Group -> its CommitWeek.
    """
    hours = week.select(
        "group_name",
        "member_id",
        F.date_format("bucket_start", "yyyy-MM-dd HH:mm").alias("hour"),
        "consensus_count",
        *(f"{op}_us" for op in COMMIT_SHARED),
        "dominant",
    )
    found = frames.rows_by_group(hours.orderBy("member_id", "hour"))
    return {name: CommitWeek(hours=rows) for name, rows in found.items()}


def _us(row: Mapping[str, Any], op: str) -> int:
    value = row.get(f"{op}_us")
    return int(value) if value is not None else 0


def dominating_hours(week: CommitWeek) -> dict[str, list[str]]:
    """Member -> the hours ("YYYY-MM-DD HH:MM") in which its consensus dominated the group."""
    by_hour: dict[str, list[dict[str, Any]]] = {}
    for row in week.hours:
        by_hour.setdefault(row["hour"], []).append(row)
    found: dict[str, list[str]] = {}
    for hour, rows in sorted(by_hour.items()):
        whole = sum(_us(r, op) for r in rows for op in COMMIT_SHARED)
        for r in rows:
            others = [o for o in rows if o is not r]
            rounds = sum(o["consensus_count"] or 0 for o in others)
            mine = r["consensus_count"] or 0
            if not (whole and rounds and mine):
                continue
            slower = _us(r, "consensus") / mine >= SLOWER * (
                sum(_us(o, "consensus") for o in others) / rounds
            )
            if _us(r, "consensus") > GROUP_SHARE * whole and slower:
                found.setdefault(r["member_id"], []).append(hour)
    return found


def _spans(hours: list[str]) -> str:
    """Consecutive hours as `Mon 11-16 10:00 to 13:00`, joined by commas."""
    starts = [dt.datetime.fromisoformat(h) for h in hours]
    spans: list[list[dt.datetime]] = []
    for at in starts:
        if spans and at - spans[-1][1] == dt.timedelta(hours=1):
            spans[-1][1] = at
        else:
            spans.append([at, at])
    return ", ".join(
        f"{a.strftime('%a %m-%d %H:%M')} to {(b + dt.timedelta(hours=1)).strftime('%H:%M')}"
        for a, b in spans
    )


def _week_totals(week: CommitWeek) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for row in week.hours:
        mine = totals.setdefault(row["member_id"], dict.fromkeys((*COMMIT_SHARED, "rounds"), 0))
        for op in COMMIT_SHARED:
            mine[op] += _us(row, op)
        mine["rounds"] += row["consensus_count"] or 0
    return totals


def abnormal_costs(totals: Mapping[str, Mapping[str, int]], m: str) -> list[str]:
    """The member's costs abnormal for the group over the week, largest first.

    A cost per consensus round (its seconds over the member's rounds) is abnormal
    at `SLOWER` times and `FLOOR_US` above the other members' median; two within
    5 % of each other are a tie and name nothing.
    """
    mine = totals[m]
    if not mine["rounds"]:
        return []
    found = []
    for op in _JUDGED:
        cost = mine[op] / mine["rounds"]
        theirs = sorted(t[op] / t["rounds"] for o, t in totals.items() if o != m and t["rounds"])
        if not theirs:
            continue
        mid = len(theirs) // 2
        ref = theirs[mid] if len(theirs) % 2 else (theirs[mid - 1] + theirs[mid]) / 2
        if cost > SLOWER * ref and cost - ref >= FLOOR_US:
            found.append((cost, op))
    found.sort(reverse=True)
    if len(found) > 1 and found[1][0] >= 0.95 * found[0][0]:
        return []
    return [op for _, op in found]


def commit_findings(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    """One finding per member whose consensus rounds dominated the group in some hours."""
    if data.commit is None:
        return []
    sentences = []
    totals = _week_totals(data.commit)
    for m, hours in sorted(dominating_hours(data.commit).items()):
        mean_ms = totals[m]["consensus"] / totals[m]["rounds"] / 1000 if totals[m]["rounds"] else 0
        sentences.append(
            f"**{member(labels, m)}**'s consensus rounds took most of the group's commit "
            f"time in {len(hours)} hour(s) ({_spans(hours)} UTC; {mean_ms:,.2f} ms a round "
            f"over the week): check {_CHECK['consensus']}."
        )
    return sentences


def commit_section(
    week: CommitWeek | None, start: dt.date, labels: Mapping[str, str] | None = None
) -> tuple[str, list[Item]]:
    """The report section of one group's week.

    Args:
        week: its collected rows (None: no commit-path figures).
        start: the Monday of the week.
        labels: member id -> `host:port` (absent: the short id).

    Returns:
        (heading, items): per member a stacked chart of seconds by hour, the
        members table (dominant cost, share, mean round, dominating hours) and
        the hours table (CSV only).
    """
    names = labels or {}
    if week is None or not week.hours:
        return HEADING, [
            "No commit-path figures this week (servers before MySQL 8.1 do not count "
            "them, or the history predates the commit-path columns)."
        ]
    hour_starts = [
        dt.datetime(start.year, start.month, start.day) + dt.timedelta(hours=h)
        for h in range(7 * 24)
    ]
    slots = {at.strftime("%Y-%m-%d %H:%M"): i for i, at in enumerate(hour_starts)}
    ticks = [(24 * d, hour_starts[24 * d].strftime("%a %m-%d")) for d in range(7)]
    totals = _week_totals(week)
    dominating = dominating_hours(week)
    members = sorted(totals, key=lambda m: (str(member(names, m)), m))
    items: list[Item] = [
        "Per member and hour (UTC): seconds its commit path spent in each operation, from "
        "MySQL's Gr_* status variables (8.1+): consensus rounds, certification garbage "
        "collection, the group_replication_consistency waits and flow-control holds (the "
        "message round trip contains the consensus round, so it is not stacked). A member's "
        "consensus rounds dominate the group in an hour when they take more than "
        f"{GROUP_SHARE:.0%} of the whole group's commit time at a mean round at least "
        f"{SLOWER:g} times the other members' -- a slow link. A member's dominant cost is "
        f"named only when, per round, it is at least {SLOWER:g} times the other members' "
        "(and 1 ms above): on a healthy group the rounds take the time, as they should."
    ]
    table_rows = []
    for index, m in enumerate(members, start=1):
        label = str(member(names, m))
        series = {_SHOWN[op]: [0.0] * len(hour_starts) for op in COMMIT_SHARED}
        for row in week.hours:
            if row["member_id"] == m and row["hour"] in slots:
                for op in COMMIT_SHARED:
                    series[_SHOWN[op]][slots[row["hour"]]] = _us(row, op) / 1e6
        mine = totals[m]
        whole = sum(mine[op] for op in COMMIT_SHARED)
        largest = max(COMMIT_SHARED, key=lambda op: mine[op]) if whole else None
        abnormal = abnormal_costs(totals, m)
        top = abnormal[0] if abnormal else None
        items.append(
            stacked_chart(
                f"commit_path_{index}",
                f"Commit time by hour (s), {label}: mostly "
                f"{_SHOWN[largest] if largest else 'nothing'}",
                series,
                ticks=ticks,
                ylabel="seconds",
            )
        )
        table_rows.append(
            [
                member(names, m),
                _SHOWN[top] if top else "none abnormal",
                mine[top] / whole if top else None,
                mine["consensus"] / mine["rounds"] / 1000 if mine["rounds"] else None,
                *(mine[op] / 1e6 for op in COMMIT_SHARED),
                _spans(dominating[m]) if m in dominating else "",
                _CHECK[top] if top else "nothing: as the other members'",
            ]
        )
    items.append(
        Table(
            "commit_path_members",
            "Each member's dominant cost over the week (named only when abnormal against "
            "the other members), and the hours its consensus rounds dominated the group",
            [
                "member",
                "dominant cost",
                "share",
                "mean round (ms)",
                *(f"{_SHOWN[op]} (s)" for op in COMMIT_SHARED),
                "consensus dominated the group (UTC)",
                "what to check",
            ],
            table_rows,
            percent=frozenset({"share"}),
        )
    )
    items.append(
        Table(
            "commit_path_hours",
            "Seconds per operation by member and hour (UTC)",
            ["member", "hour (UTC)", *(op for op in COMMIT_SHARED), "largest"],
            [
                [member(names, r["member_id"]), r["hour"]]
                + [_us(r, op) / 1e6 for op in COMMIT_SHARED]
                + [r["dominant"]]
                for r in week.hours
            ],
            shown=False,
        )
    )
    return HEADING, items
