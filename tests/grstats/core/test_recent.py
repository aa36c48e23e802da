"""core.recent: the live page's last 15 minutes per member, bounded in bytes."""

from __future__ import annotations

import math
import tracemalloc

from grstats.core import columns as col
from grstats.core.recent import MemberPoint, RecentSeries, points_of
from grstats.core.snapshot import (
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    DaemonSnapshot,
)

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"


def _point(
    member: str = A, reported: float = 0.0, applied: float | None = 0.0, **kw: float | None
) -> MemberPoint:
    figures: dict[str, float | None] = {
        "certifier_queue": 0.0,
        "applier_queue": 0.0,
        "checked": 0.0,
        "conflicts": 0.0,
        "lag_s": None,
    }
    figures.update(kw)
    return MemberPoint(
        group=GROUP, member_id=member, reported_s=reported, applied=applied, **figures
    )


def test_rates_are_increases_over_the_time_between_reports_not_between_points() -> None:
    recent = RecentSeries(step_s=5.0)
    # points 5 s apart, but the second report arrived 4 s after the first and
    # the third 6 s after the second: 40 more applied over 4 s, then 120 over 6 s
    recent.observe(100.0, [_point(reported=99.5, applied=1000.0)])
    recent.observe(105.0, [_point(reported=103.5, applied=1040.0)])
    recent.observe(110.0, [_point(reported=109.5, applied=1160.0)])
    series = recent.series(GROUP, A)
    assert series is not None
    assert series.t == (100.0, 105.0, 110.0)
    assert math.isnan(series.applied_rate[0])
    assert series.applied_rate[1:] == (10.0, 20.0)
    assert series.last("applied_rate") == 20.0


def test_a_counter_that_went_down_gives_no_rate_never_a_negative_one() -> None:
    recent = RecentSeries()
    recent.observe(0.0, [_point(reported=0.0, applied=500.0)])
    recent.observe(5.0, [_point(reported=5.0, applied=3.0)])  # the member restarted
    recent.observe(10.0, [_point(reported=10.0, applied=13.0)])
    series = recent.series(GROUP, A)
    assert series is not None
    assert math.isnan(series.applied_rate[1])
    assert series.applied_rate[2] == 2.0


def test_a_silent_member_has_no_rate_rather_than_zero() -> None:
    recent = RecentSeries()
    recent.observe(0.0, [_point(reported=0.0, applied=10.0)])
    recent.observe(5.0, [_point(reported=0.0, applied=10.0)])  # no new report since
    series = recent.series(GROUP, A)
    assert series is not None
    assert series.last("applied_rate") is None


def test_the_ring_keeps_the_last_window_oldest_first() -> None:
    recent = RecentSeries(window_s=20.0, step_s=5.0)  # 5 points
    for i in range(8):
        recent.observe(5.0 * i, [_point(reported=5.0 * i, applier_queue=float(i))])
    series = recent.series(GROUP, A)
    assert series is not None
    assert recent.capacity == 5
    assert series.t == (15.0, 20.0, 25.0, 30.0, 35.0)
    assert series.applier_queue == (3.0, 4.0, 5.0, 6.0, 7.0)


def test_due_once_a_step() -> None:
    recent = RecentSeries(step_s=5.0)
    assert recent.due(0.0)
    recent.observe(0.0, [])
    assert not recent.due(4.9)
    assert recent.due(5.0)


def test_members_past_the_byte_bound_are_refused_and_counted() -> None:
    probe = RecentSeries(window_s=60.0, step_s=5.0)
    recent = RecentSeries(window_s=60.0, step_s=5.0, max_bytes=2 * probe.member_bytes + 10)
    assert recent.max_members == 2
    members = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(5)]
    recent.observe(0.0, [_point(m) for m in members])
    recent.observe(5.0, [_point(m) for m in members])
    assert recent.refused == 6  # three members refused, twice
    assert recent.bytes <= 2 * probe.member_bytes + 10
    assert recent.series(GROUP, members[0]) is not None
    assert recent.series(GROUP, members[4]) is None


def test_a_member_silent_for_a_window_is_dropped_and_its_room_reused() -> None:
    probe = RecentSeries(window_s=20.0)
    recent = RecentSeries(window_s=20.0, max_bytes=probe.member_bytes)
    recent.observe(0.0, [_point(A)])
    recent.observe(5.0, [_point(B)])
    assert recent.refused == 1
    recent.observe(25.0, [_point(B)])  # A unseen since 0: dropped
    recent.observe(30.0, [_point(B)])
    assert recent.series(GROUP, A) is None
    assert recent.series(GROUP, B) is not None


def test_the_bytes_counted_per_member_cover_what_it_takes() -> None:
    recent = RecentSeries()  # 15 minutes, 181 points
    members = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(50)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for step in range(recent.capacity + 3):
            recent.observe(5.0 * step, [_point(m, reported=5.0 * step) for m in members])
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used <= len(members) * recent.member_bytes
    assert recent.bytes == len(members) * recent.member_bytes


def _snapshot() -> DaemonSnapshot:
    return DaemonSnapshot(
        taken_at_us=1_000_000_000,
        group_name=GROUP,
        local_member_id=A,
        tables={
            MEMBER_STATS_TABLE: (
                {
                    col.MEMBER_ID: A,
                    col.COUNT_TRANSACTIONS_IN_QUEUE: 3,
                    col.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE: 40,
                    col.COUNT_TRANSACTIONS_CHECKED: 100,
                    col.COUNT_CONFLICTS_DETECTED: 2,
                    col.COUNT_TRANSACTIONS_REMOTE_APPLIED: 90,
                },
                {col.MEMBER_ID: B},
            ),
            MEMBER_STATUS_TABLE: (
                {col.MEMBER_ID: A, col.GROUP_NAME: GROUP, col.LAST_SEEN_AGE_SECONDS: 0.25},
            ),
            MEMBER_LAG_TABLE: (
                {
                    col.MEMBER_ID: A,
                    col.CHANNEL_NAME: col.GROUP_REPLICATION_CHANNEL,
                    col.REPLICATION_LAG_SECONDS: 1.5,
                },
                {col.MEMBER_ID: A, col.CHANNEL_NAME: "other", col.REPLICATION_LAG_SECONDS: 99.0},
            ),
        },
    )


def test_points_of_a_snapshot_take_the_group_replication_channel_lag_and_the_report_age() -> None:
    a, b = points_of(_snapshot())
    assert a == MemberPoint(GROUP, A, 999.75, 3.0, 40.0, 100.0, 2.0, 90.0, 1.5)
    assert b == MemberPoint(GROUP, B, 1000.0, None, None, None, None, None, None)
