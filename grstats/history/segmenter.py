"""One writer's closed WAL files, and their turning into Parquet segments.

Strategy: a WAL file is closed when the journal retires it (at rotation,
after a failed append, at close) or found at start from a previous run; it
waits here, oldest first, until `segment` turns it into segments -- in this
process, or with an `Offload` in a short-lived child that runs
`segment_files`.  Each file is re-read from disk: its torn tail cut, a copy
of it quarantined when records inside are damaged (their valid neighbours
are still segmented), its unstorable values stored as NULL.

Invariants:
- Files are segmented in order; the first failure stops the rest, which
  stay for a retry.
- A segment is named from its WAL file (writer id, counter, uuid), and the
  WAL file is deleted only once its segments are durable: a crash between
  the two rewrites the same file.
- A file of an unknown format is moved to the quarantine, never deleted.
- The `wal_bytes` figure is the closed files' bytes plus the open one's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from grstats.history.datafaults import DataFaults
from grstats.history.fileops import FileOps
from grstats.history.rowcheck import fsync_path
from grstats.history.stats import Counters
from grstats.history.wal import repair_wal, wal_counter, wal_id, writer_wals

if TYPE_CHECKING:
    from grstats.history.offload import Offload

__all__ = ["ClosedWals"]

log = structlog.get_logger("grstats.history")


class ClosedWals:
    """The closed WAL files of one writer, oldest first (one thread at a time).

    Args:
        faults: the writer's data-fault bookkeeping (and its history root).
        writer: its id, in WAL and segment names.
        ops: the OS calls (segments are written through it).
        counters: the writer's figures (segments, recovered rows, WAL bytes).
        offload: segment in child processes; None: here (this thread loads pyarrow).
    """

    def __init__(
        self,
        faults: DataFaults,
        writer: str,
        ops: FileOps,
        counters: Counters,
        *,
        offload: Offload | None = None,
    ) -> None:
        self.directory = faults.directory
        self.writer = writer
        self.wal_dir = self.directory / "wal"
        self._ops = ops
        self._counters = counters
        self._faults = faults
        self._offload = offload
        self.paths: list[Path] = []
        self.bytes = 0

    def load(self) -> int:
        """Take this writer's WAL files left by a previous run.

        Returns:
            The counter the next WAL file of this writer gets.

        Raises:
            OSError: the WAL directory could not be listed.
        """
        self.paths = writer_wals(self.wal_dir, self.writer)
        self.bytes = sum(path.stat().st_size for path in self.paths)
        return max((wal_counter(path) for path in self.paths), default=0) + 1

    def add(self, path: Path, size: int) -> None:
        """A WAL file of `size` bytes was closed."""
        self.paths.append(path)
        self.bytes += size

    def forget_missing(self) -> int:
        """Forget the files deleted under the writer (with the history directory).

        Returns:
            How many were gone.
        """
        kept = [path for path in self.paths if path.exists()]
        gone = len(self.paths) - len(kept)
        self.paths = kept
        self.bytes = sum(path.stat().st_size for path in kept)
        return gone

    def segment(self, *, recovering: bool, open_bytes: int) -> None:
        """Turn every closed file into segments, oldest first.

        Args:
            recovering: they are a previous run's (counted as recovered rows).
            open_bytes: the open WAL file's size (for the `wal_bytes` figure).

        Raises:
            OSError: a segment could not be written; that file and the later ones are kept.
        """
        if self._offload is not None and self.paths:
            done, error = self._offload.segment(list(self.paths), recovering=recovering)
            for size in done:
                self._done(size)
            self._gauge(open_bytes)
            if error is not None:
                raise OSError(error)
            return
        while self.paths:
            self._done(self._segment(self.paths[0], recovering=recovering))
            self._gauge(open_bytes)

    def segment_files(self, paths: list[Path], *, recovering: bool, sizes: list[int]) -> None:
        """Turn the given closed WAL files into segments here (the offload child's step).

        Args:
            paths: this writer's closed WAL files, oldest first.
            recovering: they are a previous run's.
            sizes: receives the size of each file done, in order.

        Raises:
            OSError: a segment could not be written; that file and the later ones are kept.
        """
        self.paths = list(paths)
        while self.paths:
            sizes.append(self._segment(self.paths[0], recovering=recovering))
            self.paths.pop(0)

    def _done(self, size: int) -> None:
        # the oldest file is in segments (and deleted)
        self.paths.pop(0)
        self.bytes -= size

    def _gauge(self, open_bytes: int) -> None:
        with self._counters.lock:
            self._counters.wal_bytes = self.bytes + open_bytes

    def _segment(self, path: Path, *, recovering: bool) -> int:
        scan = repair_wal(path, keep=self._faults.keep_damaged)
        if scan is None:  # not a WAL of a version we know: kept for a human, out of the way
            size = path.stat().st_size
            self._faults.quarantine(path, "not a grstats write-ahead log of a known format")
            return size
        self._faults.corrupt(scan.damaged)
        from grstats.history.parquet import rows_to_table  # noqa: PLC0415 - pyarrow when used

        table = rows_to_table(self._faults.storable(scan.rows))
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
                self._counters.wal_bytes_cut += scan.torn_bytes
        if recovering:
            log.info(
                "history.wal_replayed", path=path.name, rows=len(scan.rows), segments=len(written)
            )
        return scan.file_size
