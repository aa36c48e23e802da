"""flowperiods.sustained_periods on scripted sequences of episodes (local Spark, tiny frames).

The rule: a member's consecutive episodes belong to one sustained period
while the gap from the end of one to the start of the next is at most
SUSTAINED_GAP_S (300 s).  Expected periods written by hand per sequence.
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_rollups.flowperiods import SUSTAINED_GAP_S, sustained_periods

pytestmark = pytest.mark.slow

COLUMNS = (
    "group_name",
    "member_id",
    "start_s",
    "end_s",
    "throttled_seconds",
    "bottleneck",
    "excess_max",
    "certifier_queue_max",
    "applier_queue_max",
)
MIDNIGHT = 1_794_873_600  # 2026-11-17 00:00 UTC


def _episode(
    member: str, start: int, end: int, caused: int, kind: str = "applier"
) -> tuple[Any, ...]:
    return ("g", member, start, end, caused, kind, 5, 1, start % 1000)


def _periods(spark: Any, episodes: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    frame = spark.createDataFrame(episodes, list(COLUMNS))
    rows = sustained_periods(frame).orderBy("member_id", "start_s").collect()
    return [
        (r.member_id, r.start_s, r.end_s, r.length_s, r.throttled_seconds, r.episodes, r.bottleneck)
        for r in rows
    ]


def test_release_cycles_of_seconds_merge_into_one_afternoon(spark: Any) -> None:
    assert SUSTAINED_GAP_S == 300
    # 12 s throttled, 8 s released, 12 times: one period of 12 * 20 - 8 = 232 s
    cycles = [_episode("c", 1000 + 20 * i, 1011 + 20 * i, 12) for i in range(12)]
    assert _periods(spark, cycles) == [("c", 1000, 1231, 232, 144, 12, "applier")]


def test_a_gap_of_exactly_the_limit_joins_and_one_second_more_splits(spark: Any) -> None:
    sequence = [
        _episode("c", 0, 9, 10),
        _episode("c", 309, 318, 10),  # 309 - 9 = 300: joined
        _episode("c", 619, 620, 2),  # 619 - 318 = 301: a new period
    ]
    assert _periods(spark, sequence) == [
        ("c", 0, 318, 319, 20, 2, "applier"),
        ("c", 619, 620, 2, 2, 1, "applier"),
    ]


def test_pieces_cut_at_midnight_join_and_members_stay_apart(spark: Any) -> None:
    sequence = [
        _episode("c", MIDNIGHT - 100, MIDNIGHT - 1, 100, "certifier"),
        _episode("c", MIDNIGHT, MIDNIGHT + 49, 50),  # the rollup's cut at midnight
        _episode("b", MIDNIGHT - 50, MIDNIGHT + 10, 61),  # another member, same time
    ]
    assert _periods(spark, sequence) == [
        ("b", MIDNIGHT - 50, MIDNIGHT + 10, 61, 61, 1, "applier"),
        ("c", MIDNIGHT - 100, MIDNIGHT + 49, 150, 150, 2, "applier+certifier"),
    ]


def test_an_episode_inside_a_longer_one_does_not_open_a_period(spark: Any) -> None:
    sequence = [
        _episode("c", 0, 1000, 900),
        _episode("c", 10, 20, 11),  # inside the first (overlapping pieces)
        _episode("c", 1200, 1210, 11),  # 1200 - 1000 = 200 from the first's end: joined
    ]
    assert _periods(spark, sequence) == [("c", 0, 1210, 1211, 922, 3, "applier")]
