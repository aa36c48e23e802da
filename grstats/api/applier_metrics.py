"""Prometheus families of the WL#15620 tables (every member, every channel, every worker).

Strategy: derived from the column declarations (`columns.APPLIER_METRICS`,
`columns.APPLIER_PROGRESS_BY_WORKER`) like the lag families: every column
with a `metric` is one series per row, labelled `group`, `member_id`,
`channel_name` (and `worker_id` for the per-worker table) plus the column's
constant `metric_labels`; columns sharing a metric are one family told apart
by those labels:

* counters are counters (`_total`): `grstats_applier_transactions_committed_total`,
  `..._committed_bytes_total`, `..._events_committed_total`,
  `grstats_applier_waits_total{wait}` and `grstats_applier_wait_seconds_total{wait}`
  with wait = work_from_source, available_worker, commit_schedule_dependency,
  worker_queues_memory, worker_queues_full, commit_order;
  `grstats_applier_active_seconds_total`, `grstats_applier_relay_log_read_seconds_total`;
* gauges: transactions ongoing / pending, their sizes, the last applier start
  (Unix seconds), per worker the ongoing transaction's size and progress.

MySQL's nanoseconds (`columns.NANOSECOND_COLUMNS`) are exported in seconds.
No exporter has these for other members; mysqld_exporter has no WL#15620
collector at all, so the names are grstats'.

Invariants: reads only the snapshot; a NULL cell is no series, never 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import Metric

from grstats.api.table_metrics import declared_families
from grstats.core import columns as col
from grstats.core.snapshot import DaemonSnapshot

__all__ = ["applier_families"]


def applier_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """One family per applier metric (both WL#15620 tables).

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).

    Returns:
        The families, each with one series per row and column that has a value.
    """
    yield from declared_families(snapshot, groups, col.APPLIER_METRICS)
    yield from declared_families(
        snapshot, groups, col.APPLIER_PROGRESS_BY_WORKER, extra=(col.WORKER_ID,)
    )
