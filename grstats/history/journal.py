"""One writer's WAL files and their conversion into Parquet segments.

Strategy: the writer thread hands `Journal` batches of buffered rows;
`prepare` stores a value the schema cannot hold as NULL (counted by
column) and drops only what must never be stored (a row without a storable
identity, a duplicate -- counted by reason, logged rate-limited), `write`
appends the rest to the one open WAL file and fsyncs it, and `rotate` turns
closed WAL files into segments by re-reading them from disk (the same path replays a previous run's
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
from grstats.history.dedupe import SeenIndex
from grstats.history.fileops import FileOps
from grstats.history.quarantine import quarantine_file
from grstats.history.rowcheck import fsync_path, remove_temporaries, storable_row
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
        self._offload = offload
        self.writer = writer
        self.wal_dir = directory / "wal"
        self._ops = ops
        self._counters = counters
        self._limiter = limiter
        self._wal: WalFile | None = None
        self._closed: list[Path] = []
        self._closed_bytes = 0
        self._next = 1
        self.index = SeenIndex(
            directory,
            writer=writer,
            on_corrupt=self.quarantine,
            reader=offload.marks if offload is not None else None,
        )

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
                scan = repair_wal(path, keep=self._keep_damaged)
                rows = [storable_row(r)[0] for r in scan.rows] if scan else []
                self.index.note([r for r in rows if r is not None])
            raise

    def reappear(self) -> bool:
        """Recreate the WAL directory if it was deleted under the running writer.

        The open WAL file's records, still readable through its descriptor,
        are carried into a new WAL file there; closed WAL files that went
        with the directory are forgotten (and counted as a data fault).

        Returns:
            Whether the directory had been deleted (the caller retakes its lock).

        Raises:
            OSError: the directory or the new WAL file could not be made.
        """
        if self.wal_dir.is_dir():
            return False
        carried = b""
        if self._wal is not None:
            carried = self._wal.read_back()
            self._wal.close()
            self._wal = None
        gone = [p for p in self._closed if not p.exists()]
        self._closed = [p for p in self._closed if p.exists()]
        self._closed_bytes = sum(p.stat().st_size for p in self._closed)
        self.wal_dir.mkdir(parents=True, exist_ok=True)
        if carried:
            self._wal = WalFile(new_wal_path(self.wal_dir, self.writer, self._next), self._ops)
            self._next += 1
            self._wal.append(carried)
        with self._counters.lock:  # the segments went with it, and maybe closed WAL files
            self._counters.fault(
                "deleted",
                "the history directory was deleted under the running writer"
                f" ({len(gone)} closed write-ahead log file(s) with it)",
            )
        log.warning(
            "history.directory_recreated",
            directory=str(self.directory),
            carried_bytes=len(carried),
            wal_files_lost=len(gone),
        )
        return True

    def quarantine(self, path: Path, reason: str, *, copy: bool = False) -> None:
        """Move (or copy) an unreadable file into the quarantine; count it, degrade health.

        Args:
            path: the file, inside the history root.
            reason: why it cannot be read.
            copy: keep the original (a damaged WAL file that is still segmented).

        Raises:
            OSError: the file could not be moved (it stays where it was).
        """
        kept = quarantine_file(self.directory, path, reason, copy=copy)
        if kept is None:
            return  # this copy is already kept
        with self._counters.lock:
            self._counters.files_quarantined += 1
            self._counters.quarantined_last = kept.name
            self._counters.fault(
                "quarantined",
                f"{self._counters.files_quarantined} unreadable file(s) kept in "
                f"{kept.parent}, last {kept.name}",
            )

    def _keep_damaged(self, path: Path) -> None:
        self.quarantine(path, "damaged records in a write-ahead log file", copy=True)

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
        rows = self._storable(batch)
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

    def _storable(self, rows: list[HistoryRow]) -> list[HistoryRow]:
        """Rows with unstorable values as NULL (counted by column); unidentifiable ones dropped."""
        out: list[HistoryRow] = []
        invalid = 0
        nulled: dict[str, int] = {}
        for row in rows:
            stored, bad = storable_row(row) if isinstance(row, HistoryRow) else (None, ("<row>",))
            member = str(getattr(row, "member_id", ""))
            if stored is None:
                invalid += 1
                self._limiter.emit("warning", "history.row_rejected", column=bad[0], member=member)
                continue
            for column in bad:
                nulled[column] = nulled.get(column, 0) + 1
            if bad:
                self._limiter.emit("warning", "history.values_nulled", columns=bad, member=member)
            out.append(stored)
        if invalid or nulled:
            with self._counters.lock:
                c = self._counters
                c.invalid += invalid
                for column, count in nulled.items():
                    c.values_nulled[column] = c.values_nulled.get(column, 0) + count
                if nulled:
                    c.fault(
                        "nulled",
                        f"{sum(c.values_nulled.values())} value(s) stored as NULL "
                        f"(unstorable: {', '.join(sorted(c.values_nulled))})",
                    )
                if invalid:
                    c.fault("invalid", f"{c.invalid} row(s) dropped: identity not storable")
        return out

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

    def segment_files(self, paths: list[Path], *, recovering: bool, sizes: list[int]) -> None:
        """Turn the given closed WAL files into segments here (the offload child's step).

        Args:
            paths: this writer's closed WAL files, oldest first.
            recovering: they are a previous run's.
            sizes: receives the size of each file done, in order.

        Raises:
            OSError: a segment could not be written; that file and the later ones are kept.
        """
        self._closed = list(paths)
        while self._closed:
            sizes.append(self._segment(self._closed[0], recovering=recovering))
            self._closed.pop(0)

    def _segment_closed(self, *, recovering: bool) -> None:
        if self._offload is not None and self._closed:
            done, error = self._offload.segment(list(self._closed), recovering=recovering)
            for size in done:
                self._closed.pop(0)
                self._closed_bytes -= size
            with self._counters.lock:
                self._counters.wal_bytes = self._closed_bytes + (self._wal.size if self._wal else 0)
            if error is not None:
                raise OSError(error)
            return
        while self._closed:
            path = self._closed[0]
            size = self._segment(path, recovering=recovering)
            self._closed.pop(0)
            self._closed_bytes -= size
            with self._counters.lock:
                self._counters.wal_bytes = self._closed_bytes + (self._wal.size if self._wal else 0)

    def _segment(self, path: Path, *, recovering: bool) -> int:
        scan = repair_wal(path, keep=self._keep_damaged)
        if scan is None:  # not a WAL of a version we know: kept for a human, out of the way
            size = path.stat().st_size
            self.quarantine(path, "not a grstats write-ahead log of a known format")
            return size
        if scan.damaged:
            with self._counters.lock:
                self._counters.corrupt += scan.damaged
                self._counters.fault(
                    "corrupt",
                    f"{self._counters.corrupt} damaged write-ahead log record(s) lost",
                )
        from grstats.history.parquet import rows_to_table  # noqa: PLC0415 - pyarrow when used

        table = rows_to_table(self._storable(scan.rows))
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
