"""The history writer: a bounded buffer on the event loop, a thread that owns the files.

Strategy: `HistoryWriter.record()` only appends a row to an in-memory buffer
under a lock; a dedicated thread ("grstats-history") owns every file.  Each
tick (`fsync_interval_s`) it appends the buffered rows to the current WAL file
(`grstats.history.wal`) under `<dir>/wal/` and fsyncs it; every
`flush_interval_s` (and on `flush()` / `close()`) it closes that WAL file and
turns it into Parquet segments (`grstats.history.parquet`) by re-reading it
from disk -- the same function replays a previous run's WAL at `start()`.

Invariants:
- Rows are fsynced in the order they were recorded.
- Segments are named from the WAL file's id and the WAL file is deleted only
  once its segments are durable, so a crash between the rename and the WAL
  deletion rewrites the *same* file on replay instead of adding a duplicate.
- Leftover temporaries are deleted at start; retention and compaction run in
  `grstats.history.housekeeping`'s own thread once a day.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import threading
import time
import uuid
from collections import deque
from pathlib import Path

import pyarrow as pa
import structlog

from grstats.core.records import HistoryRow
from grstats.history.housekeeping import Housekeeper
from grstats.history.parquet import (
    fsync_path,
    history_schema,
    read_history,
    remove_temporaries,
    rows_to_table,
    write_segments,
)
from grstats.history.stats import Counters, HistoryStats
from grstats.history.wal import (
    WAL_MAGIC,
    WalFile,
    WalScan,
    encode_record,
    repair_wal,
    scan_wal,
    wal_id,
)

__all__ = [  # the names the daemon, the CLI and older imports use
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

_MAX_PENDING = 1_000_000  # rows buffered while the disk fails; oldest dropped beyond


class HistoryError(Exception):
    """The history could not be written (disk full, permissions, writer closed)."""


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
        self._counters = Counters()
        self._housekeeper = Housekeeper(self.directory, retention_days, self._count_error)
        # owned by the worker thread (or by start() before the thread exists)
        self._wal: WalFile | None = None
        self._closed_wals: list[Path] = []
        self._next_wal = 1

    @property
    def stats(self) -> HistoryStats:
        """A snapshot of the counters."""
        return self._counters.snapshot()

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
                with self._counters.lock:
                    self._counters.rows_dropped += 1
            self._pending.append(row)
        with self._counters.lock:
            self._counters.rows_recorded += 1

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
            await asyncio.to_thread(self._housekeeper.join)

    # ------------------------------------------------------------ worker thread

    def _count_error(self, _exc: BaseException | None = None) -> None:
        with self._counters.lock:
            self._counters.errors += 1

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
                self._housekeeper.run_daily(dt.datetime.now(dt.UTC).date())
            except Exception as exc:  # thread boundary: hand it to the awaiting coroutine
                failure = exc
                self._count_error()
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
                self._count_error()
                log.error("history.row_rejected", error=str(exc), member=str(row.member_id))
        if not records:
            return
        try:
            if self._wal is None:
                self._open_wal()
            assert self._wal is not None
            self._wal.append(b"".join(records))
        except OSError:
            self._abandon_batch(batch)
            raise
        with self._counters.lock:
            self._counters.rows_durable += len(batch)

    def _abandon_batch(self, batch: list[HistoryRow]) -> None:
        # Cut what the failed write may have left, then retry the rows later.
        if self._wal is not None:
            try:
                self._wal.truncate_to_good()
            except OSError:
                self._retire_wal()  # replay cuts its torn tail
        with self._cond:
            self._pending.extendleft(reversed(batch))

    def _open_wal(self) -> None:
        path = self._wal_dir / f"wal-{self._next_wal:012d}-{uuid.uuid4().hex}.log"
        self._next_wal += 1
        self._wal = WalFile(path)

    def _retire_wal(self) -> None:
        if self._wal is not None:
            self._wal.close()
            self._closed_wals.append(self._wal.path)
        self._wal = None

    def _rotate(self) -> None:
        self._retire_wal()
        while self._closed_wals:
            self._segment_wal(self._closed_wals[0], recovering=False)
            self._closed_wals.pop(0)

    def _segment_wal(self, path: Path, *, recovering: bool) -> None:
        scan = repair_wal(path)
        if scan is None:
            return  # not ours: leave it for a human
        written = write_segments(self.directory, self._table(scan.rows), segment_id=wal_id(path))
        path.unlink()
        fsync_path(self._wal_dir)
        with self._counters.lock:
            self._counters.segments_written += len(written)
            if recovering:
                self._counters.rows_recovered += len(scan.rows)
                self._counters.wal_bytes_cut += scan.file_size - scan.good_size
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
                    self._count_error()
                    log.error("history.row_rejected", error=str(exc), member=str(row.member_id))
                else:
                    good.append(row)
            return rows_to_table(good)
