"""Pure state: replication_group_member_stats / _members for every member, no I/O.

Strategy: the daemon feeds three things in — the local source's samples
(`set_local`), every bus message (`receive`) and the passage of time
(`expire`) — and reads one frozen `DaemonSnapshot` out. Nothing here reads a
clock, logs or touches a socket, so every rule below is unit-tested with plain
values.

Invariants (DESIGN.md section 4, PROTOCOL.md sections 7-8):
- the local row is built live from the latest local sample, never from the
  daemon's own broadcast. Our own envelopes coming back from the broker are
  ignored *before decoding* and counted apart (`envelopes_own`), neither
  accepted nor rejected: they are not evidence about another member;
- a remote row is the `protocol.MemberStatsState` after the last accepted
  envelope: GTID columns change only on flag '1', deltas are per message;
- an envelope is accepted only if it is not oversized, decodes, names the
  topic's member and our group, and its `(incarnation, seq)` is newer than the
  last accepted one from that member. A different incarnation is a restart:
  the stored state is reset (the first message's deltas equal its counters).
  The last few incarnations of a member are remembered so that a replay of an
  older incarnation is "stale", not a restart. A *retained* copy of a message
  already applied (delivered again after every re-subscribe) is ignored, not
  counted as stale;
- the `gtids` topic carries a member's last flag-'1' envelope, retained, so
  that a late receiver shows every member's GTID columns at once. It only
  ever updates the GTID columns of the same incarnation;
- silence longer than `unreachable_after` periods shows UNREACHABLE; an
  `offline` status or silence longer than `forget_after` removes the member.
  An `offline` status leaves a tombstone so that a retained stats message of
  that member delivered afterwards does not resurrect it (a live one does);
- numeric P_S columns are shown as unsigned 64-bit (PROTOCOL.md section 8).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from grstats.core.rows import remote_member_row, stats_row
from grstats.core.sample import LocalSample
from grstats.core.snapshot import (
    GROUP_REPLICATION_CHANNEL,
    MEMBER_STATS_COLUMNS,
    REJECT_REASONS,
    DaemonSnapshot,
    Row,
)
from protocol import (
    Envelope,
    MemberStatsState,
    PipelineStats,
    ProtocolError,
    decode_envelope,
    decode_pipeline_stats,
)

_KNOWN_INCARNATIONS = 8  # retired incarnations remembered per member (replay defence)
_MAX_UNKNOWN_COUNTERS = 4096  # bound on rejection counters kept for never-accepted members
STATS_KIND = "stats"
STATUS_KIND = "status"
GTIDS_KIND = "gtids"

MemberKey = tuple[str, str]  # (group, member id)


def parse_topic(topic: str) -> tuple[str, str, str] | None:
    """Split `<prefix>/<group>/<member>/<kind>` from the right; the prefix may hold '/'.

    Args:
        topic: an MQTT topic name.

    Returns:
        (group, member, kind), or None when the topic has fewer than four levels.
    """
    parts = topic.rsplit("/", 3)
    if len(parts) != 4 or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2], parts[3]


@dataclass(frozen=True, slots=True)
class Accepted:
    """An envelope that changed the tables."""

    envelope: Envelope
    stats: PipelineStats
    kind: str = STATS_KIND


@dataclass(frozen=True, slots=True)
class Rejected:
    """A message refused for `reason` (one of REJECT_REASONS)."""

    reason: str
    member_id: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Ignored:
    """A message with nothing to apply (our own echo, a status, a cleared retained topic)."""

    why: str


ReceiveResult = Accepted | Rejected | Ignored


@dataclass(slots=True)
class _Remote:
    """What we keep about one remote member."""

    envelope: Envelope
    state: MemberStatsState
    last_seen_us: int
    gtid_seq: int = 0
    accepted: int = 0
    retired: deque[int] = field(default_factory=lambda: deque(maxlen=_KNOWN_INCARNATIONS))


@dataclass(slots=True)
class _Local:
    sample: LocalSample | None = None
    incarnation: int | None = None
    seq: int | None = None


def _zero_rejections() -> dict[str, int]:
    return dict.fromkeys(REJECT_REASONS, 0)


class MemberTables:
    """The three tables of one daemon (or of a collector, keyed by (group, member)).

    Args:
        group: our group name; None in collector mode (every group, no local member).
        local_member_id: our server UUID; None in collector mode.
        period_s: the publish period, the unit of `unreachable_after`.
        unreachable_after: silent periods before a member shows UNREACHABLE.
        forget_after_s: silent seconds before a member is removed.
        max_envelope_size: payloads larger than this are rejected unread.
    """

    def __init__(
        self,
        *,
        group: str | None,
        local_member_id: str | None,
        period_s: float = 1.0,
        unreachable_after: int = 5,
        forget_after_s: float = 60.0,
        max_envelope_size: int = 65536,
    ) -> None:
        self.group = group
        self.local_member_id = local_member_id
        self._unreachable_us = int(unreachable_after * period_s * 1_000_000)
        self._forget_us = int(forget_after_s * 1_000_000)
        self._max_size = max_envelope_size
        self._local = _Local()
        self._remotes: dict[MemberKey, _Remote] = {}
        self._rejections: dict[MemberKey, dict[str, int]] = {}
        self._tombstones: dict[MemberKey, None] = {}  # an insertion-ordered, bounded set
        self._pending_gtids: dict[MemberKey, tuple[Envelope, PipelineStats]] = {}
        self.accepted_total = 0
        self.own_total = 0
        self.rejected_total: dict[str, int] = _zero_rejections()
        self.version = 0  # bumped on every change, so readers can cache snapshots

    @property
    def collector(self) -> bool:
        """True when keyed by (group, member) with no local member."""
        return self.group is None

    # -- local member -------------------------------------------------------

    def set_local(self, sample: LocalSample, *, incarnation: int, seq: int) -> None:
        """Record the latest local sample and what we last published.

        Args:
            sample: the source's live reading.
            incarnation: our incarnation number.
            seq: the seq of the last envelope we published (0 before the first).
        """
        self._local = _Local(sample, incarnation, seq)
        self.version += 1

    # -- receive path ---------------------------------------------------------

    def receive(
        self, topic: str, payload: bytes, received_at_us: int, *, retained: bool = False
    ) -> ReceiveResult:
        """Validate and apply one bus message.

        Args:
            topic: `<prefix>/<group>/<member>/<kind>` with kind stats, status or gtids.
            payload: the message bytes.
            received_at_us: wall clock at reception, microseconds.
            retained: True when the broker delivered it from its retained store.

        Returns:
            Accepted, Rejected(reason) or Ignored.
        """
        parsed = parse_topic(topic)
        if parsed is None:
            return self._reject(("", ""), "malformed", "topic")
        topic_group, topic_member, kind = parsed
        key: MemberKey = (topic_group, topic_member)
        if not self.collector and topic_member == self.local_member_id:
            self.own_total += 1
            return Ignored("own")
        if kind == STATUS_KIND:
            return self._status(key, payload)
        if kind not in (STATS_KIND, GTIDS_KIND):
            return Ignored("kind")
        if not payload:
            return Ignored("cleared")  # a retained message being deleted
        if len(payload) > self._max_size:
            return self._reject(key, "oversized", f"{len(payload)} bytes")
        if not self.collector and topic_group != self.group:
            return self._reject(key, "other_group", "topic")
        try:
            envelope = decode_envelope(payload, max_size=self._max_size)
            stats = decode_pipeline_stats(envelope.stats)
        except ProtocolError as exc:
            return self._reject(key, "malformed", str(exc))
        if envelope.member.id != topic_member:
            return self._reject(key, "spoofed", envelope.member.id)
        if envelope.group != topic_group:
            return self._reject(key, "other_group", envelope.group)
        if kind == GTIDS_KIND:
            return self._gtids(key, envelope, stats)
        if retained and key in self._tombstones:
            return Ignored("tombstoned")
        return self._stats(key, envelope, stats, received_at_us, retained=retained)

    def apply(
        self,
        envelope: Envelope,
        stats: PipelineStats,
        received_at_us: int,
        *,
        retained: bool = False,
    ) -> ReceiveResult:
        """Apply an already decoded stats envelope (group, own and staleness rules).

        `receive()` is the bus entry point (size, decoding and topic checks
        first); this is the same rule set for callers holding dataclasses.

        Args:
            envelope: the decoded envelope.
            stats: its decoded PipelineStats.
            received_at_us: wall clock at reception, microseconds.
            retained: True when delivered from the broker's retained store.

        Returns:
            Accepted, Rejected("other_group" | "stale") or Ignored("own").
        """
        key: MemberKey = (envelope.group, envelope.member.id)
        if not self.collector:
            if envelope.member.id == self.local_member_id:
                self.own_total += 1
                return Ignored("own")
            if envelope.group != self.group:
                return self._reject(key, "other_group", envelope.group)
        return self._stats(key, envelope, stats, received_at_us, retained=retained)

    def _stats(
        self,
        key: MemberKey,
        envelope: Envelope,
        stats: PipelineStats,
        received_at_us: int,
        *,
        retained: bool,
    ) -> ReceiveResult:
        remote = self._remotes.get(key)
        if remote is not None:
            last = remote.envelope
            if envelope.incarnation == last.incarnation:
                if envelope.seq <= last.seq:
                    if retained:  # the broker's copy of what we already have (re-subscribe)
                        return Ignored("retained_seen")
                    return self._reject(key, "stale", f"seq {envelope.seq} <= {last.seq}")
                state = remote.state.apply(stats)
            elif envelope.incarnation in remote.retired:
                return self._reject(key, "stale", "retired incarnation")
            else:  # the member restarted: reset, as MySQL does for a new entry
                remote.retired.append(last.incarnation)
                remote.gtid_seq = 0
                state = MemberStatsState().apply(stats)
            remote.envelope = envelope
        else:
            state = MemberStatsState().apply(stats)
            remote = _Remote(envelope, state, received_at_us)
            self._remotes[key] = remote
        if stats.transaction_gtids_present:
            remote.gtid_seq = envelope.seq
        else:
            state = self._merge_pending_gtids(key, remote, state)
        remote.state = state
        # A retained message says when it was sent, not that the member is alive now.
        remote.last_seen_us = min(envelope.sent_us, received_at_us) if retained else received_at_us
        remote.accepted += 1
        self._tombstones.pop(key, None)
        self.accepted_total += 1
        self.version += 1
        return Accepted(envelope, stats)

    def _merge_pending_gtids(
        self, key: MemberKey, remote: _Remote, state: MemberStatsState
    ) -> MemberStatsState:
        pending = self._pending_gtids.get(key)
        if pending is None:
            return state
        envelope, stats = pending
        if envelope.incarnation != remote.envelope.incarnation or envelope.seq <= remote.gtid_seq:
            return state
        del self._pending_gtids[key]
        remote.gtid_seq = envelope.seq
        return dataclasses.replace(
            state,
            transactions_committed_all_members=stats.transactions_committed_all_members,
            transaction_last_conflict_free=stats.transaction_last_conflict_free,
        )

    def _gtids(self, key: MemberKey, envelope: Envelope, stats: PipelineStats) -> ReceiveResult:
        if not stats.transaction_gtids_present:
            return Ignored("no_gtids")
        remote = self._remotes.get(key)
        if remote is None or remote.envelope.incarnation != envelope.incarnation:
            if remote is not None and envelope.incarnation in remote.retired:
                return self._reject(key, "stale", "retired incarnation")
            self._pending_gtids[key] = (envelope, stats)  # applied when its stats arrive
            if len(self._pending_gtids) > _MAX_UNKNOWN_COUNTERS:
                self._pending_gtids.pop(next(iter(self._pending_gtids)))
            return Ignored("pending")
        if envelope.seq <= remote.gtid_seq:
            return Ignored("old_gtids")  # the live stats message already carried them
        remote.gtid_seq = envelope.seq
        remote.state = dataclasses.replace(
            remote.state,
            transactions_committed_all_members=stats.transactions_committed_all_members,
            transaction_last_conflict_free=stats.transaction_last_conflict_free,
        )
        self.version += 1
        return Accepted(envelope, stats, GTIDS_KIND)

    def _status(self, key: MemberKey, payload: bytes) -> ReceiveResult:
        if not self.collector and key[0] != self.group:
            return Ignored("other_group_status")
        text = payload.decode("utf-8", "replace").strip()
        if text == "offline":
            self.status(key[1], "offline", group=key[0])
            return Ignored("offline")
        if text == "online":
            self._tombstones.pop(key, None)
        return Ignored("status")

    def status(self, member_id: str, status: str, *, group: str | None = None) -> None:
        """Apply a status message: `offline` removes the member (and tombstones it).

        Args:
            member_id: the member's server UUID.
            status: "online" or "offline".
            group: the member's group (required in collector mode; ours by default).
        """
        key: MemberKey = (group if group is not None else (self.group or ""), member_id)
        if status == "offline":
            self._tombstones[key] = None
            if len(self._tombstones) > _MAX_UNKNOWN_COUNTERS:
                self._tombstones.pop(next(iter(self._tombstones)))
            self._pending_gtids.pop(key, None)
            self._rejections.pop(key, None)
            if self._remotes.pop(key, None) is not None:
                self.version += 1
        elif status == "online":
            self._tombstones.pop(key, None)

    def _reject(self, key: MemberKey, reason: str, detail: str) -> Rejected:
        self.rejected_total[reason] += 1
        counts = self._rejections.get(key)
        if counts is None:
            if len(self._rejections) >= _MAX_UNKNOWN_COUNTERS and key not in self._remotes:
                return Rejected(reason, key[1], detail)
            counts = self._rejections[key] = _zero_rejections()
        counts[reason] += 1
        self.version += 1
        return Rejected(reason, key[1], detail)

    # -- time -----------------------------------------------------------------

    def expire(self, now_us: int) -> list[MemberKey]:
        """Forget members silent longer than forget_after.

        Args:
            now_us: wall clock, microseconds.

        Returns:
            The (group, member) keys removed.
        """
        gone = [k for k, r in self._remotes.items() if now_us - r.last_seen_us > self._forget_us]
        for key in gone:
            del self._remotes[key]
            self._rejections.pop(key, None)
        if gone:
            self.version += 1
        return gone

    def is_unreachable(self, member_id: str, now_us: int, *, group: str | None = None) -> bool:
        """Whether a remote member has been silent longer than unreachable_after periods."""
        remote = self._remotes.get((group if group is not None else (self.group or ""), member_id))
        return remote is not None and now_us - remote.last_seen_us > self._unreachable_us

    def remote_state(self, member_id: str, *, group: str | None = None) -> MemberStatsState | None:
        """The stored MemberStatsState of a remote member (deltas included), or None."""
        remote = self._remotes.get((group if group is not None else (self.group or ""), member_id))
        return None if remote is None else remote.state

    def member_keys(self) -> list[MemberKey]:
        """The remote members currently known, sorted."""
        return sorted(self._remotes)

    def counters(self) -> dict[str, int]:
        """Receive-path totals under the DaemonSnapshot counter names."""
        out = {"envelopes_accepted": self.accepted_total, "envelopes_own": self.own_total}
        for reason, count in self.rejected_total.items():
            out[f"envelopes_rejected_{reason}"] = count
        return out

    # -- read side ------------------------------------------------------------

    def snapshot(
        self,
        now_us: int,
        *,
        counters: Mapping[str, int] | None = None,
        gauges: Mapping[str, float] | None = None,
    ) -> DaemonSnapshot:
        """Freeze the three tables.

        Args:
            now_us: wall clock, microseconds (for ages and UNREACHABLE).
            counters: the daemon's own counters, merged over the receive-path ones.
            gauges: point-in-time values; "members_known" is filled here.

        Returns:
            A new immutable DaemonSnapshot.
        """
        stats_rows: list[Row] = []
        member_rows: list[Row] = []
        status_rows: list[Row] = []
        local = self._local.sample
        local_offline = not self.collector and (local is None or local.member.state == "OFFLINE")
        if not self.collector:
            stats_rows.append(self._local_stats_row(local_offline))
            member_rows.append(self._local_member_row())
            status_rows.append(self._local_status_row(now_us))
        if not local_offline:
            view_id = local.member.view_id if local is not None else ""
            for key in sorted(self._remotes):
                remote = self._remotes[key]
                unreachable = now_us - remote.last_seen_us > self._unreachable_us
                env = remote.envelope
                stats_rows.append(stats_row(view_id or env.view_id, env.member.id, remote.state))
                member_rows.append(remote_member_row(env, unreachable=unreachable))
                status_rows.append(self._remote_status_row(key, remote, now_us))
        merged_counters = self.counters()
        if counters:
            merged_counters.update(counters)
        merged_gauges = {"members_known": float(len(member_rows))}
        if gauges:
            merged_gauges.update(gauges)
        return DaemonSnapshot(
            taken_at_us=now_us,
            group_name=self.group or "",
            local_member_id=self.local_member_id or "",
            member_stats=tuple(stats_rows),
            members=tuple(member_rows),
            member_status=tuple(status_rows),
            counters=merged_counters,
            gauges=merged_gauges,
        )

    def _local_stats_row(self, offline: bool) -> Row:
        # Identifiers are the sample's own, verbatim (MySQL shows MEMBER_ID ""
        # before GR ever started); no sample yet shows that empty row too. An
        # OFFLINE member shows no VIEW_ID and no counters (ps_information.cc
        # returns right after MEMBER_ID for an OFFLINE local member).
        sample = self._local.sample
        m = sample.member if sample else None
        member_id = ""
        if m is not None:
            member_id = m.member_id if m.stats_member_id is None else m.stats_member_id
        if offline or sample is None:
            row: dict[str, str | int | None] = dict.fromkeys(MEMBER_STATS_COLUMNS, 0)
            row.update(
                CHANNEL_NAME=GROUP_REPLICATION_CHANNEL,
                VIEW_ID="",
                MEMBER_ID=member_id,
                TRANSACTIONS_COMMITTED_ALL_MEMBERS="",
                LAST_CONFLICT_FREE_TRANSACTION="",
            )
            return row
        return stats_row(sample.member.view_id, member_id, sample.stats)

    def _local_member_row(self) -> Row:
        # The sample's fields verbatim (empty MEMBER_ID/HOST, NULL port, empty
        # version/stack when the server shows them so); before the first
        # sample, the row of a server whose GR never started.
        sample = self._local.sample
        m = sample.member if sample else None
        state = m.state if m else "OFFLINE"
        return {
            "CHANNEL_NAME": GROUP_REPLICATION_CHANNEL,
            "MEMBER_ID": m.member_id if m else "",
            "MEMBER_HOST": m.host if m else "",
            "MEMBER_PORT": m.port if m else None,
            "MEMBER_STATE": state,
            "MEMBER_ROLE": m.role if m and state in ("ONLINE", "RECOVERING") else "",
            "MEMBER_VERSION": m.version if m else "",
            "MEMBER_COMMUNICATION_STACK": m.communication_stack if m else "",
        }

    def _local_status_row(self, now_us: int) -> Row:
        sample = self._local.sample
        row: dict[str, str | int | float | None] = {
            "GROUP_NAME": self.group or "",
            "MEMBER_ID": self.local_member_id or "",
            "IS_LOCAL": 1,
            "LAST_SEEN_AGE_SECONDS": (
                None if sample is None else max(0.0, (now_us - sample.sampled_at_us) / 1e6)
            ),
            "INCARNATION": self._local.incarnation,
            "SEQ": self._local.seq,
            "ACCEPTED": 0,
        }
        for reason in REJECT_REASONS:
            row[f"REJECTED_{reason.upper()}"] = 0
        return row

    def _remote_status_row(self, key: MemberKey, remote: _Remote, now_us: int) -> Row:
        row: dict[str, str | int | float | None] = {
            "GROUP_NAME": key[0],
            "MEMBER_ID": key[1],
            "IS_LOCAL": 0,
            "LAST_SEEN_AGE_SECONDS": max(0.0, (now_us - remote.last_seen_us) / 1e6),
            "INCARNATION": remote.envelope.incarnation,
            "SEQ": remote.envelope.seq,
            "ACCEPTED": remote.accepted,
        }
        counts = self._rejections.get(key) or _zero_rejections()
        for reason in REJECT_REASONS:
            row[f"REJECTED_{reason.upper()}"] = counts[reason]
        return row
