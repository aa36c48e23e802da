"""Typed counters of a history writer.

Strategy: the writer thread updates one mutable `Counters` under its lock;
readers (the event loop, /metrics, tests) get an immutable `HistoryStats`
snapshot, never the live object.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

__all__ = ["Counters", "HistoryStats"]


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


@dataclass(slots=True)
class Counters:
    """The live counters; change them only under `lock`."""

    rows_recorded: int = 0
    rows_durable: int = 0
    rows_dropped: int = 0
    rows_recovered: int = 0
    wal_bytes_cut: int = 0
    segments_written: int = 0
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def snapshot(self) -> HistoryStats:
        """An immutable copy (takes the lock).

        Returns:
            The counters now.
        """
        with self.lock:
            values = {f.name: getattr(self, f.name) for f in dataclasses.fields(HistoryStats)}
        return HistoryStats(**values)
