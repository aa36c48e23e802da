"""The daemon's own health as /healthz and /metrics show it.

Strategy: health is derived, never stored: `health_reasons` reads the
gauges of one immutable `DaemonSnapshot`, and `ApiStats` is a frozen copy of
the API server's own counters, so /healthz and a scrape taken from the same
snapshot always agree.

Snapshot gauges read here (all optional except `bus_connected`; an absent
gauge means "not tracked", never "down"):
- `bus_connected` 0/1: 0 degrades health with reason "bus_disconnected".
- `source_up` 0/1: 0 degrades health with reason "source_down".
- `history_healthy` 0/1: 0 degrades health with reason "history_degraded".
- `degraded_<reason>` 0/1: any other fault the daemon tracks; nonzero
  degrades health with reason `<reason>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grstats.core.snapshot import DaemonSnapshot

__all__ = [
    "API_REFUSE_REASONS",
    "API_TIMEOUT_PHASES",
    "KNOWN_HEALTH_REASONS",
    "ApiStats",
    "health_reasons",
    "tracked_health_reasons",
]

# gauge -> the reason reported while that gauge is 0.
_REQUIRED_UP = {
    "bus_connected": "bus_disconnected",
    "source_up": "source_down",
    "history_healthy": "history_degraded",
}
KNOWN_HEALTH_REASONS = tuple(_REQUIRED_UP.values())
_DEGRADED_PREFIX = "degraded_"

# Why the API refused a connection: over the connection cap, a request head
# past the size bound, an unparseable request line.
API_REFUSE_REASONS = ("limit", "too_large", "bad_request")
# Where a connection ran out of time: reading the request head, writing the answer.
API_TIMEOUT_PHASES = ("read", "write")


def health_reasons(snapshot: DaemonSnapshot) -> tuple[str, ...]:
    """Why the daemon is not healthy right now; empty when it is.

    Args:
        snapshot: the snapshot whose gauges describe the daemon.

    Returns:
        The active reasons, known ones first in KNOWN_HEALTH_REASONS order,
        then `degraded_<reason>` gauges sorted by name.
    """
    gauges = snapshot.gauges
    reasons = [
        reason
        for gauge, reason in _REQUIRED_UP.items()
        if gauges.get(gauge, 0 if gauge == "bus_connected" else 1) == 0
    ]
    reasons += sorted(
        key.removeprefix(_DEGRADED_PREFIX)
        for key, value in gauges.items()
        if key.startswith(_DEGRADED_PREFIX) and value
    )
    return tuple(reasons)


def tracked_health_reasons(snapshot: DaemonSnapshot) -> tuple[str, ...]:
    """Every reason the snapshot has a gauge for (active or not), for a stable series set."""
    gauges = snapshot.gauges
    tracked = [reason for gauge, reason in _REQUIRED_UP.items() if gauge in gauges]
    if "bus_connected" not in gauges:
        tracked.insert(0, "bus_disconnected")
    tracked += sorted(
        key.removeprefix(_DEGRADED_PREFIX) for key in gauges if key.startswith(_DEGRADED_PREFIX)
    )
    return tuple(tracked)


@dataclass(frozen=True, slots=True)
class ApiStats:
    """The API server's own counters at one instant.

    `open` connections now; `accepted` since start; `refused[reason]` for
    every reason in API_REFUSE_REASONS; `timed_out[phase]` for every phase in
    API_TIMEOUT_PHASES.
    """

    open: int = 0
    accepted: int = 0
    max_connections: int = 0
    refused: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(API_REFUSE_REASONS, 0))
    timed_out: Mapping[str, int] = field(
        default_factory=lambda: dict.fromkeys(API_TIMEOUT_PHASES, 0)
    )
