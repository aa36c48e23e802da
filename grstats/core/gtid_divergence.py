"""Errant, missing and recoverable GTIDs of each member: the divergence rule.

Definitions (one member X against the other ONLINE members O1..On, from each
member's ``@@gtid_executed`` E and ``@@gtid_purged`` P as the server prints
them; MySQL reference manual, "Replication with Global Transaction
Identifiers" and Group Replication "Distributed Recovery"):

* *errant candidates* of X: ``E(X) - (E(O1) | ... | E(On))`` -- executed on X
  and on no other ONLINE member. A transaction the group certified reaches
  every member's relay log before its origin commits (WL#6833 consensus), so
  a GTID X has and nobody else has executed is either in flight (still in
  the others' applier queues, or their sets are older than X's on the bus)
  or was never certified: a local write with super_read_only off, a fix-up
  with sql_log_bin on, a restore from another group's backup.
* *errant*: a candidate that stays one for the whole grace window
  (`grace_window_us`): two GTID intervals (each member's sets are up to one
  interval old when read, and the other member's up to one more) plus the
  time the *fastest* other member needs to drain its applier queue at its
  current apply rate, bounded by `MAX_GRACE_US`. The fastest, because a GTID
  stops being a candidate as soon as any one other member has executed it: a
  slow member lagging by thousands neither raises a flag nor delays one
  while another member keeps up. Once flagged, a GTID stays errant for as
  long as it stays a candidate, though the grace grows later (a burst fills
  the fastest member's queue): the GTID was due there before that queue
  filled, and a flag that came and went with each burst would be a lie.
* *missing* of X: ``(E(O1) & ... & E(On)) - E(X)`` -- what every other ONLINE
  member has and X does not: X is behind (count, and the first UUID in MySQL's
  print order).
* *recovery*: X can rejoin by incremental (binary log) recovery from donor D
  when D has purged nothing X lacks: ``P(D) - E(X)`` is empty. X needs clone
  when no ONLINE donor qualifies, or when X has errant transactions (a member
  with extra GTIDs is refused by distributed recovery: ER_GRP_RPL_
  SERVER_HAS_EXTRA_TRX / "This member has more executed transactions than
  those present in the group").

How it relates to MySQL Shell (mysql/mysql-shell,
mysqlshdk/libs/mysql/replication.cc ``check_replica_gtid_state`` and
modules/adminapi/common/gtid_validations.cc
``check_gtid_consistency_and_recoverability``, commit fdfa99079fe5): Shell
compares the target with *one* donor (the primary) when an operator runs
addInstance / rejoinInstance: DIVERGED when the target has GTIDs the donor
has not (our errant, but against one member and with no grace -- Shell runs
when the target is out of the group, so nothing is in flight), IRRECOVERABLE
when ``GTID_SUBTRACT(donor_purged, target_executed)`` is not empty (our
per-donor test), then it tries other members as donors (``check_recoverable``)
before it asks for clone. We run the same two tests continuously, on every
member, against every ONLINE member, and keep the list of donors that still
qualify.

Tagged GTIDs (8.4: ``uuid:tag:n``) and the view-change UUID
(group_replication_view_change_uuid) are GTIDs like any other here: the
view-change events are logged by every member alike, so they diverge only
when a member missed or invented a view change.

Invariants: pure (time is an argument); the sets are `protocol.gtid.GtidSet`;
`ErrantTracker` holds at most `MAX_CHUNKS` first-seen chunks per member.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from protocol.gtid import GtidSet

__all__ = [
    "CLONE",
    "INCREMENTAL",
    "MAX_CHUNKS",
    "MAX_GRACE_US",
    "Divergence",
    "ErrantTracker",
    "MemberGtids",
    "candidates",
    "divergence",
    "grace_window_us",
]

INCREMENTAL: Final = "INCREMENTAL"
CLONE: Final = "CLONE"
ONLINE: Final = "ONLINE"
#: the grace window never exceeds 10 minutes, whatever a queue estimate says
MAX_GRACE_US: Final = 600_000_000
#: first-seen chunks kept per member (each a GtidSet with its first-seen time)
MAX_CHUNKS: Final = 32
_EMPTY: Final = GtidSet()


@dataclass(frozen=True, slots=True)
class MemberGtids:
    """One member's GTID state as read on its server.

    Attributes:
        member_id: the member's UUID.
        state: MEMBER_STATE ("ONLINE", "RECOVERING", ...).
        executed: @@gtid_executed.
        purged: @@gtid_purged (a subset of executed).
    """

    member_id: str
    state: str
    executed: GtidSet
    purged: GtidSet = _EMPTY


@dataclass(frozen=True, slots=True)
class Divergence:
    """The rule's answer for one member at one instant.

    Attributes:
        member_id: the member judged.
        candidates: executed here and on no other ONLINE member (not yet errant).
        missing: executed on every other ONLINE member and not here.
        missing_uuid: first UUID of `missing` in print order, "" when none.
        recovery: INCREMENTAL, CLONE, or None when there is no other ONLINE
            member to compare with.
        donors: the ONLINE members that could serve incremental recovery, sorted.
    """

    member_id: str
    candidates: GtidSet
    missing: GtidSet
    missing_uuid: str
    recovery: str | None
    donors: tuple[str, ...] = ()


def _others(member_id: str, members: Iterable[MemberGtids]) -> list[MemberGtids]:
    return [m for m in members if m.member_id != member_id and m.state == ONLINE]


def candidates(member: MemberGtids, members: Iterable[MemberGtids]) -> GtidSet:
    """Executed on `member` and on no other ONLINE member of `members`."""
    seen = _EMPTY
    for other in _others(member.member_id, members):
        seen = seen | other.executed
    return member.executed - seen


def divergence(
    member: MemberGtids, members: Iterable[MemberGtids], *, errant: GtidSet = _EMPTY
) -> Divergence:
    """Judge `member` against the other ONLINE members of `members`.

    Args:
        member: the member judged (it may itself be in `members`; it is skipped).
        members: every member known, any state.
        errant: the member's errant GTIDs (from `ErrantTracker`); any makes
            the recovery CLONE, as distributed recovery refuses extra GTIDs.

    Returns:
        The member's candidates, missing GTIDs and recovery method.
    """
    others = _others(member.member_id, members)
    if not others:
        return Divergence(member.member_id, _EMPTY, _EMPTY, "", None)
    seen = others[0].executed
    common = others[0].executed
    for other in others[1:]:
        seen = seen | other.executed
        common = common & other.executed
    missing = common - member.executed
    missing_uuid = next((uuid for uuid, _tag, _f, _l in missing.intervals()), "")
    donors = tuple(sorted(o.member_id for o in others if (o.purged - member.executed).is_empty()))
    recovery = INCREMENTAL if donors and errant.is_empty() else CLONE
    return Divergence(
        member.member_id, member.executed - seen, missing, missing_uuid, recovery, donors
    )


def grace_window_us(gtid_interval_s: float, drains: Iterable[tuple[int, float]] = ()) -> int:
    """How long a candidate must stay one before it is errant.

    Args:
        gtid_interval_s: seconds between the GTID sets on the bus.
        drains: per other ONLINE member whose figures are known, (transactions
            in its applier queue, transactions it applied per second lately);
            a rate of 0 with a non-empty queue never drains (the cap).

    Returns:
        ``2 * gtid_interval + min(queue / rate)`` in µs (0 drain time without
        figures), at most `MAX_GRACE_US`.
    """
    times = [
        0.0 if queue <= 0 else queue / rate if rate > 0 else MAX_GRACE_US / 1e6
        for queue, rate in drains
    ]
    drain_s = min(times, default=0.0)
    return min(MAX_GRACE_US, round((2 * gtid_interval_s + drain_s) * 1e6))


@dataclass(slots=True)
class _Chunks:
    # (GTIDs, first seen µs, flagged: once past its grace, errant while a candidate)
    items: list[tuple[GtidSet, int, bool]] = field(default_factory=list)


class ErrantTracker:
    """When each member's candidates were first seen; errant = older than the grace.

    Each member keeps chunks (GTIDs, first-seen µs, flagged). On every
    `update`, a chunk keeps only the GTIDs that are still candidates (and its
    flag); new candidates form a new chunk stamped now. Past `MAX_CHUNKS` the
    two newest chunks merge under the newer stamp, flagged only if both were
    (which can only delay a flag, never raise a false one). `errant` flags
    the chunks past the grace it is given; a flag stays while its GTIDs do.
    """

    def __init__(self) -> None:
        self._chunks: dict[str, _Chunks] = {}

    def update(self, member_id: str, current: GtidSet, now_us: int) -> None:
        """Record `member_id`'s candidates as read at `now_us`."""
        chunks = self._chunks.setdefault(member_id, _Chunks())
        kept: list[tuple[GtidSet, int, bool]] = []
        known = _EMPTY
        for gtids, since, flagged in chunks.items:
            still = gtids & current
            if still:
                kept.append((still, since, flagged))
                known = known | still
        fresh = current - known
        if fresh:
            kept.append((fresh, now_us, False))
        while len(kept) > MAX_CHUNKS:
            (a, _, fa), (b, t, fb) = kept[-2], kept[-1]
            kept[-2:] = [(a | b, t, fa and fb)]
        chunks.items = kept
        if not kept:
            del self._chunks[member_id]

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the members not in `keep` (left the group)."""
        wanted = set(keep)
        for member_id in [m for m in self._chunks if m not in wanted]:
            del self._chunks[member_id]

    def errant(
        self, member_id: str, now_us: int, grace_us: int, others_read_us: int | None = None
    ) -> tuple[GtidSet, int | None]:
        """The member's errant GTIDs at `now_us` and since when (None: none).

        A chunk is errant once ``now_us - first_seen >= grace_us`` and the
        other members' freshest set was read at or after `first_seen`
        (`others_read_us`; None: no such condition): a remote set read
        before the chunk was seen cannot hold it yet, however late it arrives.
        It then stays errant (flagged) while its GTIDs stay candidates,
        whatever grace a later call gives.
        """
        out, since = _EMPTY, None
        chunks = self._chunks.get(member_id)
        if chunks is None:
            return out, since
        for i, (gtids, first, flagged) in enumerate(chunks.items):
            seen = others_read_us is None or others_read_us >= first
            if flagged or (seen and now_us - first >= grace_us):
                if not flagged:
                    chunks.items[i] = (gtids, first, True)
                out = out | gtids
                since = first if since is None else min(since, first)
        return out, since

    def snapshot(self) -> Mapping[str, tuple[tuple[GtidSet, int], ...]]:
        """The chunks per member (for tests and /healthz)."""
        return {m: tuple((g, t) for g, t, _ in c.items) for m, c in self._chunks.items()}
