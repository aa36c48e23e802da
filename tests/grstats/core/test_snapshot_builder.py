"""The snapshot is one row builder per declared table (core.snapshot_builder)."""

from __future__ import annotations

import pytest

from grstats.core import columns
from grstats.core.registry import MemberRegistry, RegistryLimits
from grstats.core.snapshot import DaemonCounters, DaemonSnapshot
from grstats.core.snapshot_builder import BUILDERS, SnapshotInputs, build_snapshot


def _collector_inputs() -> SnapshotInputs:
    registry = MemberRegistry(RegistryLimits(), local_group=None)
    return SnapshotInputs(0, group=None, local_member_id=None, local=None, registry=registry)


def test_every_declared_table_has_a_row_builder() -> None:
    assert set(BUILDERS) == {t.name for t in columns.TABLES}


def test_a_snapshot_carries_every_declared_table_by_name() -> None:
    snap = build_snapshot(_collector_inputs(), counters=DaemonCounters(), gauges={})
    assert list(snap.tables) == [t.name for t in columns.TABLES]


def test_a_declared_table_without_a_builder_fails_the_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = columns.TableDef("grstats_unbuilt", "grstats", (columns.Column("X", "int"),))
    monkeypatch.setattr(columns, "TABLES", (*columns.TABLES, extra))
    with pytest.raises(KeyError, match="grstats_unbuilt"):
        build_snapshot(_collector_inputs(), counters=DaemonCounters(), gauges={})


def test_an_undeclared_table_name_is_a_key_error() -> None:
    snap = DaemonSnapshot(taken_at_us=0, group_name="g", local_member_id="m")
    assert snap.table(columns.MEMBERS.name) == ()
    with pytest.raises(KeyError):
        snap.table("no_such_table")
