"""Pure state: the all-member tables of one daemon (or collector), no I/O.

Strategy: the daemon feeds three things in — the local source's samples
(`set_local`), every bus message (`receive`) and the passage of time
(`expire`) — and reads one frozen `DaemonSnapshot` out. `receive` is
`core.admission.admit` (is the message well-formed and for us?) followed by
`core.registry.MemberRegistry` (is it news? keep it), and the snapshot is
`core.snapshot_builder.build_snapshot`. Nothing here reads a clock, logs or
touches a socket, so every rule is unit-tested with plain values.

This class only routes; each concern is a collaborator of its own:
`core.receive_counts` (what each message counts as), `core.group_replays`
(the flow-control replays), `core.gtid_watch` (what grstats_member_gtids is
fed), `core.oracle` (the server's view against the daemons') and
`core.tables_health` (the tables' own health checks).

A collector is the same object without a group and a local member: it keeps
every group it hears, keyed by (group, member). It replays flow control per
group too, so that its history rows carry the same fc_* figures a member's
do: one `FlowReplay` per group the registry holds (so bounded by its caps:
`max_groups`, `max_members_per_group`), fed by every accepted stats message
and stepped by the collector's own clock -- `tick`, once a period -- as a
member steps on its own timer; a group's replay goes with its last member.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from grstats.core.admission import (
    Admitted,
    Ignored,
    Limits,
    MemberKey,
    Rejected,
    Status,
    admit,
)
from grstats.core.channel_errors import ChannelErrorWatch
from grstats.core.commitpath import CommitPathRows
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.flowreplay import DEFAULT_CATCH_UP_LIMIT_S, FlowReplay
from grstats.core.group_replays import GroupReplays
from grstats.core.gtid_divergence import DEFAULT_CLONE_THRESHOLD
from grstats.core.gtid_watch import GtidWatch
from grstats.core.gtidrows import GtidDivergenceTable
from grstats.core.health import Health
from grstats.core.history_rows import MemberFigures, member_history_row
from grstats.core.member_builders import members_count
from grstats.core.oracle import ServerOracle
from grstats.core.receive_counts import ReceiveCounts, ReceiveResult
from grstats.core.records import HistoryRow
from grstats.core.registry import Applied, MemberRegistry, RegistryLimits
from grstats.core.rows import flow_history
from grstats.core.sample import LocalSample
from grstats.core.sections import declared
from grstats.core.snapshot import (
    NO_FIGURES,
    DaemonCounters,
    DaemonFigures,
    DaemonSnapshot,
    DaemonStatus,
)
from grstats.core.snapshot_builder import LocalView, SnapshotInputs, build_snapshot
from grstats.core.tables_health import snapshot_figures
from grstats.core.topics import STATS_KIND
from protocol import Envelope, MemberStatsState, PipelineStats

Accepted = Applied  # an envelope that changed the tables

__all__ = [
    "Accepted",
    "Ignored",
    "Limits",
    "MemberKey",
    "MemberTables",
    "ReceiveResult",
    "RegistryLimits",
    "Rejected",
]


class MemberTables:
    """The all-member tables of one daemon (or of a collector, keyed by (group, member)).

    Args:
        group: our group name; None in collector mode (every group, no local member).
        local_member_id: our server UUID; None in collector mode.
        registry_limits: timing and size bounds of the member registry.
        limits: bounds on one message.
        flow_control: the group's flow-control variables (MySQL's defaults).
        catch_up_limit_s: applier catch-up time above which a member is not
            failover-ready.
        gtid_interval_s: seconds between GTID sets on the bus (a peer's set
            is followed for errant transactions when read one interval later).
        clone_threshold: group_replication_clone_threshold (RECOVERY_METHOD).
    """

    def __init__(
        self,
        *,
        group: str | None,
        local_member_id: str | None,
        registry_limits: RegistryLimits | None = None,
        limits: Limits | None = None,
        flow_control: FlowControlSettings | None = None,
        catch_up_limit_s: float = DEFAULT_CATCH_UP_LIMIT_S,
        gtid_interval_s: float = 30.0,
        clone_threshold: int = DEFAULT_CLONE_THRESHOLD,
    ) -> None:
        self.group = group
        self.local_member_id = local_member_id
        self.limits = limits or Limits()
        registry_limits = dataclasses.replace(
            registry_limits or RegistryLimits(), gtid_interval_s=gtid_interval_s
        )
        self.registry = MemberRegistry(registry_limits, local_group=group)
        self._local: LocalView | None = None if group is None else LocalView()
        self._local_version = 0
        self.received = ReceiveCounts()  # accepted, own and refused envelopes, by reason
        # the replays of MySQL's flow control: a daemon's group (`flow`), a collector's every one
        self.replays = GroupReplays(
            self.registry, flow_control or FlowControlSettings(), catch_up_limit_s, group=group
        )
        self.flow: FlowReplay | None = self.replays.own
        # grstats_member_gtids: daemon only, like the flow replay (one group)
        self._gtid_watch = (
            None if group is None else GtidWatch(self.registry, gtid_interval_s, clone_threshold)
        )
        self.gtids: GtidDivergenceTable | None = (
            None if self._gtid_watch is None else self._gtid_watch.table
        )
        # the local server's view of each member against its daemon (daemon only)
        self.oracle: ServerOracle | None = None if group is None else ServerOracle()
        self.channel_errors = ChannelErrorWatch()  # episodes across snapshots
        self._commit_rows = CommitPathRows()  # rebuilt per member when its reports change
        # a section a member repeats (ext.commit_path_comm) checked once per member
        self._readers = {s.name: s.reader() for s in declared().sections if s.reader is not None}

    @property
    def version(self) -> int:
        """Bumped on every change, so readers can cache snapshots."""
        return self.registry.version + self._local_version

    def set_local(self, sample: LocalSample, *, incarnation: int, seq: int) -> None:
        """Record the latest local sample and what we last published.

        Args:
            sample: the source's live reading.
            incarnation: our incarnation number.
            seq: the seq of the last envelope we published (0 before the first).
        """
        self._local = (self._local or LocalView()).after(sample, incarnation, seq)
        self._local_version += 1
        own = sample.member.member_id or self.local_member_id or ""
        self.replays.local(sample, own)
        if self.oracle is not None and sample.server_view:
            heard = {key[1]: True for key, _ in self.registry.items()}
            self.oracle.check(sample.server_view, heard)
        if self._gtid_watch is not None:
            self._gtid_watch.observe(sample, own)

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
        msg = admit(
            topic,
            payload,
            received_at_us,
            group=self.group,
            local_member_id=self.local_member_id,
            limits=self.limits,
            readers=self._readers,
            gate=self.registry.section_due,
        )
        if isinstance(msg, Admitted):
            self.received.admitted(msg)
            result = self.registry.apply(msg, received_at_us, retained=retained)
        elif isinstance(msg, Status):
            self.registry.status(msg.key, online=msg.online)
            result = Ignored("online" if msg.online else "offline")
        elif isinstance(msg, Rejected):
            result = self.registry.reject(msg.key, msg.reason, msg.detail)
        else:
            result = msg
        self.received.outcome(result)
        if isinstance(result, Applied) and result.kind == STATS_KIND and isinstance(msg, Admitted):
            remote = self.registry.get(msg.key)
            if remote is not None:
                replay = self.replays.for_stats(msg.key[0])
                if replay is not None:
                    replay.receive(msg.key[1], remote.state, received_at_us)
                if self.oracle is not None:
                    self.oracle.bus(msg.key[1], remote.state)
        return result

    def expire(self, now_us: int) -> list[MemberKey]:
        """Forget members silent longer than forget_after; returns the keys removed."""
        removed = self.registry.expire(now_us)
        for group, member_id in removed:
            self.replays.forget(group, member_id)
            if self.oracle is not None:
                self.oracle.forget(member_id)
        return removed

    def tick(self, now_us: int) -> list[MemberKey]:
        """Once a period: `expire`; replays forget departed members; a collector steps its own.

        Returns:
            The keys `expire` removed.
        """
        removed = self.expire(now_us)
        self.replays.tick(now_us, self.local_member_id)
        return removed

    def gtid_history(self, member_id: str) -> dict[str, Any] | None:
        """The history's GTID columns of `member_id` now (None: no verdict, a collector)."""
        if self._gtid_watch is None:
            return None
        return self._gtid_watch.table.history(member_id)

    def history_row(
        self, envelope: Envelope, stats: PipelineStats, sampled_at_us: int, *, local: bool
    ) -> HistoryRow:
        """The history row of a member's envelope (`core.history_rows`): the local member's
        from its view (our clock), a remote one's from what the registry keeps of it; its
        group's replay has just taken the envelope (set_local / receive)."""
        if local:
            view = self._local or LocalView()
            sample = view.sample
            member = (sample.member.member_id if sample else "") or self.local_member_id or ""
            kept, replay = view.sections, self.flow
            offset_s: float | None = 0.0  # our own clock
        else:
            member = envelope.member.id
            remote = self.registry.get((envelope.group, member))
            offset_us = None if remote is None else remote.clock_offset_us()
            kept = {} if remote is None else remote.sections
            offset_s = None if offset_us is None else offset_us / 1e6
            replay = self.replays.get(envelope.group)
        flow, gtids = flow_history(replay, member), self.gtid_history(member)
        figures = MemberFigures(kept, offset_s, flow, gtids)
        return member_history_row(envelope, stats, sampled_at_us, figures)

    def replay(self, group: str) -> FlowReplay | None:
        """The flow-control replay of `group` (None: none yet, or not ours)."""
        return self.replays.get(group)

    def remote_state(self, member_id: str, *, group: str | None = None) -> MemberStatsState | None:
        """The stored MemberStatsState of a remote member (deltas included), or None."""
        remote = self.registry.get((group if group is not None else (self.group or ""), member_id))
        return None if remote is None else remote.state

    def counters(self) -> DaemonCounters:
        """Receive-path totals (bus and publish counters are the daemon's)."""
        oracle = self.oracle
        return dataclasses.replace(
            self.received.counters(),
            pending_gtids_refused=self.registry.pending_gtids.refused,
            pending_gtids_expired=self.registry.pending_gtids.expired,
            oracle_comparisons=0 if oracle is None else oracle.comparisons,
            oracle_disagreements={} if oracle is None else dict(oracle.disagreements),
        )

    def snapshot(self, now_us: int, own: DaemonFigures = NO_FIGURES) -> DaemonSnapshot:
        """Freeze the tables (grstats_flow_control included).

        Args:
            now_us: wall clock, microseconds (for ages and UNREACHABLE).
            own: the daemon's own counters, gauges and checks.

        Returns:
            A new immutable DaemonSnapshot.
        """
        counters, gauges, health = self._figures(own, now_us)
        return build_snapshot(self._inputs(now_us), counters=counters, gauges=gauges, health=health)

    def status_view(self, now_us: int, own: DaemonFigures = NO_FIGURES) -> DaemonStatus:
        """What a snapshot taken now would show but its tables: no row is built.

        Args as for `snapshot`; `members` is the members table's row count
        (`member_builders.members_count`), also its "members_known" gauge.
        """
        members = members_count(self._inputs(now_us))
        counters, gauges, health = self._figures(own, now_us)
        return DaemonStatus(
            group_name=self.group or "",
            local_member_id=self.local_member_id or "",
            members=members,
            counters=counters,
            gauges={"members_known": float(members), **gauges},
            health=health,
        )

    def _figures(
        self, own: DaemonFigures, now_us: int
    ) -> tuple[DaemonCounters, dict[str, float], Health]:
        """The snapshot's counters, gauges and health: the tables' with the daemon's own."""
        return snapshot_figures(self.counters(), own, self.registry, self.oracle, now_us)

    def _inputs(self, now_us: int) -> SnapshotInputs:
        return SnapshotInputs(
            now_us,
            group=self.group,
            local_member_id=self.local_member_id,
            local=self._local,
            registry=self.registry,
            flow=self.flow,
            gtids=self.gtids,
            disagreements={} if self.oracle is None else dict(self.oracle.by_member),
            commit_rows=self._commit_rows,
            channel_errors=self.channel_errors,
        )
