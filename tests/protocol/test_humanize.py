"""protocol.humanize.duration: what a person reads, worked out by hand."""

from __future__ import annotations

import math

import pytest

from protocol.humanize import duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0.00 s"),
        (0.06, "0.06 s"),  # 3 transactions at 50 tx/s
        (3.24, "3.2 s"),
        (42.4, "42 s"),
        (59.6, "1 min"),  # rounds to 60 s, then reads as a minute
        (60, "1 min"),
        (252, "4 min 12 s"),
        (3600, "1 h"),
        (15771.0, "4 h 22 min"),  # 4 h = 14,400 s; 1,371 s left = 22 min 51 s
        (4 * 3600 + 23 * 60, "4 h 23 min"),
        (86400 + 4 * 3600 + 59, "1 d 4 h"),
        (29308814, "339 d 5 h"),  # 339 d = 29,289,600 s; 19,214 s left = 5 h 20 min
    ],
)
def test_duration_reads_as_two_units_at_most(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_infinity_is_never_and_a_negative_duration_keeps_its_sign() -> None:
    assert duration(math.inf) == "never"
    assert duration(-252) == "-4 min 12 s"


def test_nan_is_not_a_duration() -> None:
    with pytest.raises(ValueError, match="NaN"):
        duration(math.nan)
