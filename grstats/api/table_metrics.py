"""Prometheus families straight from a table's column declarations.

Strategy: every column of a `TableDef` with a `metric` is one series per row,
labelled `group`, `member_id`, `channel_name` (plus any extra key columns,
lower-cased, e.g. `worker_id`) and the column's constant `metric_labels`;
columns sharing a metric are one family told apart by those labels. Counters
are counters, everything else a gauge; TIMESTAMP(6) cells become Unix
seconds, MySQL's nanosecond durations (`columns.NANOSECOND_COLUMNS`) seconds.

Invariants: reads only the snapshot; a NULL (or zero-timestamp) cell is no
series, never 0; a row without MEMBER_ID is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from grstats.core import columns as col
from grstats.core.lagrows import parse_timestamp
from grstats.core.snapshot import DaemonSnapshot

__all__ = ["declared_families", "families_of"]

#: metric name -> (kind, help, label names from metric_labels, the columns it is built from)
Families = Mapping[str, tuple[str, str, tuple[str, ...], tuple[col.Column, ...]]]


@cache
def families_of(table: col.TableDef) -> Families:
    """The metric families a table declares, in declaration order."""
    out: dict[str, tuple[str, str, tuple[str, ...], tuple[col.Column, ...]]] = {}
    for c in table.columns:
        if c.metric is None:
            continue
        kind, help_, keys, members = out.get(
            c.metric, (c.kind, c.help, tuple(k for k, _ in c.metric_labels), ())
        )
        out[c.metric] = (kind, help_ or c.help, keys, (*members, c))
    return out


def _value(column: col.Column, cell: object) -> float | None:
    if column.kind == "timestamp":
        us = parse_timestamp(cell)
        return None if us is None else us / 1e6
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return cell / 1e9 if column.name in col.NANOSECOND_COLUMNS else float(cell)
    return None


def declared_families(
    snapshot: DaemonSnapshot,
    groups: Mapping[str, str],
    table: col.TableDef,
    *,
    extra: tuple[str, ...] = (),
) -> Iterator[Metric]:
    """The families of `table`'s declared metrics over the snapshot's rows of it.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).
        table: the declaration.
        extra: further key columns that label each series (e.g. WORKER_ID).

    Returns:
        The families, each with one series per row and column that has a value.
    """
    rows = snapshot.table(table.name)
    for name, (kind, help_, keys, columns) in families_of(table).items():
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
