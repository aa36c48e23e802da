"""Which Parquet files of the history the SQL view may read: those whose footer reads.

Strategy: DuckDB's `read_parquet` over a glob fails the whole statement on
one unreadable file (a truncated or zero-length segment in a finished day,
before the writer's housekeeping quarantines it), so every history query
would fail, whatever day it asks for. The view is built instead from the
list of files whose footer reads (`pq.read_metadata`: the footer only, not
the data), each file checked once per (size, mtime) and remembered; the
others are left out, logged once each and named in the query's warnings.
Damage inside a file's data pages (a footer that reads) still fails a query
that scans it: only the writer, which rewrites segments, can repair that.

Invariants: thread-safe (the endpoint's workers share one); the checks count
against the statement's deadline (TimeoutError, what was checked is kept).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import structlog

__all__ = ["SegmentCheck"]

log = structlog.get_logger("grstats.sql")


class SegmentCheck:
    """The readable and unreadable Parquet files under a history root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: dict[Path, tuple[tuple[int, int], bool]] = {}
        self._lock = threading.Lock()

    def files(self, deadline: float | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(readable files, unreadable files), sorted paths.

        Raises:
            TimeoutError: `deadline` (monotonic) passed while files were checked.
        """
        paths = sorted(self.root.glob("group=*/date=*/*.parquet"))
        good: list[str] = []
        bad: list[str] = []
        with self._lock:
            for path in paths:
                try:
                    st = path.stat()
                except OSError:  # compacted or quarantined meanwhile
                    continue
                key = (st.st_size, st.st_mtime_ns)
                known = self._known.get(path)
                if known is None or known[0] != key:
                    if deadline is not None and time.monotonic() > deadline:
                        raise TimeoutError("checking the history's files took the statement's time")
                    known = (key, _readable(path))
                    self._known[path] = known
                (good if known[1] else bad).append(str(path))
            listed = set(paths)
            for path in [p for p in self._known if p not in listed]:
                del self._known[path]
        return tuple(good), tuple(bad)


def _readable(path: Path) -> bool:
    try:
        pq.read_metadata(path)
    except (OSError, pa.ArrowException) as exc:  # ArrowInvalid: no magic bytes, a bad footer
        log.warning("sql.history_file_unreadable", path=str(path), error=str(exc)[:200])
        return False
    return True
