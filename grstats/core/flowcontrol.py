"""Group Replication's flow control in QUOTA mode (PROTOCOL.md section 9), pure.

Strategy: one `FlowControl` object is one member's Flow_control_module: stats
messages go in with `receive` (stamped with the current step number, counted
as a hold when the sender reports QUOTA mode and a queue over *our*
thresholds — trap 20), and `step` runs one acting tick and returns the quota
for the next period (0 = unlimited). Both the simulated group model (to
throttle its writers) and every daemon's replay (to attribute the throttling)
use this one implementation.

Invariants, all from MySQL: entries are purged only inside the holds branch,
comparing `stamp < step - 10` in unsigned 64-bit arithmetic (trap 17: during
the first steps every entry is purged on a hold); the quota after subtracting
the overshoot is at least 1; factors are doubles, results truncated toward
zero; a step with mode DISABLED zeroes quota and used. No clock, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "MAXTPS",
    "MODE_DISABLED",
    "MODE_QUOTA",
    "FlowControl",
    "FlowControlSettings",
    "FlowEntry",
    "StepResult",
    "capacity_floor",
    "needs_flow_control",
    "quota_from_capacity",
]

MAXTPS = 2_147_483_647
MODE_DISABLED = 0  # PipelineStats.flow_control_mode values (item 12)
MODE_QUOTA = 1
EXPIRY_STEPS = 10  # entries not updated for this many steps are purged on a hold
_U64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class FlowControlSettings:
    """MySQL's group_replication_flow_control_* variables, with MySQL's defaults.

    Errors raise ValueError("<field>: <reason>") so the config loader can name the key.
    """

    mode: str = "QUOTA"
    period: int = 1
    certifier_threshold: int = 25000
    applier_threshold: int = 25000
    hold_percent: int = 10
    release_percent: int = 50
    member_quota_percent: int = 0
    min_quota: int = 0
    min_recovery_quota: int = 0
    max_quota: int = 0

    def __post_init__(self) -> None:
        if self.mode not in ("QUOTA", "DISABLED"):
            raise ValueError(f"mode: expected QUOTA or DISABLED, got {self.mode!r}")
        bounds = {
            "period": (1, 60),
            "certifier_threshold": (0, MAXTPS),
            "applier_threshold": (0, MAXTPS),
            "hold_percent": (0, 100),
            "release_percent": (0, 1000),
            "member_quota_percent": (0, 100),
            "min_quota": (0, MAXTPS),
            "min_recovery_quota": (0, MAXTPS),
            "max_quota": (0, MAXTPS),
        }
        for name, (lo, hi) in bounds.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"{name}: expected an integer {lo}-{hi}, got {value!r}")
        if self.min_quota and self.max_quota and self.min_quota > self.max_quota:
            raise ValueError("min_quota: must not exceed max_quota")


@dataclass(frozen=True, slots=True)
class FlowEntry:
    """What flow control reads of one member's last stats message."""

    waiting_certification: int
    waiting_apply: int
    delta_certified: int
    delta_applied: int
    delta_local: int
    mode: int = MODE_QUOTA


def needs_flow_control(entry: FlowEntry, settings: FlowControlSettings) -> bool:
    """Whether a receiver counts a hold for this message (sender's mode, our thresholds)."""
    return entry.mode == MODE_QUOTA and (
        entry.waiting_certification > settings.certifier_threshold
        or entry.waiting_apply > settings.applier_threshold
    )


@dataclass(frozen=True, slots=True)
class StepResult:
    """One acting tick: the new quota (0 = unlimited) and what led to it."""

    quota: int
    holds: int
    extra: int
    writers: int = 0
    capacity: int = 0
    purged: tuple[str, ...] = ()


@dataclass(slots=True)
class FlowControl:
    """One member's flow-control state; `step` once per period, `receive` per message.

    Args:
        settings: the thresholds and percentages (the receiver's own).
        step_number: MySQL's m_stamp (0 when Group Replication starts).
    """

    settings: FlowControlSettings = field(default_factory=FlowControlSettings)
    step_number: int = 0
    quota: int = 0
    used: int = 0
    holds: int = 0
    entries: dict[str, tuple[FlowEntry, int]] = field(default_factory=dict)

    def receive(self, member: str, entry: FlowEntry) -> bool:
        """Store a member's stats stamped with the current step; True if it counts a hold."""
        self.entries[member] = (entry, self.step_number)
        hold = needs_flow_control(entry, self.settings)
        if hold:
            self.holds += 1
        return hold

    def step(self, used: int | None = None) -> StepResult:
        """Run one acting tick (the caller calls it every `period` seconds).

        Args:
            used: local commits counted against the quota during the period;
                None keeps `self.used`.

        Returns:
            The new quota and the figures it came from.
        """
        if used is not None:
            self.used = used
        holds, self.holds = self.holds, 0
        self.step_number += 1
        s = self.settings
        if s.mode != "QUOTA":
            self.quota = self.used = 0
            return StepResult(0, holds, 0)
        size, used_now = self.quota, self.used
        self.quota = self.used = 0
        extra = used_now - size if size > 0 and used_now > size else 0
        writers = capacity = 0
        purged: list[str] = []
        if holds > 0:
            quota, writers, capacity, purged = self._throttle(extra)
        elif size > 0 and s.release_percent > 0 and size * (1 + s.release_percent / 100) < MAXTPS:
            grown = int(size * (1 + s.release_percent / 100))
            quota = grown if grown > size else size + 1
        else:
            quota = 0
        if s.max_quota > 0:
            quota = min(quota if quota > 0 else s.max_quota, s.max_quota)
        self.quota = quota
        return StepResult(quota, holds, extra, writers, capacity, tuple(purged))

    def _throttle(self, extra: int) -> tuple[int, int, int, list[str]]:
        s = self.settings
        oldest = (self.step_number - EXPIRY_STEPS) & _U64  # unsigned, as in MySQL
        cert_min = apply_min = safe = MAXTPS
        writers = non_recovering = 0
        purged = [m for m, (_, stamp) in self.entries.items() if stamp < oldest]
        for m in purged:
            del self.entries[m]
        for entry, _ in self.entries.values():
            if entry.mode != MODE_QUOTA:
                continue
            dc, da = entry.delta_certified, entry.delta_applied
            if (
                s.certifier_threshold > 0
                and dc > 0
                and entry.waiting_certification > s.certifier_threshold
            ):
                cert_min = min(cert_min, dc)
            if dc > 0:
                safe = min(safe, dc)
            if s.applier_threshold > 0 and da > 0 and entry.waiting_apply > s.applier_threshold:
                apply_min = min(apply_min, da)
                non_recovering += 1
            if da > 0:
                safe = min(safe, da)
            if entry.delta_local > 0:
                writers += 1
        writers = max(1, writers)
        capacity = cert_min if 0 < cert_min < apply_min else apply_min
        capacity = max(min(capacity, safe), capacity_floor(s, recovering=non_recovering == 0))
        return quota_from_capacity(capacity, writers, extra, s), writers, capacity, purged


def capacity_floor(settings: FlowControlSettings, *, recovering: bool) -> int:
    """The least capacity a hold step uses (MySQL's Flow_control_module::flow_control_step).

    Args:
        settings: the flow-control variables.
        recovering: no member's applier queue is over its threshold (then
            min_recovery_quota, when set, is the floor).

    Returns:
        5 % of the smaller threshold, else min_recovery_quota or min_quota.
    """
    s = settings
    floor = int(0.05 * min(s.certifier_threshold, s.applier_threshold))
    if s.min_recovery_quota > 0 and recovering:
        floor = s.min_recovery_quota
    if s.min_quota > 0:
        floor = s.min_quota
    return floor


def quota_from_capacity(
    capacity: int, writers: int, extra: int, settings: FlowControlSettings
) -> int:
    """A hold step's quota per writer from the group's capacity (flow_control_step).

    Args:
        capacity: transactions per period the slowest member keeps up with (floored).
        writers: members that committed locally in the period (>= 1).
        extra: commits beyond the previous quota, taken off this one.
        settings: the flow-control variables.

    Returns:
        truncate(capacity x (1 - hold_percent)), capped at max_quota, split among
        the writers, less `extra`, at least 1.
    """
    s = settings
    quota = int(capacity * (1 - s.hold_percent / 100))
    if s.max_quota > 0:
        quota = min(quota, s.max_quota)
    if writers > 1:
        if s.member_quota_percent == 0:
            quota //= writers
        else:
            quota = int(quota * (s.member_quota_percent / 100))
    return quota - extra if quota - extra > 1 else 1
