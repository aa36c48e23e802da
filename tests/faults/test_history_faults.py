"""History faults (issue 15): full disk, unstorable rows.

Each test reproduces one fault against the real file system: ENOSPC injected
at the writer's OS-call boundary (`FileOps`, so it always runs) and a real
2 MiB tmpfs (skipped with the reason where mounting is not permitted).
Expected values are written by hand or generated independently of the writer.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from structlog.testing import capture_logs

from grstats.history.fileops import FileOps
from grstats.history.wal import encode_record
from grstats.history.writer import HistoryWriter
from tests.fixtures.history_faults import (
    FullDisk,
    Watch,
    fast_writer,
    fd_count,
    named_events,
    row_keys,
)
from tests.grstats.history.rows import sample_row, wal_file

pytestmark = pytest.mark.faults

# ---------------------------------------------------------------- disk full


async def _fill_then_recover(
    directory: Path, writer: HistoryWriter, fill: Callable[[], None], free: Callable[[], None]
) -> tuple[Watch, list[dict[str, Any]]]:
    """Rows 1-10 in Parquet, 11-20 fsynced, then the disk fills; rows 21-60 meanwhile."""
    await writer.start()
    for seq in range(1, 11):
        writer.record(sample_row(seq))
    await writer.flush()
    watch = Watch(directory / "wal")
    for seq in range(11, 21):
        writer.record(sample_row(seq))
    watch.until(lambda: writer.stats.rows_written == 20, "rows 11-20 fsynced")
    fds_before = fd_count()
    with capture_logs() as events:
        fill()
        errors_at_fill = writer.stats.errors
        for seq in range(21, 61):
            writer.record(sample_row(seq))
        # many retries: at 10 ms ticks and a 50 ms backoff cap, ~20 flush intervals
        watch.until(lambda: writer.stats.errors >= errors_at_fill + 20, "repeated failures")
        health = writer.health()
        assert not health.ok
        assert "No space left on device" in health.reason, health.reason
        # transient: a directory fsync, a partition read by the housekeeping thread;
        # a leak would add one per attempt (>= 20 here)
        assert watch.max_fds <= fds_before + 4, (watch.max_fds, fds_before)
        free()
        watch.until(lambda: writer.health().ok and writer.stats.rows_buffered == 0, "recovery")
        await writer.flush()
        await writer.close()
    # one WAL open for appending, plus at most a retired one being read into a
    # segment at the moment of sampling; a leak would add one per attempt (>= 20)
    assert watch.max_wal_fds <= 2
    return watch, events


async def test_disk_full_injected_bounded_degraded_and_recovers(tmp_path: Path) -> None:
    ops = FullDisk()
    writer = fast_writer(tmp_path, file_ops=ops)

    def fill() -> None:
        ops.full = True

    def free() -> None:
        ops.full = False

    watch, events = await _fill_then_recover(tmp_path, writer, fill, free)
    assert ops.failures >= 20
    # at most the open WAL and one closed WAL waiting for its segments
    assert watch.max_wal_files <= 2
    assert len(named_events(events, "history.write_failed")) == 1  # then suppressed, counted
    # >= 20 failures: one line per phase logged, every other one counted on recovery
    assert len(named_events(events, "history.segments_failed")) <= 1
    assert sum(e["suppressed"] for e in named_events(events, "history.recovered")) >= 18
    keys = row_keys(tmp_path)
    assert sorted(k[3] for k in keys) == list(range(1, 61))  # nothing lost, no duplicate
    assert list((tmp_path / "wal").iterdir()) == []
    stats = writer.stats
    assert stats.dropped.buffer_full == 0 and stats.dropped.disk_full == 0


async def test_close_while_disk_full_keeps_fsynced_rows_for_the_next_start(
    tmp_path: Path,
) -> None:
    ops = FullDisk()
    writer = fast_writer(tmp_path, file_ops=ops, flush_interval_s=3600.0)
    await writer.start()
    for seq in range(1, 6):
        writer.record(sample_row(seq))
    Watch(tmp_path / "wal").until(lambda: writer.stats.rows_written == 5, "rows fsynced")
    ops.full = True
    for seq in range(6, 9):
        writer.record(sample_row(seq))
    with pytest.raises(Exception, match="No space left"):  # HistoryError
        await writer.close()
    assert writer.stats.dropped.disk_full == 3  # never fsynced: counted, not silent
    ops.full = False
    again = fast_writer(tmp_path)
    await again.start()
    await again.close()
    assert sorted(k[3] for k in row_keys(tmp_path)) == [1, 2, 3, 4, 5]


async def test_start_on_a_full_disk_starts_degraded_and_replays_once_space_returns(
    tmp_path: Path,
) -> None:
    # a previous run's WAL: rows 1-3 fsynced, never turned into segments
    wal_file(tmp_path, "000000000001-aa", b"".join(encode_record(sample_row(s)) for s in (1, 2, 3)))
    ops = FullDisk()
    ops.full = True
    writer = fast_writer(tmp_path, file_ops=ops)
    await writer.start()  # a full disk is a state to report, not a reason not to run
    assert not writer.health().ok
    writer.record(sample_row(3))  # redelivered: it is in that WAL already
    writer.record(sample_row(4))
    ops.full = False
    watch = Watch(tmp_path / "wal")
    watch.until(lambda: writer.health().ok and writer.stats.rows_buffered == 0, "recovery")
    await writer.close()
    assert sorted(k[3] for k in row_keys(tmp_path)) == [1, 2, 3, 4]
    assert writer.stats.dropped.duplicate == 1


FD_LIMIT = 64
# A writer on a full disk for 300 failed attempts, in a child whose fd limit
# is FD_LIMIT: a descriptor leaked per attempt would exhaust it long before.
_FD_LIMIT_CHILD = """
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (@FD@, @FD@))  # this child only
import asyncio, json, sys, time
from pathlib import Path
from grstats.history.parquet import read_history
from tests.fixtures.history_faults import FullDisk, fast_writer
from tests.grstats.history.rows import sample_row

async def main(directory):
    ops = FullDisk()
    writer = fast_writer(directory, file_ops=ops, fsync_interval_s=0.002, retry_max_s=0.002)
    await writer.start()
    ops.full = True
    for seq in range(1, 201):
        writer.record(sample_row(seq))
    deadline = time.monotonic() + 20
    while ops.failures < 300 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    during = writer.health().ok
    ops.full = False
    await writer.flush()
    after = writer.health().ok
    await writer.close()
    seqs = sorted(read_history(directory).column("seq").to_pylist())
    print(json.dumps({"failures": ops.failures, "during": during, "after": after, "seqs": seqs}))

asyncio.run(main(Path(sys.argv[1])))
""".replace("@FD@", str(FD_LIMIT))


def test_disk_full_under_a_low_fd_limit_recovers(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", _FD_LIMIT_CHILD, str(tmp_path)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["failures"] >= 300
    assert report["during"] is False and report["after"] is True
    assert report["seqs"] == list(range(1, 201))


class SegmentsFail(FileOps):
    """The WAL works; Parquet segment writes fail with ENOSPC while `full`."""

    def __init__(self) -> None:
        self.full = False
        self.failures = 0

    def write_segments(
        self, directory: Path, table: pa.Table, *, segment_id: str, writer: str = ""
    ) -> list[Path]:
        if self.full:
            self.failures += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write_segments(directory, table, segment_id=segment_id, writer=writer)


async def test_segments_failing_keep_the_wal_going_and_health_degraded_until_written(
    tmp_path: Path,
) -> None:
    ops = SegmentsFail()
    writer = fast_writer(tmp_path, file_ops=ops)
    await writer.start()
    ops.full = True
    watch = Watch(tmp_path / "wal")
    with capture_logs() as events:
        for seq in range(1, 31):
            writer.record(sample_row(seq))
        # the WAL takes every row while segments fail, many flush intervals long
        watch.until(lambda: writer.stats.rows_written == 30 and ops.failures >= 20, "failures")
        assert not writer.health().ok
        assert named_events(events, "history.recovered") == []  # no flapping on WAL successes
        ops.full = False
        watch.until(lambda: writer.health().ok, "segments written again")
        await writer.close()
    assert len(named_events(events, "history.segments_failed")) == 1
    assert named_events(events, "history.write_failed") == []  # the WAL never failed
    assert [e["phase"] for e in named_events(events, "history.recovered")] == ["segments"]
    assert watch.max_wal_files <= 2
    assert sorted(k[3] for k in row_keys(tmp_path)) == list(range(1, 31))


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a 2 MiB tmpfs here: {result.stderr.strip() or 'not root'}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


async def test_disk_full_real_tmpfs_bounded_degraded_and_recovers(small_fs: Path) -> None:
    directory = small_fs / "history"
    ballast = small_fs / "ballast"
    writer = fast_writer(directory)

    def fill() -> None:
        with ballast.open("wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    def free() -> None:
        ballast.unlink()

    watch, events = await _fill_then_recover(directory, writer, fill, free)
    assert watch.max_wal_files <= 2
    assert len(named_events(events, "history.write_failed")) == 1
    assert sorted(k[3] for k in row_keys(directory)) == list(range(1, 61))
    assert list(directory.glob("**/.*.tmp")) == []


async def test_buffer_bound_drops_oldest_and_counts_them(tmp_path: Path) -> None:
    ops = FullDisk()
    # the thread takes rows only on its timers (record() never wakes it): with
    # them an hour away, no batch is in flight beside the buffer while we fill it
    # (with 0.05 s a loaded machine let the thread take 60 rows first: 90 dropped)
    writer = fast_writer(
        tmp_path,
        file_ops=ops,
        max_buffer_rows=100,
        flush_interval_s=3600.0,
        fsync_interval_s=3600.0,
    )
    await writer.start()
    ops.full = True
    for seq in range(1, 251):
        writer.record(sample_row(seq))
    assert writer.stats.dropped.buffer_full == 150
    ops.full = False
    await writer.flush()
    await writer.close()
    assert sorted(k[3] for k in row_keys(tmp_path)) == list(range(151, 251))


# ---------------------------------------------------------------- unstorable rows


async def test_values_out_of_column_range_are_nulled_and_counted_never_silent(
    tmp_path: Path,
) -> None:
    bad = [
        dataclasses.replace(sample_row(2), seq=2**63),
        dataclasses.replace(sample_row(3), flow_control_mode=128),
        dataclasses.replace(sample_row(4), member_port=2**31),
        dataclasses.replace(sample_row(5), count_transactions_checked=-(2**63) - 1),
        dataclasses.replace(sample_row(5), sampled_at=2**62),  # year ~148 000: no partition
    ]
    writer = fast_writer(tmp_path)
    await writer.start()
    with capture_logs() as events:
        writer.record(sample_row(1))
        for row in bad:
            writer.record(row)
        writer.record(sample_row(6))
        await writer.close()
    # issue 21: only a sample whose identity (seq, sampled_at) cannot be stored is dropped
    assert sorted(k[3] for k in row_keys(tmp_path)) == [1, 3, 4, 5, 6]
    assert writer.stats.dropped.invalid == 2
    assert writer.stats.values_nulled == {
        "flow_control_mode": 1,
        "member_port": 1,
        "count_transactions_checked": 1,
    }
    rejected = named_events(events, "history.row_rejected")
    assert len(rejected) == 1  # rate-limited: the other one is counted as suppressed
    assert rejected[0]["column"] == "seq"
