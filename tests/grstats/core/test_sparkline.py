"""core.sparkline: a member's recent series as SVG path data, coordinates worked by hand."""

from __future__ import annotations

import math

from grstats.core.recent import MemberSeries
from grstats.core.sparkline import sparks_of

NAN = math.nan


def _series(**kw: tuple[float, ...]) -> MemberSeries:
    t = kw.pop("t")
    empty = tuple(NAN for _ in t)
    fields = ("certifier_queue", "applier_queue", "checked_rate", "conflicts_rate")
    figures = {name: kw.get(name, empty) for name in (*fields, "applied_rate", "lag")}
    return MemberSeries(t=t, **figures)


def test_queues_share_one_scale_and_a_gap_lifts_the_pen() -> None:
    # window 100 s ending at 1000: x = floor(90 * (t - 900) / 100); y = 50 - round(50 * v / 100)
    series = _series(
        t=(900.0, 950.0, 1000.0),
        applier_queue=(0.0, 50.0, 100.0),
        certifier_queue=(10.0, NAN, 20.0),
    )
    queues = sparks_of(series, 1000.0, 100.0)["queues"]
    assert queues.paths == ("M0 45L0 45M90 40L90 40", "M0 50L45 25L90 0")  # lone points: dots
    assert queues.top == "max 100"


def test_points_older_than_the_window_are_not_drawn() -> None:
    series = _series(t=(850.0, 950.0, 1000.0), lag=(500.0, 3.0, 1.5))
    lag = sparks_of(series, 1000.0, 100.0)["lag"]
    assert lag.paths == ("M45 0L90 25",)  # top 3 s; 1.5 s half way up
    assert lag.top == "max 3.0 s"


def test_a_rate_top_reads_per_second() -> None:
    series = _series(t=(950.0, 1000.0), applied_rate=(NAN, 87.94))
    applied = sparks_of(series, 1000.0, 100.0)["applied"]
    assert applied.paths == ("M90 0L90 0",)
    assert applied.top == "max 87.9/s"


def test_a_member_without_points_draws_nothing() -> None:
    for spark in sparks_of(None, 1000.0, 900.0).values():
        assert all(p == "" for p in spark.paths)
        assert spark.top == ""
    flat = sparks_of(_series(t=(1000.0,), applier_queue=(0.0,)), 1000.0, 900.0)["queues"]
    assert flat.paths == ("", "M90 50L90 50")  # all zero: on the base line
    assert flat.top == "max 0"


def test_a_flat_run_is_its_two_ends_and_a_peak_is_kept() -> None:
    t = tuple(900.0 + 5 * i for i in range(21))  # x = 0, 4, 9, 13, ... 45 (t=950) ... 90
    values = tuple(100.0 if when == 950.0 else 7.0 for when in t)  # y(7) = 50 - round(3.5)
    (path,) = sparks_of(_series(t=t, lag=values), 1000.0, 100.0)["lag"].paths
    assert path == "M0 46L40 46L45 0L49 46L90 46"


def test_two_points_in_one_column_draw_the_larger() -> None:
    series = _series(t=(900.0, 900.5, 1000.0), applier_queue=(10.0, 30.0, 60.0))
    assert sparks_of(series, 1000.0, 100.0)["queues"].paths[1] == "M0 25L90 0"
