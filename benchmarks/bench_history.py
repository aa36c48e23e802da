"""History size and `grstats simulate` speed: bytes per sample, column by column.

Runs `grstats simulate` (a child process, so its CPU time is measured alone)
into a temporary directory -- or reads an existing history with --history --
and prints the run's wall and CPU time, the bytes on disk per sample, and
each column's compressed bytes per sample from the Parquet footers (the sum
of its column chunks), largest first, with the encodings each chunk uses.
The reference in the same run is the whole file: each column's share of it.

Run: python benchmarks/bench_history.py [--members 9] [--days 7] [--top 30]
     python benchmarks/bench_history.py --history DIR
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from _common import machine


def _simulate(out: Path, members: int, days: int) -> tuple[float, float]:
    """Wall and CPU seconds of one `grstats simulate` run into `out`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    subprocess.run(
        [
            str(Path(sys.executable).with_name("grstats")),  # the venv's entry point
            "simulate",
            "--members",
            str(members),
            "--days",
            str(days),
            "--start",
            "2026-11-16",
            "--out",
            str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TERM": "dumb"},
    )
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _columns(history: Path) -> tuple[int, int, dict[str, int], dict[str, set[str]]]:
    """Rows, bytes on disk, and per column its compressed bytes and encodings."""
    sizes: collections.Counter[str] = collections.Counter()
    encodings: dict[str, set[str]] = collections.defaultdict(set)
    rows = on_disk = 0
    for path in sorted(history.glob("group=*/date=*/part-*.parquet")):
        on_disk += path.stat().st_size
        metadata = pq.read_metadata(path)
        rows += metadata.num_rows
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                sizes[chunk.path_in_schema] += chunk.total_compressed_size
                encodings[chunk.path_in_schema].update(chunk.encodings)
    return rows, on_disk, dict(sizes), encodings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=9)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--top", type=int, default=30, help="columns to list")
    parser.add_argument("--history", type=Path, help="measure this history, simulate nothing")
    args = parser.parse_args()
    print(machine(f"load {os.getloadavg()[0]:.2f}"))
    with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
        history = args.history
        if history is None:
            history = Path(tmp) / "history"
            wall, cpu = _simulate(history, args.members, args.days)
            print(
                f"simulate {args.members} members x {args.days} days: "
                f"wall {wall:.1f} s, CPU {cpu:.1f} s"
            )
        rows, on_disk, sizes, encodings = _columns(history)
    total = sum(sizes.values())
    print(f"rows {rows}: {on_disk / rows:.2f} bytes/sample on disk, columns {total / rows:.2f}")
    print(f"{'column':45s} {'B/sample':>8s} {'share':>6s}  encodings")
    ranked = sorted(sizes.items(), key=lambda item: -item[1])
    for name, size in ranked[: args.top]:
        kinds = ",".join(sorted(encodings[name]))
        print(f"{name:45s} {size / rows:8.3f} {size / total:6.1%}  {kinds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
