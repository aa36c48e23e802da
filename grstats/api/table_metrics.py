"""Prometheus families of every declared table: one path, driven by the declaration.

Strategy: for each table of `columns.TABLES`, every column with a `metric`
is one series per row. Its labels are the table's `MetricPolicy`: `group`
and `member_id`, the policy's key columns lower-cased (`channel_name`,
`worker_id`), then the column's constant `metric_labels`; columns sharing a
metric are one family told apart by those labels (the per-stage lags by
`stage`, the applier waits by `wait`). Counters are counters (`_total`),
everything else a gauge; TIMESTAMP(6) cells become Unix seconds, MySQL's
nanosecond durations (`columns.NANOSECOND_COLUMNS`) seconds, and a text
column with `metric_enum` (BOTTLENECK `kind`, RECOVERY_METHOD `method`) one
0/1 series per value. What a declaration cannot say (member info, ages as
Unix times) is the table's named hook (`api.member_metrics`).

Names: mysqld_exporter's where the meaning is the same (the member stats,
the WL#7374 timestamps under `perf_schema.replication_applier_status_by_worker`
names, whose `member_id` label there holds the WORKER_ID and here the
member's server UUID); grstats' own elsewhere (no exporter has these figures
for other members). mysqld_exporter's group member lag collector is not
reused: it reports 99999999 for a stopped thread and whole seconds.

Invariants: reads only the snapshot; a NULL (or zero-timestamp) cell is no
series, never 0; a row without MEMBER_ID is skipped, and so is a member in
one of the policy's `skip_member_states`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from grstats.api.member_metrics import member_families, member_status_families
from grstats.core import columns as col
from grstats.core.lagrows import parse_timestamp
from grstats.core.snapshot import MEMBERS_TABLE, DaemonSnapshot

__all__ = ["HOOKS", "families_of", "table_families"]

#: metric name -> (kind, help, label names from metric_labels, the columns it is built from)
Families = Mapping[str, tuple[str, str, tuple[str, ...], tuple[col.Column, ...]]]
#: a table's own extra families, from the snapshot and member id -> group
Hook = Callable[[DaemonSnapshot, Mapping[str, str]], Iterator[Metric]]

#: `MetricPolicy.hook` name -> the families it adds
HOOKS: Mapping[str, Hook] = {
    "members": member_families,
    "member_status": member_status_families,
}


@cache
def families_of(table: col.TableDef) -> Families:
    """The metric families a table declares, in declaration order."""
    out: dict[str, tuple[str, str, tuple[str, ...], tuple[col.Column, ...]]] = {}
    for c in table.columns:
        if c.metric is None:
            continue
        keys = tuple(k for k, _ in c.metric_labels)
        if c.metric_enum is not None:
            keys = (*keys, c.metric_enum[0])
        kind, help_, keys, members = out.get(c.metric, (c.kind, c.help, keys, ()))
        out[c.metric] = (kind, help_ or c.help, keys, (*members, c))
    return out


def _value(column: col.Column, cell: object) -> float | None:
    if column.kind == "timestamp":
        us = parse_timestamp(cell)
        return None if us is None else us / 1e6
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return cell / 1e9 if column.name in col.NANOSECOND_COLUMNS else float(cell)
    return None


def _text(cell: object) -> str:
    return "" if cell is None else str(cell)


def _skipped(snapshot: DaemonSnapshot, states: tuple[str, ...]) -> set[str]:
    if not states:
        return set()
    return {
        str(r.get(col.MEMBER_ID) or "")
        for r in snapshot.table(MEMBERS_TABLE)
        if r.get(col.MEMBER_STATE) in states
    }


def table_families(
    snapshot: DaemonSnapshot, groups: Mapping[str, str], table: col.TableDef
) -> Iterator[Metric]:
    """The families of `table` over the snapshot's rows of it, by its declaration.

    Args:
        snapshot: the daemon's snapshot.
        groups: member id -> group (from grstats_member_status).
        table: the declaration (its columns and its `metrics` policy).

    Returns:
        The declared families, each with one series per row and column that
        has a value, then the policy's hook's.
    """
    policy = table.metrics
    rows = snapshot.table(table.name)
    skipped = _skipped(snapshot, policy.skip_member_states)
    key_labels = tuple(k.lower() for k in policy.keys)
    for name, (kind, help_, keys, columns) in families_of(table).items():
        labels = ("group", "member_id", *key_labels, *keys)
        family: CounterMetricFamily | GaugeMetricFamily
        if kind == "counter":
            family = CounterMetricFamily(name, help_, labels=labels)
        else:
            family = GaugeMetricFamily(name, help_, labels=labels)
        for row in rows:
            member_id = str(row.get(col.MEMBER_ID) or "")
            if not member_id or member_id in skipped:
                continue
            base = [
                groups.get(member_id, snapshot.group_name),
                member_id,
                *(_text(row.get(k)) for k in policy.keys),
            ]
            for column in columns:
                _add(family, column, [*base, *(v for _, v in column.metric_labels)], row)
        yield family
    if policy.hook:
        yield from HOOKS[policy.hook](snapshot, groups)


def _add(
    family: CounterMetricFamily | GaugeMetricFamily,
    column: col.Column,
    labels: list[str],
    row: Mapping[str, object],
) -> None:
    cell = row.get(column.name)
    if column.metric_enum is not None:
        if cell is not None:
            for choice in column.metric_enum[1]:
                family.add_metric([*labels, choice], float(cell == choice))
        return
    value = _value(column, cell)
    if value is not None:
        family.add_metric(labels, value)
