"""The history writer: a bounded buffer on the event loop, a thread that owns the files.

Strategy: `HistoryWriter.record()` only appends a row to a bounded in-memory
buffer under a lock; a dedicated thread ("grstats-history") owns every file
through `grstats.history.journal.Journal`.  Each tick (`fsync_interval_s`) it
appends the buffered rows to the WAL and fsyncs them; every
`flush_interval_s` (and on `flush()` / `close()`) it turns the WAL into
Parquet segments.  A failing disk is a state, not a crash: the rows stay in
the buffer, the thread retries with a capped exponential backoff, `health()`
says `degraded` with the reason, the fault is logged once per
`log_interval_s` (with the count suppressed), and the first success logs
`history.recovered` and clears it.  A history directory deleted under the
running writer is recreated at the next tick (`history.directory_recreated`,
counted as an error): the open WAL file's rows, still readable through its
descriptor, and the buffered ones land there.

Invariants:
- Rows are fsynced in the order they were recorded; fsynced rows are never
  lost (a failed rotation keeps the WAL file; a close on a failing disk
  leaves it for the next start).
- The buffer holds at most `max_buffer_rows` rows; beyond, the oldest is
  dropped and counted (`buffer_full`); past half of it `health()` says so.
  Every row that will never be stored is counted under a reason
  (`HistoryFigures.dropped`); none is lost silently.
  A row dropped, a value stored NULL or a file quarantined keeps `health()`
  degraded for `fault_window_s` with the reason.
- At most one WAL file descriptor is open.
- One process per writer id on a tree: `start()` takes an exclusive lock on
  `wal/.lock-<writer id>` (held, and removed, at `close()`), so a second writer with the
  same id (two collectors of one host without their own client id) fails to
  start instead of replaying and deleting the other's WAL.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import functools
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from grstats.core.records import HistoryRow
from grstats.history.fileops import FileOps
from grstats.history.housekeeping import Housekeeper
from grstats.history.journal import Journal
from grstats.history.offload import Offload
from grstats.history.stats import Counters, HistoryFigures, HistoryHealth, RateLimitedLog
from grstats.history.wal import (
    WAL_MAGIC,
    LockedError,
    WalScan,
    WriterLock,
    encode_record,
    repair_wal,
    scan_wal,
    writer_id,
)

__all__ = [  # the names the daemon, the CLI and older imports use (+ _PARQUET_NAMES)
    "WAL_MAGIC",
    "HistoryError",
    "HistoryFigures",
    "HistoryHealth",
    "HistoryWriter",
    "WalScan",
    "encode_record",
    "repair_wal",
    "scan_wal",
]

log = structlog.get_logger("grstats.history")

_PARQUET_NAMES = ("history_schema", "read_history", "rows_to_table", "write_segments")


def __getattr__(name: str) -> Any:
    # the Parquet names, kept importable from here without loading pyarrow with the writer
    if name in _PARQUET_NAMES:
        from grstats.history import parquet  # noqa: PLC0415 - pyarrow when used

        return getattr(parquet, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ~2.5 h of a 9-member collector at one sample a second (81 000 rows/h), ~500
# bytes a row: ~100 MB at the bound.  Longer outages are the WAL's job.
DEFAULT_MAX_BUFFER_ROWS = 200_000


class HistoryError(Exception):
    """The history could not be written (disk full, permissions, writer closed)."""


class _Phase:
    """The fault and the capped exponential backoff of one step of the writer thread."""

    def __init__(self, name: str, first_s: float, max_s: float) -> None:
        self.name = name
        self.event = "history.write_failed" if name == "wal" else "history.segments_failed"
        self._first_s, self._max_s = first_s, max_s
        self.delay_s = 0.0
        self.retry_at = 0.0
        self.fault: str | None = None  # read by health() from any thread

    def failed(self, fault: str) -> None:
        self.fault = fault
        self.delay_s = min(max(2 * self.delay_s, self._first_s), self._max_s)
        self.retry_at = time.monotonic() + self.delay_s

    def recovered(self) -> None:
        self.fault, self.delay_s, self.retry_at = None, 0.0, 0.0


class HistoryWriter:
    """Durable history of HistoryRow samples for the daemon.

    Args:
        directory: history root (created if missing).
        scope: "local" or "all"; stored for the daemon, the writer accepts any row.
        retention_days: date partitions older than this many days are deleted.
        flush_interval_s: how often the WAL is turned into Parquet segments.
        fsync_interval_s: how often buffered rows are appended and fsynced (<= 1 s).
        max_buffer_rows: bound of the in-memory buffer (oldest dropped beyond).
        retry_max_s: cap of the backoff between retries on a failing disk.
        log_interval_s: a repeating fault is logged at most once per this.
        instance: tells apart writers of one host sharing `directory`; the
            writer id in file names is derived from the host name and this.
        file_ops: the OS-call boundary (tests inject faults there).
        fault_window_s: `/healthz` stays degraded this long after a row was
            dropped, a value stored NULL or a file quarantined (the counters
            in /metrics keep them for good).
        offload: the Parquet steps (segments, de-duplication marks,
            housekeeping) run in short-lived child processes
            (`grstats.history.offload`), so this process never loads pyarrow.
    """

    def __init__(
        self,
        directory: Path,
        *,
        scope: str = "local",
        retention_days: int = 30,
        flush_interval_s: float = 60.0,
        fsync_interval_s: float = 1.0,
        max_buffer_rows: int = DEFAULT_MAX_BUFFER_ROWS,
        retry_max_s: float = 30.0,
        log_interval_s: float = 60.0,
        instance: str = "",
        file_ops: FileOps | None = None,
        fault_window_s: float = 3600.0,
        offload: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.scope = scope
        self.flush_interval_s = flush_interval_s
        self.fsync_interval_s = fsync_interval_s
        self.max_buffer_rows = max_buffer_rows
        self.retry_max_s = retry_max_s
        self.writer_id = writer_id(instance)
        self.fault_window_s = fault_window_s
        self._cond = threading.Condition()
        self._pending: deque[HistoryRow] = deque()
        self._in_flight = 0
        self._flush_waiters: list[concurrent.futures.Future[None]] = []
        self._stopping = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._writer_lock: WriterLock | None = None
        self._counters = Counters()
        self._limiter = RateLimitedLog(log, log_interval_s)
        self.offload = Offload(self.directory, self.writer_id, self._counters) if offload else None
        self._journal = Journal(
            self.directory,
            self.writer_id,
            file_ops or FileOps(),
            self._counters,
            self._limiter,
            offload=self.offload,
        )
        self._housekeeper = Housekeeper(
            self.directory,
            retention_days,
            self._count_error,
            self.writer_id,
            on_corrupt=self._journal.quarantine,
            job=(
                None
                if self.offload is None
                else functools.partial(self.offload.housekeep, retention_days)
            ),
        )
        # faults and backoff per phase: appending to the WAL, writing segments
        self._phases = {
            name: _Phase(name, fsync_interval_s, retry_max_s) for name in ("wal", "segments")
        }

    @property
    def stats(self) -> HistoryFigures:
        """A snapshot of the counters."""
        with self._cond:
            buffered = len(self._pending) + self._in_flight
        return self._counters.snapshot(buffered)

    def health(self) -> HistoryHealth:
        """Whether the history is being written, and if not, why (for /healthz).

        Returns:
            ok, or degraded with the reason; and the data faults of the last
            `fault_window_s` (rows dropped, values stored NULL, files
            quarantined, rows held in memory past half the bound), which
            degrade /healthz while the history is still being written.
        """
        faults = self._counters.recent_faults(self.fault_window_s)
        with self._cond:
            buffered = len(self._pending) + self._in_flight
        if buffered > self.max_buffer_rows // 2:
            faults.append(f"{buffered} rows held in memory (bound {self.max_buffer_rows})")
        failing = [f"{p.name} failing: {p.fault}" for p in self._phases.values() if p.fault]
        if failing:
            return HistoryHealth(False, "; ".join(failing), tuple(faults))
        if self._thread is None or not self._thread.is_alive():
            return HistoryHealth(False, "history writer not running", tuple(faults))
        return HistoryHealth(True, faults=tuple(faults))

    async def start(self) -> None:
        """Recover a previous run (temporaries, WAL replay, compaction), start the thread.

        A previous run's WAL that cannot be turned into segments now (a full
        disk) is kept and retried: the writer starts degraded, not at all.

        Raises:
            HistoryError: the directory cannot be prepared, or another process
                runs a writer with this id on it.
        """
        try:
            await asyncio.to_thread(self._journal.wal_dir.mkdir, parents=True, exist_ok=True)
            self._writer_lock = await asyncio.to_thread(
                WriterLock.take, self._journal.wal_dir, self.writer_id, self.directory
            )
        except LockedError as exc:
            raise HistoryError(str(exc)) from None
        except OSError as exc:
            raise HistoryError(f"{self.directory}: cannot recover history: {exc}") from exc
        try:
            await asyncio.to_thread(self._journal.recover)
        except OSError as exc:  # replaying into segments failed: retried at rotation
            self._phases["segments"].failed(str(exc))
            self._count_error()
            self._limiter.emit("error", "history.segments_failed", error=str(exc))
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
            dropped = 0
            if len(self._pending) >= self.max_buffer_rows:
                self._pending.popleft()
                dropped = 1
            self._pending.append(row)
        with self._counters.lock:
            self._counters.rows_recorded += 1
            if dropped:
                self._buffer_dropped(dropped)

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
            HistoryError: the final flush failed (fsynced rows remain in the WAL;
                rows never fsynced are counted as dropped `disk_full`).
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
            if self._writer_lock is not None:
                self._writer_lock.release()
                self._writer_lock = None

    # ------------------------------------------------------------ worker thread

    def _count_error(self, _exc: BaseException | None = None) -> None:
        with self._counters.lock:
            self._counters.errors += 1

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
            now = time.monotonic()
            next_sync = now + self.fsync_interval_s
            forced = stopping or bool(waiters)
            wal, segments = self._phases["wal"], self._phases["segments"]
            failure: BaseException | None = None
            if forced or now >= wal.retry_at:
                failure = self._attempt(wal, self._sync)
            if failure is None and (forced or now >= max(next_flush, segments.retry_at)):
                next_flush = now + self.flush_interval_s
                failure = self._attempt(segments, self._journal.rotate)
            # the wall clock through time.time(), as every sample's timestamp
            self._housekeeper.run_daily(dt.datetime.fromtimestamp(time.time(), dt.UTC).date())
            if stopping:
                self._stop(failure)
            for waiter in waiters:
                if not waiter.set_running_or_notify_cancel():
                    continue  # its caller stopped waiting (the daemon's close timeout)
                if failure is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(HistoryError(f"{self.directory}: {failure}"))
            if stopping:
                return

    def _reappear(self) -> None:
        # The history directory deleted under the running daemon: recreate it,
        # carry the open WAL's rows over and retake the writer lock (its file went too).
        if not self._journal.reappear():
            return
        self._count_error()
        if self._writer_lock is not None:
            self._writer_lock.release()
        self._writer_lock = WriterLock.take(self._journal.wal_dir, self.writer_id, self.directory)

    def _sync(self) -> None:
        self._reappear()
        with self._cond:
            batch = list(self._pending)
            self._pending.clear()
            self._in_flight = len(batch)
        try:
            try:
                rows = self._journal.prepare(batch)
            except BaseException:
                self._requeue(batch)
                raise
            try:
                self._journal.write(rows)
            except BaseException:
                self._requeue(rows)  # the dropped ones are counted once, not again
                raise
        finally:
            with self._cond:
                self._in_flight = 0

    def _requeue(self, batch: list[HistoryRow]) -> None:
        # The batch goes back in front of what was recorded meanwhile; the bound holds.
        with self._cond:
            self._pending.extendleft(reversed(batch))
            excess = max(0, len(self._pending) - self.max_buffer_rows)
            for _ in range(excess):
                self._pending.popleft()
        if excess:
            with self._counters.lock:
                self._buffer_dropped(excess)

    def _buffer_dropped(self, rows: int) -> None:
        # with the counters' lock held
        self._counters.buffer_full += rows
        self._counters.fault(
            "buffer_full", f"{self._counters.buffer_full} row(s) dropped: buffer full"
        )

    def _attempt(self, phase: _Phase, step: Callable[[], None]) -> BaseException | None:
        try:
            step()
        except Exception as exc:  # thread boundary: a state, handed to the waiters
            self._count_error()
            with self._cond:
                buffered = len(self._pending)
            phase.failed(f"{exc} ({buffered} rows buffered)")
            self._limiter.emit("error", phase.event, error=str(exc), directory=str(self.directory))
            return exc
        if phase.fault is not None:
            phase.recovered()
            suppressed = self._limiter.reset(phase.event)
            log.info("history.recovered", phase=phase.name, suppressed=suppressed)
        return None

    def _stop(self, failure: BaseException | None) -> None:
        self._journal.close()
        if failure is None:
            return
        with self._cond:
            lost = len(self._pending)
            self._pending.clear()
        with self._counters.lock:
            self._counters.disk_full += lost
            if lost:
                self._counters.fault("disk_full", f"{lost} row(s) lost at close: {failure}")
        if lost:
            log.error("history.rows_lost_at_close", rows=lost, error=str(failure))
