"""grstats_member_gtids: each member's GTID state and the divergence rules, as table rows.

Strategy: `MemberTables` feeds every member's last `ext.gtids` (its own
sample for the local member) with its state and trust (`core.gtid_watch`)
into `GtidDivergenceTable.observe` once per tick. Only the members whose sets
or trust changed are taken again (`core.gtid_group.GroupSets`: their pairwise
facts once, then the witnesses' intersection and union once), so a tick
without news costs a dict lookup per member and one new set costs set
operations against each member once, not members². The `ErrantTracker`
stamps what is new among each member's candidates. The verdicts are worked
out once per change and kept until the next: a candidate becomes errant
once a prover (a witness with sane counts) has applied past it and still
lacks it (`core.gtid_divergence`), from the counts that rode with each
member's sets; a peer's set counts when read at least one GTID interval (at
least 1 s) after the member's.

Members that send no `ext.gtids` (an older daemon, a source that cannot read
the variables) take no part: they have no row and are not compared with.

The history keeps each member's counts and recovery method of its row at
the history row's time (`history`).

Invariants: pure (time is an argument); a count past bigint is NULL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grstats.core import columns as col
from grstats.core.gtid_divergence import (
    DEFAULT_CLONE_THRESHOLD,
    Divergence,
    ErrantTracker,
    MemberGtids,
    recovery_method,
)
from grstats.core.gtid_group import GroupSets
from grstats.core.lagrows import format_timestamp
from grstats.core.snapshot import Row
from protocol import GtidSet, GtidState

__all__ = ["GtidDivergenceTable", "MemberGtidInput"]

_MAX_BIGINT = (1 << 63) - 1
_EMPTY = GtidSet()
# column -> history column of what the history keeps (counts and method, not sets)
_HISTORY = {c.name: str(c.history) for c in col.MEMBER_GTIDS.columns if c.history}


@dataclass(frozen=True, slots=True)
class MemberGtidInput:
    """One member as the table sees it: its id, MEMBER_STATE and last GTID state.

    `applied` and `queued` are the counts of the sample the sets rode in (see
    `core.gtid_divergence.MemberGtids`); None when not known. `testimony` is
    why its sets do not count against the others' ("" when they do:
    `core.gtid_watch`), `consistent` whether its counts are possible for them.
    """

    member_id: str
    state: str
    gtids: GtidState
    applied: int | None = None
    queued: int | None = None
    listed: bool = True
    clock_ok: bool = True
    consistent: bool = True
    testimony: str = ""


def _count(gtids: GtidSet) -> int | None:
    n = gtids.count()
    return n if n <= _MAX_BIGINT else None


@dataclass(frozen=True, slots=True)
class _Verdict:
    errant: GtidSet
    since: int | None
    divergence: Divergence
    figures: Row


class GtidDivergenceTable:
    """The group's sets, the tracker and the verdicts of grstats_member_gtids.

    Args:
        gtid_interval_s: seconds between GTID sets on the bus (the grace's base).
        clone_threshold: group_replication_clone_threshold (RECOVERY_METHOD).
    """

    def __init__(
        self, gtid_interval_s: float, clone_threshold: int = DEFAULT_CLONE_THRESHOLD
    ) -> None:
        self.gtid_interval_s = gtid_interval_s
        self.clone_threshold = clone_threshold
        self.tracker = ErrantTracker()
        self.sets = GroupSets()
        self._keys: dict[str, tuple[object, ...]] = {}
        self._inputs: dict[str, MemberGtidInput] = {}
        self._verdicts: dict[str, _Verdict] = {}
        self._rows: tuple[Row, ...] | None = None  # built on the first read after a change
        self._candidates: dict[str, GtidSet] = {}

    def observe(self, inputs: Iterable[MemberGtidInput], now_us: int) -> None:
        """Take every member's current state; re-judge only when something changed."""
        items = {i.member_id: i for i in inputs}
        changed = False
        for gone in [m for m in self._keys if m not in items]:
            del self._keys[gone]
            self._inputs.pop(gone, None)
            self.sets.remove(gone)
            changed = True
        for member_id, i in items.items():
            key = (i.state, id(i.gtids), i.listed, i.clock_ok, i.consistent, i.testimony)
            if self._keys.get(member_id) == key:
                continue
            self._keys[member_id] = key
            self._inputs[member_id] = i
            self.sets.update(
                MemberGtids(
                    i.member_id,
                    i.state,
                    i.gtids.executed,
                    i.gtids.purged,
                    i.gtids.at_us,
                    i.applied,
                    i.queued,
                    i.listed,
                    i.clock_ok,
                    i.consistent,
                )
            )
            changed = True
        if not changed:
            return
        candidates = {}
        for member_id, m in self.sets.members.items():
            found = candidates[member_id] = self.sets.candidates(member_id)
            if found != self._candidates.get(member_id):  # else the chunks are as they were
                self.tracker.update(member_id, found, now_us, m.read_us)
        self._candidates = candidates
        self.tracker.forget(self.sets.members)
        self._verdicts = {m: self._judge(m) for m in sorted(self.sets.members)}
        self._rows = None

    @property
    def slack_us(self) -> int:
        """How much later than a member's set a peer's must be read to be followed."""
        return max(1_000_000, round(self.gtid_interval_s * 1_000_000))

    def rows(self) -> tuple[Row, ...]:
        """One row per member with a GTID state, in member order (the same rows until
        something changes: a set's text is written once)."""
        if self._rows is None:
            self._rows = tuple(self._row(m) for m in sorted(self._verdicts))
        return self._rows

    def history(self, member_id: str) -> dict[str, Any]:
        """The history's GTID columns of one member: its row's counts and method now.

        The values grstats_member_gtids shows for the member now (one verdict),
        so the history and the live table never disagree; without the row's
        texts, as a daemon records a row per envelope.

        Args:
            member_id: the member the history row is of.

        Returns:
            History column name -> value; every one None for a member without a
            GTID state.
        """
        verdict = self._verdicts.get(member_id)
        if verdict is None:
            return dict.fromkeys(_HISTORY.values(), None)
        return {history: verdict.figures[name] for name, history in _HISTORY.items()}

    def _judge(self, member_id: str) -> _Verdict:
        """The member's errant set and since when, its divergence, its row's figures."""
        sets = self.sets
        provers = (
            sets.members[w] for w in sets.witnesses(excluding=member_id) if sets.members[w].prover
        )
        errant, since = self.tracker.errant(member_id, provers, self.slack_us)
        missing = sets.missing(member_id)
        if missing is None:
            d = Divergence(member_id, _EMPTY, "", None)
        else:
            donors = sets.donors(member_id)
            # what it lacks of the witnesses' union, counted only against a threshold that
            # can be reached (the union of large sets costs their size per member)
            lacking = (
                0 if self.clone_threshold >= DEFAULT_CLONE_THRESHOLD else sets.lacking(member_id)
            )
            method = recovery_method(
                errant=bool(errant),
                donors=len(donors),
                lacking=lacking,
                clone_threshold=self.clone_threshold,
            )
            first = next((uuid for uuid, _tag, _f, _l in missing.intervals()), "")
            d = Divergence(member_id, missing, first, method, donors, lacking)
        judged = d.recovery is not None
        figures: Row = {
            col.ERRANT_COUNT: _count(errant) if judged else None,
            col.ERRANT_SINCE: None if since is None else format_timestamp(since),
            col.MISSING_COUNT: _count(d.missing) if judged else None,
            col.RECOVERY_METHOD: d.recovery,
        }
        return _Verdict(errant, since, d, figures)

    def _row(self, member_id: str) -> Row:
        verdict = self._verdicts[member_id]
        m, d = self.sets.members[member_id], verdict.divergence
        return {
            col.MEMBER_ID: member_id,
            col.GTID_EXECUTED: str(m.executed),
            col.GTID_PURGED: str(m.purged),
            col.GTIDS_READ_AT: format_timestamp(m.read_us),
            col.ERRANT_TRANSACTIONS: str(verdict.errant) if d.recovery is not None else None,
            col.ERRANT_COUNT: verdict.figures[col.ERRANT_COUNT],
            col.ERRANT_SINCE: verdict.figures[col.ERRANT_SINCE],
            col.MISSING_COUNT: verdict.figures[col.MISSING_COUNT],
            col.MISSING_FIRST_UUID: d.missing_uuid or None,
            col.RECOVERY_METHOD: d.recovery,
            col.DONORS: None if d.recovery is None else ",".join(d.donors),
            col.TESTIMONY: self._inputs[member_id].testimony or None,
        }
