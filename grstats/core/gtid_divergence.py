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
* *errant*: a candidate that an ONLINE peer shows was never certified. A
  certified transaction is in every member's pipeline (certifier queue, then
  applier queue, applied in order) soon after any member executed it, so for
  each of X's candidate chunks we follow each peer O from the first set of O
  read at least `read_slack_us` after X's set that first had the chunk (host
  clocks and consensus delivery differ by less): its
  ``COUNT_TRANSACTIONS_REMOTE_APPLIED`` then plus its two queues then is the
  count by which O has applied the chunk if the group certified it. Once an
  O set read with that count reached still lacks the chunk, and O's next set
  does too (a parallel applier without replica_preserve_commit_order may
  commit a few out of order), the chunk is errant. The counts ride in the
  same sample as the sets (read just before them), so no clock is compared
  but for the slack. A slow member lagging by thousands never raises a flag
  (it simply takes long to reach its count), and any one peer that keeps up
  suffices. A member whose peers are all stalled is flagged only when one
  moves again: an estimate from queue and rate (the old rule: 2 intervals +
  queue / rate of the fastest peer) flagged thousands of in-flight GTIDs when
  the fastest peer's queue grew faster than it drained. Once flagged, a GTID
  stays errant for as long as it stays a candidate.
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
`ErrantTracker` holds at most `MAX_CHUNKS` first-seen chunks per member, each
following at most one count per peer.
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
    "Divergence",
    "ErrantTracker",
    "MemberGtids",
    "candidates",
    "divergence",
]

INCREMENTAL: Final = "INCREMENTAL"
CLONE: Final = "CLONE"
ONLINE: Final = "ONLINE"
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
        read_us: when the sets were read (on the member's clock).
        applied: COUNT_TRANSACTIONS_REMOTE_APPLIED of the same sample, read
            just before the sets (None: not known; the member then proves
            nothing errant on another).
        queued: COUNT_TRANSACTIONS_IN_QUEUE + COUNT_TRANSACTIONS_REMOTE_IN_
            APPLIER_QUEUE of that sample.
    """

    member_id: str
    state: str
    executed: GtidSet
    purged: GtidSet = _EMPTY
    read_us: int = 0
    applied: int | None = None
    queued: int | None = None


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


@dataclass(slots=True)
class _Chunk:
    """GTIDs first seen together as candidates, and what the peers showed of them since."""

    gtids: GtidSet
    first_us: int  # when first seen (our clock)
    read_us: int  # when the member's set that first had them was read (its clock)
    flagged: bool = False  # errant: stays so while the GTIDs stay candidates
    # peer -> (its applied count when followed, the count by which it has applied these)
    targets: dict[str, tuple[int, int]] = field(default_factory=dict)
    # peer -> read time of its first set with the target count reached
    reached: dict[str, int] = field(default_factory=dict)

    def follow(self, peer: MemberGtids, slack_us: int) -> bool:
        """Take one peer's sample; True when it proves these GTIDs were never certified."""
        if peer.applied is None or peer.queued is None:
            return False
        key = peer.member_id
        target = self.targets.get(key)
        if target is not None and peer.applied < target[0]:  # its counters restarted
            del self.targets[key]
            self.reached.pop(key, None)
            target = None
        if target is None:
            if peer.read_us < self.read_us + slack_us:
                return False  # it may not have received them yet
            target = self.targets[key] = (peer.applied, peer.applied + max(0, peer.queued))
        if key not in self.reached:
            if peer.applied >= target[1]:
                self.reached[key] = peer.read_us
            return False
        return peer.read_us > self.reached[key]


@dataclass(slots=True)
class _Chunks:
    items: list[_Chunk] = field(default_factory=list)


class ErrantTracker:
    """Each member's candidate chunks and what its peers showed of them.

    Each member keeps chunks (GTIDs, first seen, the member's read time, a
    flag, and per peer the count it must reach). On every `update`, a chunk
    keeps only the GTIDs that are still candidates (with everything it
    followed); new candidates form a new chunk. Past `MAX_CHUNKS` the two
    newest chunks merge into the newer one's stamps and counts, flagged only
    if both were (which can only delay a flag, never raise a false one: the
    newer chunk's counts cover the older GTIDs too). `errant` follows the peers
    and flags the chunks they prove; a flag stays while its GTIDs do.
    """

    def __init__(self) -> None:
        self._chunks: dict[str, _Chunks] = {}

    def update(
        self, member_id: str, current: GtidSet, now_us: int, read_us: int | None = None
    ) -> None:
        """Record `member_id`'s candidates at `now_us`, from its set read at `read_us`."""
        chunks = self._chunks.setdefault(member_id, _Chunks())
        kept: list[_Chunk] = []
        known = _EMPTY
        for chunk in chunks.items:
            still = chunk.gtids & current
            if still:
                chunk.gtids = still
                kept.append(chunk)
                known = known | still
        fresh = current - known
        if fresh:
            kept.append(_Chunk(fresh, now_us, now_us if read_us is None else read_us))
        while len(kept) > MAX_CHUNKS:
            a, b = kept[-2], kept[-1]
            b.gtids = a.gtids | b.gtids
            b.flagged = a.flagged and b.flagged
            kept[-2:] = [b]
        chunks.items = kept
        if not kept:
            del self._chunks[member_id]

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the members not in `keep` (left the group)."""
        wanted = set(keep)
        for member_id in [m for m in self._chunks if m not in wanted]:
            del self._chunks[member_id]

    def errant(
        self, member_id: str, peers: Iterable[MemberGtids], slack_us: int
    ) -> tuple[GtidSet, int | None]:
        """The member's errant GTIDs and since when (None: none), given its peers now.

        Args:
            member_id: the member judged.
            peers: the other ONLINE members' current samples (sets and counts).
            slack_us: how much later than the member's a peer's set must be
                read to be followed (clock skew and delivery between hosts).
        """
        out, since = _EMPTY, None
        chunks = self._chunks.get(member_id)
        if chunks is None:
            return out, since
        followed = tuple(peers)
        for chunk in chunks.items:
            if not chunk.flagged:
                proofs = [chunk.follow(p, slack_us) for p in followed]  # every peer: no short cut
                chunk.flagged = any(proofs)
            if chunk.flagged:
                out = out | chunk.gtids
                since = chunk.first_us if since is None else min(since, chunk.first_us)
        return out, since

    def snapshot(self) -> Mapping[str, tuple[tuple[GtidSet, int], ...]]:
        """The chunks per member (for tests and /healthz)."""
        return {m: tuple((c.gtids, c.first_us) for c in ch.items) for m, ch in self._chunks.items()}
