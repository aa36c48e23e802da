"""History writer: WAL then Parquet, replay, crash safety."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from grstats.history.parquet import read_history, rows_to_table, write_segments
from grstats.history.wal import encode_record
from grstats.history.writer import HistoryError
from tests.grstats.history.crash_writer import make_row
from tests.grstats.history.rows import (
    US,
    as_dict,
    new_writer,
    parts,
    sample_row,
    start_and_close,
    wal_file,
)

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")


async def test_rows_round_trip_through_wal_and_parquet(tmp_path: Path) -> None:
    rows = [sample_row(seq) for seq in range(1, 6)]
    writer = new_writer(tmp_path)
    await writer.start()
    for row in rows:
        writer.record(row)
    await writer.close()
    assert read_history(tmp_path).to_pylist() == [as_dict(r) for r in rows]
    assert writer.stats.rows_written == 5
    assert list((tmp_path / "wal").iterdir()) == []  # WAL deleted once Parquet is durable


async def test_flush_makes_rows_readable_while_running(tmp_path: Path) -> None:
    writer = new_writer(tmp_path, flush_interval_s=3600.0)
    await writer.start()
    writer.record(sample_row(1))
    await writer.flush()
    assert read_history(tmp_path).column("seq").to_pylist() == [1]
    await writer.close()


async def test_a_value_of_the_wrong_type_is_stored_null_and_the_row_kept(tmp_path: Path) -> None:
    writer = new_writer(tmp_path)
    await writer.start()
    writer.record(sample_row(1))
    writer.record(dataclasses.replace(sample_row(2), member_port="not a port"))  # type: ignore[arg-type]
    writer.record(sample_row(3))
    await writer.close()
    table = read_history(tmp_path)
    assert table.column("seq").to_pylist() == [1, 2, 3]
    assert table.column("member_port").to_pylist() == [3306, None, 3306]
    assert writer.stats.dropped.invalid == 0
    assert writer.stats.values_nulled == {"member_port": 1}
    assert list((tmp_path / "wal").iterdir()) == []


async def test_record_after_close_raises(tmp_path: Path) -> None:
    writer = new_writer(tmp_path)
    await writer.start()
    await writer.close()
    with pytest.raises(HistoryError):
        writer.record(sample_row(1))


async def test_segment_rows_sorted_by_member_then_time(tmp_path: Path) -> None:
    writer = new_writer(tmp_path)
    await writer.start()
    for seq, member in [(3, "m-b"), (2, "m-a"), (1, "m-b"), (1, "m-a"), (2, "m-b")]:
        # one incarnation per sample: out of seq order within one incarnation would
        # be a late duplicate (admission never lets one through, DESIGN.md 2)
        writer.record(dataclasses.replace(sample_row(seq, member=member), incarnation=seq))
    await writer.close()
    (part,) = parts(tmp_path)
    table = pq.read_table(part)
    assert list(zip(table["member_id"].to_pylist(), table["seq"].to_pylist(), strict=True)) == [
        ("m-a", 1),
        ("m-a", 2),
        ("m-b", 1),
        ("m-b", 2),
        ("m-b", 3),
    ]


async def test_start_replays_wal_of_previous_run_and_cuts_garbage(tmp_path: Path) -> None:
    garbage = b"\xff\x00\x00\x00garbage"
    wal_file(
        tmp_path,
        "000000000003-cc",
        encode_record(sample_row(1)) + encode_record(sample_row(2)) + garbage,
    )
    writer = new_writer(tmp_path)
    await writer.start()
    await writer.close()
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2]
    assert writer.stats.rows_recovered == 2
    assert writer.stats.wal_bytes_cut == len(garbage)
    assert list((tmp_path / "wal").iterdir()) == []


async def test_crash_between_parquet_rename_and_wal_delete_does_not_duplicate(
    tmp_path: Path,
) -> None:
    rows = [sample_row(1), sample_row(2)]
    wal_file(tmp_path, "000000000001-dd", b"".join(encode_record(r) for r in rows))
    # what the writer had done before dying: the segment of that WAL file is durable
    write_segments(tmp_path, rows_to_table(rows), segment_id="000000000001-dd")
    writer = new_writer(tmp_path)
    await writer.start()
    await writer.close()
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2]


async def test_temporaries_are_never_data_and_removed_at_start(tmp_path: Path) -> None:
    write_segments(tmp_path, rows_to_table([sample_row(1)]), segment_id="t")
    partition = tmp_path / "group=g/date=2026-11-20"
    tmp = partition / ".part-0000000000000001-x.parquet.tmp"
    tmp.write_bytes(b"PAR1 half a file")
    assert read_history(tmp_path).num_rows == 1
    writer = new_writer(tmp_path)
    await writer.start()
    await writer.close()
    assert not tmp.exists()


def _fsynced_seqs(side_file: Path) -> dict[int, int]:
    best: dict[int, int] = {}
    for line in side_file.read_bytes().split(b"\n")[:-1]:  # the last line may be torn
        incarnation, seq = (int(x) for x in line.split())
        best[incarnation] = max(best.get(incarnation, 0), seq)
    return best


def _wait_for_line(side_file: Path, incarnation: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        if side_file.exists() and incarnation in _fsynced_seqs(side_file):
            return
        time.sleep(0.01)
    raise AssertionError(f"writer {incarnation} reported nothing fsynced")


@pytest.mark.slow
def test_sigkill_twenty_times_loses_no_fsynced_row_and_duplicates_none(tmp_path: Path) -> None:
    history, side = tmp_path / "history", tmp_path / "fsynced.txt"
    today = dt.datetime.now(dt.UTC).date()
    base_us = int(dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC).timestamp()) * US
    base_us -= 35 * US  # the first runs write yesterday and cross midnight: compaction runs too
    rng = random.Random(20261122)
    for incarnation in range(1, 21):
        args = [str(history), str(side), str(incarnation), str(base_us)]
        process = subprocess.Popen([sys.executable, str(CRASH_WRITER), *args])
        try:
            if incarnation % 4 == 0:
                time.sleep(rng.uniform(0.2, 1.0))  # the kill moment: maybe during start/replay
            else:
                _wait_for_line(side, incarnation, process)
                time.sleep(rng.uniform(0.0, 0.5))  # the kill moment, after some fsyncs
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    for path in parts(history):
        pq.read_table(path)  # every Parquet file opens
    asyncio.run(start_and_close(history))
    assert list(history.glob("**/.*.tmp")) == []
    table = read_history(history)
    keys = list(
        zip(
            table["member_id"].to_pylist(),
            table["incarnation"].to_pylist(),
            table["seq"].to_pylist(),
            strict=True,
        )
    )
    assert len(keys) == len(set(keys)), "duplicated samples"
    got: dict[int, list[int]] = {}
    for _, incarnation, seq in keys:
        got.setdefault(incarnation, []).append(seq)
    fsynced = _fsynced_seqs(side)
    assert len(fsynced) >= 15
    for incarnation, top in fsynced.items():
        seqs = sorted(got.get(incarnation, []))
        # a WAL is append-only and replay stops at the first bad record: always a prefix
        assert seqs == list(range(1, len(seqs) + 1)), incarnation
        assert len(seqs) >= top, (incarnation, len(seqs), top)
    # values are intact, not just keys
    sample = rng.sample(table.to_pylist(), 50)
    for row in sample:
        assert row == as_dict(make_row(row["incarnation"], row["seq"], base_us))


async def test_a_second_writer_with_the_same_id_on_a_tree_does_not_start(tmp_path: Path) -> None:
    first = new_writer(tmp_path, instance="collector-a")
    await first.start()
    with pytest.raises(HistoryError, match="another writer"):
        await new_writer(tmp_path, instance="collector-a").start()
    other = new_writer(tmp_path, instance="collector-b")  # another id shares the tree
    await other.start()
    await other.close()
    await first.close()
    again = new_writer(tmp_path, instance="collector-a")  # released at close
    await again.start()
    await again.close()
    assert sorted(p.name for p in (tmp_path / "wal").iterdir()) == []


async def test_a_history_directory_deleted_under_the_writer_is_recreated_and_no_row_lost(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "history"
    writer = new_writer(directory, flush_interval_s=3600.0, fsync_interval_s=0.05)
    await writer.start()
    for seq in (1, 2, 3):
        writer.record(sample_row(seq))
    deadline = time.monotonic() + 10
    while writer.stats.rows_written < 3:  # fsynced to the WAL, not yet in a segment
        assert time.monotonic() < deadline, "three rows fsynced"
        await asyncio.sleep(0.02)
    shutil.rmtree(directory)
    for seq in (4, 5, 6):  # held in memory while the directory is gone
        writer.record(sample_row(seq))
    await writer.flush()
    assert read_history(directory).column("seq").to_pylist() == [1, 2, 3, 4, 5, 6]
    assert writer.health().ok, writer.health()
    assert list((directory / "wal").glob(".lock-*")), "the writer holds its lock again"
    writer.record(sample_row(7))
    await writer.close()
    assert read_history(directory).column("seq").to_pylist() == [1, 2, 3, 4, 5, 6, 7]
    assert writer.stats.errors >= 1  # the deletion moved a counter
