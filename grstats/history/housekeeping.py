"""History housekeeping: retention by age and compaction of finished days.

Strategy: once per UTC day the writer starts `Housekeeper.run_daily`, which
runs in its own thread beside the writer thread so the WAL keeps its fsync
cadence (compacting a day of small files can take seconds).

Invariants:
- Only finished days (before today, UTC) are compacted, and only files listed
  before the compaction starts; today's partition is never rewritten.
- A compacted file is written atomically and lists (in its footer) the files
  it replaces; the inputs are deleted only after it is durable, and a crash
  in between is repaired at the next run (readers already skip them).
- A date partition older than `retention_days` is deleted whole.
- A file that cannot be read is handed to `on_corrupt` (quarantined by the
  writer, named in the log and /healthz) and skipped; housekeeping goes on
  with the rest of its partition and every later one.
- Each writer compacts only its own files (and files without a writer id,
  under a name independent of the writer): writers sharing a tree never
  write the same file.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import re
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from grstats.history.rowcheck import fsync_path

if TYPE_CHECKING:  # pyarrow is imported by the functions that read and write files
    import pyarrow as pa

__all__ = ["Housekeeper", "housekeep"]

log = structlog.get_logger("grstats.history")

_COMPACT_MAX_ROWS = 2_000_000  # bounds the memory of one compaction
_WRITER_TAG = re.compile(r"part-\d{16}-(w[0-9a-f]{10})-")


def _owner(name: str) -> str:
    match = _WRITER_TAG.match(name)
    return match.group(1) if match else ""


OnCorrupt = Callable[[Path, str], None]


def _raise(path: Path, reason: str) -> None:
    raise ValueError(f"{path}: {reason}")


def _readable(files: list[Path], on_corrupt: OnCorrupt) -> list[Path]:
    """The files whose footer reads; each other one goes to `on_corrupt` (quarantine)."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow only where files are read
    import pyarrow.parquet as pq  # noqa: PLC0415

    from grstats.history.parquet import is_corrupt  # noqa: PLC0415

    good: list[Path] = []
    for path in files:
        try:
            pq.read_metadata(path)
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, FileNotFoundError) or not is_corrupt(exc):
                raise
            on_corrupt(path, str(exc))
            continue
        good.append(path)
    return good


def _compact_partition(partition: Path, writer: str, on_corrupt: OnCorrupt = _raise) -> int:
    """Merge a finished day's files into files of up to _COMPACT_MAX_ROWS rows."""
    from grstats.history.parquet import replaced_by_compaction  # noqa: PLC0415 - pyarrow

    files = _readable(sorted(partition.glob("part-*.parquet")), on_corrupt)
    for name in replaced_by_compaction(files):  # a crash left the inputs behind
        (partition / name).unlink(missing_ok=True)
    files = sorted(partition.glob("part-*.parquet"))
    mine = [f for f in files if _owner(f.name) == ""]
    merged = _compact_files(partition, mine, "", on_corrupt)
    if writer:
        mine = [f for f in files if _owner(f.name) == writer]
        merged += _compact_files(partition, mine, writer, on_corrupt)
    return merged


def _read_batch(batch: list[Path], on_corrupt: OnCorrupt) -> tuple[list[Path], list[pa.Table]]:
    """The batch's files whose rows read, and their rows (the others go to `on_corrupt`)."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow only where files are read
    import pyarrow.parquet as pq  # noqa: PLC0415

    from grstats.history.parquet import conform, is_corrupt  # noqa: PLC0415

    read: list[Path] = []
    tables: list[pa.Table] = []
    for path in batch:
        try:
            tables.append(conform(pq.read_table(path)))
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, FileNotFoundError) or not is_corrupt(exc):
                raise
            on_corrupt(path, str(exc))
            continue
        read.append(path)
    return read, tables


def _compact_files(partition: Path, files: list[Path], writer: str, on_corrupt: OnCorrupt) -> int:
    # Another writer's files are its own to compact: two writers never write
    # the same file.  Older files (no writer id) get a writer-independent name.
    import pyarrow as pa  # noqa: PLC0415 - pyarrow only where files are written
    import pyarrow.compute as pc  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    from grstats.history.cadence import thin_counters  # noqa: PLC0415
    from grstats.history.parquet import (  # noqa: PLC0415
        META_REPLACES,
        META_SEGMENT,
        NAMESPACE,
        name_key,
        write_file,
    )

    batches: list[list[Path]] = [[]]
    rows = 0
    for path in files:
        count = pq.read_metadata(path).num_rows
        if batches[-1] and rows + count > _COMPACT_MAX_ROWS:
            batches.append([])
            rows = 0
        batches[-1].append(path)
        rows += count
    merged = 0
    for candidates in (b for b in batches if len(b) > 1):
        batch, tables = _read_batch(candidates, on_corrupt)
        if len(batch) < 2:
            continue
        table = pa.concat_tables(tables)
        table = table.sort_by(
            [("member_id", "ascending"), ("sampled_at", "ascending"), ("seq", "ascending")]
        )
        # the applier's counters again over the whole batch: each segment kept its first
        # and last sample of every member, which are now inner ones
        table = thin_counters(table)
        names = [p.name for p in batch]
        digest = hashlib.sha256("\n".join(names).encode()).hexdigest()
        first = int(pc.min(table["sampled_at"].cast(pa.int64())).as_py())
        tag = f"{writer}-" if writer else ""
        path = partition / f"part-{first:016d}-{tag}{uuid.uuid5(NAMESPACE, digest)}.parquet"
        meta = {
            META_SEGMENT: f"compact:{digest}".encode(),
            META_REPLACES: base64.b64encode(b"".join(name_key(n) for n in names)),
        }
        write_file(path, table, meta, writer=writer)
        for old in batch:
            old.unlink(missing_ok=True)
        fsync_path(partition)
        merged += len(batch)
    return merged


def housekeep(
    directory: Path,
    retention_days: int,
    today: dt.date,
    writer: str = "",
    on_corrupt: OnCorrupt = _raise,
) -> None:
    """Retention by age, then compaction of finished days.

    A file that cannot be read goes to `on_corrupt` (the writer quarantines
    it) and the partition is compacted without it; every later partition is
    still handled.

    Args:
        directory: the history root.
        retention_days: date partitions older than this many days are deleted.
        today: the current UTC date.
        writer: compact this writer's files (and those without a writer id).
        on_corrupt: called with an unreadable file and why; must move it out
            of the partition.  Default: raise ValueError.
    """
    from grstats.history.parquet import partitions  # noqa: PLC0415 - pyarrow when used

    cutoff = today - dt.timedelta(days=retention_days)
    for partition in list(partitions(directory)):
        try:
            day = dt.date.fromisoformat(partition.name.removeprefix("date="))
        except ValueError:
            continue  # not ours
        if day < cutoff:
            shutil.rmtree(partition)
            fsync_path(partition.parent)
            log.info("history.partition_expired", partition=str(partition.relative_to(directory)))
            with contextlib.suppress(OSError):  # not empty: other dates remain
                partition.parent.rmdir()
        elif day < today and (merged := _compact_partition(partition, writer, on_corrupt)):
            log.info(
                "history.partition_compacted",
                partition=str(partition.relative_to(directory)),
                files=merged,
            )


class Housekeeper:
    """Runs `housekeep` at most once per UTC day, in its own thread.

    Args:
        directory: the history root.
        retention_days: date partitions older than this many days are deleted.
        on_error: called (from the housekeeping thread) when a run fails.
        writer: the writer id whose files this housekeeper compacts.
        on_corrupt: called with a file that cannot be read (quarantines it).
        job: what a run does (default `housekeep` here; the offloaded writer's
            runs it in a child process).
    """

    def __init__(
        self,
        directory: Path,
        retention_days: int,
        on_error: Callable[[Exception], None],
        writer: str = "",
        on_corrupt: OnCorrupt = _raise,
        *,
        job: Callable[[dt.date], None] | None = None,
    ) -> None:
        self.directory = directory
        self._job = job
        self.writer = writer
        self._on_corrupt = on_corrupt
        self.retention_days = retention_days
        self._on_error = on_error
        self._done: dt.date | None = None
        self._thread: threading.Thread | None = None

    def run_daily(self, today: dt.date) -> None:
        """Start today's run unless it ran today or is still running.

        Args:
            today: the current UTC date.
        """
        if self._done == today or (self._thread and self._thread.is_alive()):
            return
        self._done = today
        self._thread = threading.Thread(
            target=self._run, args=(today,), name="grstats-history-housekeeping"
        )
        self._thread.start()

    def join(self) -> None:
        """Wait for a running housekeeping thread to finish."""
        if self._thread is not None:
            self._thread.join()

    def _run(self, today: dt.date) -> None:
        try:
            if self._job is not None:
                self._job(today)
            else:
                housekeep(self.directory, self.retention_days, today, self.writer, self._on_corrupt)
        except Exception as exc:  # thread boundary: counted and logged, retried tomorrow
            self._on_error(exc)
            log.error("history.housekeeping_failed", error=str(exc), directory=str(self.directory))
