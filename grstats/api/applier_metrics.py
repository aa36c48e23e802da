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

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from grstats.core import columns as col
from grstats.core.lagrows import parse_timestamp
from grstats.core.snapshot import DaemonSnapshot, Row

__all__ = ["applier_families"]

_Family = tuple[str, str, tuple[str, ...], tuple[col.Column, ...]]


def _families(table: col.TableDef) -> dict[str, _Family]:
    out: dict[str, _Family] = {}
    for c in table.columns:
        if c.metric is None:
            continue
        kind, help_, keys, members = out.get(
            c.metric, (c.kind, c.help, tuple(k for k, _ in c.metric_labels), ())
        )
        out[c.metric] = (kind, help_ or c.help, keys, (*members, c))
    return out


_TABLES = (
    (col.APPLIER_METRICS, _families(col.APPLIER_METRICS), ()),
    (col.APPLIER_PROGRESS_BY_WORKER, _families(col.APPLIER_PROGRESS_BY_WORKER), (col.WORKER_ID,)),
)


def _value(column: col.Column, cell: object) -> float | None:
    if column.kind == "timestamp":
        us = parse_timestamp(cell)
        return None if us is None else us / 1e6
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return cell / 1e9 if column.name in col.NANOSECOND_COLUMNS else float(cell)
    return None


def _rows(snapshot: DaemonSnapshot, table: col.TableDef) -> tuple[Row, ...]:
    return snapshot.table(table.name)


def applier_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """One family per applier metric.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).

    Returns:
        The families, each with one series per row and column that has a value.
    """
    for table, families, extra in _TABLES:
        rows = _rows(snapshot, table)
        for name, (kind, help_, keys, columns) in families.items():
            labels = ("group", "member_id", "channel_name", *(k.lower() for k in extra), *keys)
            family: CounterMetricFamily | GaugeMetricFamily
            if kind == "counter":
                family = CounterMetricFamily(name, help_, labels=labels)
            else:
                family = GaugeMetricFamily(name, help_, labels=labels)
            for row in rows:
                member_id = str(row.get(col.MEMBER_ID) or "")
                if not member_id:
                    continue
                base = [
                    groups.get(member_id, snapshot.group_name),
                    member_id,
                    str(row.get(col.CHANNEL_NAME) or ""),
                    *(str(row.get(k)) for k in extra),
                ]
                for column in columns:
                    value = _value(column, row.get(column.name))
                    if value is not None:
                        family.add_metric([*base, *(v for _, v in column.metric_labels)], value)
            yield family
