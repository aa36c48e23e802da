"""The commit-path columns of history rows: core.rows.commit_path_history, the publisher,
the receiver, and files written before them.

Expected values are written by hand: per operation the count and the time (µs) as the
server counts them, the message round trip being the data plus the control messages.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from grstats.core.records import COMMIT_PATH_HISTORY_COLUMNS
from grstats.core.rows import commit_path_due, commit_path_history
from grstats.daemon import receiver as receiver_module
from grstats.daemon.receiver import Receiver
from grstats.history.parquet import read_history, rows_to_table, storable_row
from protocol import (
    CommitPathCounters,
    CommitPathReport,
    Envelope,
    MemberInfo,
    PipelineStats,
    encode_commit_path,
    encode_envelope,
    encode_pipeline_stats,
)
from tests.fixtures.member_tables import GROUP, REMOTE, T0, local_sample, online_tables, topic
from tests.fixtures.publishing import Sink, make_publisher

COUNTERS = CommitPathCounters(
    consensus_proposals=10,
    consensus_time_us=25_000,
    data_messages=7,
    data_rtt_us=14_000,
    control_messages=3,
    control_rtt_us=6_000,
    gc_runs=2,
    gc_time_us=40_000,
    before_begin=1,
    before_begin_us=500,
    after_termination=0,
    after_termination_us=0,
    after_sync=4,
    after_sync_us=800,
    throttled=5,
    throttled_us=900_000,
    messages_sent=10,  # not kept: the round trip counts data + control
)
EXPECTED = {
    "cp_consensus_count": 10,
    "cp_consensus_us": 25_000,
    "cp_round_trip_count": 10,  # 7 data + 3 control
    "cp_round_trip_us": 20_000,  # 14 000 + 6 000
    "cp_certification_gc_count": 2,
    "cp_certification_gc_us": 40_000,
    "cp_before_begin_count": 1,
    "cp_before_begin_us": 500,
    "cp_after_termination_count": 0,
    "cp_after_termination_us": 0,
    "cp_after_sync_count": 4,
    "cp_after_sync_us": 800,
    "cp_flow_control_count": 5,
    "cp_flow_control_us": 900_000,
}


def _columns(row: Any) -> dict[str, Any]:
    return {c: getattr(row, c) for c in COMMIT_PATH_HISTORY_COLUMNS}


def test_the_history_keeps_a_count_and_a_time_per_operation() -> None:
    assert sorted(COMMIT_PATH_HISTORY_COLUMNS) == sorted(EXPECTED)


def test_commit_path_history_sums_each_operations_counters() -> None:
    assert commit_path_history(COUNTERS) == EXPECTED


def test_a_server_without_the_variables_gives_null() -> None:
    # MySQL 8.0: no Gr_* variables at all; or no section
    assert set(commit_path_history(CommitPathCounters()).values()) == {None}
    assert set(commit_path_history(None).values()) == {None}


def test_a_missing_part_of_a_sum_gives_null_not_a_partial_sum() -> None:
    figures = commit_path_history(dataclasses.replace(COUNTERS, control_rtt_us=None))
    assert figures["cp_round_trip_us"] is None
    assert figures["cp_round_trip_count"] == 10
    assert figures["cp_consensus_us"] == 25_000


def test_a_sum_past_int64_is_stored_null_and_named(tmp_path: Path) -> None:
    huge = dataclasses.replace(COUNTERS, data_rtt_us=2**63 - 1)  # + 6 000: past int64
    row = dataclasses.replace(_sample_row(tmp_path), **commit_path_history(huge))
    stored, bad = storable_row(row)
    assert bad == ("cp_round_trip_us",)
    assert stored is not None and stored.cp_round_trip_us is None
    assert stored.cp_consensus_us == 25_000


def _sample_row(tmp_path: Path) -> Any:
    sink = Sink()
    asyncio.run(make_publisher(tmp_path, sink, local_sample()).tick(0, None))
    return sink.rows[0]


def test_a_sample_keeps_the_counters_when_it_is_the_first_of_its_ten_seconds() -> None:
    assert commit_path_due(None, T0 + 3_000_000)  # the member's first
    assert not commit_path_due(T0 + 5_200_000, T0 + 9_900_000)  # same bucket
    assert commit_path_due(T0 + 9_900_000, T0 + 10_100_000)  # a new bucket
    assert commit_path_due(T0 + 3_000_000, T0 + 27_000_000)  # a period past 10 s: all
    assert commit_path_due(T0 - 100_000, T0)  # T0 starts one (µs since the epoch)


def test_publisher_keeps_the_counters_once_per_ten_seconds(tmp_path: Path) -> None:
    sink = Sink()
    base = dataclasses.replace(local_sample(), commit_path=COUNTERS)
    times = (T0 + 9_500_000, T0 + 10_500_000, T0 + 11_500_000, T0 + 19_999_999, T0 + 20_000_000)
    samples = [dataclasses.replace(base, sampled_at_us=at) for at in times]
    publisher = make_publisher(tmp_path, sink, *samples)
    for tick in range(len(times)):
        asyncio.run(publisher.tick(tick, None))
    kept = [row.cp_consensus_count is not None for row in sink.rows]
    assert kept == [True, True, False, False, True]
    assert _columns(sink.rows[1]) == EXPECTED


def test_publisher_records_the_local_counters(tmp_path: Path) -> None:
    sink = Sink()
    sample = dataclasses.replace(local_sample(), commit_path=COUNTERS)
    asyncio.run(make_publisher(tmp_path, sink, sample).tick(0, None))
    (row,) = sink.rows
    assert _columns(row) == EXPECTED


def test_publisher_records_null_when_the_source_has_none(tmp_path: Path) -> None:
    sink = Sink()
    asyncio.run(make_publisher(tmp_path, sink, local_sample()).tick(0, None))
    (row,) = sink.rows
    assert set(_columns(row).values()) == {None}


def _envelope(counters: CommitPathCounters | None, seq: int, step_s: int = 1) -> bytes:
    sent = T0 + seq * step_s * 1_000_000
    ext: dict[str, Any] = {"communication_stack": "MySQL"}
    if counters is not None:
        ext["commit_path"] = encode_commit_path(CommitPathReport(sent, counters))
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(REMOTE, "10.0.0.2", 3306, "ONLINE", "SECONDARY", "8.4.3", "x:1"),
            view_id="17000000:3",
            incarnation=7,
            seq=seq,
            sent_us=sent,
            stats=encode_pipeline_stats(PipelineStats(transactions_certified=5)),
            ext=ext,
        )
    )


def test_receiver_records_the_counters_the_remote_member_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(receiver_module, "now_us", lambda: T0 + 10_000_000)
    sink = Sink()
    receiver = Receiver(online_tables(), sink)  # type: ignore[arg-type]
    receiver.on_message(topic(REMOTE), _envelope(COUNTERS, 1), retained=False)
    receiver.on_message(topic(REMOTE), _envelope(None, 2), retained=False)
    first, second = sink.rows
    assert _columns(first) == EXPECTED
    # no ext.commit_path in this envelope: no figures (never the previous envelope's)
    assert set(_columns(second).values()) == {None}


def test_receiver_keeps_the_remote_counters_once_per_ten_seconds_of_its_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(receiver_module, "now_us", lambda: T0 + 100_000_000)
    sink = Sink()
    receiver = Receiver(online_tables(), sink)  # type: ignore[arg-type]
    for seq in range(1, 9):  # sent every 3 s: T0 + 3, 6, 9 | 12, 15, 18 | 21, 24
        receiver.on_message(topic(REMOTE), _envelope(COUNTERS, seq, 3), retained=False)
    kept = [row.cp_consensus_us is not None for row in sink.rows]
    assert kept == [True, False, False, True, False, False, True, False]


def test_a_file_written_before_the_columns_reads_them_as_null(tmp_path: Path) -> None:
    row = dataclasses.replace(_sample_row(tmp_path), **EXPECTED)
    table = rows_to_table([row])
    directory = tmp_path / "group=g" / "date=2026-11-17"
    directory.mkdir(parents=True)
    before = table.drop_columns(list(COMMIT_PATH_HISTORY_COLUMNS))  # as written before issue 27
    pq.write_table(before, directory / "part-0.parquet")
    pq.write_table(table, directory / "part-1.parquet")
    old, new = read_history(tmp_path).to_pylist()
    assert {old[c] for c in COMMIT_PATH_HISTORY_COLUMNS} == {None}
    assert {c: new[c] for c in COMMIT_PATH_HISTORY_COLUMNS} == EXPECTED
