"""Rate-limited logging of repeating history faults."""

from __future__ import annotations

import dataclasses

from grstats.core.history_figures import DropCounts, HistoryFigures
from grstats.history.stats import Counters, RateLimitedLog
from tests.grstats.history.rows import Recorder


def test_repeats_within_the_interval_are_counted_and_reported_on_the_next_line() -> None:
    now = [100.0]
    out = Recorder()
    limiter = RateLimitedLog(out, 60.0, clock=lambda: now[0])
    for second in range(0, 121, 10):  # 13 occurrences at t = 100, 110, ..., 220
        now[0] = 100.0 + second
        limiter.emit("warning", "history.write_failed", error="ENOSPC")
    # logged at 100 (0 held back), 160 (5 held back: 110-150), 220 (5: 170-210)
    assert [c["suppressed"] for _, c in out.lines] == [0, 5, 5]


def test_reset_returns_the_held_back_count_and_logs_the_next_at_once() -> None:
    now = [0.0]
    out = Recorder()
    limiter = RateLimitedLog(out, 60.0, clock=lambda: now[0])
    for _ in range(4):
        limiter.emit("warning", "e")
    assert limiter.reset("e") == 3
    limiter.emit("warning", "e")
    assert len(out.lines) == 2


def test_events_are_limited_independently() -> None:
    out = Recorder()
    limiter = RateLimitedLog(out, 60.0, clock=lambda: 0.0)
    limiter.emit("warning", "a")
    limiter.emit("warning", "b")
    assert [e for e, _ in out.lines] == ["a", "b"]


def test_a_data_fault_shows_for_its_window_then_clears() -> None:
    counters = Counters()
    with counters.lock:
        counters.fault("nulled", "3 value(s) stored as NULL", now=100.0)
        counters.fault("nulled", "4 value(s) stored as NULL", now=200.0)  # one line per kind
        counters.fault("quarantined", "1 file", now=150.0)
    assert counters.recent_faults(60.0, now=215.0) == [
        "4 value(s) stored as NULL"
    ]  # 150 + 60 < 215
    assert sorted(counters.recent_faults(60.0, now=200.0)) == [
        "1 file",
        "4 value(s) stored as NULL",
    ]
    assert counters.recent_faults(60.0, now=261.0) == []


def test_the_live_counters_carry_every_figure_under_its_name() -> None:
    # Counters is the mutable twin of core.history_figures.HistoryFigures: a
    # figure added there and not here would never move
    figures = {f.name for f in dataclasses.fields(HistoryFigures)} - {"rows_buffered", "dropped"}
    drops = {f.name for f in dataclasses.fields(DropCounts)}
    live = {f.name for f in dataclasses.fields(Counters)} - {"recent", "lock"}
    assert live == figures | drops


def test_a_snapshot_copies_each_counter() -> None:
    counters = Counters(rows_written=3, corrupt=2, errors=1, quarantined_last="x")
    counters.values_nulled["c"] = 4
    figures = counters.snapshot(rows_buffered=7)
    assert figures == HistoryFigures(
        rows_written=3,
        rows_buffered=7,
        dropped=DropCounts(corrupt=2),
        errors=1,
        values_nulled={"c": 4},
        quarantined_last="x",
    )
    counters.values_nulled["c"] = 5
    assert figures.values_nulled == {"c": 4}  # a copy, not the live dict
