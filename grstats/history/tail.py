"""The WAL tail: rows recorded but not yet in Parquet, read by the SQL endpoint.

Strategy: the daemon turns closed WAL files into Parquet segments only every
flush interval; between flushes the recent rows exist only in `wal/`.  The
SQL endpoint's process reads those files itself (never the daemon's) and
shows their rows beside the Parquet files, as the segments will hold them:
the same storable-value rule, per-partition order and counter thinning
(`parquet.segment_parts`), each part tagged with the id its segment file
will be named from.  The query keeps a tail part only while no Parquet file
of that name exists: a segment is durable before its WAL file is deleted,
so a row is shown once while a flush runs, and the check is in the query
itself (see `grstats.sql.engine`), after the WAL was read.

Invariants:
- Never raises into a query: a file that went (segmented meanwhile) is
  skipped; an unreadable one is skipped and counted.
- The WAL is appended concurrently: an incomplete last record is the end of
  what is read (no error).  Damage inside a file is the writer's to
  quarantine; here it is counted and logged, and the valid records around it
  are shown, as the writer's segment will keep them.
- Bounded: at most `max_bytes` of WAL files are read per refresh, newest
  first (the files beyond the bound are counted as skipped and logged).
- A file is read again only when its size or mtime changed, and a grown
  file only from where its last valid record ended; `table()` returns the
  very same table while nothing changed (a cheap check for the caller).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import structlog

from grstats.core.records import HistoryRow
from grstats.history.parquet import history_schema, rows_to_table, segment_parts
from grstats.history.rowcheck import storable_row
from grstats.history.wal import WAL_MAGIC, scan_wal, wal_id

__all__ = ["DEFAULT_MAX_BYTES", "SEGMENT_COLUMN", "WalTail", "tail_of", "tail_schema"]

log = structlog.get_logger("grstats.history")

DEFAULT_MAX_BYTES = 64 << 20  # a flush interval of a large group's WAL is a few MB
SEGMENT_COLUMN = "_segment"  # the id the part's Parquet file will carry in its name
DATE_COLUMN = "date"


def tail_of(history_dir: str) -> WalTail | None:
    """The SQL endpoint's tail of a history directory ("": none)."""
    return WalTail(Path(history_dir).resolve()) if history_dir else None


def tail_schema() -> pa.Schema:
    """The history columns, the partition date and the segment file id."""
    return (
        history_schema()
        .append(pa.field(DATE_COLUMN, pa.date32()))
        .append(pa.field(SEGMENT_COLUMN, pa.string()))
    )


@dataclass(slots=True)
class _Read:
    size: int
    mtime_ns: int
    table: pa.Table
    damaged: int
    rows: list[HistoryRow]
    good: int  # where the last valid record ends: a grown file is decoded from here


@dataclass(slots=True)
class WalTail:
    """The rows of a history directory's WAL files (thread-safe).

    Args:
        directory: the history root (its WAL files are in `wal/`).
        max_bytes: the most WAL bytes read per refresh.
    """

    directory: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    damaged: int = 0  # damaged stretches in the files currently read
    skipped: int = 0  # files not read: past the bound, or unreadable
    _files: dict[Path, _Read] = field(default_factory=dict)
    _table: pa.Table | None = None
    _key: tuple[tuple[Path, int, int], ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def segment_column(self) -> str:
        """The column with the id each row's segment file will carry in its name."""
        return SEGMENT_COLUMN

    def table(self) -> pa.Table:
        """The tail's rows now, with `tail_schema()` (the same object while unchanged)."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> pa.Table:
        listed = self._list()
        key = tuple((p, s, m) for p, s, m in listed)
        if self._table is not None and key == self._key:
            return self._table
        files: dict[Path, _Read] = {}
        budget, skipped = self.max_bytes, 0
        for path, size, mtime_ns in reversed(listed):  # newest first within the bound
            if size > budget:
                skipped += 1
                continue
            read = self._files.get(path)
            if read is None or (read.size, read.mtime_ns) != (size, mtime_ns):
                read = _read(path, size, mtime_ns, read if read and size > read.size else None)
            if read is None:
                skipped += 1
                continue
            files[path] = read
            budget -= size
        if skipped and skipped != self.skipped:
            log.warning("history.tail_skipped", files=skipped, max_bytes=self.max_bytes)
        self._files, self._key, self.skipped = files, key, skipped
        self.damaged = sum(r.damaged for r in files.values())
        tables = [files[p].table for p, _, _ in listed if p in files]
        self._table = pa.concat_tables(tables) if tables else tail_schema().empty_table()
        return self._table

    def _list(self) -> list[tuple[Path, int, int]]:
        out: list[tuple[Path, int, int]] = []
        try:
            paths = sorted(self.directory.joinpath("wal").glob("wal-*.log"))
        except OSError:
            return out
        for path in paths:
            try:
                st = path.stat()
            except OSError:  # segmented and deleted meanwhile
                continue
            out.append((path, st.st_size, st.st_mtime_ns))
        return out


def _read(path: Path, size: int, mtime_ns: int, before: _Read | None) -> _Read | None:
    # `before`: this file's earlier read, when it has grown (appended): only the new
    # records are decoded; the parts are rebuilt from all its rows (thinning is per file)
    start = before.good if before is not None else 0
    try:
        with path.open("rb") as f:
            f.seek(start)
            data = f.read(size - start)  # what was appended after the listing: next time
    except OSError:  # gone (segmented meanwhile) or unreadable
        return None
    scan = scan_wal(WAL_MAGIC + data if before is not None else data)
    if scan.damaged:
        log.warning("history.tail_damaged", path=path.name, stretches=scan.damaged)
    new = [r for r in (storable_row(row)[0] for row in scan.rows) if r is not None]
    rows = before.rows + new if before is not None else new
    good = start + scan.good_size - (len(WAL_MAGIC) if before is not None else 0)
    damaged = scan.damaged + (before.damaged if before is not None else 0)
    parts = []
    for _, day, part, name_id in segment_parts(rows_to_table(rows), wal_id(path)):
        n = part.num_rows
        dated = part.append_column(DATE_COLUMN, pa.array([day] * n, pa.date32()))
        parts.append(dated.append_column(SEGMENT_COLUMN, pa.array([str(name_id)] * n)))
    table = pa.concat_tables(parts) if parts else tail_schema().empty_table()
    return _Read(size, mtime_ns, table.cast(tail_schema()), damaged, rows, good)
