"""The offloaded writer: the WAL here, every Parquet step in a short-lived child process.

The daemon's writer (`HistoryWriter(offload=True)`) must behave exactly like
the in-process one -- same files, same replay, same de-duplication, same
counters and faults -- only the Parquet work runs in `grstats.history.offloadmain`
children. Each test checks the outcome on disk (read back with pyarrow here)
and that children did the work (`offload.runs`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from grstats.history.offload import CHILD_MODULE, counters_to
from grstats.history.parquet import read_history, rows_to_table, write_segments
from grstats.history.stats import Counters
from grstats.history.wal import encode_record
from grstats.history.writer import HistoryWriter
from tests.grstats.history.rows import US, as_dict, parts, sample_row, wal_file


def _writer(directory: Path, flush_interval_s: float = 60.0) -> HistoryWriter:
    return HistoryWriter(
        directory, retention_days=36500, flush_interval_s=flush_interval_s, offload=True
    )


async def test_rows_round_trip_through_the_wal_and_a_child_written_segment(tmp_path: Path) -> None:
    rows = [sample_row(seq) for seq in range(1, 6)]
    writer = _writer(tmp_path)
    await writer.start()
    for row in rows:
        writer.record(row)
    await writer.close()
    assert read_history(tmp_path).to_pylist() == [as_dict(r) for r in rows]
    assert writer.stats.rows_written == 5
    assert writer.stats.segments_written == 1  # counted by the child, added here
    assert list((tmp_path / "wal").iterdir()) == []
    assert writer.offload is not None and writer.offload.runs >= 1


async def test_flush_while_running_writes_the_segment_in_a_child(tmp_path: Path) -> None:
    writer = _writer(tmp_path, flush_interval_s=3600.0)
    await writer.start()
    writer.record(sample_row(1))
    await writer.flush()
    assert read_history(tmp_path).column("seq").to_pylist() == [1]
    writer.record(sample_row(2))
    await writer.flush()
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2]
    await writer.close()


async def _replay_damaged(directory: Path, *, offload: bool) -> tuple[HistoryWriter, list[str]]:
    records = [encode_record(sample_row(seq)) for seq in range(1, 8)]
    damaged = bytearray(records[3])
    damaged[len(damaged) // 2] ^= 0x10  # one flipped bit in record 4's payload
    records[3] = bytes(damaged)
    wal_file(directory, "000000000003-cc", b"".join(records) + b"\xff\x00\x00\x00garbage")
    writer = HistoryWriter(directory, retention_days=36500, offload=offload)
    await writer.start()
    faults = list(writer.health().faults)
    await writer.close()
    return writer, faults


async def test_a_previous_runs_wal_is_replayed_by_a_child_counted_as_in_process(
    tmp_path: Path,
) -> None:
    here, here_faults = await _replay_damaged(tmp_path / "here", offload=False)
    child, child_faults = await _replay_damaged(tmp_path / "child", offload=True)
    assert read_history(tmp_path / "child").column("seq").to_pylist() == [1, 2, 3, 5, 6, 7]
    assert child.stats.rows_recovered == 6
    assert child.stats.dropped.corrupt >= 1
    assert child.stats.files_quarantined == 1  # the damaged file, copied aside whole
    assert dataclasses.replace(child.stats, fsync_seconds_last=0, fsync_seconds_max=0,
        fsync_seconds_sum=0) == dataclasses.replace(here.stats, fsync_seconds_last=0,
        fsync_seconds_max=0, fsync_seconds_sum=0)  # fmt: skip
    assert [f.replace(f"{tmp_path}/child", "D") for f in child_faults] == [
        f.replace(f"{tmp_path}/here", "D") for f in here_faults
    ]
    assert any("damaged write-ahead log record" in fault for fault in child_faults)


async def test_a_restarted_writer_reads_its_marks_in_a_child_and_writes_no_row_twice(
    tmp_path: Path,
) -> None:
    first = _writer(tmp_path)
    await first.start()
    for seq in (1, 2, 3):
        first.record(sample_row(seq))
    await first.close()
    second = _writer(tmp_path)
    await second.start()
    for seq in (2, 3, 4, 5):  # redelivered 2 and 3 (retained / QoS 1 again)
        second.record(sample_row(seq))
    await second.close()
    assert sorted(read_history(tmp_path).column("seq").to_pylist()) == [1, 2, 3, 4, 5]
    assert second.stats.dropped.duplicate == 2


async def test_housekeeping_in_a_child_compacts_a_finished_day(tmp_path: Path) -> None:
    day = dt.date(2026, 1, 5)
    at = int(dt.datetime(2026, 1, 5, 10, tzinfo=dt.UTC).timestamp()) * US
    rows = [sample_row(seq, at_us=at + seq * US) for seq in range(1, 5)]
    write_segments(tmp_path, rows_to_table(rows[:2]), segment_id="a")
    write_segments(tmp_path, rows_to_table(rows[2:]), segment_id="b")
    assert len(parts(tmp_path)) == 2
    writer = _writer(tmp_path)
    assert writer.offload is not None
    writer.offload.housekeep(36500, day + dt.timedelta(days=1))
    (merged,) = parts(tmp_path)
    assert pq.read_table(merged).column("seq").to_pylist() == [1, 2, 3, 4]


async def test_a_close_the_daemon_stops_waiting_for_ends_the_thread_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the daemon bounds history.close() (3 s); a slow child must not kill the thread
    errors: list[object] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    writer = _writer(tmp_path)
    await writer.start()
    writer.record(sample_row(1))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(writer.close(), 0.001)
    thread = writer._thread
    assert thread is not None
    await asyncio.to_thread(thread.join, 60)
    assert errors == []
    assert read_history(tmp_path).column("seq").to_pylist() == [1]


def test_a_segment_child_imports_only_what_the_step_needs(tmp_path: Path) -> None:
    # one child per flush: its imports are most of its CPU (the work on a minute's
    # rows is ~10 %); the codecs of `protocol`, the WAL writer side and pyarrow's
    # acero are not needed to turn a closed WAL file into a segment. It ends
    # without the interpreter's teardown: its answer and log lines must all arrive.
    records = [encode_record(sample_row(seq)) for seq in range(1, 61)]
    damaged = bytearray(records[9])
    damaged[len(damaged) // 2] ^= 0x10  # one flipped bit in seq 10's payload
    records[9] = bytes(damaged)
    path = wal_file(tmp_path, "w1-000000000001-aa", b"".join(records))
    request = {"op": "segment", "paths": [str(path)], "recovering": False, "dir": str(tmp_path),
        "writer": "w1", "counters": counters_to(Counters())}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", CHILD_MODULE],
        input=json.dumps(request).encode(),
        capture_output=True,
        timeout=120,
        check=True,
    )
    reply = json.loads(done.stdout.decode().splitlines()[-1])
    assert (reply["counters"]["segments_written"], reply["counters"]["corrupt"]) == (1, 1)
    assert read_history(tmp_path).column("seq").to_pylist() == [s for s in range(1, 61) if s != 10]
    err = done.stderr.decode().splitlines()
    quarantined = [json.loads(line) for line in err if "history.file_quarantined" in line]
    assert [line["reason"] for line in quarantined] == ["damaged records in a write-ahead log file"]
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in err
        if line.startswith("import time:") and line.count("|") == 2
    }
    assert "pyarrow.parquet" in imported  # the child did write its modules' import lines
    unneeded = {"protocol", "grstats.history.writer", "grstats.history.journal", "pyarrow.acero"}
    assert imported & unneeded == set()
