"""The daemon's tick schedule (grstats.daemon.ticks) on a hand-driven loop clock.

Expected values by hand from the documented rule: tick k is due at
start + k x period; a late tick is not caught up, the missed ticks are
skipped and the next one keeps the grid (timing never drifts).
"""

from __future__ import annotations

from grstats.daemon.ticks import TickSchedule


def test_ticks_on_time_are_due_one_period_apart_on_the_starts_grid() -> None:
    schedule = TickSchedule(start=100.0, period=0.5)
    assert schedule.tick == 0
    assert schedule.next_due(now=100.2) == 100.5
    assert schedule.next_due(now=100.7) == 101.0
    assert schedule.tick == 2


def test_a_late_tick_skips_the_missed_ones_and_keeps_the_grid() -> None:
    schedule = TickSchedule(start=100.0, period=1.0)
    # tick 0 ran until 103.4: ticks 1, 2 and 3 (due 101, 102, 103) are skipped
    assert schedule.next_due(now=103.4) == 104.0
    assert schedule.tick == 4
    assert schedule.next_due(now=104.1) == 105.0
