"""Errant, missing and recoverable GTIDs of each member: the divergence rules.

The sets are each member's ``@@gtid_executed`` E and ``@@gtid_purged`` P as
the server prints them. Only *witnesses* speak about another member: ONLINE
members that the local server's view lists (its replication_group_members)
and whose GTID sets are not dated ahead of our clock by more than the rule's
slack (`core.gtid_watch` decides). A bus member no server lists, or with a
clock off, proves nothing about anyone: "only members the servers' view
confirms may testify" -- as MySQL Shell takes its reference from the
cluster's own members and GR from the members of its view.

* *errant* (MySQL Shell, mysqlshdk/libs/mysql/replication.cc
  ``check_replica_gtid_state``: DIVERGED when ``GTID_SUBTRACT(replica, source)``
  is not empty; GR, plugin/group_replication/src/gcs_event_handlers.cc
  ``compare_member_transaction_sets``: a joiner whose executed set is not a
  subset of the group's is refused, "This member has more executed
  transactions than those present in the group"): a GTID of X that a
  witness O lacks although O has applied past it. A transaction the group
  certified reaches every member's relay log before its origin commits
  (WL#6833), so once O has applied every transaction it had queued when X's
  set was read (its ``COUNT_TRANSACTIONS_REMOTE_APPLIED`` then plus its two
  queues then; `ErrantTracker`), a GTID of X that O's next set still lacks
  was never certified: a local write with super_read_only off, a fix-up with
  sql_log_bin on, a restore from another group's backup -- or a copy of such
  a GTID: a member provisioned (cloned, recovered) from an errant member has
  it too, and one witness that lacks it convicts both. The *candidates* of X
  are its GTIDs some witness lacks: ``E(X) - (E(W1) & ... & E(Wn))`` (the
  union of the pairwise differences, by De Morgan); a slow witness makes
  many candidates and delays no proof (any one witness that keeps up
  suffices). A witness proves only with sane counts
  (`MemberGtids.consistent`): every transaction applied adds its GTID to
  gtid_executed, so a member whose applied count passes its set's size, or
  grows faster than its set, is not describing a real server (a lie, or a
  member restored behind the group's back).
* *missing* of X: ``(E(W1) & ... & E(Wn)) - E(X)`` over the witnesses other
  than X -- what every one of them has and X has not (count, and the first
  UUID in MySQL's print order).
* *recovery*, as GR decides it when X (re)joins
  (plugin/group_replication/src/plugin_handlers/remote_clone_handler.cc,
  ``extract_donor_info`` / ``check_clone_preconditions``): the GTIDs X lacks
  are those of the ONLINE members (the union) it has not; a donor qualifies
  for incremental (binary log) recovery when it purged none of them:
  ``P(D) - E(X)`` is empty. CLONE when they number at least
  ``group_replication_clone_threshold`` (whatever the donors), or when no
  donor qualifies; INCREMENTAL otherwise. A member with errant GTIDs is
  refused by the join check above whatever the method: REPROVISION (rebuild
  it from a donor, or inject its errant GTIDs on the primary first), its
  own value, never reported as CLONE.

Tagged GTIDs (8.4: ``uuid:tag:n``) and the view-change UUID
(group_replication_view_change_uuid) are GTIDs like any other here.

Invariants: pure (time is an argument); the sets are `protocol.gtid.GtidSet`;
`ErrantTracker` holds at most `MAX_CHUNKS` chunks per member, each following at
most one count per peer; a chunk's GTIDs are checked against a witness's set
once, when that witness has passed its count (a set difference per chunk and
witness, not per sample).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from protocol.gtid import GtidSet

__all__ = [
    "CLONE",
    "DEFAULT_CLONE_THRESHOLD",
    "INCREMENTAL",
    "MAX_CHUNKS",
    "RECOVERY_METHODS",
    "REPROVISION",
    "Divergence",
    "ErrantTracker",
    "MemberGtids",
    "recovery_method",
]

INCREMENTAL: Final = "INCREMENTAL"
CLONE: Final = "CLONE"
REPROVISION: Final = "REPROVISION"
RECOVERY_METHODS: Final = (INCREMENTAL, CLONE, REPROVISION)
ONLINE: Final = "ONLINE"
#: group_replication_clone_threshold's default (and maximum): clone only when no donor can
DEFAULT_CLONE_THRESHOLD: Final = (1 << 63) - 1
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
        listed: the local server's view lists it (or the source cannot tell).
        clock_ok: its sets are not dated ahead of the receiver's clock.
        consistent: its counts are possible for its sets (see the module).
    """

    member_id: str
    state: str
    executed: GtidSet
    purged: GtidSet = _EMPTY
    read_us: int = 0
    applied: int | None = None
    queued: int | None = None
    listed: bool = True
    clock_ok: bool = True
    consistent: bool = True

    @property
    def witness(self) -> bool:
        """Whether its sets count against the others' (ONLINE, listed, sane clock)."""
        return self.state == ONLINE and self.listed and self.clock_ok

    @property
    def prover(self) -> bool:
        """Whether it may prove another member's GTIDs errant (a witness with sane counts)."""
        return self.witness and self.consistent


@dataclass(frozen=True, slots=True)
class Divergence:
    """The rules' answer for one member at one instant.

    Attributes:
        member_id: the member judged.
        missing: what every other witness executed and it has not.
        missing_uuid: first UUID of `missing` in print order, "" when none.
        recovery: INCREMENTAL, CLONE, REPROVISION, or None when no witness
            other than itself speaks (nothing to compare with).
        donors: the witnesses that could serve incremental recovery, sorted.
        lacking: how many GTIDs it lacks of the witnesses' union (GR's count
            against group_replication_clone_threshold).
    """

    member_id: str
    missing: GtidSet
    missing_uuid: str
    recovery: str | None
    donors: tuple[str, ...] = ()
    lacking: int = 0


def recovery_method(
    *, errant: bool, donors: int, lacking: int, clone_threshold: int = DEFAULT_CLONE_THRESHOLD
) -> str:
    """How the member would rejoin (remote_clone_handler.cc check_clone_preconditions).

    Args:
        errant: it has errant GTIDs (the join check refuses it).
        donors: witnesses that purged none of what it lacks.
        lacking: GTIDs it lacks of the witnesses' union.
        clone_threshold: group_replication_clone_threshold.

    Returns:
        REPROVISION, CLONE or INCREMENTAL.
    """
    if errant:
        return REPROVISION
    if lacking >= clone_threshold or donors == 0:
        return CLONE
    return INCREMENTAL


@dataclass(slots=True)
class _Chunk:
    """GTIDs first seen together as candidates, and what the witnesses proved of them."""

    gtids: GtidSet
    first_us: int  # when first seen (our clock)
    read_us: int  # when the member's set that first had them was read (its clock)
    proved: GtidSet = _EMPTY  # the ones proven errant (stay so while candidates)
    # peer -> (its applied count when followed, the count by which it has applied these)
    targets: dict[str, tuple[int, int]] = field(default_factory=dict)
    # peer -> read time of its first set with the target count reached
    reached: dict[str, int] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)  # peers whose proof is taken

    def follow(self, peer: MemberGtids, slack_us: int) -> bool:
        """Take one peer's sample; True once it has applied everything these could be."""
        if peer.applied is None or peer.queued is None:
            return False
        key = peer.member_id
        target = self.targets.get(key)
        if target is not None and peer.applied < target[0]:  # its counters restarted
            del self.targets[key]
            self.reached.pop(key, None)
            self.done.discard(key)
            target = None
        if target is None:
            if peer.read_us < self.read_us + slack_us:
                return False  # it may not have received them yet
            target = self.targets[key] = (peer.applied, peer.applied + max(0, peer.queued))
        if key not in self.reached:
            if peer.applied >= target[1]:
                self.reached[key] = peer.read_us
            return False
        # one more set: a parallel applier without preserve_commit_order may commit a
        # few out of order
        return peer.read_us > self.reached[key]


@dataclass(slots=True)
class _Chunks:
    items: list[_Chunk] = field(default_factory=list)


class ErrantTracker:
    """Each member's candidate chunks and what the witnesses proved of them.

    Each member keeps chunks (GTIDs, first seen, the member's read time, the
    GTIDs proven, and per peer the count it must reach). On every `update`, a
    chunk keeps only the GTIDs that are still candidates (with everything it
    followed); new candidates form a new chunk. Past `MAX_CHUNKS` the two
    newest chunks merge into the newer one's stamps and counts, with the proofs
    of both (a proof is a fact about GTIDs; the newer counts cover the older
    GTIDs too, so a proof still to come can only be delayed). `errant` follows
    the provers; once a prover has applied past a chunk, what of the chunk its
    next set lacks is proven errant.
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
                if still != chunk.gtids:
                    chunk.gtids = still
                    chunk.proved = chunk.proved & still
                kept.append(chunk)
                known = known | still
        fresh = current - known
        if fresh:
            kept.append(_Chunk(fresh, now_us, now_us if read_us is None else read_us))
        while len(kept) > MAX_CHUNKS:
            a, b = kept[-2], kept[-1]
            b.gtids = a.gtids | b.gtids
            b.proved = a.proved | b.proved
            b.done = a.done & b.done
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
        """The member's errant GTIDs and since when (None: none), given the provers now.

        Args:
            member_id: the member judged.
            peers: the other provers' current samples (sets and counts).
            slack_us: how much later than the member's a peer's set must be
                read to be followed (clock skew and delivery between hosts).
        """
        out, since = _EMPTY, None
        chunks = self._chunks.get(member_id)
        if chunks is None:
            return out, since
        followed = tuple(peers)
        for chunk in chunks.items:
            for peer in followed:  # every peer: no short cut (each keeps its target)
                if chunk.follow(peer, slack_us) and peer.member_id not in chunk.done:
                    chunk.done.add(peer.member_id)
                    chunk.proved = chunk.proved | (chunk.gtids - peer.executed)
            if chunk.proved:
                out = out | chunk.proved
                since = chunk.first_us if since is None else min(since, chunk.first_us)
        return out, since

    def snapshot(self) -> Mapping[str, tuple[tuple[GtidSet, int], ...]]:
        """The chunks per member (for tests and /healthz)."""
        return {m: tuple((c.gtids, c.first_us) for c in ch.items) for m, ch in self._chunks.items()}
