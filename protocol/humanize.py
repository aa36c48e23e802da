"""Durations as a person reads them: `4 h 23 min`, `12 min 5 s`, `0.06 s`.

Strategy: one formatter for every place a person reads a duration -- the
CLI's tables and `--explain`, the live page, the weekly report (which may
import only pyspark, the standard library and `protocol`, hence its home
here). Two units at most, the larger first, each unit's figure whole; below
ten seconds one or two decimals say what a fraction of a second is. A
figure the caller cannot know (None, NaN) is not a duration: it is the
caller's to print; infinity is "never", the one sentence a catch-up ETA
may honestly end in.
"""

from __future__ import annotations

import math

__all__ = ["duration"]

_MINUTE = 60
_HOUR = 3600
_DAY = 86400


def duration(seconds: float) -> str:
    """`seconds` as a person reads it.

    Args:
        seconds: a finite number of seconds, or +/-infinity.

    Returns:
        `0.06 s`, `3.2 s`, `42 s`, `4 min 12 s`, `4 h 23 min`, `2 d 4 h`;
        `never` for +infinity; a negative duration with a leading `-`.

    Raises:
        ValueError: `seconds` is NaN.
    """
    if math.isnan(seconds):
        raise ValueError("a NaN is not a duration")
    if seconds < 0:
        return "-" + duration(-seconds)
    if math.isinf(seconds):
        return "never"
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < _MINUTE:
        return f"{whole} s"
    for big, big_unit, small, small_unit in (
        (_DAY, "d", _HOUR, "h"),
        (_HOUR, "h", _MINUTE, "min"),
        (_MINUTE, "min", 1, "s"),
    ):
        if whole >= big:
            units, rest = divmod(whole, big)
            part = rest // small
            return f"{units} {big_unit} {part} {small_unit}" if part else f"{units} {big_unit}"
    raise AssertionError("unreachable: whole >= 60 here")  # pragma: no cover
