"""`grstats simulate`'s days in worker processes: the serial run's files, and clean failures."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from grstats.cli.commands.simulate import command
from grstats.history.writer import read_history
from grstats.offline.backfill import default_group, member_ids, simulate_history
from grstats.offline.daypool import default_workers

SEED = 11
START = dt.date(2026, 11, 16)  # a Monday: flow control's runs start with the week


def _run(out: Path, workers: int) -> list[int]:
    chunks: list[int] = []
    simulate_history(
        out,
        group=default_group(SEED),
        members=member_ids(SEED, 2),
        days=2,
        seed=SEED,
        start=START,
        slow_member=True,  # flow control acts; the replay carries its state across days
        slow_link_hours=(23, 24),  # and the slow link's rounds stay in the counters
        on_chunk=chunks.append,
        workers=workers,
    )
    return chunks


def _files(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes() for p in out.glob("group=*/date=*/part-*.parquet")
    }


@pytest.mark.slow
def test_a_parallel_run_writes_the_serial_runs_files(tmp_path: Path) -> None:
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    assert _run(serial, workers=1) == [86_400] * 4
    assert _run(parallel, workers=2) == [86_400] * 4  # each member-day reported once
    assert read_history(parallel).equals(read_history(serial))
    files = _files(serial)
    assert len(files) == 4  # one per member-day
    assert _files(parallel) == files  # the same names, byte for byte
    for path in parallel.glob("group=*/date=*/part-*.parquet"):
        assert pq.ParquetFile(path).metadata.num_rows == 86_400
    assert not list(parallel.rglob("*.tmp"))


def test_a_failing_worker_stops_the_run_with_a_one_line_error(tmp_path: Path) -> None:
    out = tmp_path / "h"
    out.mkdir()
    # the partition directory cannot be made: a file holds its group's name
    blocker = out / f"group={default_group(SEED)}"
    blocker.write_text("not a directory")
    args = ["--members", "1", "--days", "2", "--seed", str(SEED), "--start", START.isoformat()]
    result = CliRunner().invoke(command, [*args, "--workers", "2", "--out", str(out)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "progress" not in line]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert str(blocker) in lines[0] and "Traceback" not in result.output
    assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize(
    ("cpus", "load", "expected"),
    [
        (2, 0.0, 1),  # a serial run keeps both busy itself: model thread and writer thread
        (4, 2.2, 1),  # two idle: still one process
        (4, 1.2, 2),  # three idle: the parent's first passes and two workers
        (4, 0.0, 3),  # the parent's first passes take the fourth
        (8, 0.0, 4),  # at most MAX_WORKERS
    ],
)
def test_workers_only_beyond_the_two_cpus_a_serial_run_uses(
    monkeypatch: pytest.MonkeyPatch, cpus: int, load: float, expected: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert default_workers(63) == expected
    assert default_workers(15) == 1  # below MIN_PARALLEL_MEMBER_DAYS
