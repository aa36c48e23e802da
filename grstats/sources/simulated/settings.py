"""Knobs of the simulated group model (grstats.sources.simulated.model).

Every daemon of one group must be given equal settings: the model is a pure
function of them and of time. Validation errors are ValueError("<field>:
<reason>") so the config loader can name the TOML key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.sample import MEMBER_STATES

__all__ = [
    "ACTIONS",
    "CONSISTENCY_LEVELS",
    "DEFAULT_EPOCH_S",
    "MODES",
    "ScriptEvent",
    "SimulationSettings",
    "version_tuple",
]

DEFAULT_EPOCH_S = 1_767_225_600  # 2026-01-01T00:00:00Z
MODES = ("multi-primary", "single-primary")
ACTIONS = (
    "commit",
    "conflict",
    "applier_stop",
    "set_state",
    "certifier_queue",
    # GTID divergence (gtidstate.py)
    "errant_write",
    "inject_errant",
    "purge",
    "restore_backup",
    "provision_from",
    # the member's sessions' group_replication_consistency (commitpath.py)
    "consistency",
)
CONSISTENCY_LEVELS = ("BEFORE", "AFTER", "BEFORE_AND_AFTER")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_VERSION_PARTS = re.compile(r"\d+")
_MAX_PEAK_RATE = 100_000.0  # tx/s per member; keeps the model's integer arithmetic in int64


def version_tuple(version: str) -> tuple[int, int, int] | None:
    """A MySQL version text ("8.0.22", "8.4.3-log") as (major, minor, patch); None if odd.

    The model takes an odd `version` for the newest server: it shows everything.
    """
    parts = _VERSION_PARTS.findall(version)[:3]
    if len(parts) != 3:
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


@dataclass(frozen=True, slots=True)
class ScriptEvent:
    """One scripted happening; `at_s` is absolute Unix seconds.

    Actions: "commit" (`member` proposes `count` transactions that certify
    positively), "conflict" (`count` transactions negatively certified),
    "applier_stop" (the member's applier stops for `duration_s`),
    "set_state" (the member shows `state`; for `duration_s` if > 0, then ONLINE;
    OFFLINE and ERROR leave the group's view, coming back joins it),
    "certifier_queue" (the member's COUNT_TRANSACTIONS_IN_QUEUE is `count` for
    `duration_s` if > 0, else from then on); and the GTID divergence of
    gtidstate.py: "errant_write" (`count` local transactions the group never
    certified), "inject_errant" (the others receive `member`'s errant GTIDs),
    "purge" (binary logs purged up to now), "restore_backup" (restored from a
    backup `duration_s` old), "provision_from" (re-provisioned from `donor`, a
    member UUID, as by a clone: its executed and purged sets become the
    donor's); "consistency" (the member's sessions run with
    group_replication_consistency `level` for `duration_s` if > 0, else from
    then on: its consistency waits rise, commitpath.py).
    """

    at_s: float
    member: str
    action: str
    count: int = 1
    duration_s: float = 0.0
    state: str = "ONLINE"
    level: str = ""
    donor: str = ""


@dataclass(frozen=True, slots=True)
class SimulationSettings:
    """Every knob of the group model; daemons of one group must share them all.

    Capacities are transactions per second; None means automatic: normal
    members keep up with 1.25x the hot-hour remote rate, the slow member with
    1.5x the normal-hour remote rate (so its queue builds in hot hours).
    `flow_control` is the group's flow control (config [flow_control], as the
    daemons' replay uses it): in mode QUOTA the writers are throttled (flow.py).
    Errors raise ValueError("<field>: <reason>").
    """

    group: str = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    members: tuple[str, ...] = (
        "11111111-1111-1111-1111-111111111111",
        "22222222-2222-2222-2222-222222222222",
        "33333333-3333-3333-3333-333333333333",
    )
    seed: int = 1
    mode: str = "multi-primary"
    write_rate: float = 20.0
    conflict_probability: float = 0.01
    hot_hours: tuple[int, ...] = (10, 11, 14, 15)
    hot_factor: float = 3.0
    weekend_factor: float = 0.6
    slow_member: str | None = None
    slow_capacity: float | None = None
    applier_capacity: float | None = None
    hosts: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    version: str = "8.4.3"
    epoch_s: int = DEFAULT_EPOCH_S
    stop_at_s: float | None = None
    script: tuple[ScriptEvent, ...] = ()
    scripted: bool = False
    flow_control: FlowControlSettings = field(default_factory=FlowControlSettings)
    # the network each member's consensus rounds see (commitpath.py): one-way ms
    link_latency_ms: float = 0.5
    slow_link_member: str | None = None
    slow_link_ms: float = 25.0

    def __post_init__(self) -> None:
        def fail(key: str, reason: str) -> ValueError:
            return ValueError(f"{key}: {reason}")

        members = tuple(str(m).lower() for m in self.members)
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "group", str(self.group).lower())
        object.__setattr__(self, "hot_hours", tuple(self.hot_hours))
        object.__setattr__(self, "script", tuple(self.script))
        if not _UUID.fullmatch(self.group):
            raise fail("group", f"expected a dashed UUID, got {self.group!r}")
        if not members:
            raise fail("members", "at least one member is required")
        for m in members:
            if not _UUID.fullmatch(m):
                raise fail("members", f"expected dashed UUIDs, got {m!r}")
        if len(set(members)) != len(members):
            raise fail("members", "duplicate member")
        if self.mode not in MODES:
            raise fail("mode", f"expected one of {', '.join(MODES)}, got {self.mode!r}")
        if self.hot_factor <= 0 or self.weekend_factor <= 0:
            raise fail("hot_factor" if self.hot_factor <= 0 else "weekend_factor", "must be > 0")
        peak = self.write_rate * max(1.0, self.hot_factor) * max(1.0, self.weekend_factor)
        if not 0.0 <= peak <= _MAX_PEAK_RATE:  # keeps the integer spreading within int64
            raise fail("write_rate", f"expected 0 .. {_MAX_PEAK_RATE:g} tx/s (hot hours included)")
        if not 0.0 <= self.conflict_probability <= 1.0:
            raise fail("conflict_probability", "expected 0.0 .. 1.0")
        if any(not 0 <= h <= 23 for h in self.hot_hours):
            raise fail("hot_hours", "expected UTC hours 0 .. 23")
        if self.slow_member is not None:
            object.__setattr__(self, "slow_member", self.slow_member.lower())
            if self.slow_member not in members:
                raise fail("slow_member", "not one of members")
        if self.slow_link_member is not None:
            object.__setattr__(self, "slow_link_member", self.slow_link_member.lower())
            if self.slow_link_member not in members:
                raise fail("slow_link_member", "not one of members")
        for key in ("link_latency_ms", "slow_link_ms"):
            if not 0 <= getattr(self, key) <= 60_000:
                raise fail(key, "expected 0 .. 60000 ms")
        for key in ("slow_capacity", "applier_capacity"):
            value = getattr(self, key)
            if value is not None and value <= 0:
                raise fail(key, "must be > 0")
        for key in self.hosts:
            if key.lower() not in members:
                raise fail("hosts", f"{key!r} is not one of members")
        for ev in self.script:
            self._check_event(ev, fail)

    def _check_event(self, ev: ScriptEvent, fail: Any) -> None:
        if ev.member.lower() not in self.members:
            raise fail("script", f"member {ev.member!r} is not one of members")
        if ev.action not in ACTIONS:
            raise fail("script", f"action {ev.action!r} not in {', '.join(ACTIONS)}")
        if ev.action in ("commit", "conflict", "errant_write"):
            if ev.count < 1:
                raise fail("script", "count must be >= 1")
            if self.mode == "single-primary" and (
                ev.action == "conflict"
                or (ev.action == "commit" and ev.member.lower() != self.members[0])
            ):
                raise fail("script", "single-primary: only the primary writes, no conflicts")
        if ev.action == "certifier_queue" and ev.count < 0:
            raise fail("script", "count must be >= 0")
        if ev.duration_s < 0:
            raise fail("script", "duration_s must be >= 0")
        if ev.action == "consistency" and ev.level not in CONSISTENCY_LEVELS:
            raise fail("script", f"level {ev.level!r} not in {', '.join(CONSISTENCY_LEVELS)}")
        if ev.action == "provision_from":
            donor = ev.donor.lower()
            if donor not in self.members:
                raise fail("script", f"donor {ev.donor!r} is not one of members")
            if donor == ev.member.lower():
                raise fail("script", "a member cannot be provisioned from itself")
        if ev.action == "set_state" and ev.state not in MEMBER_STATES:
            raise fail("script", f"state {ev.state!r} not in {', '.join(MEMBER_STATES)}")
