"""The history writer's bounded buffer of recorded rows.

Strategy: the event loop appends one row at a time (`add`, never blocking on
I/O); the writer thread takes everything buffered each tick (`take`) and
hands back what it could not write (`requeue`), in front of what was
recorded meanwhile.  The rows taken count as buffered (`held`) until the
thread is `done` with them, so the figures and /healthz see them throughout.

Invariants:
- At most `bound` rows are held, the batch the thread is writing included (a
  thread stuck in write() must not let another `bound` rows pile up behind
  it); beyond, the oldest waiting rows are dropped and counted (`buffer_full`,
  a data fault for /healthz): none is lost silently.  Rows in flight cannot be
  dropped: while a full batch is being written, a new row is the one dropped.
- Rows leave in recording order, a requeued batch included.
"""

from __future__ import annotations

import threading
from collections import deque

from grstats.core.records import HistoryRow
from grstats.history.stats import Counters

__all__ = ["RowBuffer"]


class RowBuffer:
    """Rows recorded and not yet in the WAL (any thread).

    Args:
        bound: the most rows that wait (the oldest dropped beyond).
        counters: the writer's counters (rows recorded, rows dropped).
    """

    def __init__(self, bound: int, counters: Counters) -> None:
        self.bound = bound
        self._counters = counters
        self._lock = threading.Lock()
        self._rows: deque[HistoryRow] = deque()
        self._in_flight = 0

    def add(self, row: HistoryRow) -> None:
        """Append one recorded row; at the bound the oldest is dropped (counted)."""
        with self._lock:
            self._rows.append(row)
            excess = self._trim()
        with self._counters.lock:
            self._counters.rows_recorded += 1
            self._dropped(excess)

    def take(self) -> list[HistoryRow]:
        """Everything waiting, oldest first; it stays `held` until `done`."""
        with self._lock:
            batch = list(self._rows)
            self._rows.clear()
            self._in_flight = len(batch)
        return batch

    def requeue(self, batch: list[HistoryRow]) -> None:
        """Put back rows that could not be written, in front; the bound holds (counted)."""
        with self._lock:
            self._rows.extendleft(reversed(batch))
            self._in_flight = 0  # what was not put back was written
            excess = self._trim()
        if excess:
            with self._counters.lock:
                self._dropped(excess)

    def done(self) -> None:
        """The rows taken are written or requeued."""
        with self._lock:
            self._in_flight = 0

    def waiting(self) -> int:
        """Rows waiting for the next `take`."""
        with self._lock:
            return len(self._rows)

    def held(self) -> int:
        """Rows recorded and not yet written: waiting, and taken but not `done`."""
        with self._lock:
            return len(self._rows) + self._in_flight

    def lose(self, failure: BaseException) -> int:
        """Give up every waiting row: the writer closes on a failing disk (counted `disk_full`).

        Args:
            failure: why they could not be written (in the fault).

        Returns:
            How many rows were lost.
        """
        with self._lock:
            lost = len(self._rows)
            self._rows.clear()
        with self._counters.lock:
            self._counters.disk_full += lost
            if lost:
                self._counters.fault("disk_full", f"{lost} row(s) lost at close: {failure}")
        return lost

    def _trim(self) -> int:
        # with the buffer's lock held; only waiting rows can go (held() <= bound
        # before each add, so there is a waiting row for each one in excess)
        excess = min(len(self._rows), max(0, len(self._rows) + self._in_flight - self.bound))
        for _ in range(excess):
            self._rows.popleft()
        return excess

    def _dropped(self, rows: int) -> None:
        # with the counters' lock held
        if rows:
            self._counters.buffer_full += rows
            self._counters.fault(
                "buffer_full", f"{self._counters.buffer_full} row(s) dropped: buffer full"
            )
