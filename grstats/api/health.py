"""The API server's own counters, as /healthz and /metrics show them.

Strategy: `ApiStats` is a frozen copy of the API server's counters, so
/healthz and a scrape taken from the same snapshot agree. The daemon's health
itself is typed data the daemon makes (`core.health.Health`); the API only
reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "API_REFUSE_REASONS",
    "API_TIMEOUT_PHASES",
    "ApiStats",
]

# Why the API refused a connection: over the connection cap, a request head
# past the size bound, an unparseable request line.
API_REFUSE_REASONS = ("limit", "too_large", "bad_request")
# Where a connection ran out of time: reading the request head, writing the answer.
API_TIMEOUT_PHASES = ("read", "write")


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
