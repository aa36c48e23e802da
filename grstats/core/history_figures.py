"""The history writer's figures: the one shape the writer, the daemon and /metrics share.

Strategy: `grstats.history` fills a `HistoryFigures` under its lock and hands
out the frozen copy (and its `HistoryHealth`); the daemon puts that same object in its snapshot and
/metrics reads it (DESIGN.md section 6). Core holds the shape because the
snapshot (core) carries it and history may import core, not the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

__all__ = ["DropCounts", "HistoryFigures", "HistoryHealth"]


@dataclass(frozen=True, slots=True)
class DropCounts:
    """Rows that were recorded but will never be in the history, by reason."""

    buffer_full: int = 0  # the in-memory buffer was at its bound (oldest dropped)
    disk_full: int = 0  # still buffered, never fsynced, when the writer closed on a failing disk
    invalid: int = 0  # a value the history schema cannot store (or not a row at all)
    duplicate: int = 0  # (group, member, incarnation, seq) already written
    corrupt: int = 0  # WAL records that failed their checksum (one per damaged stretch)

    @property
    def total(self) -> int:
        """All dropped rows."""
        return sum(self.by_reason().values())

    def by_reason(self) -> dict[str, int]:
        """reason -> rows dropped, every reason (for a stable /metrics series set)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class HistoryFigures:
    """Counters of one history writer since it was created.

    Attributes:
        rows_recorded: rows handed to the writer.
        rows_written: rows fsynced to the write-ahead log, in the order recorded.
        rows_buffered: rows recorded, not yet fsynced (a gauge).
        rows_recovered: valid write-ahead log rows of a previous run found at start.
        dropped: rows that will never be in the history, by reason.
        wal_bytes: write-ahead log bytes not yet turned into segments (a gauge).
        wal_bytes_cut: torn or corrupt write-ahead log tails truncated at start.
        segments_written: Parquet segments written.
        fsyncs, fsync_seconds_last, fsync_seconds_max, fsync_seconds_sum:
            write-ahead log fsync latency.
        errors: failed write, segment or housekeeping attempts.
        values_nulled: values stored as NULL because the column cannot hold them, by column.
        files_quarantined: unreadable files moved (damaged write-ahead logs copied) aside.
        quarantined_last: the last of them, as kept in the quarantine directory.
    """

    rows_recorded: int = 0
    rows_written: int = 0
    rows_buffered: int = 0
    rows_recovered: int = 0
    dropped: DropCounts = DropCounts()
    wal_bytes: int = 0
    wal_bytes_cut: int = 0
    segments_written: int = 0
    fsyncs: int = 0
    fsync_seconds_last: float = 0.0
    fsync_seconds_max: float = 0.0
    fsync_seconds_sum: float = 0.0
    errors: int = 0
    values_nulled: Mapping[str, int] = field(default_factory=dict)
    files_quarantined: int = 0
    quarantined_last: str = ""


@dataclass(frozen=True, slots=True)
class HistoryHealth:
    """Whether the history is being written; `reason` says why not.

    `faults` are recent data faults (rows dropped, values stored NULL, files
    quarantined, rows held in memory): /healthz shows them even while `ok`.
    """

    ok: bool
    reason: str = ""
    faults: tuple[str, ...] = ()
