"""Crash-safe history: write-ahead log -> Parquet segments (DESIGN.md section 6).

Strategy: `HistoryWriter.record()` only appends a row to an in-memory buffer
under a lock; a dedicated thread ("grstats-history") owns every file.  Each
tick (`fsync_interval_s`) it appends the buffered rows to the current WAL file
under `<dir>/wal/` and fsyncs it; every `flush_interval_s` (and on `flush()` /
`close()`) it closes that WAL file and turns it into Parquet segments.  A
segment is always built by *re-reading* a closed WAL file from disk -- the
same function replays a previous run's WAL at `start()` -- so a segment is a
pure function of the WAL file's valid records.

Invariants:
- WAL record = u32 length + u32 CRC32 (little endian) + msgpack list of the
  row's values in HISTORY_COLUMNS order; a file starts with `WAL_MAGIC`.
  Reading stops at the first record whose length or CRC does not check out and
  the file is truncated there (torn tail cut); rows after it are not trusted.
- Parquet segments (format, layout, atomic rename, compaction, retention:
  `grstats.history.parquet`) are named from the WAL file's UUID, and the WAL
  file is deleted only once its segments are durable, so a crash between the
  rename and the WAL deletion rewrites the *same* file on replay instead of
  adding a duplicate.  Leftover temporaries are deleted at start.
- Retention and compaction of finished days run once a day in a second thread
  so the WAL keeps its fsync cadence.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import os
import struct
import threading
import time
import uuid
import zlib
from collections import deque
from dataclasses import dataclass, fields
from pathlib import Path

import msgpack
import pyarrow as pa
import structlog

from grstats.core.records import HistoryRow
from grstats.history.parquet import (
    fsync_path,
    history_schema,
    housekeep,
    read_history,
    remove_temporaries,
    row_values,
    rows_to_table,
    write_segments,
)

__all__ = [
    "WAL_MAGIC",
    "HistoryError",
    "HistoryStats",
    "HistoryWriter",
    "WalScan",
    "encode_record",
    "history_schema",
    "read_history",
    "repair_wal",
    "rows_to_table",
    "scan_wal",
    "write_segments",
]

log = structlog.get_logger("grstats.history")

WAL_MAGIC = b"GRSWAL1\n"
_RECORD_HEADER = struct.Struct("<II")
_MAX_RECORD = 1 << 20  # a row is ~300 bytes; anything larger is a corrupt length
_MAX_PENDING = 1_000_000  # rows buffered while the disk fails; oldest dropped beyond


class HistoryError(Exception):
    """The history could not be written (disk full, permissions, writer closed)."""


@dataclass(frozen=True, slots=True)
class HistoryStats:
    """Counters of one writer since it was created (for /metrics and tests)."""

    rows_recorded: int = 0
    rows_durable: int = 0  # fsynced to the WAL, in the order they were recorded
    rows_dropped: int = 0  # buffer overflow while the disk failed
    rows_recovered: int = 0  # valid WAL rows of a previous run found at start
    wal_bytes_cut: int = 0  # torn or corrupt WAL tails truncated at start
    segments_written: int = 0
    errors: int = 0


# ---------------------------------------------------------------- write-ahead log


def encode_record(row: HistoryRow) -> bytes:
    """One WAL record: u32 length + u32 CRC32 of the payload + msgpack payload.

    Args:
        row: the sample.

    Returns:
        The record bytes.
    """
    payload: bytes = msgpack.packb(row_values(row), use_bin_type=True)
    return _RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True, slots=True)
class WalScan:
    """Result of reading one WAL file: the valid rows and where they end."""

    rows: list[HistoryRow]
    good_size: int  # bytes of the file that hold valid records (incl. the magic)
    file_size: int


def scan_wal(data: bytes) -> WalScan:
    """Decode the valid prefix of a WAL file's bytes.

    Args:
        data: the whole file.

    Returns:
        The rows up to the first torn or corrupt record and the valid size.
    """
    if not data.startswith(WAL_MAGIC):
        return WalScan([], 0, len(data))
    rows: list[HistoryRow] = []
    offset = len(WAL_MAGIC)
    while offset + _RECORD_HEADER.size <= len(data):
        length, crc = _RECORD_HEADER.unpack_from(data, offset)
        start = offset + _RECORD_HEADER.size
        if length > _MAX_RECORD or start + length > len(data):
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        try:
            values = msgpack.unpackb(payload, raw=False, strict_map_key=True)
            row = HistoryRow(*values)
        except (ValueError, TypeError, msgpack.exceptions.UnpackException):
            break  # CRC good but not a row of ours: treat as the end
        rows.append(row)
        offset = start + length
    return WalScan(rows, offset, len(data))


def repair_wal(path: Path) -> WalScan | None:
    """Read a WAL file and truncate (durably) a torn or corrupt tail.

    Args:
        path: the WAL file.

    Returns:
        The valid rows, or None when the file is not a grstats WAL (left untouched).
    """
    scan = scan_wal(path.read_bytes())
    if scan.good_size == 0 and scan.file_size >= len(WAL_MAGIC):
        log.error("history.wal_unknown_format", path=str(path))
        return None
    if scan.good_size < scan.file_size:
        with path.open("r+b") as f:
            f.truncate(scan.good_size)
            os.fsync(f.fileno())
        cut = scan.file_size - scan.good_size
        log.warning("history.wal_tail_cut", path=path.name, bytes=cut, rows=len(scan.rows))
    return scan


def _wal_id(path: Path) -> str:
    return path.stem.split("-", 1)[1]


class HistoryWriter:
    """Durable history of HistoryRow samples for the daemon.

    Args:
        directory: history root (created if missing).
        scope: "local" or "all"; stored for the daemon, the writer accepts any row.
        retention_days: date partitions older than this many days are deleted.
        flush_interval_s: how often the WAL is turned into Parquet segments.
        fsync_interval_s: how often buffered rows are appended and fsynced (<= 1 s).
    """

    def __init__(
        self,
        directory: Path,
        *,
        scope: str = "local",
        retention_days: int = 30,
        flush_interval_s: float = 60.0,
        fsync_interval_s: float = 1.0,
    ) -> None:
        self.directory = Path(directory)
        self.scope = scope
        self.retention_days = retention_days
        self.flush_interval_s = flush_interval_s
        self.fsync_interval_s = fsync_interval_s
        self._wal_dir = self.directory / "wal"
        self._cond = threading.Condition()
        self._pending: deque[HistoryRow] = deque()
        self._flush_waiters: list[concurrent.futures.Future[None]] = []
        self._stopping = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._counts = dict.fromkeys((f.name for f in fields(HistoryStats)), 0)
        # owned by the worker thread (or by start() before the thread exists)
        self._wal_fd: int | None = None
        self._wal_path: Path | None = None
        self._wal_size = 0
        self._closed_wals: list[Path] = []
        self._next_wal = 1
        self._housekept: dt.date | None = None
        self._housekeeper: threading.Thread | None = None

    @property
    def stats(self) -> HistoryStats:
        """A snapshot of the counters."""
        with self._cond:
            return HistoryStats(**self._counts)

    async def start(self) -> None:
        """Recover a previous run (temporaries, WAL replay, compaction), start the thread.

        Raises:
            HistoryError: the directory cannot be prepared or the WAL not replayed.
        """
        try:
            await asyncio.to_thread(self._recover)
        except OSError as exc:
            raise HistoryError(f"{self.directory}: cannot recover history: {exc}") from exc
        self._thread = threading.Thread(target=self._run, name="grstats-history", daemon=True)
        self._thread.start()

    def record(self, row: HistoryRow) -> None:
        """Buffer one sample; never blocks on I/O (safe on the event loop).

        Args:
            row: the sample.

        Raises:
            HistoryError: the writer is closed.
        """
        with self._cond:
            if self._closed:
                raise HistoryError("history writer is closed")
            if len(self._pending) >= _MAX_PENDING:
                self._pending.popleft()
                self._counts["rows_dropped"] += 1
            self._pending.append(row)
            self._counts["rows_recorded"] += 1

    async def flush(self) -> None:
        """Make every row recorded so far durable in the WAL and written as Parquet.

        Raises:
            HistoryError: writing failed (the rows stay in the WAL or buffer for a retry).
        """
        if self._thread is None:
            raise HistoryError("history writer not started")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._cond:
            self._flush_waiters.append(done)
            self._cond.notify()
        await asyncio.wrap_future(done)

    async def close(self) -> None:
        """Final flush (WAL fsync and Parquet), then stop the thread.

        Raises:
            HistoryError: the final flush failed (fsynced rows remain in the WAL).
        """
        with self._cond:
            self._closed = True
        if self._thread is None:
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._cond:
            self._stopping = True
            self._flush_waiters.append(done)
            self._cond.notify()
        try:
            await asyncio.wrap_future(done)
        finally:
            await asyncio.to_thread(self._thread.join)
            await asyncio.to_thread(self._join_housekeeper)

    # ------------------------------------------------------------ worker thread

    def _recover(self) -> None:
        self._wal_dir.mkdir(parents=True, exist_ok=True)
        remove_temporaries(self.directory)
        wals = sorted(self._wal_dir.glob("wal-*.log"))
        for path in wals:
            self._next_wal = max(self._next_wal, int(path.stem.split("-")[1]) + 1)
        for path in wals:
            self._segment_wal(path, recovering=True)

    def _run(self) -> None:
        next_sync = time.monotonic() + self.fsync_interval_s
        next_flush = time.monotonic() + self.flush_interval_s
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: self._stopping or bool(self._flush_waiters),
                    timeout=max(0.0, next_sync - time.monotonic()),
                )
                stopping, waiters = self._stopping, self._flush_waiters
                self._flush_waiters = []
            failure: BaseException | None = None
            try:
                next_sync = time.monotonic() + self.fsync_interval_s
                self._sync_wal()
                if stopping or waiters or time.monotonic() >= next_flush:
                    next_flush = time.monotonic() + self.flush_interval_s
                    self._rotate()
                self._housekeep()
            except Exception as exc:  # thread boundary: hand it to the awaiting coroutine
                failure = exc
                with self._cond:
                    self._counts["errors"] += 1
                log.error("history.write_failed", error=str(exc), directory=str(self.directory))
            for waiter in waiters:
                if failure is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(HistoryError(f"{self.directory}: {failure}"))
            if stopping:
                return

    def _sync_wal(self) -> None:
        with self._cond:
            batch = list(self._pending)
            self._pending.clear()
        if not batch:
            return
        records: list[bytes] = []
        for row in batch[:]:
            try:
                records.append(encode_record(row))
            except (TypeError, ValueError, OverflowError) as exc:  # a caller's bug, not ours
                batch.remove(row)
                with self._cond:
                    self._counts["errors"] += 1
                log.error("history.row_rejected", error=str(exc), member=str(row.member_id))
        if not records:
            return
        data = memoryview(b"".join(records))
        try:
            if self._wal_fd is None:
                self._open_wal()
            assert self._wal_fd is not None
            while data:  # a regular file may take less than asked (e.g. disk full)
                data = data[os.write(self._wal_fd, data) :]
            os.fsync(self._wal_fd)
        except OSError:
            self._abandon_batch(batch)
            raise
        self._wal_size += sum(len(r) for r in records)
        with self._cond:
            self._counts["rows_durable"] += len(batch)

    def _abandon_batch(self, batch: list[HistoryRow]) -> None:
        # Cut what the failed write may have left, then retry the rows later.
        if self._wal_fd is not None:
            try:
                os.ftruncate(self._wal_fd, self._wal_size)
            except OSError:
                self._retire_wal()  # replay cuts its torn tail
        with self._cond:
            self._pending.extendleft(reversed(batch))

    def _open_wal(self) -> None:
        path = self._wal_dir / f"wal-{self._next_wal:012d}-{uuid.uuid4().hex}.log"
        self._next_wal += 1
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        os.write(fd, WAL_MAGIC)
        os.fsync(fd)
        fsync_path(self._wal_dir)  # the new name must survive a crash too
        self._wal_fd, self._wal_path, self._wal_size = fd, path, len(WAL_MAGIC)

    def _retire_wal(self) -> None:
        if self._wal_fd is not None and self._wal_path is not None:
            os.close(self._wal_fd)
            self._closed_wals.append(self._wal_path)
        self._wal_fd, self._wal_path, self._wal_size = None, None, 0

    def _rotate(self) -> None:
        self._retire_wal()
        while self._closed_wals:
            self._segment_wal(self._closed_wals[0], recovering=False)
            self._closed_wals.pop(0)

    def _segment_wal(self, path: Path, *, recovering: bool) -> None:
        scan = repair_wal(path)
        if scan is None:
            return  # not ours: leave it for a human
        written = write_segments(self.directory, self._table(scan.rows), segment_id=_wal_id(path))
        path.unlink()
        fsync_path(self._wal_dir)
        with self._cond:
            self._counts["segments_written"] += len(written)
            if recovering:
                self._counts["rows_recovered"] += len(scan.rows)
                self._counts["wal_bytes_cut"] += scan.file_size - scan.good_size
        if recovering:
            log.info(
                "history.wal_replayed", path=path.name, rows=len(scan.rows), segments=len(written)
            )

    def _table(self, rows: list[HistoryRow]) -> pa.Table:
        # A row of the wrong types must not poison its WAL file forever: drop it alone.
        try:
            return rows_to_table(rows)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            good = []
            for row in rows:
                try:
                    rows_to_table([row])
                except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                    with self._cond:
                        self._counts["errors"] += 1
                    log.error("history.row_rejected", error=str(exc), member=str(row.member_id))
                else:
                    good.append(row)
            return rows_to_table(good)

    def _housekeep(self) -> None:
        # Retention and compaction can take seconds (a day of small files); they
        # run beside the writer thread so the WAL keeps its fsync cadence.  They
        # touch only finished days and only files listed before they start.
        today = dt.datetime.now(dt.UTC).date()
        if self._housekept == today or (self._housekeeper and self._housekeeper.is_alive()):
            return
        self._housekept = today
        self._housekeeper = threading.Thread(
            target=self._housekeep_day, args=(today,), name="grstats-history-housekeeping"
        )
        self._housekeeper.start()

    def _housekeep_day(self, today: dt.date) -> None:
        try:
            housekeep(self.directory, self.retention_days, today)
        except Exception as exc:  # thread boundary: counted and logged, retried tomorrow
            with self._cond:
                self._counts["errors"] += 1
            log.error("history.housekeeping_failed", error=str(exc), directory=str(self.directory))

    def _join_housekeeper(self) -> None:
        if self._housekeeper is not None:
            self._housekeeper.join()
