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

from prometheus_client.core import GaugeMetricFamily, Metric

from grstats.core import columns as col
from grstats.core.lagrows import parse_timestamp
from grstats.core.snapshot import DaemonSnapshot

__all__ = ["LAG_METRICS", "lag_families"]

_BASE_LABELS = ("group", "member_id", "channel_name")


def _metrics() -> dict[str, tuple[str, tuple[str, ...], tuple[col.Column, ...]]]:
    out: dict[str, tuple[str, tuple[str, ...], tuple[col.Column, ...]]] = {}
    for c in col.MEMBER_LAG.columns:
        if c.metric is None:
            continue
        help_, keys, members = out.get(c.metric, (c.help, tuple(k for k, _ in c.metric_labels), ()))
        out[c.metric] = (help_ or c.help, keys, (*members, c))
    return out


#: metric name -> (help, extra label names, the columns it is built from)
LAG_METRICS: Mapping[str, tuple[str, tuple[str, ...], tuple[col.Column, ...]]] = _metrics()


def _value(column: col.Column, cell: object) -> float | None:
    if column.kind == "timestamp":
        us = parse_timestamp(cell)
        return None if us is None else us / 1e6
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return float(cell)
    return None


def lag_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """One gauge family per lag metric.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).

    Returns:
        The families, each with one series per row and column that has a value.
    """
    for name, (help_, keys, columns) in LAG_METRICS.items():
        family = GaugeMetricFamily(name, help_, labels=(*_BASE_LABELS, *keys))
        for row in snapshot.member_lag:
            member_id = str(row.get(col.MEMBER_ID) or "")
            if not member_id:
                continue
            base = [
                groups.get(member_id, snapshot.group_name),
                member_id,
                str(row.get(col.CHANNEL_NAME) or ""),
            ]
            for column in columns:
                value = _value(column, row.get(column.name))
                if value is not None:
                    family.add_metric([*base, *(v for _, v in column.metric_labels)], value)
        yield family
