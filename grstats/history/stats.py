"""Typed counters, health and rate-limited logging of a history writer.

Strategy: the writer thread updates one mutable `Counters` under its lock;
readers (the event loop, /metrics, /healthz, tests) get immutable snapshots
(`core.history_figures.HistoryFigures`, `HistoryHealth`), never the live object.  A repeating fault
is logged at most once per interval per event, with the number suppressed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from grstats.core.history_figures import DropCounts, HistoryFigures, HistoryHealth
from grstats.core.ratelimit import RateLimit

__all__ = ["Counters", "DropCounts", "HistoryFigures", "HistoryHealth", "RateLimitedLog"]


# HistoryFigures' fields a Counters carries under the same name (the rest:
# rows_buffered is the writer's buffer, dropped the DropCounts fields, by reason)
_COUNTED = tuple(
    f.name
    for f in fields(HistoryFigures)
    if f.name not in ("rows_buffered", "dropped", "values_nulled")
)
_DROPS = tuple(f.name for f in fields(DropCounts))


@dataclass(slots=True)
class Counters:
    """The live, mutable twin of `HistoryFigures`; change it only under `lock`.

    Its counters are HistoryFigures' fields (DropCounts' by reason) under the
    same names, so `snapshot` copies them by name (a test holds them equal).
    Declared rather than derived: a mutable dataclass cannot inherit from a
    frozen one, mypy --strict cannot see generated fields, and keeping a
    frozen HistoryFigures replaced on each change costs ~18 times a counter
    bump on `record()`'s path (the event loop).
    """

    rows_recorded: int = 0
    rows_written: int = 0
    rows_recovered: int = 0
    buffer_full: int = 0
    disk_full: int = 0
    invalid: int = 0
    duplicate: int = 0
    corrupt: int = 0
    wal_bytes: int = 0
    wal_bytes_cut: int = 0
    segments_written: int = 0
    fsyncs: int = 0
    fsync_seconds_last: float = 0.0
    fsync_seconds_max: float = 0.0
    fsync_seconds_sum: float = 0.0
    errors: int = 0
    values_nulled: dict[str, int] = field(default_factory=dict)
    files_quarantined: int = 0
    quarantined_last: str = ""
    # fault kind -> (monotonic time of the last one, its description), for /healthz
    recent: dict[str, tuple[float, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_fsync(self, seconds: float) -> None:
        """Account one fsync (takes the lock)."""
        with self.lock:
            self.fsyncs += 1
            self.fsync_seconds_last = seconds
            self.fsync_seconds_max = max(self.fsync_seconds_max, seconds)
            self.fsync_seconds_sum += seconds

    def error(self, _exc: BaseException | None = None) -> None:
        """Count one failed write, segment or housekeeping attempt (takes the lock)."""
        with self.lock:
            self.errors += 1

    def fault(self, kind: str, text: str, now: float | None = None) -> None:
        """Note a data fault for /healthz (call with the lock held).

        Args:
            kind: its kind (one reason per kind is shown).
            text: what happened, with the counts.
            now: monotonic seconds (default: now).
        """
        self.recent[kind] = (time.monotonic() if now is None else now, text)

    def recent_faults(self, window_s: float, now: float | None = None) -> list[str]:
        """The data faults of the last `window_s` seconds, one per kind (takes the lock)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            return [text for at, text in self.recent.values() if now - at <= window_s]

    def snapshot(self, rows_buffered: int) -> HistoryFigures:
        """An immutable copy (takes the lock).

        Args:
            rows_buffered: the buffer's length now (the writer owns the buffer).

        Returns:
            The counters now.
        """
        with self.lock:
            same = {name: getattr(self, name) for name in _COUNTED}
            return HistoryFigures(
                **same,
                rows_buffered=rows_buffered,
                dropped=DropCounts(**{name: getattr(self, name) for name in _DROPS}),
                values_nulled=dict(self.values_nulled),
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
        self._clock = clock
        self._limit = RateLimit(interval_s)
        self._lock = threading.Lock()  # the writer thread and the event loop both log

    def emit(self, level: str, event: str, **context: Any) -> None:
        """Log `event` now unless it was logged within the interval (then count it).

        Args:
            level: "warning", "error", ...
            event: the event identifier.
            **context: key-values of this occurrence.
        """
        now = self._clock()
        with self._lock:
            suppressed = self._limit.admit(now, event)
        if suppressed is not None:
            getattr(self._log, level)(event, suppressed=suppressed, **context)

    def reset(self, event: str) -> int:
        """Forget `event` (the fault is over): the next one is logged at once.

        Args:
            event: the event identifier.

        Returns:
            How many occurrences were suppressed since it was last logged.
        """
        with self._lock:
            return self._limit.reset(event)
