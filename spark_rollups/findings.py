"""The report's "Findings": up to five ranked sentences, each a number, a member, when, an action.

Strategy: a pure function of the collected week (no Spark): each source
turns one section's own verdict into sentences, and the sources are ranked
in a fixed order of urgency -- a member no failover may safely promote
first, then what held the whole group back, then why a member is slow, then
where it lags, then the week-over-week change of the conflict rate, then gaps
in the data that qualify everything above:

0. GTID divergence: each member that had errant transactions, how many and
   from when to when, and what to do (gtidreport.py);
1. flow control: the member that caused most of the time writers were held
   (what MySQL counts as throttled), its share, its longest sustained period
   (flowperiods.py) and what to change; and each member whose queue stayed
   over its threshold while no writer was held -- flow control did not
   contain it -- with the threshold that would (flowreport.py);
1b. commit path: each member whose consensus rounds took most of the group's
   commit time in some hours, at a slower round than the others (a slow link);
2. applier: each member whose applier is bound by one wait (or busy), the
   share behind the verdict and the advice for it (one GR allows);
3. lag: the member with the highest p95 apply lag (at least `LAG_FLOOR_S`),
   when it peaked, and the hours the load that builds it arrives in -- the
   group's busy hours of the day (lagreport.py `busy_hours`), not the hours
   the backlog peaks in, which come after them;
4. conflicts: the conflict rate's change from the previous week when it
   moved by at least `RATE_CHANGE` (both weeks with figures);
5. data gaps: days without rollups, members under `COVERAGE_FLOOR`.

A week with none of them gets one line (`QUIET`).  The same sentences go to
Markdown and HTML (`**` around the member renders as bold there).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from protocol.applier_verdict import BOTTLENECKS
from protocol.humanize import duration
from spark_rollups.applierreport import verdict
from spark_rollups.commitreport import commit_findings
from spark_rollups.flowreport import (
    FlowWeek,
    containing_threshold,
    culprits,
    floor_quota,
    uncontained,
)
from spark_rollups.gtidreport import errant_findings
from spark_rollups.lagreport import busy_hours, writes_by_hour
from spark_rollups.render import Bullets, Item
from spark_rollups.week import WeekData, member

__all__ = [
    "COVERAGE_FLOOR",
    "HEADING",
    "LAG_FLOOR_S",
    "MAX_FINDINGS",
    "QUIET",
    "RATE_CHANGE",
    "findings",
    "findings_section",
]

HEADING = "Findings"
MAX_FINDINGS = 5
# a p95 apply lag under a minute is a healthy group's hot hour (seconds of queue), not a
# finding; the alert (GrstatsReplicationLagHigh) speaks from 30 s held for 2 minutes
LAG_FLOOR_S = 60.0
RATE_CHANGE = 0.25
COVERAGE_FLOOR = 0.95
QUIET = (
    "A quiet week: no member held the group back, every applier kept up, no apply lag "
    f"of {duration(LAG_FLOOR_S)} or more, a steady conflict rate and complete data."
)
_ACTION = {
    "commit_order": "break up its large transactions and have the sources track dependencies "
    "by WRITESET (keep replica_preserve_commit_order=ON, which GR requires)",
    "dependencies": "have the sources track dependencies by WRITESET and avoid hot rows and "
    "tables without primary keys",
    "queue_memory": "raise replica_pending_jobs_size_max",
    "too_few_workers": "raise replica_parallel_workers",
    "relay_log_read": "check the storage of its relay log",
    "busy": "its CPU or storage is the limit, with no single wait to blame",
}
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _when(start_s: int, end_s: int) -> str:
    start = dt.datetime.fromtimestamp(start_s, dt.UTC)
    end = dt.datetime.fromtimestamp(end_s, dt.UTC)
    first = start.strftime("%a %m-%d %H:%M")
    last = end.strftime("%H:%M") if end.date() == start.date() else end.strftime("%a %m-%d %H:%M")
    return f"{first} to {last} UTC"


def _days(indices: list[int]) -> str:
    """Weekdays as `Mon-Fri` when consecutive, else `Mon, Wed`."""
    if len(indices) > 2 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"{_WEEKDAYS[indices[0]]}-{_WEEKDAYS[indices[-1]]}"
    return ", ".join(_WEEKDAYS[i] for i in indices)


def _flow(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    flow = data.flow
    if flow is None or not flow.totals:
        return []
    sentences = _held_back(flow, labels) + _not_contained(data, labels)
    return sentences


def _held_back(flow: FlowWeek, labels: Mapping[str, str]) -> list[str]:
    """The member that caused most of the time writers were held (MySQL's throttling)."""
    held = flow.totals.get("throttled_seconds")
    top = next(iter(culprits(flow)), None)
    if not held or top is None:
        return []
    who = top["member_id"]
    text = (
        f"**{member(labels, who)}** held the group back: it caused "
        f"{top['throttled_seconds_caused'] / held:.0%} of the {duration(held)} writers were "
        "held by flow control"
    )
    periods = [p for p in flow.periods if p["member_id"] == who]
    if periods:
        longest = max(periods, key=lambda p: (p["length_s"], -p["start_s"]))
        text += (
            f", longest {duration(longest['length_s'])} from "
            f"{_when(longest['start_s'], longest['end_s'])}"
        )
    certifier = (top.get("throttled_seconds_caused_certifier") or 0) > (
        top.get("throttled_seconds_caused_applier") or 0
    )
    action = (
        "find what slows its certification (large transactions) before raising "
        "group_replication_flow_control_certifier_threshold"
        if certifier
        else "make its applier keep up (its verdict below) before raising "
        "group_replication_flow_control_applier_threshold"
    )
    return [f"{text}; {action}."]


def _not_contained(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    """Members lagging over their threshold while flow control held no writer."""
    assert data.flow is not None
    lag: dict[str, float] = {}
    for h in data.lag.hours if data.lag is not None else []:
        lag[h["member_id"]] = max(lag.get(h["member_id"], 0.0), h["p95"] or 0.0)
    sentences = []
    for m in uncontained(data.flow):
        who = m["member_id"]
        text = (
            f"Flow control did not contain **{member(labels, who)}**: its applier queue "
            f"stayed over its threshold for {duration(m['uncontained_seconds'])} "
            f"(up to {m['applier_queue_max']:,} transactions"
        )
        if lag.get(who, 0.0) >= LAG_FLOOR_S:
            text += f", p95 apply lag up to {duration(lag[who])}"
        text += ") and no writer was held"
        threshold, capacity = m.get("applier_threshold"), m.get("apply_capacity")
        if threshold is not None:
            text += (
                f": at a threshold of {int(threshold):,} a hold grants at least "
                f"{floor_quota(int(threshold)):,} transactions per period, more than the "
                "writers commit"
            )
        if capacity is not None:
            text += (
                f"; at its apply capacity of {capacity:,.1f} tx/s, "
                "group_replication_flow_control_applier_threshold at most "
                f"{containing_threshold(capacity):,} would hold the writers to what it applies"
            )
        sentences.append(text + " (or speed up its applier, its verdict below).")
    return sentences


def _applier(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    judged = []
    for m in data.applier or []:
        kind, shares = verdict(m)
        if kind in BOTTLENECKS or kind == "busy":
            judged.append((-shares.get(kind, 0.0), m["member_id"], kind, shares))
    sentences = []
    for _, who, kind, shares in sorted(judged):
        if kind == "busy":
            why = f"applies flat out (waits for work only {shares['work_from_source']:.0%})"
        else:
            why = (
                f"is {kind.replace('_', ' ')} bound: those waits take {shares[kind]:.0%} of its "
                "active time"
            )
        sentences.append(f"**{member(labels, who)}**'s applier {why} this week; {_ACTION[kind]}.")
    return sentences


def _lag(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    if data.lag is None or not data.lag.hours:
        return []
    peaks: dict[str, float] = {}
    for h in data.lag.hours:
        peaks[h["member_id"]] = max(peaks.get(h["member_id"], 0.0), h["p95"])
    who = min(peaks, key=lambda m: (-peaks[m], m))
    peak = peaks[who]
    if peak < LAG_FLOOR_S:
        return []
    worst = min(  # the first time it peaked
        (h for h in data.lag.hours if h["member_id"] == who),
        key=lambda h: (-h["p95"], h["date"], h["hour_of_day"]),
    )
    dates = data.dates()
    weekday = _WEEKDAYS[dates.index(worst["date"])] if worst["date"] in dates else ""
    text = (
        f"**{member(labels, who)}** lags: its p95 apply lag reaches {duration(peak)} "
        f"({weekday} {worst['date'][5:]} {worst['hour_of_day']:02d}:00 UTC)"
    )
    busy, ratio = busy_hours(writes_by_hour(data.hours))
    if not busy:
        return [
            f"{text}; the group's writes are spread evenly over the day: speed up its "
            "applier (its verdict below)."
        ]
    runs: list[list[int]] = []
    for hour in busy:
        if runs and hour == runs[-1][-1] + 1:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    when = " and ".join(f"{r[0]:02d}:00 to {r[-1] + 1:02d}:00" for r in runs)
    return [
        f"{text}; the load that builds it arrives {when} UTC, when the group writes up to "
        f"{ratio:.1f} times its median hour: move batch writes out of those hours or speed up "
        "its applier."
    ]


def _rate(totals: Mapping[str, Any]) -> float | None:
    checked = totals.get("transactions_checked")
    conflicts = totals.get("conflicts_detected")
    return conflicts / checked if checked and conflicts is not None else None


def _conflicts(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    del labels
    if data.previous is None:
        return []
    now, before = _rate(data.totals), _rate(data.previous)
    if now is None or not before or abs(now - before) / before < RATE_CHANGE:
        return []
    rose = now > before
    action = (
        "see the top conflict hours and the rollbacks by member for the rows written concurrently"
        if rose
        else "nothing to change"
    )
    return [
        f"The conflict rate {'rose' if rose else 'fell'} from {before:.2%} to {now:.2%} week "
        f"over week ({(now - before) / before:+.0%}); {action}."
    ]


def _gaps(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    sentences = []
    present = {d["date"] for d in data.days}
    missing = [i for i, date in enumerate(data.dates()) if date not in present]
    if missing:
        sentences.append(
            f"No data on {_days(missing)}: the week's figures cover {7 - len(missing)} of 7 "
            "days; check that every member's history reached the rollup."
        )
    for m in sorted(data.members, key=lambda m: (m["coverage"] or 0, m["member_id"])):
        coverage = m["coverage"] or 0
        if coverage < COVERAGE_FLOOR:
            sentences.append(
                f"**{member(labels, m['member_id'])}** reported {coverage:.0%} of the week's "
                f"samples ({m['days_present']} of 7 days); check its daemon's /healthz and "
                "history."
            )
    return sentences


def _gtids(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    return errant_findings(data.gtids, labels)


_SOURCES: tuple[Callable[[WeekData, Mapping[str, str]], list[str]], ...] = (
    _gtids,
    _flow,
    commit_findings,  # a member's slow link (commitreport.py)
    _applier,
    _lag,
    _conflicts,
    _gaps,
)


def findings(data: WeekData, labels: Mapping[str, str]) -> list[str]:
    """The ranked findings of one group's week (at most MAX_FINDINGS).

    Args:
        data: the collected week.
        labels: member id -> `host:port`.

    Returns:
        One sentence per finding, most urgent first; empty for a quiet week.
    """
    ranked = [sentence for source in _SOURCES for sentence in source(data, labels)]
    return ranked[:MAX_FINDINGS]


def findings_section(data: WeekData, labels: Mapping[str, str]) -> tuple[str, list[Item]]:
    """The "Findings" section: the numbered findings, or the one quiet-week line."""
    found = findings(data, labels)
    return HEADING, [Bullets(found) if found else QUIET]
