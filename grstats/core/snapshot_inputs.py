"""What a table's row builder reads: the daemon's state at one instant.

Strategy: every all-member table of a `DaemonSnapshot` is made by one row
builder (`core.snapshot_builder.BUILDERS`, one per declaration of
`core.columns.TABLES`). A builder is a pure function of a `SnapshotInputs`
(the local member's view, the member registry, the flow replay, the GTID
divergence table, the server oracle's verdicts) and of the tables built
before it, so a new table needs no field here unless it has a new kind of
source.

Invariants: nothing here is mutated by a builder; `members_heard` lists the
members a daemon speaks for in the order the registry keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from grstats.core.commitpath import CommitPathRows
from grstats.core.flowreplay import FlowReplay
from grstats.core.gtidrows import GtidDivergenceTable
from grstats.core.registry import MemberRegistry
from grstats.core.remote import KeptSections
from grstats.core.sample import LocalSample
from grstats.core.sections import declared, fold
from grstats.core.snapshot import Row

__all__ = ["ALONE_STATES", "LocalView", "RowBuilder", "SnapshotInputs", "Tables"]

ALONE_STATES = ("OFFLINE", "ERROR")  # the local member is not in a group


@dataclass(frozen=True, slots=True)
class LocalView(KeptSections):
    """The local member as the daemon last saw and published it (its sections read as
    `KeptSections`)."""

    sample: LocalSample | None = None
    incarnation: int | None = None
    seq: int | None = None
    # section name -> what is kept of the local member, by the rule a receiver keeps
    # a remote one (core.sections: each declaration's `keep`)
    sections: Mapping[str, Any] = field(default_factory=dict)

    def after(self, sample: LocalSample, incarnation: int, seq: int) -> LocalView:
        """The view after `sample`: its sections kept by the rule a receiver keeps a remote
        member's (`core.sections.fold`), from what this view kept."""
        kept = dict(self.sections)
        sections = declared().sections
        values = {s.name: s.outgoing(sample) for s in sections}
        fold(kept, sections, values, sample.stats)
        return LocalView(sample, incarnation, seq, kept)


@dataclass(frozen=True, slots=True)
class SnapshotInputs:
    """Everything a row builder may read, at `now_us`.

    Attributes:
        now_us: wall clock, microseconds (for ages and UNREACHABLE).
        group: our group; None for a collector.
        local_member_id: our configured server UUID; None for a collector.
        local: the local member's view; None for a collector.
        registry: the remote members.
        flow: the flow-control replay (a daemon's; None for a collector).
        gtids: the GTID divergence table (a daemon's; None for a collector).
        disagreements: member id -> columns on which the server oracle disagreed (its count).
        commit_rows: the commit-path rows kept across snapshots (None: built afresh).
    """

    now_us: int
    group: str | None
    local_member_id: str | None
    local: LocalView | None
    registry: MemberRegistry
    flow: FlowReplay | None = None
    gtids: GtidDivergenceTable | None = None
    disagreements: Mapping[str, int] = field(default_factory=dict)
    commit_rows: CommitPathRows | None = None

    @property
    def sample(self) -> LocalSample | None:
        """The local member's latest sample (None for a collector or before the first)."""
        return None if self.local is None else self.local.sample

    def kept(self, section: str) -> Iterator[tuple[str, Any]]:
        """(member id, what is kept of its `ext` section) for the local member, then each
        remote one in registry order, by the one rule (`core.sections`); the members
        without it are left out. A table that shows a section builds its rows from this.
        """
        local = self.local
        if local is not None and local.sample is not None and section in local.sections:
            own = local.sample.member.member_id or self.local_member_id or ""
            yield own, local.sections[section]
        if self.alone:
            return
        for (_, member_id), remote in self.registry.items():
            if section in remote.sections:
                yield member_id, remote.sections[section]

    @property
    def alone(self) -> bool:
        """True while the local member is in no group (OFFLINE, ERROR, not yet read).

        MySQL then shows only the local member: no remote rows.
        """
        if self.local is None:
            return False
        sample = self.local.sample
        return sample is None or sample.member.state in ALONE_STATES

    @property
    def view_id(self) -> str:
        """The local member's VIEW_ID ("" for a collector or before the first sample)."""
        sample = self.sample
        return sample.member.view_id if sample is not None else ""


#: table name -> rows, the tables built so far
Tables = Mapping[str, tuple[Row, ...]]
#: one table's rows from the inputs and the tables built before it
RowBuilder = Callable[[SnapshotInputs, Tables], tuple[Row, ...]]
