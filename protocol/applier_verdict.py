"""Why is an applier slow: the verdict over a channel's wait shares (WL#15620), defined once.

Strategy: this is the one rule behind both `grstats applier --explain`
(`grstats.core.applier_verdict`, from replication_applier_metrics rows) and
the weekly report's applier section (`spark_rollups`, from a week's
increases). It sits in protocol/ because that is the one pure package both may
import: grstats.core imports only the standard library and protocol, and
spark_rollups imports nothing of grstats. Callers turn their figures into
shares -- each wait's time over the coordinator's active time -- and this
module decides:

1. waits for work from the source >= `STARVED_SHARE` (50 %) of the active
   time: `starved` -- healthy, the applier keeps up and waits for the source;
2. else the largest bottleneck share (`BOTTLENECKS`, ties in that order), if
   >= `BOUND_SHARE` (20 %): `commit_order` (WAITS_DUE_TO_COMMIT_ORDER),
   `dependencies` (WAITS_COMMIT_SCHEDULE_DEPENDENCY), `queue_memory`
   (WAITS_FOR_WORKER_QUEUE_MEMORY + WAITS_WORKER_QUEUES_FULL),
   `too_few_workers` (WAITS_FOR_AVAILABLE_WORKER), `relay_log_read`
   (READ_FROM_RELAY_LOG);
3. else `busy`: the workers apply flat out with no single wait to blame.

Without active time or with any wait unknown the caller says `unknown`.

Invariants: pure, standard library only; the thresholds, the order and the
advice are the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["ADVICE", "BOTTLENECKS", "BOUND_SHARE", "STARVED_SHARE", "UNKNOWN", "WORK", "judge"]

STARVED_SHARE: Final = 0.5
BOUND_SHARE: Final = 0.2
WORK: Final = "work_from_source"
UNKNOWN: Final = "unknown"
#: the bottleneck verdicts, in tie-break order
BOTTLENECKS: Final = (
    "commit_order",
    "dependencies",
    "queue_memory",
    "too_few_workers",
    "relay_log_read",
)

ADVICE: Final = {
    UNKNOWN: "No wait breakdown: the server lacks replication_applier_metrics "
    "(MySQL 9.1 Enterprise, 9.7 every edition) or the applier has not run.",
    "starved": "Healthy: the applier waits for work from the source. Nothing to change; "
    "replica_parallel_workers could even be lowered.",
    # never replica_preserve_commit_order=OFF: Group Replication refuses it with
    # parallel workers, so advice to turn it off is advice no GR operator can follow
    "commit_order": "Workers wait for their turn to commit. Break up large transactions "
    "(one slow commit holds back every later one) and make sure the source tracks "
    "dependencies by WRITESET; keep replica_preserve_commit_order=ON, which Group "
    "Replication requires with parallel workers.",
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


def judge(shares: Mapping[str, float]) -> str:
    """The verdict for known shares of the active time.

    Args:
        shares: `WORK` and every one of `BOTTLENECKS` -> its time over the
            active time (commit-order waits are summed over workers, so a
            share may pass 1; it is judged as it is).

    Returns:
        "starved", one of `BOTTLENECKS`, or "busy".

    Raises:
        KeyError: a share is missing (the caller's bug: missing means unknown).
    """
    if shares[WORK] >= STARVED_SHARE:
        return "starved"
    best = max(BOTTLENECKS, key=lambda kind: shares[kind])  # max keeps the first of ties
    return best if shares[best] >= BOUND_SHARE else "busy"
