"""One writer's WAL files and their conversion into Parquet segments.

Strategy: the writer thread hands `Journal` batches of buffered rows;
`prepare` drops what must never be stored (invalid values, duplicates --
counted by reason, logged rate-limited), `write` appends the rest to the one
open WAL file and fsyncs it, and `rotate` turns closed WAL files into
segments by re-reading them from disk (the same path replays a previous run's
files in `recover`).  Journal does no threading and no retrying: an OSError
leaves every file consistent and goes up to the writer, which backs off.

Invariants:
- At most one WAL file is open.  While segments cannot be written, at most
  one closed WAL file waits besides it: a rotation segments the closed files
  first and retires the open one only when that succeeded.
- A segment is named from its WAL file (writer id, counter, uuid), and the
  WAL file is deleted only once its segments are durable: a crash between the
  two rewrites the same file.
- Rows are marked in the de-duplication index only once fsynced.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import structlog

from grstats.core.records import HistoryRow
from grstats.history.dedupe import SeenIndex
from grstats.history.fileops import FileOps
from grstats.history.parquet import fsync_path, invalid_column, remove_temporaries, rows_to_table
from grstats.history.stats import Counters, RateLimitedLog
from grstats.history.wal import (
    WalFile,
    encode_record,
    new_wal_path,
    repair_wal,
    wal_counter,
    wal_id,
    writer_wals,
)

__all__ = ["Journal"]

log = structlog.get_logger("grstats.history")

_ARROW_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


class Journal:
    """The WAL files of one writer (used by one thread at a time).

    Args:
        directory: the history root.
        writer: the writer id (in WAL and segment names).
        ops: the OS-call boundary.
        counters: the writer's counters.
        limiter: rate-limited logging of repeating events.
    """

    def __init__(
        self,
        directory: Path,
        writer: str,
        ops: FileOps,
        counters: Counters,
        limiter: RateLimitedLog,
    ) -> None:
        self.directory = directory
        self.writer = writer
        self.wal_dir = directory / "wal"
        self._ops = ops
        self._counters = counters
        self._limiter = limiter
        self._wal: WalFile | None = None
        self._closed: list[Path] = []
        self._closed_bytes = 0
        self._next = 1
        self.index = SeenIndex(directory, writer=writer)

    def recover(self) -> None:
        """Prepare the directory and replay this writer's WAL files of a previous run.

        Raises:
            OSError: the directory is unusable, or segments could not be written
                (the WAL files are kept, their rows marked, and retried at rotation).
        """
        self.wal_dir.mkdir(parents=True, exist_ok=True)
        remove_temporaries(self.directory, self.writer)
        self._closed = writer_wals(self.wal_dir, self.writer)
        for path in self._closed:
            self._next = max(self._next, wal_counter(path) + 1)
            self._closed_bytes += path.stat().st_size
        try:
            self._segment_closed(recovering=True)
        except OSError:
            for path in self._closed:  # not in Parquet yet: their rows are written all the same
                scan = repair_wal(path)
                self.index.note([r for r in scan.rows if invalid_column(r) is None] if scan else [])
            raise

    def prepare(self, batch: list[HistoryRow]) -> list[HistoryRow]:
        """Drop (and count) rows that must not be written: invalid values, duplicates.

        Args:
            batch: buffered rows, in recording order.

        Returns:
            The rows to write; they are marked tentatively in the index.

        Raises:
            OSError: a partition's marks could not be read (nothing marked).
        """
        keep: list[HistoryRow] = []
        invalid = duplicate = 0
        try:
            for row in batch:
                column = _invalid(row)
                if column is not None:
                    invalid += 1
                    member = str(getattr(row, "member_id", ""))
                    self._limiter.emit(
                        "warning", "history.row_rejected", column=column, member=member
                    )
                elif not self.index.admit(row):
                    duplicate += 1
                else:
                    keep.append(row)
        except OSError:
            self.index.rollback()
            raise
        with self._counters.lock:
            self._counters.invalid += invalid
            self._counters.duplicate += duplicate
        return keep

    def write(self, rows: list[HistoryRow]) -> None:
        """Append prepared rows to the open WAL file (opening one if needed) and fsync.

        Args:
            rows: the result of `prepare`.

        Raises:
            OSError: nothing was written; the file is cut back (or closed) and
                the rows' marks dropped, so they can be retried.
        """
        if not rows:
            self.index.commit()
            return
        data = b"".join(encode_record(row) for row in rows)
        try:
            if self._wal is None:
                self._wal = WalFile(new_wal_path(self.wal_dir, self.writer, self._next), self._ops)
                self._next += 1
            self._wal.append(data)
        except OSError:
            self.index.rollback()
            self._cut_failed_append()
            raise
        self.index.commit()
        self._counters.add_fsync(self._wal.last_fsync_s)
        with self._counters.lock:
            self._counters.rows_written += len(rows)
            self._counters.wal_bytes = self._wal.size + self._closed_bytes

    def rotate(self) -> None:
        """Turn the closed WAL files, then the open one, into segments.

        Raises:
            OSError: a segment could not be written; its WAL file is kept for a retry.
        """
        self._segment_closed(recovering=False)
        if self._wal is not None:
            self._retire()
            self._segment_closed(recovering=False)
        self.index.trim()

    def close(self) -> None:
        """Close the open WAL file without segmenting it (it is replayed at start)."""
        if self._wal is not None:
            self._retire()

    def _cut_failed_append(self) -> None:
        if self._wal is None:
            return
        try:
            self._wal.truncate_to_good()
        except OSError:
            self._retire()  # replay cuts its torn tail

    def _retire(self) -> None:
        assert self._wal is not None
        wal, self._wal = self._wal, None
        try:
            wal.close()
        finally:
            self._closed.append(wal.path)
            self._closed_bytes += wal.size

    def _segment_closed(self, *, recovering: bool) -> None:
        while self._closed:
            path = self._closed[0]
            size = self._segment(path, recovering=recovering)
            self._closed.pop(0)
            self._closed_bytes -= size
            with self._counters.lock:
                self._counters.wal_bytes = self._closed_bytes + (self._wal.size if self._wal else 0)

    def _segment(self, path: Path, *, recovering: bool) -> int:
        scan = repair_wal(path)
        if scan is None:
            return path.stat().st_size  # not ours: left for a human
        table = self._table(scan.rows)
        # an older version's WAL file gets the names that version would have given
        owner = self.writer if path.name.startswith(f"wal-{self.writer}-") else ""
        written = self._ops.write_segments(
            self.directory, table, segment_id=wal_id(path), writer=owner
        )
        path.unlink()
        fsync_path(self.wal_dir)
        with self._counters.lock:
            self._counters.segments_written += len(written)
            if recovering:
                self._counters.rows_recovered += len(scan.rows)
                self._counters.wal_bytes_cut += scan.file_size - scan.good_size
        if recovering:
            log.info(
                "history.wal_replayed", path=path.name, rows=len(scan.rows), segments=len(written)
            )
        return scan.file_size

    def _table(self, rows: list[HistoryRow]) -> pa.Table:
        # Rows are checked before the WAL, but a WAL of an older version may hold
        # one that does not fit: it must not poison its file forever.
        try:
            return rows_to_table(rows)
        except _ARROW_ERRORS:
            good = [row for row in rows if _invalid(row) is None]
            with self._counters.lock:
                self._counters.invalid += len(rows) - len(good)
            self._limiter.emit("warning", "history.row_rejected", rows=len(rows) - len(good))
            return rows_to_table(good)


def _invalid(row: object) -> str | None:
    if not isinstance(row, HistoryRow):
        return "<row>"
    return invalid_column(row)
