"""Why is an applier slow: a verdict from one replication_applier_metrics row.

Strategy: the coordinator's time (TOTAL_ACTIVE_TIME_DURATION) is spent
waiting for work, waiting on a bottleneck, or reading the relay log; each
wait's share of the active time says what holds the applier back. This
module turns a row's columns into those shares; the rule itself (thresholds,
tie order, advice) is `protocol.applier_verdict`, shared with the weekly
report. No active time, or any wait time unknown (NULL: a pre-WL#15620
server), is `unknown`.

Commit-order waits are summed over workers, so their share can pass 100 %;
shares are shown as they are, not clipped. The figures are totals since
the metrics were reset (MySQL's counters); `explain(current, previous)`
judges the increase between two readings instead, which is what a window
of recent behaviour needs.

Invariants: pure; the thresholds are protocol.applier_verdict's constants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from grstats.core import columns as col
from protocol.applier_verdict import (
    ADVICE,
    BOTTLENECKS,
    BOUND_SHARE,
    STARVED_SHARE,
    UNKNOWN,
    WORK,
    judge,
)

__all__ = ["ADVICE", "BOUND_SHARE", "STARVED_SHARE", "Verdict", "explain"]

#: the rule's BOTTLENECKS -> the column(s) whose time is its share
_WAIT_COLUMNS: Final[Mapping[str, tuple[str, ...]]] = {
    "commit_order": (col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME,),
    "dependencies": (col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME,),
    "queue_memory": (
        col.WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME,
        col.WAITS_WORKER_QUEUES_FULL_SUM_TIME,
    ),
    "too_few_workers": (col.WAITS_FOR_AVAILABLE_WORKER_SUM_TIME,),
    "relay_log_read": (col.TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME,),
}
_WORK: Final = col.WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why one member's applier channel is (not) slow.

    Attributes:
        kind: one of ADVICE's keys.
        shares: each wait's share of the active time ("work_from_source",
            then the bottlenecks by verdict name); empty when unknown.
        active_s: the active time judged, seconds (None when unknown).
        advice: what an operator would change.
    """

    kind: str
    shares: Mapping[str, float]
    active_s: float | None
    advice: str


def _number(row: Mapping[str, object], name: str) -> int | None:
    value = row.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _delta(
    current: Mapping[str, object], previous: Mapping[str, object] | None, name: str
) -> int | None:
    now = _number(current, name)
    if now is None or previous is None:
        return now
    before = _number(previous, name)
    if before is None or before > now:  # unknown before, or reset: judge the total
        return now
    return now - before


def explain(current: Mapping[str, object], previous: Mapping[str, object] | None = None) -> Verdict:
    """The verdict for one replication_applier_metrics row (or two readings of it).

    Args:
        current: the row, keyed by column name.
        previous: an earlier reading of the same member and channel, or None
            to judge the totals.

    Returns:
        The Verdict, with the shares behind it.
    """
    active = _delta(current, previous, col.TOTAL_ACTIVE_TIME_DURATION)
    work = _delta(current, previous, _WORK)
    times = {k: [_delta(current, previous, n) for n in _WAIT_COLUMNS[k]] for k in BOTTLENECKS}
    if not active or work is None or any(t is None for ts in times.values() for t in ts):
        return Verdict(UNKNOWN, {}, None if active is None else active / 1e9, ADVICE[UNKNOWN])
    shares = {WORK: work / active}
    for kind, ts in times.items():
        shares[kind] = sum(t for t in ts if t is not None) / active
    kind = judge(shares)
    return Verdict(kind, shares, active / 1e9, ADVICE[kind])
