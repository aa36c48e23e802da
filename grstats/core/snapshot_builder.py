"""Freezing the all-member tables into a `DaemonSnapshot`: one builder per declared table.

Strategy: `BUILDERS` pairs every table declared in `core.columns.TABLES`
with the row builder that makes its rows (`core.member_builders`); the
snapshot is those builders run in declaration order over one
`SnapshotInputs`, each seeing the tables built before it. Adding a table is
a declaration in `core.columns` and a builder here; JSON, /metrics, the CLI
and the SQL endpoint take it from the declaration (docs/architecture.md,
"One table pipeline").

Invariants: every declared table has a builder (a missing one is a KeyError
at the first snapshot, and a unit test); a builder is pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from grstats.core import columns as col
from grstats.core import member_builders as b
from grstats.core.health import UNCHECKED, Health
from grstats.core.snapshot import DaemonCounters, DaemonSnapshot, Row
from grstats.core.snapshot_inputs import LocalView, RowBuilder, SnapshotInputs

__all__ = ["BUILDERS", "LocalView", "SnapshotInputs", "build_snapshot", "build_tables"]

#: table name -> its row builder, for every table of `columns.TABLES`
BUILDERS: dict[str, RowBuilder] = {
    col.MEMBER_STATS.name: b.member_stats_rows,
    col.MEMBERS.name: b.members_rows,
    col.MEMBER_STATUS.name: b.member_status_rows,
    col.MEMBER_LAG.name: b.member_lag_rows,
    col.FLOW_CONTROL.name: b.flow_control_rows,
    col.APPLIER_METRICS.name: b.applier_metrics_rows,
    col.APPLIER_PROGRESS_BY_WORKER.name: b.applier_worker_rows,
    col.MEMBER_GTIDS.name: b.member_gtids_rows,
    col.COMMIT_PATH.name: b.commit_path_rows,
}


def build_tables(inputs: SnapshotInputs) -> dict[str, tuple[Row, ...]]:
    """Every declared table's rows, built in declaration order.

    Raises:
        KeyError: a declared table has no builder in `BUILDERS`.
    """
    tables: dict[str, tuple[Row, ...]] = {}
    for table in col.TABLES:
        tables[table.name] = BUILDERS[table.name](inputs, tables)
    return tables


def build_snapshot(
    inputs: SnapshotInputs,
    *,
    counters: DaemonCounters,
    gauges: Mapping[str, float],
    health: Health = UNCHECKED,
) -> DaemonSnapshot:
    """Freeze the all-member tables at `inputs.now_us`.

    Args:
        inputs: what the builders read.
        counters: the daemon's counters.
        gauges: point-in-time values; "members_known" is filled here.
        health: what the daemon checks, and why it is degraded.

    Returns:
        A new immutable DaemonSnapshot.
    """
    tables = build_tables(inputs)
    members = tables.get(col.MEMBERS.name, ())
    return DaemonSnapshot(
        taken_at_us=inputs.now_us,
        group_name=inputs.group or "",
        local_member_id=inputs.local_member_id or "",
        tables=tables,
        counters=counters,
        gauges={"members_known": float(len(members)), **gauges},
        health=health,
        departed=inputs.registry.departed(),
    )
