"""`grstats applier --explain` over a recent window: the earlier reading from the history.

A member's applier, by hand: since it started, active 1000 s, waiting for
work 600 s (60 %: starved); an hour ago (its history sample at 10:59:50,
the last at or before 11:00) active 400 s, waiting for work 390 s, for the
commit order 10 s; now commit-order waits total 250 s.  Over the window:
active 600 s, work 210 s (35 %), commit order 240 s (40 % >= 20 %):
commit_order, not starved.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.cli.applierwindow import earlier_readings, parse_since
from grstats.core import columns as col
from grstats.core.explain import applier_text
from grstats.core.records import HISTORY_COLUMNS, HistoryRow
from grstats.history.parquet import history_schema, partition_dir
from grstats.history.wal import WAL_MAGIC, encode_record

S = 1_000_000_000
MEMBER = "aaaaaaaa-0000-4000-8000-000000000001"
AT = dt.datetime(2026, 11, 25, 11, 0, tzinfo=dt.UTC)


def _sample(at: dt.datetime, active: int, work: int, commit_order: int) -> dict[str, Any]:
    waits = {
        "waits_for_work_from_source_sum_time": work * S,
        "waits_due_to_commit_order_sum_time": commit_order * S,
        "waits_commit_schedule_dependency_sum_time": 0,
        "waits_for_worker_queues_memory_sum_time": 0,
        "waits_worker_queues_full_sum_time": 0,
        "waits_for_available_worker_sum_time": 0,
        "read_from_relay_log_sum_time": 0,
    }
    return {
        "group_name": "g",
        "member_id": MEMBER,
        "member_host": "db1",
        "member_port": 3306,
        "incarnation": 1,
        "seq": int(at.timestamp()),
        "sampled_at": at,
        "total_active_time_duration": active * S,
        **waits,
    }


def _history(root: Path) -> Path:
    samples = [
        _sample(AT - dt.timedelta(seconds=120), 300, 295, 5),
        _sample(AT - dt.timedelta(seconds=10), 400, 390, 10),  # the reading judged from
        _sample(AT + dt.timedelta(seconds=10), 410, 391, 19),  # inside the window: not it
    ]
    directory = partition_dir(root, "g", AT.date())
    directory.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(samples, schema=history_schema()), directory / "part-0.parquet"
    )
    return root


def _now_row() -> dict[str, object]:
    return {
        col.MEMBER_ID: MEMBER,
        col.CHANNEL_NAME: "group_replication_applier",
        col.TOTAL_ACTIVE_TIME_DURATION: 1000 * S,
        col.WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME: 600 * S,
        col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME: 250 * S,
        col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME: 0,
        col.WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME: 0,
        col.WAITS_WORKER_QUEUES_FULL_SUM_TIME: 0,
        col.WAITS_FOR_AVAILABLE_WORKER_SUM_TIME: 0,
        col.TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME: 0,
    }


def test_since_takes_a_duration_or_start() -> None:
    assert parse_since("1h") == 3600
    assert parse_since("30m") == 1800
    assert parse_since("2d") == 172_800
    assert parse_since("start") is None
    for bad in ("", "1", "0h", "1w", "-1h", "1.5h"):
        with pytest.raises(ValueError, match="expected start or a duration"):
            parse_since(bad)


def test_the_earlier_reading_is_the_last_sample_at_or_before_the_window(tmp_path: Path) -> None:
    readings = earlier_readings(_history(tmp_path), AT)
    assert set(readings) == {MEMBER}
    reading = readings[MEMBER]
    assert reading["sampled_at"] == AT - dt.timedelta(seconds=10)
    assert reading[col.TOTAL_ACTIVE_TIME_DURATION] == 400 * S
    assert reading[col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME] == 10 * S


def test_the_window_can_turn_a_starved_total_into_a_commit_order_verdict(tmp_path: Path) -> None:
    since_start = applier_text([_now_row()])
    assert since_start.splitlines()[0].endswith(": starved")
    assert "active 16 min 40 s" in since_start
    window = applier_text([_now_row()], earlier=earlier_readings(_history(tmp_path), AT))
    lines = window.splitlines()
    assert lines[0] == f"{MEMBER} group_replication_applier: commit_order"
    assert lines[1] == "  window: since 2026-11-25 10:59:50 UTC (the history's reading)"
    assert lines[2] == "  active 10 min; share of active time:"
    assert "    work_from_source     35.0 %" in lines
    assert "    commit_order         40.0 %" in lines


def test_a_member_without_a_reading_that_old_is_judged_since_start(tmp_path: Path) -> None:
    early = AT - dt.timedelta(hours=1)  # before every sample of the history
    text = applier_text(
        [_now_row()], earlier=earlier_readings(_history(tmp_path), early), window_start=early
    )
    # why not the window asked for, said for this member (not "no reading that old"
    # where there may be no reading of it at all)
    assert (
        "window: since the applier started (the history holds no reading of this member "
        f"at or before {early:%Y-%m-%d %H:%M:%S} UTC)"
    ) in text
    assert "active 16 min 40 s" in text


def test_the_earlier_reading_skips_samples_whose_counters_the_history_did_not_keep(
    tmp_path: Path,
) -> None:
    # the history stores the counters on the last sample of each 10 s window only
    # (history.cadence): a later sample without them is not a reading
    directory = partition_dir(_history(tmp_path), "g", AT.date())
    bare = _sample(AT - dt.timedelta(seconds=5), 0, 0, 0)
    bare.update({name: None for name in bare if name.endswith(("_time", "_duration"))})
    pq.write_table(
        pa.Table.from_pylist([bare], schema=history_schema()), directory / "part-1.parquet"
    )
    reading = earlier_readings(tmp_path, AT)[MEMBER]
    assert reading["sampled_at"] == AT - dt.timedelta(seconds=10)
    assert reading[col.TOTAL_ACTIVE_TIME_DURATION] == 400 * S


def test_a_reading_still_in_the_write_ahead_log_is_found(tmp_path: Path) -> None:
    # between flushes the newest samples are only in wal/ (grstats.history.tail)
    sample = _sample(AT - dt.timedelta(seconds=5), 405, 393, 12)
    sample["sampled_at"] = int(sample["sampled_at"].timestamp()) * 1_000_000
    row = HistoryRow(**{name: sample.get(name) for name, _ in HISTORY_COLUMNS})
    wal = _history(tmp_path) / "wal"
    wal.mkdir()
    (wal / "wal-w0123456789-000000000001-0e.log").write_bytes(WAL_MAGIC + encode_record(row))
    reading = earlier_readings(tmp_path, AT)[MEMBER]
    assert reading["sampled_at"] == AT - dt.timedelta(seconds=5)
    assert reading[col.TOTAL_ACTIVE_TIME_DURATION] == 405 * S
    assert reading[col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME] == 12 * S
