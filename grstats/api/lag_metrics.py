"""Prometheus families of `replication_group_member_lag` (every member, every channel).

Strategy: derived from the column registry like the stats families: each lag
column with a `metric` is one series per (group, member_id, channel_name)
row, plus the column's constant `metric_labels`; columns sharing a metric
(the per-stage lags) are one family told apart by `stage`:

* `grstats_member_replication_lag_seconds{stage}`: `applying` (MySQL Shell's
  replicationLag in seconds, 0 when the applier queue is applied), `queue`
  (QUEUE_LAG_SECONDS), `apply` (APPLY_LAG_SECONDS);
* the WL#7374 timestamps of the last applied and the applying transaction
  under prometheus/mysqld_exporter's `perf_schema.replication_applier_status_by_worker`
  names (`mysql_perf_schema_last_applied_transaction_end_apply_timestamp_seconds`,
  ...), Unix seconds. Differences from mysqld_exporter: its `member_id` label
  holds the WORKER_ID, here it is the member's server UUID (grstats keeps
  one row per member and channel, the worker chosen as MySQL Shell chooses
  it), and a missing timestamp is no series rather than 0;
* `grstats_member_apply_time_seconds`, `grstats_member_clock_offset_seconds`,
  `grstats_member_lag_within_clock_offset`.

mysqld_exporter's `mysql_perf_schema_replication_group_member_lag` is not
reused: it reports 99999999 for a stopped thread and whole seconds, where
the `applying` stage has no series (NULL) and microseconds.

Invariants: reads only the snapshot; a NULL or zero-timestamp cell is no
series, never 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import Metric

from grstats.api.table_metrics import declared_families
from grstats.core import columns as col
from grstats.core.snapshot import DaemonSnapshot

__all__ = ["lag_families"]


def lag_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """One gauge family per lag metric.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).

    Returns:
        The families, each with one series per row and column that has a value.
    """
    return declared_families(snapshot, groups, col.MEMBER_LAG)
