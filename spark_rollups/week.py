"""One group's collected week: the rows every report section reads (tiny, in Python).

Strategy: report.py collects, with Spark, a few hundred rows per group and
week into a `WeekData`; the section modules (conflictreport.py,
lagreport.py, applierreport.py, flowreport.py, findings.py) are pure
functions of it, so they are tested on hand-made weeks without Spark.

Invariants: weeks are ISO weeks (Monday 00:00 UTC to the next Monday);
"previous" is the ISO week before, None when it has no rollups; a member is
shown by `labels()` (memberdim.member_labels: `host:port`), never by a bare
UUID.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_rollups.memberdim import member_labels, short_id
from spark_rollups.render import Member

__all__ = [
    "CommitWeek",
    "FlowWeek",
    "GtidWeek",
    "LagWeek",
    "ReportError",
    "WeekData",
    "iso_week",
    "member",
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


# The sections' shapes of a week: here, not in the section modules that fill them, so
# that `WeekData` needs no import of the modules that import it.


@dataclass
class LagWeek:
    """Collected lag rows of one group and week."""

    hours: list[dict[str, Any]] = field(default_factory=list)  # member, date, hour, p95 apply
    worst: list[dict[str, Any]] = field(default_factory=list)  # the worst periods, worst first


@dataclass
class FlowWeek:
    """Collected flow-control rows of one group and week."""

    totals: dict[str, Any] = field(default_factory=dict)  # the group's seconds
    members: list[dict[str, Any]] = field(default_factory=list)  # per member, week sums
    periods: list[dict[str, Any]] = field(default_factory=list)  # the longest, longest first


@dataclass
class GtidWeek:
    """Collected GTID divergence rows of one group and week."""

    members: list[dict[str, Any]] = field(default_factory=list)  # per member, week sums


@dataclass
class CommitWeek:
    """Collected commit-path rows of one group and week."""

    hours: list[dict[str, Any]] = field(default_factory=list)  # commit_member_hour rows


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
    previous_members: list[dict[str, Any]] = field(default_factory=list)  # ditto per member
    lag: LagWeek | None = None  # the lag section's rows (None: no lag figures)
    applier: list[dict[str, Any]] | None = None  # each member's applier week (None: none)
    flow: FlowWeek | None = None  # "who held the group back" (None: no flow tables)
    gtids: GtidWeek | None = None  # "GTID divergence this week" (None: no GTID tables)
    hosts: list[dict[str, Any]] = field(default_factory=list)  # member_hosts of the week
    skipped: list[dict[str, Any]] = field(default_factory=list)  # history files not read
    commit: CommitWeek | None = None  # "where commit time went" (None: no commit-path table)

    def dates(self) -> list[str]:
        """The seven dates of the week (ISO text)."""
        return [(self.start + dt.timedelta(days=i)).isoformat() for i in range(7)]

    def labels(self) -> dict[str, str]:
        """Member id -> `host:port` label (short id for a member without a host)."""
        known = [m["member_id"] for m in self.members]
        known += [m["member_id"] for m in self.applier or []]
        if self.flow is not None:
            known += [m["member_id"] for m in self.flow.members]
        if self.lag is not None:
            known += [h["member_id"] for h in self.lag.hours]
        return member_labels(self.hosts, sorted(set(known)))


def member(labels: Mapping[str, str], member_id: str) -> Member:
    """The table cell of a member: its label, its UUID in the tooltip."""
    return Member(member_id, labels.get(member_id) or short_id(member_id))
