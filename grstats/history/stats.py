"""Typed counters, health and rate-limited logging of a history writer.

Strategy: the writer thread updates one mutable `Counters` under its lock;
readers (the event loop, /metrics, /healthz, tests) get immutable snapshots
(`HistoryStats`, `HistoryHealth`), never the live object.  A repeating fault
is logged at most once per interval per event, with the number suppressed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Counters", "DropCounts", "HistoryHealth", "HistoryStats", "RateLimitedLog"]


@dataclass(frozen=True, slots=True)
class DropCounts:
    """Rows that were recorded but will never be in the history, by reason."""

    buffer_full: int = 0  # the in-memory buffer was at its bound (oldest dropped)
    disk_full: int = 0  # still buffered, never fsynced, when the writer closed on a failing disk
    invalid: int = 0  # a value the history schema cannot store (or not a row at all)
    duplicate: int = 0  # (group, member, incarnation, seq) already written

    @property
    def total(self) -> int:
        """All dropped rows."""
        return self.buffer_full + self.disk_full + self.invalid + self.duplicate


@dataclass(frozen=True, slots=True)
class HistoryStats:
    """Counters of one writer since it was created (for /metrics and tests)."""

    rows_recorded: int = 0
    rows_written: int = 0  # fsynced to the WAL, in the order they were recorded
    rows_buffered: int = 0  # gauge: recorded, not yet fsynced
    rows_recovered: int = 0  # valid WAL rows of a previous run found at start
    dropped: DropCounts = DropCounts()
    wal_bytes: int = 0  # gauge: WAL files not yet turned into segments
    wal_bytes_cut: int = 0  # torn or corrupt WAL tails truncated at start
    segments_written: int = 0
    fsyncs: int = 0
    fsync_seconds_last: float = 0.0
    fsync_seconds_max: float = 0.0
    fsync_seconds_sum: float = 0.0
    errors: int = 0  # failed write / segment / housekeeping attempts


@dataclass(frozen=True, slots=True)
class HistoryHealth:
    """Whether the history is being written; `reason` says why not."""

    ok: bool
    reason: str = ""


@dataclass(slots=True)
class Counters:
    """The live counters; change them only under `lock`."""

    rows_recorded: int = 0
    rows_written: int = 0
    rows_recovered: int = 0
    buffer_full: int = 0
    disk_full: int = 0
    invalid: int = 0
    duplicate: int = 0
    wal_bytes: int = 0
    wal_bytes_cut: int = 0
    segments_written: int = 0
    fsyncs: int = 0
    fsync_seconds_last: float = 0.0
    fsync_seconds_max: float = 0.0
    fsync_seconds_sum: float = 0.0
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_fsync(self, seconds: float) -> None:
        """Account one fsync (takes the lock)."""
        with self.lock:
            self.fsyncs += 1
            self.fsync_seconds_last = seconds
            self.fsync_seconds_max = max(self.fsync_seconds_max, seconds)
            self.fsync_seconds_sum += seconds

    def snapshot(self, rows_buffered: int) -> HistoryStats:
        """An immutable copy (takes the lock).

        Args:
            rows_buffered: the buffer's length now (the writer owns the buffer).

        Returns:
            The counters now.
        """
        with self.lock:
            return HistoryStats(
                rows_recorded=self.rows_recorded,
                rows_written=self.rows_written,
                rows_buffered=rows_buffered,
                rows_recovered=self.rows_recovered,
                dropped=DropCounts(self.buffer_full, self.disk_full, self.invalid, self.duplicate),
                wal_bytes=self.wal_bytes,
                wal_bytes_cut=self.wal_bytes_cut,
                segments_written=self.segments_written,
                fsyncs=self.fsyncs,
                fsync_seconds_last=self.fsync_seconds_last,
                fsync_seconds_max=self.fsync_seconds_max,
                fsync_seconds_sum=self.fsync_seconds_sum,
                errors=self.errors,
            )


class RateLimitedLog:
    """Logs each event at most once per `interval_s`; counts what it held back.

    Args:
        logger: a structlog logger.
        interval_s: the minimum time between two lines of one event.
        clock: monotonic seconds (a test may pass its own).
    """

    def __init__(
        self, logger: Any, interval_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._log = logger
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def emit(self, level: str, event: str, **context: Any) -> None:
        """Log `event` now unless it was logged within the interval (then count it).

        Args:
            level: "warning", "error", ...
            event: the event identifier.
            **context: key-values of this occurrence.
        """
        now = self._clock()
        with self._lock:
            last = self._last.get(event)
            if last is not None and now - last < self._interval_s:
                self._suppressed[event] = self._suppressed.get(event, 0) + 1
                return
            self._last[event] = now
            suppressed = self._suppressed.pop(event, 0)
        getattr(self._log, level)(event, suppressed=suppressed, **context)

    def reset(self, event: str) -> int:
        """Forget `event` (the fault is over): the next one is logged at once.

        Args:
            event: the event identifier.

        Returns:
            How many occurrences were suppressed since it was last logged.
        """
        with self._lock:
            self._last.pop(event, None)
            return self._suppressed.pop(event, 0)
