"""The daemon's tick schedule on the event loop's clock.

Strategy: tick k is due at start + k x period, computed from the start and
never from the previous tick, so timing does not drift. A tick that ran late
is not caught up by a burst: the missed ticks are skipped and the next one
is the first on the grid still ahead (the tick number jumps, so the
publisher's GTID schedule, counted in ticks, stays on time too).
"""

from __future__ import annotations


class TickSchedule:
    """Which tick is current and when the next is due.

    Args:
        start: the loop time of tick 0.
        period: seconds between ticks (> 0).
    """

    def __init__(self, start: float, period: float) -> None:
        self.start = start
        self.period = period
        self.tick = 0

    def next_due(self, now: float) -> float:
        """Move to the next tick (skipping those already past at `now`); its due time."""
        self.tick += 1
        due = self.start + self.tick * self.period
        if due < now:  # late: skip the missed ticks instead of bursting
            self.tick = int((now - self.start) / self.period) + 1
            due = self.start + self.tick * self.period
        return due
