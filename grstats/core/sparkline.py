"""The live page's sparklines: a member's recent series as SVG path data, drawn by no library.

Strategy: x is time over the last window (the right edge is now), y the
value over the largest of the lines drawn together (0 at the bottom), so the
certifier and applier queues share one scale. A gap in a series (an unknown
value, a column of the window with no point) starts a new subpath rather
than drawing a line across it. The
path data holds only numbers and the letters M and L, so it is safe in an
attribute whatever the series held; the page sets it as the `d` of a
`<path>` (server-side on the first paint, by its script later).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from grstats.core.recent import MemberSeries
from protocol.humanize import duration

__all__ = ["HEIGHT", "SPARKS", "VIEWBOX", "WIDTH", "Spark", "spark", "sparks_of"]

WIDTH: Final = 120  # CSS pixels the page draws a sparkline in
HEIGHT: Final = 28
# The path's own coordinates: x a column of the window (a point every 10 s
# over 15 minutes), y 0 (the top) to Y_RES (zero), whole numbers: a full line
# is ~0.6 KB, so nine members' four lines weigh ~20 KB. The SVG's viewBox
# maps them onto WIDTH x HEIGHT with a margin for the stroke.
X_RES: Final = 90
Y_RES: Final = 50
VIEWBOX: Final = f"0 -3 {X_RES} {Y_RES + 6}"

# spark name -> (its series in core.recent, how its largest value reads)
SPARKS: Final[Mapping[str, tuple[tuple[str, ...], str]]] = {
    "queues": (("certifier_queue", "applier_queue"), "count"),
    "applied": (("applied_rate",), "rate"),
    "lag": (("lag",), "duration"),
}


@dataclass(frozen=True, slots=True)
class Spark:
    """One sparkline: a path per series, and what its top stands for."""

    paths: tuple[str, ...]
    top: str  # "max 1,355" / "max 87.9/s" / "max 9.6 s"; "" when nothing is known


def _top_text(top: float, kind: str) -> str:
    if kind == "count":
        return f"max {round(top):,}"
    if kind == "rate":
        return f"max {top:.1f}/s" if top < 100 else f"max {top:,.0f}/s"
    return f"max {duration(top)}"


def _xs(t: Sequence[float], start: float, window: float) -> list[int]:
    """The column of each point (-1: before the window), shared by a member's lines."""
    scale = X_RES / window
    return [min(X_RES, math.floor(scale * (when - start))) if when >= start else -1 for when in t]


def _columns(xs: Sequence[int], values: Sequence[float]) -> tuple[dict[int, float], set[int]]:
    """x -> the largest value in that column (a peak is never averaged away), and the
    columns after an unknown value (where the pen is lifted)."""
    columns: dict[int, float] = {}
    breaks: set[int] = set()
    unknown_before = False
    for x, value in zip(xs, values, strict=True):
        if x < 0:
            continue
        if value != value:  # noqa: PLR0124 - NaN (unknown), without a call per point
            unknown_before = True
            continue
        held = columns.get(x)
        if held is None:
            columns[x] = value
            if unknown_before:
                breaks.add(x)
        elif value > held:
            columns[x] = value
        unknown_before = False
    return columns, breaks


def _path(columns: Mapping[int, float], breaks: set[int], top: float) -> str:
    out: list[tuple[str, int, int]] = []  # (M or L, x, y)
    scale = Y_RES / top if top > 0 else 0.0
    for x in sorted(columns):
        y = Y_RES - round(scale * max(columns[x], 0.0))
        pen = "M" if not out or x in breaks else "L"
        if pen == "L" and len(out) >= 2 and out[-1][0] == "L" and out[-1][2] == out[-2][2] == y:
            out[-1] = ("L", x, y)  # a flat run is its two ends
        else:
            out.append((pen, x, y))
    text = []
    for i, (pen, x, y) in enumerate(out):
        text.append(f"{pen}{x} {y}")
        if pen == "M" and (i + 1 == len(out) or out[i + 1][0] == "M"):
            text.append(f"L{x} {y}")  # a point alone: a segment of no length, drawn as a dot
    return "".join(text)


def _spark(xs: Sequence[int], lines: Sequence[Sequence[float]], kind: str) -> Spark:
    drawn = [_columns(xs, values) for values in lines]
    top = max((max(columns.values()) for columns, _ in drawn if columns), default=math.nan)
    paths = tuple(_path(columns, breaks, top) for columns, breaks in drawn)
    return Spark(paths, "" if math.isnan(top) else _top_text(top, kind))


def spark(series: MemberSeries, name: str, now_s: float, window_s: float) -> Spark:
    """The sparkline `name` (a key of SPARKS) of one member's series.

    Args:
        series: the member's recent points (`core.recent`).
        name: which sparkline.
        now_s: the right edge (Unix seconds).
        window_s: the span drawn, ending at `now_s`.

    Returns:
        Its paths (one per series of SPARKS[name], "" for one with no point)
        and the text of its top.
    """
    names, kind = SPARKS[name]
    xs = _xs(series.t, now_s - window_s, window_s)
    return _spark(xs, [getattr(series, n) for n in names], kind)


def sparks_of(series: MemberSeries | None, now_s: float, window_s: float) -> dict[str, Spark]:
    """Every sparkline of SPARKS for one member (empty ones when it has no series)."""
    if series is None:
        return {name: Spark(tuple("" for _ in SPARKS[name][0]), "") for name in SPARKS}
    xs = _xs(series.t, now_s - window_s, window_s)
    return {
        name: _spark(xs, [getattr(series, n) for n in names], kind)
        for name, (names, kind) in SPARKS.items()
    }
