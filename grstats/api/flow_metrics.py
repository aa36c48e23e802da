"""Prometheus families of `grstats_flow_control` (this daemon's flow-control replay).

Strategy: derived from the column registry like the lag families: each flow
column with a `metric` is one series per member row. BOTTLENECK is text, so
its family `grstats_flow_control_bottleneck{kind}` has one 0/1 series per
member and kind (certifier, applier). THROTTLED_SECONDS is a counter
(`_total`). An infinite catch-up ETA ("never at this rate") is +Inf.

Invariants: reads only the snapshot; a NULL cell is no series, never 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from grstats.core import columns as col
from grstats.core.snapshot import DaemonSnapshot

__all__ = ["FLOW_METRICS", "flow_families"]

_LABELS = ("group", "member_id")

#: metric name -> its column
FLOW_METRICS: Mapping[str, col.Column] = {
    c.metric: c for c in col.FLOW_CONTROL.columns if c.metric is not None
}


def flow_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """One family per flow-control metric.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).

    Returns:
        The families, each with one series per member row that has a value.
    """
    for name, column in FLOW_METRICS.items():
        family: GaugeMetricFamily | CounterMetricFamily
        if column.name == col.BOTTLENECK:
            family = GaugeMetricFamily(name, column.help, labels=(*_LABELS, "kind"))
        elif column.kind == "counter":
            family = CounterMetricFamily(name.removesuffix("_total"), column.help, labels=_LABELS)
        else:
            family = GaugeMetricFamily(name, column.help, labels=_LABELS)
        for row in snapshot.table(col.FLOW_CONTROL.name):
            member_id = str(row.get(col.MEMBER_ID) or "")
            if not member_id:
                continue
            base = [groups.get(member_id, snapshot.group_name), member_id]
            cell = row.get(column.name)
            if column.name == col.BOTTLENECK:
                for kind in col.BOTTLENECK_KINDS:
                    family.add_metric([*base, kind], float(cell == kind))
            elif isinstance(cell, int | float) and not isinstance(cell, bool):
                family.add_metric(base, float(cell))
        yield family
