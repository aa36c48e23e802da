"""One writer's WAL files and their conversion into Parquet segments.

Strategy: the writer thread hands `Journal` batches of buffered rows;
`prepare` stores a value the schema cannot hold as NULL (counted by
column) and drops only what must never be stored (a row without a storable
identity, a duplicate -- counted by reason, logged rate-limited), `write`
appends the rest to the one open WAL file and fsyncs it, and `rotate` turns
closed WAL files into segments (`grstats.history.segmenter.ClosedWals`, the
same path that replays a previous run's files in `recover`).  What cannot be
kept as given is counted by `grstats.history.datafaults.DataFaults`.  The
journal also holds the writer id's lock on the tree.  Journal does no
threading and no retrying: an OSError leaves every file consistent and goes
up to the writer, which backs off.

Invariants:
- At most one WAL file is open.  While segments cannot be written, at most
  one closed WAL file waits besides it: a rotation segments the closed files
  first and retires the open one only when that succeeded.
- Rows are marked in the de-duplication index only once fsynced.
- A file that cannot be read is never deleted or cut past its damage: a
  corrupt segment met by the de-duplication index, or a WAL file of an
  unknown format, is moved to the quarantine; a WAL file with damaged
  records is copied there, and its valid records are segmented.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from grstats.core.records import HistoryRow
from grstats.history.datafaults import DataFaults
from grstats.history.dedupe import SeenIndex
from grstats.history.fileops import FileOps
from grstats.history.modes import make_dirs
from grstats.history.rowcheck import remove_temporaries, storable_row
from grstats.history.segmenter import ClosedWals
from grstats.history.stats import Counters, RateLimitedLog
from grstats.history.wal import WalFile, WriterLock, encode_record, new_wal_path, repair_wal

if TYPE_CHECKING:
    from grstats.history.offload import Offload

__all__ = ["Journal"]

log = structlog.get_logger("grstats.history")


class Journal:
    """The WAL files of one writer (used by one thread at a time).

    Args:
        directory: the history root.
        writer: the writer id (in WAL and segment names).
        ops: the OS-call boundary.
        counters: the writer's counters.
        limiter: rate-limited logging of repeating events.
        offload: run the Parquet steps (segments, marks) in child processes;
            None: here (the writer's thread loads pyarrow).
    """

    def __init__(
        self,
        directory: Path,
        writer: str,
        ops: FileOps,
        counters: Counters,
        limiter: RateLimitedLog,
        *,
        offload: Offload | None = None,
    ) -> None:
        self.directory = directory
        self.writer = writer
        self.wal_dir = directory / "wal"
        self._ops = ops
        self._counters = counters
        self.faults = DataFaults(directory, counters, limiter)
        self._wal: WalFile | None = None
        self._lock: WriterLock | None = None
        self._closed = ClosedWals(self.faults, writer, ops, counters, offload=offload)
        self._next = 1
        self.index = SeenIndex(
            directory,
            writer=writer,
            on_corrupt=self.faults.quarantine,
            reader=offload.marks if offload is not None else None,
        )

    def lock(self) -> None:
        """Create the WAL directory and take this writer id's lock on the tree.

        Raises:
            LockedError: another process holds the lock.
            OSError: the directory or the lock file could not be made.
        """
        make_dirs(self.wal_dir)
        self._lock = WriterLock.take(self.wal_dir, self.writer, self.directory)

    def unlock(self) -> None:
        """Release (and remove) the writer id's lock, if held."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def recover(self) -> None:
        """Prepare the directory and replay this writer's WAL files of a previous run.

        Raises:
            OSError: the directory is unusable, or segments could not be written
                (the WAL files are kept, their rows marked, and retried at rotation).
        """
        make_dirs(self.wal_dir)
        remove_temporaries(self.directory, self.writer)
        self._next = max(self._next, self._closed.load())
        try:
            self._closed.segment(recovering=True, open_bytes=self._open_bytes())
        except OSError:
            for path in self._closed.paths:  # not in Parquet yet: written all the same
                scan = repair_wal(path, keep=self.faults.keep_damaged)
                rows = [storable_row(r)[0] for r in scan.rows] if scan else []
                self.index.note([r for r in rows if r is not None])
            raise

    def reappear(self) -> bool:
        """Recreate the WAL directory if it was deleted under the running writer.

        The open WAL file's records, still readable through its descriptor,
        are carried into a new WAL file there; closed WAL files that went
        with the directory are forgotten (and counted as a data fault); the
        writer lock, whose file went too, is taken again (an error counted).

        Returns:
            Whether the directory had been deleted.

        Raises:
            OSError: the directory, the new WAL file or the lock could not be made.
            LockedError: another process took the writer id meanwhile.
        """
        if self.wal_dir.is_dir():
            return False
        carried = b""
        if self._wal is not None:
            carried = self._wal.read_back()
            self._wal.close()
            self._wal = None
        gone = self._closed.forget_missing()
        make_dirs(self.wal_dir)
        if carried:
            self._wal = WalFile(new_wal_path(self.wal_dir, self.writer, self._next), self._ops)
            self._next += 1
            self._wal.append(carried)
        with self._counters.lock:  # the segments went with it, and maybe closed WAL files
            self._counters.fault(
                "deleted",
                "the history directory was deleted under the running writer"
                f" ({gone} closed write-ahead log file(s) with it)",
            )
        log.warning(
            "history.directory_recreated",
            directory=str(self.directory),
            carried_bytes=len(carried),
            wal_files_lost=gone,
        )
        self._counters.error()
        self.unlock()
        self.lock()
        return True

    def prepare(self, batch: list[HistoryRow]) -> list[HistoryRow]:
        """NULL (and count) unstorable values; drop (and count) unidentifiable rows, duplicates.

        Args:
            batch: buffered rows, in recording order.

        Returns:
            The rows to write; they are marked tentatively in the index.

        Raises:
            OSError: a partition's marks could not be read (nothing marked).
        """
        keep: list[HistoryRow] = []
        duplicate = 0
        rows = self.faults.storable(batch)
        try:
            self.index.preload(rows)
            for row in rows:
                if not self.index.admit(row):
                    duplicate += 1
                else:
                    keep.append(row)
        except OSError:
            self.index.rollback()
            raise
        with self._counters.lock:
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
            self._counters.wal_bytes = self._wal.size + self._closed.bytes

    def rotate(self) -> None:
        """Turn the closed WAL files, then the open one, into segments.

        Raises:
            OSError: a segment could not be written; its WAL file is kept for a retry.
        """
        self._closed.segment(recovering=False, open_bytes=self._open_bytes())
        if self._wal is not None:
            self._retire()
            self._closed.segment(recovering=False, open_bytes=0)
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
            self._closed.add(wal.path, wal.size)

    def _open_bytes(self) -> int:
        return self._wal.size if self._wal is not None else 0
