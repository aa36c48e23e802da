"""grstats_member_commit_path over the last minute: expected values by hand.

A member's counters for 70 s, one report a second: 100 rounds a second of
2 ms each up to t = 30 s, then 200 a second of 5 ms each; a certification GC
run of 10 ms every 10 s.
"""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core.commitpath import commit_path_minute, commit_path_row, commit_path_window
from protocol import CommitPathCounters, CommitPathReport
from tests.fixtures.member_tables import LOCAL, local_sample, make_tables

T0 = 1_700_000_000_000_000
SECOND = 1_000_000
M1 = "11111111-1111-1111-1111-111111111111"


def _at(t: int) -> CommitPathReport:
    slow = min(t, 30)
    fast = max(0, t - 30)
    return CommitPathReport(
        T0 + t * SECOND,
        CommitPathCounters(
            consensus_proposals=100 * slow + 200 * fast,
            consensus_time_us=100 * slow * 2000 + 200 * fast * 5000,
            gc_runs=t // 10,
            gc_time_us=(t // 10) * 10_000,
        ),
    )


def _fed(last: int) -> tuple[tuple[CommitPathReport, ...], tuple[CommitPathReport, ...]]:
    window: tuple[CommitPathReport, ...] = ()
    minute: tuple[CommitPathReport, ...] = ()
    for t in range(last + 1):
        window = commit_path_window(window, _at(t))
        minute = commit_path_minute(minute, _at(t))
    return window, minute


def test_the_last_minute_beside_the_last_period() -> None:
    window, minute = _fed(70)
    row = commit_path_row(M1, window, None, minute)
    # anchors at 0, 5, 10, ... 70: the newest a minute old is t = 10
    assert row["PERIOD_SECONDS_1M"] == 60.0
    # rounds: 1000 at t = 10, 3000 + 200 x 40 = 11000 at t = 70
    assert row["CONSENSUS_PER_SECOND_1M"] == pytest.approx(10_000 / 60)
    # time: 2 s at t = 10, 6 s + 40 s at t = 70 -> 44 s over 10000 rounds
    assert row["CONSENSUS_MEAN_SECONDS_1M"] == pytest.approx(0.0044)
    # GC: runs 1 -> 7, 10 ms each
    assert row["CERTIFICATION_GC_PER_SECOND_1M"] == pytest.approx(0.1)
    assert row["CERTIFICATION_GC_MEAN_SECONDS_1M"] == pytest.approx(0.010)
    assert "CERTIFICATION_GC_SHARE_1M" not in row  # background: not shared out
    # no data messages shown: no transactions known, nothing shared out
    assert row["TRANSACTIONS_PER_SECOND_1M"] is None and row["CONSENSUS_SHARE_1M"] is None
    assert row["BEFORE_BEGIN_PER_SECOND_1M"] is None  # not shown: NULL
    # the last period (t = 69 -> 70) is the fast phase alone
    assert row["PERIOD_SECONDS"] == 1.0
    assert row["CONSENSUS_PER_SECOND"] == 200.0
    assert row["CONSENSUS_MEAN_SECONDS"] == pytest.approx(0.005)


def test_the_minute_keeps_its_anchor_until_a_newer_one_is_a_minute_old() -> None:
    window, minute = _fed(72)
    row = commit_path_row(M1, window, None, minute)
    assert row["PERIOD_SECONDS_1M"] == 62.0  # t = 15 is only 57 s old
    # rounds 1000 -> 3000 + 200 x 42 = 11400
    assert row["CONSENSUS_PER_SECOND_1M"] == pytest.approx(10_400 / 62)


def test_under_a_minute_the_figures_cover_what_is_known() -> None:
    window, minute = _fed(20)
    row = commit_path_row(M1, window, None, minute)
    assert row["PERIOD_SECONDS_1M"] == 20.0
    assert row["CONSENSUS_PER_SECOND_1M"] == 100.0


def test_the_minute_is_bounded_whatever_the_period() -> None:
    minute: tuple[CommitPathReport, ...] = ()
    longest = 0
    for tenth in range(3000):  # 5 minutes of reports every 0.1 s
        report = dataclasses.replace(_at(0), at_us=T0 + tenth * SECOND // 10)
        minute = commit_path_minute(minute, report)
        longest = max(longest, len(minute))
    # anchors 5 s apart; when t = 65 s is one, they are t = 5, 10, ... 65: 13
    assert longest == 13
    assert commit_path_minute(minute, None) == ()  # the section stopped


def test_the_local_members_row_has_the_minute() -> None:
    tables = make_tables()
    for t in range(71):
        report = _at(t)
        sample = dataclasses.replace(
            local_sample(), sampled_at_us=report.at_us, commit_path=report.counters
        )
        tables.set_local(sample, incarnation=1, seq=t + 1)
    (row,) = tables.snapshot(T0 + 70 * SECOND).table("grstats_member_commit_path")
    assert row["MEMBER_ID"] == LOCAL
    assert row["PERIOD_SECONDS_1M"] == 60.0
    assert row["CONSENSUS_PER_SECOND_1M"] == pytest.approx(10_000 / 60)
