"""The history's Parquet work in short-lived child processes: the daemon never loads pyarrow.

Strategy: pyarrow (with its allocator and Parquet reader/writer) costs a
long-running daemon ~45 MB of steady RSS for work it does once a minute.
With `HistoryWriter(offload=True)` the daemon's writer thread keeps the
write-ahead log (buffer, fsync every second, crash safety) and hands each
step that reads or writes Parquet to a child (`CHILD_MODULE`, whose side is
`grstats.history.offloadmain`), which runs the very same code
(`ClosedWals.segment_files`, `read_marks`, `housekeep`) and exits:
- turning closed WAL files into segments (every flush interval, at close,
  and the replay of a previous run's files at start);
- reading the de-duplication marks of a partition that has files of this
  writer (the first row of a (group, day) partition; all of a batch at once);
- the daily retention and compaction.

Invariants:
- The child is called from the writer's threads only, never the event loop,
  with a timeout; it gets the request on stdin and answers one JSON line on
  stdout; its log lines go to the daemon's stderr.
- A child that fails, times out or answers nothing is an OSError to the
  caller, exactly like a failing disk: the WAL files stay, the writer backs
  off and retries, /healthz says why.
- The child starts from the writer's counter values and reports its own
  after the run; the writer adds the difference and the child's faults, so
  the counters and fault texts read as if the work had been done in-process.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from grstats.history.stats import Counters

__all__ = ["CHILD_MODULE", "COUNTED", "Offload", "counters_from", "counters_to"]

# the counters a child may move (every other one belongs to the WAL side)
COUNTED = (
    "rows_recovered",
    "wal_bytes_cut",
    "segments_written",
    "corrupt",
    "files_quarantined",
    "invalid",
    "errors",
)
# the child's entry: it lives with the daemon, which configures the logging
CHILD_MODULE = "grstats.daemon.historymain"
DEFAULT_TIMEOUT_S = 600.0  # a day's compaction of a large collector can take minutes
REPLY_MAX_BYTES = 1 << 26  # marks of a fleet's partitions; a larger answer is a fault


def counters_to(counters: Counters) -> dict[str, Any]:
    """The values of the counters a child may move (the caller holds their lock)."""
    values: dict[str, Any] = {name: getattr(counters, name) for name in COUNTED}
    values["values_nulled"] = dict(counters.values_nulled)
    return values


def counters_from(values: dict[str, Any]) -> Counters:
    """Counters starting at `values` (the child's side of `counters_to`)."""
    counters = Counters()
    for name in COUNTED:
        setattr(counters, name, int(values.get(name, 0)))
    counters.values_nulled = {str(k): int(v) for k, v in values.get("values_nulled", {}).items()}
    return counters


class Offload:
    """Runs one writer's Parquet steps in a child process each.

    Args:
        directory: the history root.
        writer: the writer id.
        counters: the writer's counters (the child's work is added to them).
        timeout_s: how long one child may take before it is killed.
    """

    def __init__(
        self,
        directory: Path,
        writer: str,
        counters: Counters,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.directory = directory
        self.writer = writer
        self.counters = counters
        self.timeout_s = timeout_s
        self.runs = 0  # children started (tests, logs)

    def segment(self, paths: list[Path], *, recovering: bool) -> tuple[list[int], str | None]:
        """Turn WAL files into segments, in order, until one fails.

        Args:
            paths: closed WAL files of this writer, oldest first.
            recovering: they are a previous run's (counted as recovered rows).

        Returns:
            The file sizes of the leading paths that are in segments now (and
            deleted), and the error that stopped the rest (None: all done).

        Raises:
            OSError: the child could not run or answer (nothing is known done).
        """
        reply = self._call(
            {"op": "segment", "paths": [str(p) for p in paths], "recovering": recovering}
        )
        return [int(size) for size in reply["done"]], reply.get("error")

    def marks(self, partitions: list[Path]) -> dict[Path, dict[tuple[str, int], int]]:
        """The de-duplication marks of this writer's files in each partition directory.

        Raises:
            OSError: a partition could not be read (or the child did not answer).
        """
        reply = self._call({"op": "marks", "paths": [str(p) for p in partitions]})
        if reply.get("error"):
            raise OSError(reply["error"])
        return {
            Path(path): {(str(m), int(i)): int(seq) for m, i, seq in rows}
            for path, rows in reply["marks"].items()
        }

    def housekeep(self, retention_days: int, today: dt.date) -> None:
        """Retention and compaction of the history (`housekeeping.housekeep`).

        Raises:
            OSError: the run failed (retried the next day, as in-process).
        """
        reply = self._call(
            {"op": "housekeep", "retention_days": retention_days, "today": today.isoformat()}
        )
        if reply.get("error"):
            raise OSError(reply["error"])

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.counters.lock:
            before = counters_to(self.counters)
        request.update(dir=str(self.directory), writer=self.writer, counters=before)
        self.runs += 1
        try:
            done = subprocess.run(
                [sys.executable, "-m", CHILD_MODULE],
                input=json.dumps(request).encode(),
                stdout=subprocess.PIPE,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise OSError(
                f"history child ({request['op']}) timed out after {self.timeout_s}s"
            ) from None
        lines = done.stdout[-REPLY_MAX_BYTES:].decode("utf-8", "replace").strip().splitlines()
        try:
            reply: dict[str, Any] = json.loads(lines[-1])
        except (IndexError, ValueError):
            raise OSError(
                f"history child ({request['op']}) exited {done.returncode} without an answer"
            ) from None
        self._merge(before, reply)
        return reply

    def _merge(self, before: dict[str, Any], reply: dict[str, Any]) -> None:
        after = reply.get("counters", before)
        with self.counters.lock:
            c = self.counters
            for name in COUNTED:
                setattr(c, name, getattr(c, name) + int(after[name]) - int(before[name]))
            for column, count in after["values_nulled"].items():
                added = int(count) - int(before["values_nulled"].get(column, 0))
                if added:
                    c.values_nulled[column] = c.values_nulled.get(column, 0) + added
            if reply.get("quarantined_last"):
                c.quarantined_last = str(reply["quarantined_last"])
            for kind, text in reply.get("faults", {}).items():
                c.fault(str(kind), str(text))
