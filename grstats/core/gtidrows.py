"""grstats_member_gtids: each member's GTID state and the divergence rule, as table rows.

Strategy: `MemberTables` feeds every member's last `ext.gtids` (its own
sample for the local member) with its state into `GtidDivergenceTable.observe`
once per tick. The candidates (`core.gtid_divergence.candidates`) are worked
out again only when some member's GTID state or MEMBER_STATE changed, so a
tick costs a tuple comparison; the `ErrantTracker` stamps what is new. The
rows are built on demand for the snapshot, at its time: a candidate becomes
errant once it has been one for `grace_window_us(gtid_interval, drains)`,
where drains are the other members' applier queues and apply rates from the
flow-control replay.

Members that send no `ext.gtids` (an older daemon, a source that cannot read
the variables) take no part: they have no row and are not compared with.

Invariants: pure (time is an argument); a count past bigint is NULL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from grstats.core import columns as col
from grstats.core.gtid_divergence import (
    ErrantTracker,
    MemberGtids,
    candidates,
    divergence,
    grace_window_us,
)
from grstats.core.lagrows import format_timestamp
from grstats.core.snapshot import Row
from protocol import GtidSet, GtidState

__all__ = ["GtidDivergenceTable", "MemberGtidInput"]

_MAX_BIGINT = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class MemberGtidInput:
    """One member as the table sees it: its id, MEMBER_STATE and last GTID state."""

    member_id: str
    state: str
    gtids: GtidState


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
        self._read_at: dict[str, int] = {}

    def observe(self, inputs: Iterable[MemberGtidInput], now_us: int) -> None:
        """Take every member's current state; re-judge only when something changed."""
        items = sorted(inputs, key=lambda i: i.member_id)
        key = tuple((i.member_id, i.state, id(i.gtids)) for i in items)
        if key == self._key:
            return
        self._key = key
        self._members = tuple(
            MemberGtids(i.member_id, i.state, i.gtids.executed, i.gtids.purged) for i in items
        )
        self._read_at = {i.member_id: i.gtids.at_us for i in items}
        for m in self._members:
            self.tracker.update(m.member_id, candidates(m, self._members), now_us)
        self.tracker.forget(m.member_id for m in self._members)

    def grace_us(self, drains: Iterable[tuple[int, float]] = ()) -> int:
        """The grace window now (see `core.gtid_divergence.grace_window_us`)."""
        return grace_window_us(self.gtid_interval_s, drains)

    def rows(
        self, now_us: int, drains: Mapping[str, tuple[int, float]] | None = None
    ) -> tuple[Row, ...]:
        """One row per member with a GTID state, in member order.

        Args:
            now_us: the snapshot's time.
            drains: member id -> (applier queue, apply rate per second).
        """
        drains = drains or {}
        out: list[Row] = []
        for m in self._members:
            grace = self.grace_us(v for k, v in drains.items() if k != m.member_id)
            errant, since = self.tracker.errant(m.member_id, now_us, grace)
            d = divergence(m, self._members, errant=errant)
            out.append(
                {
                    col.MEMBER_ID: m.member_id,
                    col.GTID_EXECUTED: str(m.executed),
                    col.GTID_PURGED: str(m.purged),
                    col.GTIDS_READ_AT: format_timestamp(self._read_at.get(m.member_id)),
                    col.ERRANT_TRANSACTIONS: str(errant),
                    col.ERRANT_COUNT: None if d.recovery is None else _count(errant),
                    col.ERRANT_SINCE: None if since is None else format_timestamp(since),
                    col.MISSING_COUNT: None if d.recovery is None else _count(d.missing),
                    col.MISSING_FIRST_UUID: d.missing_uuid or None,
                    col.RECOVERY_METHOD: d.recovery,
                    col.DONORS: None if d.recovery is None else ",".join(d.donors),
                }
            )
        return tuple(out)
