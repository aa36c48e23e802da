"""grstats_member_commit_path rows from two reports; every expected value by hand."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core.commitpath import commit_path_row, commit_path_window
from protocol import (
    CommitPathCounters,
    CommitPathReport,
)
from tests.fixtures.commit_path import (
    NEW,
    REMOTE,
    T0,
    TOPIC,
    WINDOW,
    receive_report,
    remote_envelope,
)
from tests.fixtures.member_tables import local_sample, make_tables

M1 = "11111111-1111-1111-1111-111111111111"


def test_rates_means_and_shares_over_the_period() -> None:
    row = commit_path_row(M1, WINDOW)
    assert row["MEMBER_ID"] == M1
    assert row["PERIOD_SECONDS"] == 10.0
    # consensus: 500 rounds and 1 s in 10 s
    assert row["CONSENSUS_PER_SECOND"] == 50.0
    assert row["CONSENSUS_MEAN_SECONDS"] == pytest.approx(0.002)
    # messages: 500 data + 100 control, 2.0 s + 0.2 s of round trips
    assert row["ROUND_TRIP_PER_SECOND"] == 60.0
    assert row["ROUND_TRIP_MEAN_SECONDS"] == pytest.approx(2.2 / 600)
    assert row["CERTIFICATION_GC_PER_SECOND"] == 1.0
    assert row["CERTIFICATION_GC_MEAN_SECONDS"] == pytest.approx(0.01)
    assert row["BEFORE_BEGIN_PER_SECOND"] == 10.0
    assert row["BEFORE_BEGIN_MEAN_SECONDS"] == pytest.approx(0.002)
    assert row["AFTER_SYNC_PER_SECOND"] == 0.0
    assert row["AFTER_SYNC_MEAN_SECONDS"] is None  # no wait: no mean
    assert row["FLOW_CONTROL_PER_SECOND"] == 0.5
    assert row["FLOW_CONTROL_MEAN_SECONDS"] == pytest.approx(0.1)
    # the server shows no AFTER_TERMINATION figures: NULL, not 0
    assert row["AFTER_TERMINATION_PER_SECOND"] is None
    assert row["AFTER_TERMINATION_SHARE"] is None
    # its own transactions: 500 data messages in 10 s, their round trips 2.0 s; each one's
    # overhead: its round trip, its BEFORE wait, its flow-control hold -- 2.0 + 0.2 + 0 +
    # 0.5 = 2.7 s over 500, 5.4 ms; GC runs in the background, on no transaction's path
    assert row["TRANSACTIONS_PER_SECOND"] == 50.0
    assert row["COMMIT_OVERHEAD_SECONDS"] == pytest.approx(0.0054)
    assert row["CONSENSUS_SHARE"] == pytest.approx(2.0 / 2.7)
    assert "CERTIFICATION_GC_SHARE" not in row
    assert row["BEFORE_BEGIN_SHARE"] == pytest.approx(0.2 / 2.7)
    assert row["AFTER_SYNC_SHARE"] == 0.0
    assert row["FLOW_CONTROL_SHARE"] == pytest.approx(0.5 / 2.7)
    # alone, with no baseline yet, nothing is abnormal: named against the group only
    assert row["DOMINANT"] == ""
    assert row["CONSENSUS_SECONDS_TOTAL"] == 3.0
    assert row["ROUND_TRIP_SECONDS_TOTAL"] == pytest.approx(6.3)
    assert row["AFTER_TERMINATION_SECONDS_TOTAL"] is None


def test_one_report_shows_totals_only() -> None:
    row = commit_path_row(M1, WINDOW[1:])
    assert row["CONSENSUS_SECONDS_TOTAL"] == 3.0
    assert row["PERIOD_SECONDS"] is None
    assert row["CONSENSUS_PER_SECOND"] is None
    assert row["DOMINANT"] is None


def test_a_counter_that_went_back_gives_null_not_a_negative_rate() -> None:
    restarted = CommitPathCounters(consensus_proposals=3, consensus_time_us=9000, gc_runs=30)
    row = commit_path_row(M1, (WINDOW[1], CommitPathReport(T0 + 20_000_000, restarted)))
    assert row["CONSENSUS_PER_SECOND"] is None
    assert row["CONSENSUS_SHARE"] is None
    assert row["DOMINANT"] == ""  # nothing measurable was spent
    assert row["TRANSACTIONS_PER_SECOND"] is None  # its data messages are not shown


def test_the_window_keeps_the_last_two_newer_reports() -> None:
    a, b = WINDOW
    c = CommitPathReport(T0 + 20_000_000, NEW)
    assert commit_path_window((), a) == (a,)
    assert commit_path_window((a,), b) == (a, b)
    assert commit_path_window((a, b), c) == (b, c)
    assert commit_path_window((a, b), a) == (a, b)  # not newer: kept as it was
    assert commit_path_window((a, b), None) == ()  # the member stopped sending it


def test_the_period_spans_a_second_at_least() -> None:
    at = [CommitPathReport(T0 + i * 250_000, NEW) for i in range(7)]  # every 0.25 s
    window: tuple[CommitPathReport, ...] = ()
    for report in at:
        window = commit_path_window(window, report)
    # at 1.5 s: the newest report at least 1 s older is the one at 0.5 s
    assert window == tuple(at[2:])
    assert commit_path_row(M1, window)["PERIOD_SECONDS"] == 1.0
    # under a second: the totals only
    assert commit_path_row(M1, tuple(at[:4]))["PERIOD_SECONDS"] is None


# -- through the receive path: admission, registry, snapshot ---------------------


def test_a_remote_members_two_reports_make_its_row() -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    for seq, report in enumerate(WINDOW, start=1):
        receive_report(tables, seq, report)
    rows = tables.snapshot(WINDOW[1].at_us).table("grstats_member_commit_path")
    assert [r["MEMBER_ID"] for r in rows] == [REMOTE]
    assert rows[0]["CONSENSUS_PER_SECOND"] == 50.0
    assert rows[0]["DOMINANT"] == ""  # the only member: nothing to call abnormal


def test_a_malformed_section_is_counted_and_the_stats_applied() -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    tables.receive(TOPIC, remote_envelope(1, T0, commit_path=[9, T0, []]), T0)
    snapshot = tables.snapshot(T0)
    assert snapshot.counters.malformed["commit_path"] == 1
    assert snapshot.counters.envelopes_accepted == 1
    assert snapshot.table("grstats_member_commit_path") == ()


def test_a_members_row_is_rebuilt_only_when_its_reports_change() -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    for seq, report in enumerate(WINDOW, start=1):
        receive_report(tables, seq, report)
    first = tables.snapshot(WINDOW[1].at_us).table("grstats_member_commit_path")
    again = tables.snapshot(WINDOW[1].at_us + 500_000).table("grstats_member_commit_path")
    assert again[0] is first[0]  # nothing new from the member: the same row
    # a third report: consensus 1500 -> 1800 rounds, 3.0 -> 3.9 s, over 5 s
    third = dataclasses.replace(NEW, consensus_proposals=1800, consensus_time_us=3_900_000)
    receive_report(tables, 3, CommitPathReport(WINDOW[1].at_us + 5_000_000, third))
    (row,) = tables.snapshot(WINDOW[1].at_us + 5_000_000).table("grstats_member_commit_path")
    assert row is not first[0]
    assert row["PERIOD_SECONDS"] == 5.0
    assert row["CONSENSUS_PER_SECOND"] == 60.0
    assert row["CONSENSUS_MEAN_SECONDS"] == pytest.approx(0.003)
    assert row["CONSENSUS_SECONDS_TOTAL"] == pytest.approx(3.9)
    # no data message of its own in those 5 s: idle, nothing shared out
    assert row["TRANSACTIONS_PER_SECOND"] == 0.0
    assert row["CONSENSUS_SHARE"] is None and row["DOMINANT"] == ""
    # the last minute runs from the first report (15 s): 800 rounds, 1.9 s
    assert row["PERIOD_SECONDS_1M"] == 15.0
    assert row["CONSENSUS_MEAN_SECONDS_1M"] == pytest.approx(1.9 / 800)
