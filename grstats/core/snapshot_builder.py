"""Freezing the all-member tables into a `DaemonSnapshot`: one builder per declared table.

Strategy: `BUILDERS` pairs every table declared in `core.columns.TABLES`
with the row builder that makes its rows (`core.member_builders`); the
snapshot is those builders run in declaration order over one
`SnapshotInputs`, each seeing the tables built before it. Adding a table is
a declaration in `core.columns` and a builder here; JSON, /metrics, the CLI
and the SQL endpoint take it from the declaration (docs/architecture.md,
"One table pipeline").

A table in `DEFERRED` is built on its first read instead (`LazyTables`),
from what its builder took with the snapshot: no other table is built from
it, and most snapshots of a tick are read by no one who wants it (the
commit path's rows were a twentieth of an idle daemon's CPU, issue 27).

Invariants: every declared table has a builder (a missing one is a KeyError
at the first snapshot, and a unit test); a builder is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from grstats.core import columns as col
from grstats.core import member_builders as b
from grstats.core.health import UNCHECKED, Health
from grstats.core.snapshot import DaemonCounters, DaemonSnapshot, Row
from grstats.core.snapshot_inputs import LocalView, RowBuilder, SnapshotInputs

__all__ = [
    "BUILDERS",
    "DEFERRED",
    "LazyTables",
    "LocalView",
    "SnapshotInputs",
    "build_snapshot",
    "build_tables",
]

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
    **{t.name: b.channel_table_builder(t) for t in col.CHANNEL_TABLES},
    col.CHANNEL_ERRORS.name: b.channel_errors_rows,
    col.CHANNELS_OVERVIEW.name: b.channels_overview_rows,
}


#: table name -> what to build its rows from later (taken now), for tables read
#: by no other builder; `BUILDERS` has the same table built at once
DEFERRED: dict[str, Callable[[SnapshotInputs], Callable[[], tuple[Row, ...]]]] = {
    col.COMMIT_PATH.name: b.commit_path_later,
}


class LazyTables(Mapping[str, tuple[Row, ...]]):
    """Table name -> rows, a deferred table's rows built on its first read, once.

    Readers in two threads (the API on the loop, the SQL feed's encoder) may
    both build a table first read at the same time: equal rows, one kept.
    """

    def __init__(
        self, built: dict[str, tuple[Row, ...]], later: dict[str, Callable[[], tuple[Row, ...]]]
    ) -> None:
        self._built = built
        self._later = later
        self._names = tuple(n for n in (t.name for t in col.TABLES) if n in built or n in later)

    def __getitem__(self, name: str) -> tuple[Row, ...]:
        rows = self._built.get(name)
        if rows is None:
            rows = self._built[name] = self._later[name]()
        return rows

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._later

    def get(self, name: str, default: Any = None) -> Any:
        """The rows of `name`, or `default` (a KeyError in a build is not "absent")."""
        if name not in self:
            return default
        return self[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def build_tables(inputs: SnapshotInputs) -> LazyTables:
    """Every declared table's rows, built in declaration order (`DEFERRED` ones when read).

    Raises:
        KeyError: a declared table has no builder in `BUILDERS`.
    """
    tables: dict[str, tuple[Row, ...]] = {}
    later: dict[str, Callable[[], tuple[Row, ...]]] = {}
    for table in col.TABLES:
        deferred = DEFERRED.get(table.name)
        if deferred is not None:
            later[table.name] = deferred(inputs)
        else:
            tables[table.name] = BUILDERS[table.name](inputs, tables)
    return LazyTables(tables, later)


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
