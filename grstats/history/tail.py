"""The WAL tail: rows recorded but not yet in Parquet, read by the SQL endpoint.

Strategy: the daemon turns closed WAL files into Parquet segments only every
flush interval (or past `flush_bytes`); between flushes the recent rows exist
only in `wal/`.  The SQL endpoint's process reads those files itself (never
the daemon's) and shows their rows beside the Parquet files, as the segments
will hold them: the same storable-value rule, per-partition order and counter
thinning (`parquet.segment_parts`), each part tagged with the id its segment
file will be named from.  The query keeps a tail part only while no Parquet
file of that name exists: a segment is durable before its WAL file is
deleted, so a row is shown once while a flush runs, and the check is in the
query itself (see `grstats.sql.engine`), after the WAL was read.

Each file is read in steps of `CHUNK_BYTES` from where its last valid record
ended: a step's records become Arrow parts at once (thinned on their own) and
no Python row outlives its step, so what a read holds is the Arrow parts plus
one step.  Thinning a step on its own keeps a few more counter samples than
the segment will (a member's last sample of each step), which keeps every sum
of steps exact (`cadence`: keeping more samples than the rule asks is safe).

Invariants:
- Never raises into a query but `TimeoutError`: a file that went (segmented
  meanwhile) is skipped; an unreadable one is skipped and counted.
- Bounded in time: `table(deadline)` stops between steps once the deadline
  passed (`TimeoutError`), keeping what it read: the next call goes on from
  there, so a large tail is read across several statements' timeouts.
- Bounded in bytes: at most `max_bytes` of WAL files are read, newest first;
  the files beyond are counted (`skipped` now, `skipped_total` once each) and
  logged, and the endpoint warns in the query's answer.
- Memory goes back: the parts of a file that is gone are dropped on the next
  call, and Arrow's pool and the C heap return what they held (`_give_back`).
- The WAL is appended concurrently: an incomplete last record is the end of
  what is read (no error).  Damage inside a file is the writer's to
  quarantine; here it is counted and logged, and the valid records around it
  are shown, as the writer's segment will keep them.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import structlog

from grstats.core.records import HistoryRow
from grstats.history.parquet import history_schema, rows_to_table, segment_parts
from grstats.history.rowcheck import storable_row
from grstats.history.wal import WAL_MAGIC, ends_torn, scan_wal, wal_id

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_MAX_BYTES",
    "SEGMENT_COLUMN",
    "WalTail",
    "tail_of",
    "tail_schema",
]

log = structlog.get_logger("grstats.history")

DEFAULT_MAX_BYTES = 64 << 20  # a flush interval of a large group's WAL is a few MB
CHUNK_BYTES = 512 << 10  # read, decoded and thinned per step (~1,500 records, ~0.1 s)
SEGMENT_COLUMN = "_segment"  # the id the part's Parquet file will carry in its name
DATE_COLUMN = "date"


def tail_of(history_dir: str) -> WalTail | None:
    """The SQL endpoint's tail of a history directory ("": none)."""
    return WalTail(Path(history_dir).resolve()) if history_dir else None


def tail_schema() -> pa.Schema:
    """The history columns, the partition date and the segment file id."""
    return (
        history_schema()
        .append(pa.field(DATE_COLUMN, pa.date32()))
        .append(pa.field(SEGMENT_COLUMN, pa.string()))
    )


@dataclass(slots=True)
class _Read:
    size: int = -1  # the listed size this read is complete for (-1: not yet)
    mtime_ns: int = 0
    good: int = 0  # where the last valid record read ends: the next step starts here
    parts: list[pa.Table] = field(default_factory=list)
    damaged: int = 0


@dataclass(slots=True)
class WalTail:
    """The rows of a history directory's WAL files (thread-safe).

    Args:
        directory: the history root (its WAL files are in `wal/`).
        max_bytes: the most WAL bytes read.
    """

    directory: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    damaged: int = 0  # damaged stretches in the files currently read
    skipped: int = 0  # files not read now: past the bound, or unreadable
    skipped_bytes: int = 0  # their size
    skipped_total: int = 0  # files ever left out, each counted once
    _files: dict[Path, _Read] = field(default_factory=dict)
    _left_out: set[Path] = field(default_factory=set)
    _table: pa.Table | None = None
    _key: tuple[tuple[Path, int, int], ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def segment_column(self) -> str:
        """The column with the id each row's segment file will carry in its name."""
        return SEGMENT_COLUMN

    def table(self, deadline: float | None = None) -> pa.Table:
        """The tail's rows now, with `tail_schema()` (the same object while unchanged).

        Args:
            deadline: `time.monotonic()` by which to return (None: no limit).

        Raises:
            TimeoutError: the deadline passed first; what was read is kept for the next call.
        """
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=wait):
            raise TimeoutError("the WAL tail is being read by another statement")
        try:
            return self._refresh(deadline)
        finally:
            self._lock.release()

    def _refresh(self, deadline: float | None) -> pa.Table:
        listed = self._list()
        key = tuple(listed)
        if self._table is not None and key == self._key:
            return self._table
        present = {p for p, _, _ in listed}
        gone = [p for p in self._files if p not in present]
        for path in gone:  # segmented and deleted: their memory goes back now
            del self._files[path]
        self._left_out &= present
        if gone:
            self._table = None
            _give_back()
        budget, skipped, skipped_bytes, kept = self.max_bytes, [], 0, []
        for path, size, mtime_ns in reversed(listed):  # newest first within the bound
            if size > budget:
                skipped.append(path)
                skipped_bytes += size
                continue
            read = self._files.get(path)
            if read is None or size < read.good:  # new, or replaced by a shorter file
                read = self._files[path] = _Read()
            if (read.size, read.mtime_ns) != (size, mtime_ns) and not _advance(
                path, read, size, mtime_ns, deadline
            ):
                del self._files[path]
                skipped.append(path)
                continue
            kept.append(path)
            budget -= size
        self._note_skipped(skipped, skipped_bytes)
        self.damaged = sum(r.damaged for r in self._files.values())
        tables = [part for p, _, _ in listed if p in kept for part in self._files[p].parts]
        self._table = pa.concat_tables(tables) if tables else tail_schema().empty_table()
        self._key = key
        return self._table

    def _note_skipped(self, skipped: list[Path], skipped_bytes: int) -> None:
        new = [p for p in skipped if p not in self._left_out]
        self._left_out.update(new)
        self.skipped_total += len(new)
        if new:
            log.warning(
                "history.tail_skipped",
                files=len(skipped),
                bytes=skipped_bytes,
                max_bytes=self.max_bytes,
            )
        self.skipped, self.skipped_bytes = len(skipped), skipped_bytes

    def _list(self) -> list[tuple[Path, int, int]]:
        out: list[tuple[Path, int, int]] = []
        try:
            paths = sorted(self.directory.joinpath("wal").glob("wal-*.log"))
        except OSError:
            return out
        for path in paths:
            try:
                st = path.stat()
            except OSError:  # segmented and deleted meanwhile
                continue
            out.append((path, st.st_size, st.st_mtime_ns))
        return out


def _advance(path: Path, read: _Read, size: int, mtime_ns: int, deadline: float | None) -> bool:
    """Read `path` on from `read.good` up to `size`, a step at a time, into `read`.

    Returns False when the file cannot be read (gone, unreadable).

    Raises:
        TimeoutError: the deadline passed between two steps (`read` keeps the steps done).
    """
    segment = wal_id(path)
    try:
        with path.open("rb") as f:
            step = CHUNK_BYTES
            while read.good < size:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError("the WAL tail's read took the statement's time")
                f.seek(read.good)
                data = f.read(min(step, size - read.good))
                final = read.good + len(data) >= size
                head = b"" if read.good == 0 else WAL_MAGIC  # a step starts at a record
                scan = scan_wal(head + data)
                good = scan.good_size - len(head)
                if good <= 0 and not final:  # one record (or damage) longer than the step
                    step *= 2
                    continue
                damaged = scan.damaged
                if not final and scan.good_size < len(head) + len(data):
                    # what follows `good` is read again by the next step: count it then
                    damaged -= not ends_torn(head + data, scan.good_size)
                if damaged > 0:
                    log.warning("history.tail_damaged", path=path.name, stretches=damaged)
                read.damaged += max(0, damaged)
                rows = [r for r in (storable_row(row)[0] for row in scan.rows) if r is not None]
                read.parts.extend(_parts(rows, segment))
                del rows, scan
                read.good += max(0, good)
                if final:
                    break
    except TimeoutError:  # an OSError too: not the file's fault
        raise
    except OSError:  # gone (segmented meanwhile) or unreadable
        return False
    read.size, read.mtime_ns = size, mtime_ns
    return True


def _give_back() -> None:
    # what a read held goes back to the system: Arrow's pool, and the C heap, where the
    # steps' short-lived rows leave free holes (measured: +222 MB after 3,000 files went,
    # +2 MB once trimmed); glibc only, a no-op elsewhere
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _parts(rows: list[HistoryRow], segment: str) -> list[pa.Table]:
    out = []
    for _, day, part, name_id in segment_parts(rows_to_table(rows), segment):
        n = part.num_rows
        dated = part.append_column(DATE_COLUMN, pa.array([day] * n, pa.date32()))
        tagged = dated.append_column(SEGMENT_COLUMN, pa.array([str(name_id)] * n))
        out.append(tagged.cast(tail_schema()))
    return out
