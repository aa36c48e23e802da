"""The member registry: what a receiver knows about every remote member.

Strategy: `core.admission` has already proven a message well-formed; the
registry decides whether it is *news* and keeps the result. Per (group,
member) it holds the last accepted envelope, the `protocol.MemberStatsState`
after it (GTID columns change only on flag '1', deltas are per message), the
reception times, and the counts of what was accepted and rejected.

Invariants:
- replay defence (`core.replay_defence`): within one incarnation `seq` must
  grow, by no more than the time since the last accepted message allows; a
  retired incarnation is "stale" unless the one that replaced it went silent;
- a different incarnation is a restart: the stored state is reset (the first
  message's deltas equal its counters) and the old incarnation is retired;
- the `gtids` topic carries a member's last flag-'1' envelope, retained, so
  that a late receiver shows every member's GTID columns at once. It only
  ever updates the GTID columns of the same incarnation; one that arrives
  before the member's first stats message waits in `core.pending_gtids`
  (expires after `forget_after_s`, bounded by `max_pending_gtids_bytes`; a
  newcomer past the bound is "over_limit");
- departure, one rule for the tables, /metrics and the alerts: a member
  departs when it announces `offline` (itself or by its Will), reports
  OFFLINE or ERROR (removed at once, as MySQL removes a member that left at
  the next view change), or has been silent for `forget_after`. At that
  moment it leaves the tables and with them every per-member series; what
  remains is the record of the departure (`departed()`: group, member,
  OFFLINE | ERROR | UNREACHABLE, last seen), kept until the member comes back
  -- never expiring by time, so an alert on a dead member lasts as long as
  it is dead -- bounded to the `_MAX_UNKNOWN` most recent. The first record
  stands: the Will's `offline` after a silent departure does not turn a
  crash into a leave. An `offline` leaves a tombstone so that a retained
  stats message of that member delivered afterwards does not resurrect it (a
  live one does). Both are kept by `core.departures`;
- clock offset: every live (not retained) accepted stats envelope adds
  `sent_us - received_at_us` to a window of the member's last
  `OFFSET_WINDOW`; the largest is the estimate of its clock minus ours
  (each sample is that offset minus the one-way delay, so the largest is
  the closest, low by the smallest delay in the window);
- each `ext` section is kept by its declaration's `keep` (`core.sections`):
  the member's last `ext.lag` is kept as it came; an envelope without one
  (or with a malformed one) clears it: stale lag is worse than none; the
  same for `ext.applier`. `ext.gtids` rides only on flag-'1' envelopes (every
  gtid_interval), so the last good one is kept until a newer one arrives
  (from either topic) or the member goes;
- bounds: at most `max_members_per_group` members per group, the local
  member included (a daemon's own group has one seat fewer for remotes), and
  `max_groups` groups (a newcomer past either is "over_limit"); tombstones,
  pending GTIDs and the reject counters of never-accepted members are bounded
  too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from grstats.core.admission import Admitted, Ignored, MemberKey, Rejected
from grstats.core.cadence import Due, SectionCadence
from grstats.core.columns import REJECT_REASONS
from grstats.core.departures import Departures
from grstats.core.pending_gtids import PendingGtidsTable
from grstats.core.remote import OFFSET_WINDOW, Applied, Remote
from grstats.core.replay_defence import ReplayDefence, Stale
from grstats.core.sections import declared, fold
from grstats.core.snapshot import Departed
from grstats.core.topics import GTIDS_KIND
from protocol import Envelope, MemberStatsState

__all__ = [
    "OFFSET_WINDOW",
    "Applied",
    "MemberRegistry",
    "RegistryLimits",
    "Remote",
    "zero_rejections",
]

_MAX_UNKNOWN = 4096  # bound on tombstones, pending GTIDs, counters of never-accepted members
_DEPARTED_STATES = ("OFFLINE", "ERROR")


@dataclass(frozen=True, slots=True)
class RegistryLimits:
    """Timing and size bounds of the registry.

    Attributes:
        period_s: the publish period, the unit of `unreachable_after`.
        unreachable_after: silent periods before a member shows UNREACHABLE.
        forget_after_s: silent seconds before a member is removed.
        max_members_per_group: members kept per group, the local member included.
        max_groups: groups kept (a collector sees many).
        max_pending_gtids_bytes: bytes of GTID sets waiting for their member's
            first stats message (each entry charged `PENDING_ENTRY_BYTES` more).
        gtid_interval_s: seconds between a member's GTID sets (core.cadence).
    """

    period_s: float = 1.0
    unreachable_after: int = 5
    forget_after_s: float = 60.0
    max_members_per_group: int = 64
    max_groups: int = 1024
    max_pending_gtids_bytes: int = 8 * 1024 * 1024
    gtid_interval_s: float = 30.0


def zero_rejections() -> dict[str, int]:
    """One counter per reject reason, all zero."""
    return dict.fromkeys(REJECT_REASONS, 0)


class MemberRegistry:
    """Remote members keyed by (group, member id)."""

    def __init__(self, limits: RegistryLimits, *, local_group: str | None = None) -> None:
        self.limits = limits
        self._local_group = local_group  # the group whose one seat the local member takes
        self._unreachable_us = int(limits.unreachable_after * limits.period_s * 1_000_000)
        self._forget_us = int(limits.forget_after_s * 1_000_000)
        self.cadence = SectionCadence(limits.period_s, limits.gtid_interval_s)
        self._defence = ReplayDefence(int(limits.period_s * 1_000_000), self._unreachable_us)
        self._remotes: dict[MemberKey, Remote] = {}
        self._groups: dict[str, int] = {}  # group -> members kept
        self._rejections: dict[MemberKey, dict[str, int]] = {}
        self.pending_gtids = PendingGtidsTable(
            max_bytes=limits.max_pending_gtids_bytes,
            max_entries=_MAX_UNKNOWN,
            expire_after_us=self._forget_us,
        )
        self._departures = Departures(_MAX_UNKNOWN)  # departure records and tombstones
        self.version = 0  # bumped on every change, so readers can cache snapshots

    # -- reading ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._remotes)

    def items(self) -> Iterator[tuple[MemberKey, Remote]]:
        """Remote members in (group, member) order."""
        for key in sorted(self._remotes):
            yield key, self._remotes[key]

    def get(self, key: MemberKey) -> Remote | None:
        """The remote member `key`, or None."""
        return self._remotes.get(key)

    def unreachable(self, remote: Remote, now_us: int) -> bool:
        """Whether `remote` has been silent longer than the unreachable window."""
        return now_us - remote.last_seen_us > self._unreachable_us

    def group_size(self, group: str) -> int:
        """How many members of `group` are kept (0: the group is not held)."""
        return self._groups.get(group, 0)

    def departed(self) -> tuple[Departed, ...]:
        """Members that departed and have not come back, in key order."""
        return self._departures.departed()

    def section_due(self, key: MemberKey, envelope: Envelope, name: str, at_us: int) -> Due:
        """Whether the section `name` of a member's envelope is to be decoded (core.cadence).

        Args:
            key: the member.
            envelope: its envelope (incarnation, seq).
            name: a section with a cadence (`core.sections`: `Section.min_gap_s`).
            at_us: when the envelope was received (our clock).
        """
        remote = self._remotes.get(key)
        if remote is None:
            return Due.YES  # its first: held or applied with its stats
        return self.cadence.due(remote.heard, envelope, name, at_us)

    def note_extras(self, key: MemberKey, names: tuple[str, ...], at_us: int) -> None:
        """Count sections of a member dropped past their cadence (for /healthz's details)."""
        remote = self._remotes.get(key)
        if remote is not None:
            self.cadence.extras(remote.extras, names, at_us)

    def rejections(self, key: MemberKey) -> dict[str, int]:
        """Reject counts of one member (zeros when none)."""
        return self._rejections.get(key) or zero_rejections()

    # -- writing ---------------------------------------------------------------

    def apply(
        self, msg: Admitted, received_at_us: int, *, retained: bool
    ) -> Applied | Rejected | Ignored:
        """Apply one admitted stats or gtids envelope.

        Args:
            msg: what admission let through.
            received_at_us: our wall clock at reception, microseconds.
            retained: True when the broker delivered it from its retained store.

        Returns:
            Applied, Rejected("stale" | "over_limit") or Ignored(why).
        """
        if msg.over_cadence:  # dropped unread at admission: counted for /healthz
            self.note_extras(msg.key, msg.over_cadence, received_at_us)
        if msg.kind == GTIDS_KIND:
            return self._gtids(msg, received_at_us)
        if retained and self._departures.tombstoned(msg.key):
            return Ignored("tombstoned")
        if msg.envelope.member.state in _DEPARTED_STATES:
            self.remove(msg.key, tombstone=retained, state=msg.envelope.member.state)
            return Ignored("departed")
        return self._stats(msg, received_at_us, retained=retained)

    def _stats(
        self, msg: Admitted, received_at_us: int, *, retained: bool
    ) -> Applied | Rejected | Ignored:
        key, envelope, stats = msg.key, msg.envelope, msg.stats
        remote = self._remotes.get(key)
        if remote is None:
            if not self._has_room(key[0]):
                return self.reject(key, "over_limit", "members per group or groups")
            state = MemberStatsState().apply(stats)
            remote = Remote(envelope, state, received_at_us, received_at_us)
            self._remotes[key] = remote
            self._groups[key[0]] = self._groups.get(key[0], 0) + 1
        else:
            verdict = self._defence.judge(
                remote.envelope,
                remote.last_received_us,
                remote.retired,
                envelope,
                received_at_us,
                retained=retained,
            )
            if isinstance(verdict, Stale):
                return self.reject(key, "stale", verdict.detail)
            if verdict is not None:
                return verdict
            if envelope.incarnation == remote.envelope.incarnation:
                state = remote.state.apply(stats)
            else:  # the member restarted: reset, as MySQL does for a new entry
                remote.retired.append((remote.envelope.incarnation, remote.envelope.seq))
                remote.gtid_seq = 0
                for section in declared().sections:
                    if section.reset_on_restart:
                        remote.sections.pop(section.name, None)
                state = MemberStatsState().apply(stats)
            remote.envelope = envelope
        if stats.transaction_gtids_present:
            remote.gtid_seq = envelope.seq
        else:
            state = self._merge_pending_gtids(key, remote, state)
        remote.state = state
        kept, values = remote.sections, msg.sections
        if values or kept:  # nothing is kept of nothing (core.sections: keep)
            fold(kept, declared().sections, values, stats)
        self.cadence.took(remote.heard, msg.envelope, msg.sections, msg.errors, received_at_us)
        if not retained:  # a retained copy's send time says nothing about the clock
            remote.offsets.append(envelope.sent_us - received_at_us)
        # A retained message says when it was sent, not that the member is alive now.
        remote.last_seen_us = min(envelope.sent_us, received_at_us) if retained else received_at_us
        remote.last_received_us = received_at_us
        remote.accepted += 1
        self._departures.back(key)
        self.version += 1
        return Applied(envelope, stats, msg.kind, msg.errors)

    def _has_room(self, group: str) -> bool:
        members = self._groups.get(group)
        if members is None:
            if len(self._groups) >= self.limits.max_groups:
                return False
            members = 0
        seats = self.limits.max_members_per_group - (group == self._local_group)
        return members < seats

    def _merge_pending_gtids(
        self, key: MemberKey, remote: Remote, state: MemberStatsState
    ) -> MemberStatsState:
        pending = self.pending_gtids.get(key)
        if pending is None:
            return state
        if pending.incarnation != remote.envelope.incarnation or pending.seq <= remote.gtid_seq:
            return state
        self.pending_gtids.pop(key)
        remote.gtid_seq = pending.seq
        return _with_gtids(state, pending.committed, pending.last_conflict_free)

    def _gtids(self, msg: Admitted, received_at_us: int) -> Applied | Rejected | Ignored:
        key, envelope, stats = msg.key, msg.envelope, msg.stats
        if not stats.transaction_gtids_present:
            return Ignored("no_gtids")
        remote = self._remotes.get(key)
        if remote is None or remote.envelope.incarnation != envelope.incarnation:
            if remote is not None and any(inc == envelope.incarnation for inc, _ in remote.retired):
                return self.reject(key, "stale", "retired incarnation")
            # applied when its stats arrive
            if not self.pending_gtids.hold(
                key, envelope.incarnation, envelope.seq, stats, received_at_us
            ):
                return self.reject(key, "over_limit", "pending gtids bytes")
            return Ignored("pending")
        if envelope.seq <= remote.gtid_seq:
            return Ignored("old_gtids")  # the live stats message already carried them
        remote.gtid_seq = envelope.seq
        remote.state = _with_gtids(
            remote.state,
            stats.transactions_committed_all_members,
            stats.transaction_last_conflict_free,
        )
        gated = declared().gated  # what rides with the GTID sets only
        fold(remote.sections, gated, msg.sections, stats)
        self.cadence.took(remote.heard, msg.envelope, msg.sections, msg.errors, received_at_us)
        errors = {s.counter: msg.errors[s.counter] for s in gated if s.counter in msg.errors}
        self.version += 1
        return Applied(envelope, stats, msg.kind, errors)

    def status(self, key: MemberKey, *, online: bool) -> None:
        """Apply a status announcement: `offline` removes the member and tombstones it."""
        if online:
            self._departures.untombstone(key)
        else:
            self.remove(key, tombstone=True)

    def remove(self, key: MemberKey, *, tombstone: bool, state: str = "OFFLINE") -> None:
        """Forget a member (it left the group); with `tombstone`, ignore its retained stats.

        `state` is how it left (OFFLINE, or ERROR when it reported so)."""
        if tombstone:
            self._departures.tombstone(key)
        self.pending_gtids.pop(key)
        self._rejections.pop(key, None)
        self._drop(key, state)

    def _drop(self, key: MemberKey, state: str) -> None:
        remote = self._remotes.pop(key, None)
        if remote is None:
            return
        self._departures.record(key, state, remote.last_seen_us)  # the first record stands
        left = self._groups[key[0]] - 1
        if left:
            self._groups[key[0]] = left
        else:
            del self._groups[key[0]]
        self.version += 1

    def reject(self, key: MemberKey, reason: str, detail: str) -> Rejected:
        """Count one rejection against `key` (bounded for members never accepted)."""
        counts = self._rejections.get(key)
        if counts is None:
            if key not in self._remotes and len(self._rejections) >= _MAX_UNKNOWN:
                return Rejected(reason, key, detail)
            counts = self._rejections[key] = zero_rejections()
        counts[reason] += 1
        self.version += 1
        return Rejected(reason, key, detail)

    def expire(self, now_us: int) -> list[MemberKey]:
        """Forget members silent longer than forget_after; returns the keys removed."""
        gone = [k for k, r in self._remotes.items() if now_us - r.last_seen_us > self._forget_us]
        for key in gone:
            self._rejections.pop(key, None)
            self._drop(key, "UNREACHABLE")
        self.pending_gtids.expire(now_us)
        return gone


def _with_gtids(
    state: MemberStatsState, committed: bytes, last_conflict_free: bytes
) -> MemberStatsState:
    return dataclasses.replace(
        state,
        transactions_committed_all_members=committed,
        transaction_last_conflict_free=last_conflict_free,
    )
