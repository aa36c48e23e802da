"""grstats_member_gtids: each member's GTID state and the divergence rule, as table rows.

Strategy: `MemberTables` feeds every member's last `ext.gtids` (its own
sample for the local member) with its state into `GtidDivergenceTable.observe`
once per tick. The candidates (`core.gtid_divergence.candidates`) are worked
out again only when some member's GTID state or MEMBER_STATE changed, so a
tick costs a tuple comparison; the `ErrantTracker` stamps what is new. The
rows are built on demand for the snapshot, at its time: a candidate becomes
errant once an ONLINE peer has applied past it and still lacks it (the rule
of `core.gtid_divergence`), from the counts that rode with each member's
sets; a peer's set counts when read at least one GTID interval (at least
1 s) after the member's.

Members that send no `ext.gtids` (an older daemon, a source that cannot read
the variables) take no part: they have no row and are not compared with.

The history keeps each member's counts and recovery method of its row at
the history row's time (`history`); the verdict of a member is cached until
the inputs or its errant set change, as a daemon records a row per envelope.

Invariants: pure (time is an argument); a count past bigint is NULL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grstats.core import columns as col
from grstats.core.gtid_divergence import (
    Divergence,
    ErrantTracker,
    MemberGtids,
    candidates,
    divergence,
)
from grstats.core.lagrows import format_timestamp
from grstats.core.snapshot import Row
from protocol import GtidSet, GtidState

__all__ = ["GtidDivergenceTable", "MemberGtidInput"]

_MAX_BIGINT = (1 << 63) - 1
# column -> history column of what the history keeps (counts and method, not sets)
_HISTORY = {c.name: str(c.history) for c in col.MEMBER_GTIDS.columns if c.history}


@dataclass(frozen=True, slots=True)
class MemberGtidInput:
    """One member as the table sees it: its id, MEMBER_STATE and last GTID state.

    `applied` and `queued` are the counts of the sample the sets rode in (see
    `core.gtid_divergence.MemberGtids`); None when not known.
    """

    member_id: str
    state: str
    gtids: GtidState
    applied: int | None = None
    queued: int | None = None


def _count(gtids: GtidSet) -> int | None:
    n = gtids.count()
    return n if n <= _MAX_BIGINT else None


class GtidDivergenceTable:
    """The tracker and the last inputs of grstats_member_gtids.

    Args:
        gtid_interval_s: seconds between GTID sets on the bus (the grace's base).
    """

    def __init__(self, gtid_interval_s: float) -> None:
        self.gtid_interval_s = gtid_interval_s
        self.tracker = ErrantTracker()
        self._key: tuple[tuple[str, str, int], ...] = ()
        self._members: tuple[MemberGtids, ...] = ()
        # member id -> (its errant set, its verdict) for the current inputs
        self._verdicts: dict[str, tuple[GtidSet, Divergence]] = {}

    def observe(self, inputs: Iterable[MemberGtidInput], now_us: int) -> None:
        """Take every member's current state; re-judge only when something changed."""
        items = sorted(inputs, key=lambda i: i.member_id)
        key = tuple((i.member_id, i.state, id(i.gtids)) for i in items)
        if key == self._key:
            return
        self._key = key
        self._members = tuple(
            MemberGtids(
                i.member_id,
                i.state,
                i.gtids.executed,
                i.gtids.purged,
                i.gtids.at_us,
                i.applied,
                i.queued,
            )
            for i in items
        )
        self._verdicts.clear()
        for m in self._members:
            self.tracker.update(m.member_id, candidates(m, self._members), now_us, m.read_us)
        self.tracker.forget(m.member_id for m in self._members)

    @property
    def slack_us(self) -> int:
        """How much later than a member's set a peer's must be read to be followed."""
        return max(1_000_000, round(self.gtid_interval_s * 1_000_000))

    def rows(self) -> tuple[Row, ...]:
        """One row per member with a GTID state, in member order."""
        return tuple(self._row(m) for m in self._members)

    def history(self, member_id: str) -> dict[str, Any]:
        """The history's GTID columns of one member: its row's counts and method now.

        The values grstats_member_gtids shows for the member now (one rule,
        `_verdict`), so the history and the live table never disagree; without
        the row's texts, as a daemon records a row per envelope.

        Args:
            member_id: the member the history row is of.

        Returns:
            History column name -> value; every one None for a member without a
            GTID state.
        """
        m = next((m for m in self._members if m.member_id == member_id), None)
        if m is None:
            return dict.fromkeys(_HISTORY.values(), None)
        figures = self._verdict(m)[2]
        return {history: figures[name] for name, history in _HISTORY.items()}

    def _judged(self, m: MemberGtids, errant: GtidSet) -> Divergence:
        """`divergence` of `m`, computed again only when the inputs or its errant set change."""
        cached = self._verdicts.get(m.member_id)
        if cached is not None and cached[0] == errant:
            return cached[1]
        d = divergence(m, self._members, errant=errant)
        self._verdicts[m.member_id] = (errant, d)
        return d

    def _verdict(self, m: MemberGtids) -> tuple[GtidSet, Divergence, Row]:
        """The member's errant set, its divergence, and the counts and method of its row."""
        peers = (o for o in self._members if o.member_id != m.member_id and o.state == "ONLINE")
        errant, since = self.tracker.errant(m.member_id, peers, self.slack_us)
        d = self._judged(m, errant)
        judged = d.recovery is not None
        figures: Row = {
            col.ERRANT_COUNT: _count(errant) if judged else None,
            col.ERRANT_SINCE: None if since is None else format_timestamp(since),
            col.MISSING_COUNT: _count(d.missing) if judged else None,
            col.RECOVERY_METHOD: d.recovery,
        }
        return errant, d, figures

    def _row(self, m: MemberGtids) -> Row:
        errant, d, figures = self._verdict(m)
        return {
            col.MEMBER_ID: m.member_id,
            col.GTID_EXECUTED: str(m.executed),
            col.GTID_PURGED: str(m.purged),
            col.GTIDS_READ_AT: format_timestamp(m.read_us),
            col.ERRANT_TRANSACTIONS: str(errant) if d.recovery is not None else None,
            col.ERRANT_COUNT: figures[col.ERRANT_COUNT],
            col.ERRANT_SINCE: figures[col.ERRANT_SINCE],
            col.MISSING_COUNT: figures[col.MISSING_COUNT],
            col.MISSING_FIRST_UUID: d.missing_uuid or None,
            col.RECOVERY_METHOD: figures[col.RECOVERY_METHOD],
            col.DONORS: None if d.recovery is None else ",".join(d.donors),
        }
