"""The registry's memory of members that left: departure records and tombstones.

Strategy: the rule of departure is stated once, in `core.registry`; this is
its bookkeeping. A departure record (`Departed`: group, member, OFFLINE |
ERROR | UNREACHABLE, last seen) is kept until the member comes back --
never expiring by time, so an alert on a dead member lasts as long as it is
dead -- and the first record stands (the Will's `offline` after a silent
departure does not turn a crash into a leave). A tombstone marks a member
that announced `offline`, so that a retained stats message delivered
afterwards does not resurrect it (a live one does).

Invariants: both are insertion-ordered and bounded to the `max_entries` most
recent (the oldest go first); pure, no clock.
"""

from __future__ import annotations

from typing import Any

from grstats.core.admission import MemberKey
from grstats.core.snapshot import Departed

__all__ = ["Departures"]


class Departures:
    """Departure records and tombstones, each bounded to `max_entries`."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._tombstones: dict[MemberKey, None] = {}  # an insertion-ordered, bounded set
        self._departed: dict[MemberKey, Departed] = {}

    def departed(self) -> tuple[Departed, ...]:
        """Members that departed and have not come back, in key order."""
        return tuple(self._departed[k] for k in sorted(self._departed))

    def tombstoned(self, key: MemberKey) -> bool:
        """Whether `key` announced `offline` and has not spoken live since."""
        return key in self._tombstones

    def tombstone(self, key: MemberKey) -> None:
        """`key` announced `offline`: ignore its retained stats from now on."""
        self._tombstones[key] = None
        self._trim(self._tombstones)

    def untombstone(self, key: MemberKey) -> None:
        """`key` announced `online`: its retained stats count again."""
        self._tombstones.pop(key, None)

    def record(self, key: MemberKey, state: str, last_seen_us: int) -> None:
        """`key` left the tables as `state` (the first record stands)."""
        if key not in self._departed:
            self._departed[key] = Departed(key[0], key[1], state, last_seen_us)
            self._trim(self._departed)

    def back(self, key: MemberKey) -> None:
        """`key` was accepted again: neither departed nor tombstoned."""
        self._tombstones.pop(key, None)
        self._departed.pop(key, None)

    def _trim(self, bounded: dict[MemberKey, Any]) -> None:
        while len(bounded) > self._max:
            bounded.pop(next(iter(bounded)))
