"""One rate limiter for every repeating log line: at most one per interval per key.

Strategy: pure state, no clock (time is an argument, monotonic seconds) and no
lock (a caller shared across threads holds its own, as `history.stats` does).
What it refuses is counted, and the next admitted line reports that count as
`suppressed`, so a rate-limited log never hides how often a fault happened.

Bound: one entry per key; callers key by event name (a fixed set), never by
values from the bus or a client.
"""

from __future__ import annotations

__all__ = ["RateLimit"]


class RateLimit:
    """Admit one occurrence per `interval_s` per key; count the ones refused between.

    Args:
        interval_s: the least time between two admitted occurrences of one key.
    """

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._next_at: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def admit(self, now: float, key: str = "") -> int | None:
        """Whether to log this occurrence of `key` now.

        Args:
            now: monotonic seconds.
            key: which event (each limited on its own).

        Returns:
            None to stay quiet (the occurrence is counted), else how many were
            held back since the last admitted one.
        """
        if now < self._next_at.get(key, float("-inf")):
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._next_at[key] = now + self.interval_s
        return self._suppressed.pop(key, 0)

    def reset(self, key: str = "") -> int:
        """Forget `key` (its fault is over): its next occurrence is admitted at once.

        Returns:
            How many were held back since it was last admitted.
        """
        self._next_at.pop(key, None)
        return self._suppressed.pop(key, 0)
