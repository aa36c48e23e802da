"""Every daemon's replay of MySQL's flow control: who holds the group back, and for how long.

Strategy: a daemon receives every member's Pipeline_stats message — exactly
the inputs each MySQL member's Flow_control_module uses — so it runs the same
`core.flowcontrol.FlowControl` over them: `receive` per accepted stats
message (remote ones from the registry, the local one from each local
sample, since a member's own message counts too — trap 21), `step` once per
period (on each local sample, as MySQL steps when it sends its own stats).

Holds are not a proxy: MySQL counts a hold when it *receives* a message whose
sender reports QUOTA and a queue over the receiver's threshold
(handle_stats_data), which the replay sees exactly. What it cannot see is
each writer's quota use, so the overshoot subtraction ("extra") is taken as
0: GROUP_QUOTA is the quota before a writer's own overshoot.

Quota active is not writers held. A quota > 0 (THROTTLING) only caps each
writer; a transaction is throttled when it is *held*: MySQL's
Flow_control_module::do_wait (plugin/group_replication/src/pipeline_stats.cc)
makes a commit wait only once the writer's commits of the period pass the
quota (quota_used > quota_size, quota_size != 0), and only that wait counts in
Gr_flow_control_throttle_count (plugin_handlers/metrics_handler.cc,
add_flow_control_throttle_stats; WL#16239). At MySQL's default thresholds the
least quota a hold grants (5 % of 25000, less 10 %: 1125 per period) is above
most groups' write rate: the quota is active for hours and never holds a
commit. WRITERS_HELD is 1 for a period in which a writer's own commits
(delta local of its last message) reached the quota that was in force: the
larger of the quotas of the two previous steps (a message read between two
steps tells of the period before; the larger one never claims a hold the
smaller quota alone would explain), both limited.

Attribution: a member is a bottleneck while its last message (not older than
the 10-step expiry) needs flow control; BOTTLENECK_SINCE is when the replay
first saw it so; THROTTLED_SECONDS adds the time between two steps to every
member that was a bottleneck while writers were held (not merely while the
quota was active).

Two times for a lagging member, kept apart: FAILOVER_SECONDS is how long it
would take to apply its backlog if the writes stopped now (as after a
failover to it): applier queue / apply capacity, the capacity being the
highest apply rate the member showed over the last `CAPACITY_WINDOW_US` (a
rate taken while it kept up is only a floor of its capacity, so the figure
errs long); FAILOVER_READY says whether that is within
`failover_catch_up_limit`. CATCH_UP_ETA_SECONDS is the time to empty the
queue *under the current load*: apply rate = delta applied / seconds between
the member's messages, incoming rate = apply rate + queue growth rate, ETA =
queue / (apply - incoming), infinite ("never at this rate") when the queue
does not shrink -- an honest answer for a member that keeps up with a small
steady queue, and no alarm by itself. A rate spans at least `RATE_WINDOW_US`
of messages (their deltas summed) and holds between two such spans: at a
period under a second, counters that move once a second would otherwise read
0 and several times the real rate by turns. Time is an argument.

Invariants: per member at most `MAX_CAPACITY_SPANS` rates kept (a span is
at least RATE_WINDOW_US long, so the window holds fewer).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from grstats.core import columns as col
from grstats.core.flowcontrol import (
    EXPIRY_STEPS,
    FlowControl,
    FlowControlSettings,
    FlowEntry,
    certifier_bound,
    needs_flow_control,
)
from grstats.core.lagrows import format_timestamp
from grstats.core.sample import ServerFlowControl
from grstats.core.snapshot import Row
from protocol import MemberStatsState
from protocol.humanize import duration

__all__ = ["CAPACITY_WINDOW_US", "FlowReplay", "entry_of", "failover_seconds"]

DEFAULT_CATCH_UP_LIMIT_S = 60.0
# a second (MySQL's stats period), less a tenth for the jitter of messages a second apart
RATE_WINDOW_US = 900_000
# the apply capacity is the highest rate over this much of the member's recent messages
CAPACITY_WINDOW_US = 60_000_000
MAX_CAPACITY_SPANS = CAPACITY_WINDOW_US // RATE_WINDOW_US + 1


def entry_of(state: MemberStatsState) -> FlowEntry:
    """The flow-control inputs of a stored member state."""
    return FlowEntry(
        waiting_certification=state.transactions_waiting_certification,
        waiting_apply=state.transactions_waiting_apply,
        delta_certified=state.delta_transactions_certified,
        delta_applied=state.delta_transactions_applied,
        delta_local=state.delta_transactions_local,
        mode=state.flow_control_mode,
    )


@dataclass(slots=True)
class _Member:
    entry: FlowEntry
    at_us: int
    step: int
    apply_rate: float | None = None
    incoming_rate: float | None = None
    since_us: int | None = None
    throttled_s: float = 0.0
    # the span the next rates are taken over: its start, the queue then, applied since
    window_us: int = 0
    window_queue: int = 0
    window_applied: int = 0
    # (end of a span, its apply rate) over the last CAPACITY_WINDOW_US
    spans: deque[tuple[int, float]] = field(
        default_factory=lambda: deque(maxlen=MAX_CAPACITY_SPANS)
    )
    fresh: bool = True  # received since the last step

    def capacity(self) -> float | None:
        """The highest apply rate of the window (None: no span completed yet)."""
        return max((rate for _, rate in self.spans), default=None)


@dataclass(slots=True)
class FlowReplay:
    """The replayed flow control of one group, as one daemon sees it.

    Args:
        settings: the group's flow-control variables (ours: trap 20).
        catch_up_limit_s: a member needing longer to empty its applier queue
            is flagged FAILOVER_READY = 0.
    """

    settings: FlowControlSettings = field(default_factory=FlowControlSettings)
    catch_up_limit_s: float = DEFAULT_CATCH_UP_LIMIT_S
    quota: int = 0
    _fc: FlowControl = field(init=False)
    _members: dict[str, _Member] = field(default_factory=dict, init=False)
    _last_step_us: int | None = field(default=None, init=False)
    _limited: bool = field(default=False, init=False)
    _held: bool = field(default=False, init=False)
    _quota_before: int = field(default=0, init=False)  # the quota of the step before last

    def __post_init__(self) -> None:
        self._fc = FlowControl(self.settings)

    def receive(self, member_id: str, state: MemberStatsState, at_us: int) -> None:
        """One accepted stats message of `member_id` (its stored state after it)."""
        entry = entry_of(state)
        self._fc.receive(member_id, entry)
        old = self._members.get(member_id)
        m = _Member(entry, at_us, self._fc.step_number, window_us=at_us)
        m.window_queue = entry.waiting_apply
        if old is not None:
            m.since_us, m.throttled_s = old.since_us, old.throttled_s
            m.apply_rate, m.incoming_rate = old.apply_rate, old.incoming_rate
            m.spans = old.spans
            applied = old.window_applied + entry.delta_applied
            span_us = at_us - old.window_us
            if span_us >= RATE_WINDOW_US:
                dt = span_us / 1e6
                m.apply_rate = max(0.0, applied / dt)
                growth = (entry.waiting_apply - old.window_queue) / dt
                m.incoming_rate = max(0.0, m.apply_rate + growth)
                m.spans.append((at_us, m.apply_rate))
                while m.spans and m.spans[0][0] <= at_us - CAPACITY_WINDOW_US:
                    m.spans.popleft()
            else:  # the span goes on
                m.window_us, m.window_queue = old.window_us, old.window_queue
                m.window_applied = applied
        self._members[member_id] = m

    def members(self) -> tuple[str, ...]:
        """The member ids replayed, sorted."""
        return tuple(sorted(self._members))

    def forget(self, member_id: str) -> None:
        """Drop a member the registry forgot."""
        self._members.pop(member_id, None)

    def step(self, now_us: int) -> int:
        """One acting tick at `now_us`; returns the group quota (0 = unlimited)."""
        dt = 0.0 if self._last_step_us is None else max(0, now_us - self._last_step_us) / 1e6
        self._held = self._writers_held()
        for m in self._members.values():
            if self._held and m.since_us is not None:
                m.throttled_s += dt
            m.fresh = False
        self._quota_before = self.quota
        self.quota = self._fc.step(0).quota
        self._limited = self.quota > 0
        self._last_step_us = now_us
        for m in self._members.values():
            if self._bottleneck(m):
                if m.since_us is None:
                    m.since_us = now_us
            else:
                m.since_us = None
        return self.quota

    def _writers_held(self) -> bool:
        """Whether a writer's commits since the last step reached the quota then in force."""
        before, last = self._quota_before, self.quota
        if before <= 0 or last <= 0:
            return False  # unlimited in one of the two periods: no hold is certain
        limit = max(before, last)
        return any(m.fresh and m.entry.delta_local >= limit for m in self._members.values())

    @property
    def writers_held(self) -> bool:
        """Whether the last step found a writer held by the quota (see the module)."""
        return self._held

    def _fresh(self, m: _Member) -> bool:
        return self._fc.step_number - m.step <= EXPIRY_STEPS

    def _bottleneck(self, m: _Member) -> str:
        if not self._fresh(m) or not needs_flow_control(m.entry, self.settings):
            return ""
        s = self.settings
        cert = m.entry.waiting_certification - s.certifier_threshold
        apply_ = m.entry.waiting_apply - s.applier_threshold
        return "certifier" if certifier_bound(cert, apply_) else "applier"

    def rows(
        self, local_member_id: str = "", server: ServerFlowControl | None = None
    ) -> tuple[Row, ...]:
        """One grstats_flow_control row per member, sorted by member id."""
        return tuple(
            row
            for member_id in sorted(self._members)
            if (row := self.row(member_id, local_member_id, server)) is not None
        )

    def row(
        self, member_id: str, local_member_id: str = "", server: ServerFlowControl | None = None
    ) -> Row | None:
        """The grstats_flow_control row of one member (None: no message of it yet)."""
        m = self._members.get(member_id)
        if m is None:
            return None
        s = self.settings
        e = m.entry
        kind = self._bottleneck(m)
        excess = max(
            e.waiting_certification - s.certifier_threshold,
            e.waiting_apply - s.applier_threshold,
            0,
        )
        eta = _eta(e.waiting_apply, m.apply_rate, m.incoming_rate)
        capacity = m.capacity()
        failover = failover_seconds(e.waiting_apply, capacity)
        local = server if member_id == local_member_id else None
        return {
            col.MEMBER_ID: member_id,
            col.BOTTLENECK: kind,
            col.EXCESS_OVER_THRESHOLD: excess,
            col.GROUP_QUOTA: self.quota,
            col.THROTTLING: int(self._limited),
            col.WRITERS_HELD: int(self._held),
            col.BOTTLENECK_SINCE: None
            if m.since_us is None or not kind
            else format_timestamp(m.since_us),
            col.THROTTLED_SECONDS: round(m.throttled_s, 6),
            col.CERTIFIER_QUEUE: e.waiting_certification,
            col.APPLIER_QUEUE: e.waiting_apply,
            col.INCOMING_RATE: m.incoming_rate,
            col.APPLY_RATE: m.apply_rate,
            col.CATCH_UP_ETA_SECONDS: eta,
            col.CATCH_UP: _catch_up_text(eta),
            col.APPLY_CAPACITY: capacity,
            col.FAILOVER_SECONDS: failover,
            col.FAILOVER_READY: None
            if failover is None
            else int(failover <= self.catch_up_limit_s),
            col.SERVER_THROTTLE_COUNT: None if local is None else local.count,
            col.SERVER_THROTTLE_TIME_SUM: None if local is None else local.time_sum,
            col.SERVER_THROTTLE_ACTIVE_COUNT: None if local is None else local.active_count,
            col.SERVER_THROTTLE_LAST: None if local is None else local.last_throttle,
        }


def failover_seconds(queue: int, capacity: float | None) -> float | None:
    """Seconds to apply `queue` transactions at `capacity` per second, writes stopped.

    Args:
        queue: the applier queue.
        capacity: the member's apply capacity (tx/s); None when not measured yet.

    Returns:
        0 for an empty queue, +inf when the member applied nothing over the
        window (its applier is stopped), None when unknown.
    """
    if queue <= 0:
        return 0.0
    if capacity is None:
        return None
    return queue / capacity if capacity > 0 else math.inf


def _eta(queue: int, apply_rate: float | None, incoming_rate: float | None) -> float | None:
    if queue <= 0:
        return 0.0
    if apply_rate is None or incoming_rate is None:
        return None
    net = apply_rate - incoming_rate
    return queue / net if net > 0 else math.inf


def _catch_up_text(eta: float | None) -> str | None:
    if eta is None:
        return None
    if eta == 0:
        return "caught up"
    if math.isinf(eta):
        return "never at this rate"
    return duration(eta)
