"""Why is an applier slow: a verdict from one replication_applier_metrics row.

Strategy: the coordinator's time (TOTAL_ACTIVE_TIME_DURATION) is spent
waiting for work, waiting on a bottleneck, or reading the relay log. Each
wait's share of the active time says what holds the applier back:

1. no active time, or any wait time unknown (NULL: a pre-WL#15620 server):
   `unknown`;
2. waits for work from the source >= `STARVED_SHARE` (50 %) of the active
   time: `starved` -- healthy, the applier keeps up and waits for the source;
3. else the largest bottleneck share, if >= `BOUND_SHARE` (20 %):
   `commit_order` (WAITS_DUE_TO_COMMIT_ORDER), `dependencies`
   (WAITS_COMMIT_SCHEDULE_DEPENDENCY), `queue_memory`
   (WAITS_FOR_WORKER_QUEUES_MEMORY + WAITS_WORKER_QUEUES_FULL),
   `too_few_workers` (WAITS_FOR_AVAILABLE_WORKER), `relay_log_read`
   (READ_FROM_RELAY_LOG); ties go in that order;
4. else `busy`: the workers apply flat out with no single wait to blame
   (CPU or storage of the member itself).

Commit-order waits are summed over workers, so their share can pass 100 %;
shares are shown as they are, not clipped. The figures are totals since
the metrics were reset (MySQL's counters); `explain(current, previous)`
judges the increase between two readings instead, which is what a window
of recent behaviour needs.

Invariants: pure; the thresholds are the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from grstats.core import columns as col

__all__ = ["ADVICE", "BOUND_SHARE", "STARVED_SHARE", "Verdict", "explain"]

STARVED_SHARE: Final = 0.5
BOUND_SHARE: Final = 0.2

#: verdict -> (column(s) whose time is the share, in tie-break order)
_BOTTLENECKS: Final = (
    ("commit_order", (col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME,)),
    ("dependencies", (col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME,)),
    (
        "queue_memory",
        (col.WAITS_FOR_WORKER_QUEUES_MEMORY_SUM_TIME, col.WAITS_WORKER_QUEUES_FULL_SUM_TIME),
    ),
    ("too_few_workers", (col.WAITS_FOR_AVAILABLE_WORKER_SUM_TIME,)),
    ("relay_log_read", (col.READ_FROM_RELAY_LOG_SUM_TIME,)),
)
_WORK: Final = col.WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME

ADVICE: Final = {
    "unknown": "No wait breakdown: the server lacks replication_applier_metrics "
    "(MySQL 9.1 Enterprise, 9.7 every edition) or the applier has not run.",
    "starved": "Healthy: the applier waits for work from the source. Nothing to change; "
    "replica_parallel_workers could even be lowered.",
    "commit_order": "Workers wait for their turn to commit. Break up large transactions; "
    "weigh replica_preserve_commit_order=OFF (GR requires ON for multi-primary "
    "consistency) and make sure the source tracks dependencies by WRITESET.",
    "dependencies": "The coordinator waits for dependent transactions: too little parallelism "
    "in what the source writes. Use binlog_transaction_dependency_tracking=WRITESET "
    "(the default from 8.4), avoid hot rows and tables without primary keys.",
    "queue_memory": "Worker queues are short of memory or full. Raise "
    "replica_pending_jobs_size_max; enable binlog_transaction_compression for "
    "transactions with many events.",
    "too_few_workers": "The coordinator waits for a free worker. Raise replica_parallel_workers.",
    "relay_log_read": "Reading the relay log takes the time: check the storage of relay_log.",
    "busy": "The workers apply flat out with no single wait to blame: the member's CPU or "
    "storage is the limit.",
}


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
    times = {kind: [_delta(current, previous, n) for n in names] for kind, names in _BOTTLENECKS}
    if not active or work is None or any(t is None for ts in times.values() for t in ts):
        return Verdict("unknown", {}, None if active is None else active / 1e9, ADVICE["unknown"])
    shares = {"work_from_source": work / active}
    for kind, ts in times.items():
        shares[kind] = sum(t for t in ts if t is not None) / active
    if shares["work_from_source"] >= STARVED_SHARE:
        kind = "starved"
    else:
        best = max(_BOTTLENECKS, key=lambda b: shares[b[0]])[0]  # max keeps the first of ties
        kind = best if shares[best] >= BOUND_SHARE else "busy"
    return Verdict(kind, shares, active / 1e9, ADVICE[kind])
