"""Prometheus families of `grstats_member_gtids` (errant and missing GTIDs, recovery).

Strategy: derived from the column registry like the flow families: each
column of `columns.MEMBER_GTIDS` with a `metric` is one series per member row.
RECOVERY_METHOD is text, so its family `grstats_member_recovery_method{method}`
is an info-style gauge: one 0/1 series per member and method (INCREMENTAL,
CLONE).

Invariants: reads only the snapshot; a NULL cell is no series, never 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily, Metric

from grstats.core import columns as col
from grstats.core.snapshot import DaemonSnapshot

__all__ = ["GTID_METRICS", "gtid_families"]

_LABELS = ("group", "member_id")

#: metric name -> its column
GTID_METRICS: Mapping[str, col.Column] = {
    c.metric: c for c in col.MEMBER_GTIDS.columns if c.metric is not None
}


def gtid_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """One family per grstats_member_gtids metric.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).

    Returns:
        The families, each with one series per member row that has a value.
    """
    for name, column in GTID_METRICS.items():
        text = column.name == col.RECOVERY_METHOD
        labels = (*_LABELS, "method") if text else _LABELS
        family = GaugeMetricFamily(name, column.help, labels=labels)
        for row in snapshot.table(col.MEMBER_GTIDS.name):
            member_id = str(row.get(col.MEMBER_ID) or "")
            cell = row.get(column.name)
            if not member_id or cell is None:
                continue
            base = [groups.get(member_id, snapshot.group_name), member_id]
            if text:
                for method in col.RECOVERY_METHODS:
                    family.add_metric([*base, method], float(cell == method))
            elif isinstance(cell, int | float) and not isinstance(cell, bool):
                family.add_metric(base, float(cell))
        yield family
