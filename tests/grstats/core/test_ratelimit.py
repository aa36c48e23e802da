"""core.ratelimit: one line per interval per key, the rest counted."""

from __future__ import annotations

from grstats.core.ratelimit import RateLimit


def test_one_per_interval_and_the_next_reports_what_was_held_back() -> None:
    limit = RateLimit(60.0)
    # 13 occurrences at t = 100, 110, ..., 220
    admitted = [(t, limit.admit(float(t))) for t in range(100, 221, 10)]
    assert [(t, n) for t, n in admitted if n is not None] == [(100, 0), (160, 5), (220, 5)]


def test_keys_are_limited_independently() -> None:
    limit = RateLimit(10.0)
    assert limit.admit(0.0, "a") == 0
    assert limit.admit(0.0, "b") == 0
    assert limit.admit(5.0, "a") is None


def test_reset_admits_the_next_at_once_and_returns_the_count() -> None:
    limit = RateLimit(10.0)
    for _ in range(4):
        limit.admit(1.0)
    assert limit.reset() == 3
    assert limit.admit(2.0) == 0
