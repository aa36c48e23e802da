"""Pure state: the all-member tables of one daemon (or collector), no I/O.

Strategy: the daemon feeds three things in — the local source's samples
(`set_local`), every bus message (`receive`) and the passage of time
(`expire`) — and reads one frozen `DaemonSnapshot` out. `receive` is
`core.admission.admit` (is the message well-formed and for us?) followed by
`core.registry.MemberRegistry` (is it news? keep it), and the snapshot is
`core.snapshot_builder.build_snapshot`. Nothing here reads a clock, logs or
touches a socket, so every rule is unit-tested with plain values.

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
from collections.abc import Mapping
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
from grstats.core.columns import REJECT_REASONS
from grstats.core.commitpath import CommitPathRows, commit_path_minute, commit_path_window
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.flowreplay import DEFAULT_CATCH_UP_LIMIT_S, FlowReplay
from grstats.core.gtidrows import GtidDivergenceTable, MemberGtidInput
from grstats.core.health import PENDING_GTIDS_FULL, SERVER_ORACLE, UNCHECKED, Health
from grstats.core.member_builders import drains
from grstats.core.oracle import ServerOracle
from grstats.core.registry import Applied, MemberRegistry, RegistryLimits
from grstats.core.sample import LocalSample, in_group
from grstats.core.snapshot import DaemonCounters, DaemonSnapshot
from grstats.core.snapshot_builder import LocalView, SnapshotInputs, build_snapshot
from grstats.core.topics import STATS_KIND
from protocol import CommitPathReport, GtidState, MemberStatsState

Accepted = Applied  # an envelope that changed the tables
#: Distinct unknown `ext` section names counted one by one; later ones share OTHER_SECTION.
MAX_DROPPED_NAMES = 32
OTHER_SECTION = "(other)"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
ReceiveResult = Applied | Rejected | Ignored

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
        gtid_interval_s: seconds between GTID sets on the bus (the errant
            transactions' grace window is built on it).
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
    ) -> None:
        self.group = group
        self.local_member_id = local_member_id
        self.limits = limits or Limits()
        self.registry = MemberRegistry(registry_limits or RegistryLimits(), local_group=group)
        self._local: LocalView | None = None if group is None else LocalView()
        self._local_version = 0
        self.accepted_total = 0
        self.own_total = 0
        self.clamped_total = 0
        self.lag_malformed_total = 0
        self.applier_malformed_total = 0
        self.gtids_malformed_total = 0
        self.commit_path_malformed_total = 0
        self.rejected_total: dict[str, int] = dict.fromkeys(REJECT_REASONS, 0)
        self.ext_dropped: dict[str, int] = {}
        # the replay of MySQL's flow control (a daemon's group; a collector's are in _replays)
        self.flow: FlowReplay | None = None
        self._flow_settings = flow_control or FlowControlSettings()
        self._catch_up_limit_s = catch_up_limit_s
        self._replays: dict[str, FlowReplay] = {}  # collector: one per group the registry holds
        if group is not None:
            self.flow = FlowReplay(self._flow_settings, catch_up_limit_s)
        # grstats_member_gtids: daemon only, like the flow replay (one group)
        self.gtids: GtidDivergenceTable | None = None
        if group is not None:
            self.gtids = GtidDivergenceTable(gtid_interval_s)
        # our own GTID state as the others see it: taken once per gtid_interval
        self._local_gtids: GtidState | None = None
        self._gtid_interval_us = round(gtid_interval_s * 1_000_000)
        self._local_state = MemberStatsState()
        # the local server's view of each member against its daemon (daemon only)
        self.oracle: ServerOracle | None = None if group is None else ServerOracle()
        self._commit_rows = CommitPathRows()  # rebuilt per member when its reports change

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
        before = () if self._local is None else self._local.commit_path
        minute = () if self._local is None else self._local.commit_path_minute
        report = (
            None
            if sample.commit_path is None
            else CommitPathReport(sample.sampled_at_us, sample.commit_path)
        )
        self._local = LocalView(
            sample,
            incarnation,
            seq,
            commit_path_window(before, report),
            commit_path_minute(minute, report),
        )
        self._local_version += 1
        if self.flow is not None and in_group(sample.member.state):
            # MySQL steps, then sends its own stats, which come back to it (trap 21)
            self.flow.step(sample.sampled_at_us)
            self._local_state = self._local_state.apply(sample.stats)
            own = sample.member.member_id or self.local_member_id or ""
            self.flow.receive(own, self._local_state, sample.sampled_at_us)
        if self.oracle is not None and sample.server_view:
            heard = {key[1]: True for key, _ in self.registry.items()}
            self.oracle.check(sample.server_view, heard)
        if self.gtids is not None:
            self.gtids.observe(self._gtid_inputs(sample), sample.sampled_at_us)

    def _gtid_inputs(self, sample: LocalSample) -> list[MemberGtidInput]:
        """Every member's last GTID state (ours from the sample), unreachable ones marked."""
        inputs = []
        own = sample.member.member_id or self.local_member_id or ""
        fresh, last = sample.gtid_state, self._local_gtids
        if fresh is not None and (
            last is None or fresh.at_us - last.at_us >= self._gtid_interval_us
        ):
            # judged at the others' cadence: the same staleness for every member,
            # and the rule runs once per interval, not once per tick
            self._local_gtids = fresh
        if self._local_gtids is not None and own:
            inputs.append(MemberGtidInput(own, sample.member.state, self._local_gtids))
        for _key, remote in self.registry.items():
            if remote.gtid_state is None:
                continue
            state = remote.envelope.member.state
            if self.registry.unreachable(remote, sample.sampled_at_us):
                state = "UNREACHABLE"
            inputs.append(MemberGtidInput(remote.envelope.member.id, state, remote.gtid_state))
        return inputs

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
        )
        if isinstance(msg, Admitted):
            for name in msg.dropped_ext:
                count_dropped_ext(self.ext_dropped, name)
            if msg.clamped:
                self.clamped_total += 1
            result = self.registry.apply(msg, received_at_us, retained=retained)
        elif isinstance(msg, Status):
            self.registry.status(msg.key, online=msg.online)
            result = Ignored("online" if msg.online else "offline")
        elif isinstance(msg, Rejected):
            result = self.registry.reject(msg.key, msg.reason, msg.detail)
        else:
            result = msg
        if isinstance(result, Applied):
            if result.kind == STATS_KIND:
                self.accepted_total += 1
                key = msg.key if isinstance(msg, Admitted) else None
                remote = None if key is None else self.registry.get(key)
                if key is not None and remote is not None:
                    replay = self._replay_for(key[0])
                    if replay is not None:
                        replay.receive(key[1], remote.state, received_at_us)
                    if self.oracle is not None:
                        self.oracle.bus(key[1], remote.state)
                if result.lag_error:
                    self.lag_malformed_total += 1  # stats applied, lag refused
                if result.applier_error:
                    self.applier_malformed_total += 1  # stats applied, applier refused
                if result.commit_path_error:
                    self.commit_path_malformed_total += 1  # stats applied, section refused
            if result.gtid_state_error:
                self.gtids_malformed_total += 1  # stats (or GTID sets) applied, ext.gtids not
        elif isinstance(result, Rejected):
            self.rejected_total[result.reason] += 1
        elif result.why == "own":
            self.own_total += 1
        return result

    def status(self, member_id: str, status: str, *, group: str | None = None) -> None:
        """Apply a status message: `offline` removes the member (and tombstones it).

        Args:
            member_id: the member's server UUID.
            status: "online" or "offline".
            group: the member's group (required in collector mode; ours by default).
        """
        key: MemberKey = (group if group is not None else (self.group or ""), member_id)
        self.registry.status(key, online=status == "online")

    def expire(self, now_us: int) -> list[MemberKey]:
        """Forget members silent longer than forget_after; returns the keys removed."""
        removed = self.registry.expire(now_us)
        for group, member_id in removed:
            replay = self.replay(group)
            if replay is not None:
                replay.forget(member_id)
            if self.oracle is not None:
                self.oracle.forget(member_id)
        return removed

    def tick(self, now_us: int) -> list[MemberKey]:
        """Once a period: `expire`; replays forget departed members; a collector steps its own.

        Returns:
            The keys `expire` removed.
        """
        removed = self.expire(now_us)
        if self.group is None:
            for group in [g for g in self._replays if not self.registry.group_size(g)]:
                del self._replays[group]  # its last member left: bounded by the registry
        replays = dict(self._replays)
        if self.group is not None and self.flow is not None:
            replays[self.group] = self.flow
        for group, replay in replays.items():
            for member_id in replay.members():  # departed (offline, ERROR): gone here too
                if member_id != self.local_member_id and not self.registry.get((group, member_id)):
                    replay.forget(member_id)
            if self.group is None:
                replay.step(now_us)  # a member steps on its local samples (set_local)
        return removed

    def gtid_history(self, member_id: str, now_us: int) -> dict[str, Any] | None:
        """The history's GTID columns of `member_id` now (None: no verdict, a collector).

        The grace uses the flow-control replay's queues and rates, as the snapshot does.
        """
        if self.gtids is None or self.flow is None:
            return None
        flow = self.flow
        rows = (flow.row(m) for m in flow.members())
        return self.gtids.history(member_id, now_us, drains(tuple(r for r in rows if r)))

    def replay(self, group: str) -> FlowReplay | None:
        """The flow-control replay of `group` (None: none yet, or not ours)."""
        if self.group is not None:
            return self.flow if group == self.group else None
        return self._replays.get(group)

    def _replay_for(self, group: str) -> FlowReplay | None:
        if self.group is not None:
            return self.flow
        replay = self._replays.get(group)
        if replay is None and self.registry.group_size(group):
            replay = self._replays[group] = FlowReplay(self._flow_settings, self._catch_up_limit_s)
        return replay

    def remote_state(self, member_id: str, *, group: str | None = None) -> MemberStatsState | None:
        """The stored MemberStatsState of a remote member (deltas included), or None."""
        remote = self.registry.get((group if group is not None else (self.group or ""), member_id))
        return None if remote is None else remote.state

    def counters(self) -> DaemonCounters:
        """Receive-path totals (bus and publish counters are the daemon's)."""
        oracle = self.oracle
        return DaemonCounters(
            envelopes_accepted=self.accepted_total,
            envelopes_own=self.own_total,
            envelopes_clamped=self.clamped_total,
            envelopes_lag_malformed=self.lag_malformed_total,
            envelopes_applier_malformed=self.applier_malformed_total,
            envelopes_gtids_malformed=self.gtids_malformed_total,
            envelopes_commit_path_malformed=self.commit_path_malformed_total,
            rejected=dict(self.rejected_total),
            ext_dropped=dict(self.ext_dropped),
            pending_gtids_refused=self.registry.pending_gtids.refused,
            pending_gtids_expired=self.registry.pending_gtids.expired,
            oracle_comparisons=0 if oracle is None else oracle.comparisons,
            oracle_disagreements={} if oracle is None else dict(oracle.disagreements),
        )

    def _pending_gauges(self) -> dict[str, float]:
        return {"pending_gtids_bytes": float(self.registry.pending_gtids.bytes)}

    def _health(self, health: Health) -> Health:
        """`health` with the tables' own checks: pending GTID sets, the server oracle."""
        pending = self.registry.pending_gtids
        health = health.check(
            PENDING_GTIDS_FULL,
            *(
                (
                    f"bus: pending gtids hold {pending.bytes} of {pending.max_bytes} bytes "
                    "(newcomers refused)",
                )
                if pending.full()
                else ()
            ),
        )
        # degraded while the server's view of a member disagrees with its daemon
        # (which members and columns: the details and grstats_member_status
        # SERVER_DISAGREEMENTS)
        if self.oracle is None:
            return health
        return health.check(SERVER_ORACLE, *self.oracle.reasons())

    def snapshot(
        self,
        now_us: int,
        *,
        bus_reconnects: int = 0,
        messages_published: int = 0,
        applier_workers_dropped: int = 0,
        sections_unsendable: Mapping[str, int] | None = None,
        gauges: Mapping[str, float] | None = None,
        health: Health = UNCHECKED,
    ) -> DaemonSnapshot:
        """Freeze the tables (grstats_flow_control included).

        Args:
            now_us: wall clock, microseconds (for ages and UNREACHABLE).
            bus_reconnects, messages_published, applier_workers_dropped,
                sections_unsendable: the daemon's own counters.
            gauges: point-in-time values; "members_known" is filled here.
            health: the daemon's checks (the tables add their own).

        Returns:
            A new immutable DaemonSnapshot.
        """
        inputs = SnapshotInputs(
            now_us,
            group=self.group,
            local_member_id=self.local_member_id,
            local=self._local,
            registry=self.registry,
            flow=self.flow,
            gtids=self.gtids,
            disagreements={} if self.oracle is None else dict(self.oracle.by_member),
            commit_rows=self._commit_rows,
        )
        return build_snapshot(
            inputs,
            counters=dataclasses.replace(
                self.counters(),
                bus_reconnects=bus_reconnects,
                messages_published=messages_published,
                applier_workers_dropped=applier_workers_dropped,
                sections_unsendable=dict(sections_unsendable or {}),
            ),
            gauges={**(gauges or {}), **self._pending_gauges()},
            health=self._health(health),
        )


def count_dropped_ext(counts: dict[str, int], name: str) -> None:
    """Count one unknown `ext` section by name, the names themselves bounded.

    The names come from the bus (untrusted): at most `MAX_DROPPED_NAMES`
    distinct ones of 1-64 characters `[A-Za-z0-9_.-]` are counted one by one;
    any other (too long, other characters, or past the bound) counts as
    `OTHER_SECTION`, so neither memory nor /metrics label values grow with them.
    """
    if not (0 < len(name) <= 64 and _NAME_CHARS.issuperset(name)) or (
        name not in counts and len(counts) >= MAX_DROPPED_NAMES
    ):
        name = OTHER_SECTION
    counts[name] = counts.get(name, 0) + 1
