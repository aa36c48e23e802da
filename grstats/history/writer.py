"""The history writer: a bounded buffer on the event loop, a thread that owns the files.

Strategy: `HistoryWriter.record()` only appends a row to a bounded in-memory
buffer (`grstats.history.buffer.RowBuffer`); a dedicated thread
("grstats-history") owns every file through `grstats.history.journal.Journal`.
Each tick (`fsync_interval_s`) it appends the buffered rows to the WAL and
fsyncs them; every `flush_interval_s` (and on `flush()` / `close()`) it
turns the WAL into Parquet segments.  A failing disk is a state, not a
crash (each of the two steps is a `grstats.history.phase.Phase`): the rows
stay in the buffer, the thread retries with a capped exponential backoff,
`health()` says `degraded` with the reason, the fault is logged once per
`log_interval_s` (with the count suppressed), and the first success logs
`history.recovered` and clears it.  A history directory deleted under the
running writer is recreated at the next tick (`history.directory_recreated`,
counted as an error): the open WAL file's rows, still readable through its
descriptor, and the buffered ones land there.

Invariants:
- Rows are fsynced in the order they were recorded; fsynced rows are never
  lost (a failed rotation keeps the WAL file; a close on a failing disk
  leaves it for the next start).
- The buffer holds at most `max_buffer_rows` rows, the batch being written
  included; beyond, the oldest waiting is dropped and counted
  (`buffer_full`); past half of it `health()` says so.
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
from pathlib import Path
from typing import Any

import structlog

from grstats.core.records import HistoryRow
from grstats.history.buffer import RowBuffer
from grstats.history.fileops import FileOps
from grstats.history.housekeeping import Housekeeper
from grstats.history.journal import Journal
from grstats.history.offload import Offload
from grstats.history.phase import Phase
from grstats.history.stats import Counters, HistoryFigures, HistoryHealth, RateLimitedLog
from grstats.history.wal import (
    WAL_MAGIC,
    LockedError,
    WalScan,
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


class HistoryWriter:
    """Durable history of HistoryRow samples for the daemon.

    Args:
        directory: history root (created if missing).
        scope: "local" or "all"; stored for the daemon, the writer accepts any row.
        retention_days: date partitions older than this many days are deleted.
        flush_interval_s: how often the WAL is turned into Parquet segments.
        flush_bytes: also as soon as the WAL holds this many bytes (0: by time only),
            so that the SQL endpoint's read of the unflushed rows stays within its bound.
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
        flush_bytes: int = 0,
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
        self.flush_bytes = flush_bytes
        self.fsync_interval_s = fsync_interval_s
        self.retry_max_s = retry_max_s
        self.writer_id = writer_id(instance)
        self.fault_window_s = fault_window_s
        self._cond = threading.Condition()
        self._flush_waiters: list[concurrent.futures.Future[None]] = []
        self._stopping = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._counters = Counters()
        self._buffer = RowBuffer(max_buffer_rows, self._counters)
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
            self._counters.error,
            self.writer_id,
            on_corrupt=self._journal.faults.quarantine,
            job=(
                None
                if self.offload is None
                else functools.partial(self.offload.housekeep, retention_days)
            ),
        )
        # faults and backoff per phase: appending to the WAL, writing segments
        phase = functools.partial(
            Phase,
            first_s=fsync_interval_s,
            max_s=retry_max_s,
            counters=self._counters,
            limiter=self._limiter,
            directory=str(self.directory),
        )
        self._wal_phase = phase("wal", "history.write_failed")
        self._segments_phase = phase("segments", "history.segments_failed")

    @property
    def stats(self) -> HistoryFigures:
        """A snapshot of the counters."""
        return self._counters.snapshot(self._buffer.held())

    def health(self) -> HistoryHealth:
        """Whether the history is being written, and if not, why (for /healthz).

        Returns:
            ok, or degraded with the reason; and the data faults of the last
            `fault_window_s` (rows dropped, values stored NULL, files
            quarantined, rows held in memory past half the bound), which
            degrade /healthz while the history is still being written.
        """
        faults = self._counters.recent_faults(self.fault_window_s)
        buffered = self._buffer.held()
        if buffered > self._buffer.bound // 2:
            faults.append(f"{buffered} rows held in memory (bound {self._buffer.bound})")
        phases = (self._wal_phase, self._segments_phase)
        failing = [f"{p.name} failing: {p.fault}" for p in phases if p.fault]
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
            await asyncio.to_thread(self._journal.lock)
        except LockedError as exc:
            raise HistoryError(str(exc)) from None
        except OSError as exc:
            raise HistoryError(f"{self.directory}: cannot recover history: {exc}") from exc
        try:
            await asyncio.to_thread(self._journal.recover)
        except OSError as exc:  # replaying into segments failed: retried at rotation
            self._segments_phase.fail(exc)
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
            self._buffer.add(row)  # under the condition: a close sees it

    async def flush(self) -> None:
        """Make every row recorded so far durable in the WAL and written as Parquet.

        Raises:
            HistoryError: writing failed (the rows stay in the WAL or buffer for a retry).
        """
        if self._thread is None:
            raise HistoryError("history writer not started")
        await self._wake(stopping=False)

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
        try:
            await self._wake(stopping=True)
        finally:
            await asyncio.to_thread(self._thread.join)
            await asyncio.to_thread(self._housekeeper.join)
            self._journal.unlock()

    async def _wake(self, *, stopping: bool) -> None:
        # the thread's next pass writes everything now (and stops): wait for its outcome
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._cond:
            self._stopping = self._stopping or stopping
            self._flush_waiters.append(done)
            self._cond.notify()
        await asyncio.wrap_future(done)

    # ------------------------------------------------------------ worker thread

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
            wal, segments = self._wal_phase, self._segments_phase
            failure: BaseException | None = None
            if forced or now >= wal.retry_at:
                failure = wal.attempt(self._append, self._buffer.waiting)
            full = 0 < self.flush_bytes <= self._counters.wal_bytes  # updated by each sync
            due = now >= next_flush or full
            if failure is None and (forced or (due and now >= segments.retry_at)):
                next_flush = now + self.flush_interval_s
                failure = segments.attempt(self._journal.rotate, self._buffer.waiting)
            # the wall clock through time.time(), as every sample's timestamp
            self._housekeeper.run_daily(dt.datetime.fromtimestamp(time.time(), dt.UTC).date())
            if stopping:
                self._stop(failure)
            _settle(waiters, failure, self.directory)
            if stopping:
                return

    def _append(self) -> None:
        _append_buffered(self._journal, self._buffer)

    def _stop(self, failure: BaseException | None) -> None:
        self._journal.close()
        if failure is None:
            return
        lost = self._buffer.lose(failure)
        if lost:
            log.error("history.rows_lost_at_close", rows=lost, error=str(failure))


def _append_buffered(journal: Journal, buffer: RowBuffer) -> None:
    """Append the buffered rows to the WAL and fsync them; on a failure the rows not
    written go back to the buffer, for the next attempt.
    """
    journal.reappear()  # the history directory deleted under us: recreated
    batch = buffer.take()
    try:
        try:
            rows = journal.prepare(batch)
        except BaseException:
            buffer.requeue(batch)
            raise
        try:
            journal.write(rows)
        except BaseException:
            buffer.requeue(rows)  # the dropped ones are counted once, not again
            raise
    finally:
        buffer.done()


def _settle(
    waiters: list[concurrent.futures.Future[None]], failure: BaseException | None, directory: Path
) -> None:
    """Tell each `flush` / `close` caller waiting on this pass its outcome."""
    for waiter in waiters:
        if not waiter.set_running_or_notify_cancel():
            continue  # its caller stopped waiting (the daemon's close timeout)
        if failure is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(HistoryError(f"{directory}: {failure}"))
