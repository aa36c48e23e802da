"""Crash-safe history: write-ahead log -> Parquet segments (DESIGN.md section 6).

Strategy: `HistoryWriter.record()` only appends a row to an in-memory buffer
under a lock; a dedicated thread ("grstats-history") owns every file.  Each
tick (`fsync_interval_s`) it appends the buffered rows to the current WAL file
under `<dir>/wal/` and fsyncs it; every `flush_interval_s` (and on `flush()` /
`close()`) it closes that WAL file and turns it into Parquet segments.  A
segment is always built by *re-reading* a closed WAL file from disk -- the
same function replays a previous run's WAL at `start()` -- so a segment is a
pure function of the WAL file's valid records.

Invariants:
- WAL record = u32 length + u32 CRC32 (little endian) + msgpack list of the
  row's values in HISTORY_COLUMNS order; a file starts with `WAL_MAGIC`.
  Reading stops at the first record whose length or CRC does not check out and
  the file is truncated there (torn tail cut); rows after it are not trusted.
- A Parquet file is written as `.<name>.tmp` in its partition directory,
  fsynced, renamed with `os.replace` and the directory fsynced.  Only then is
  the WAL file it came from deleted.  Segment names are deterministic from the
  WAL file's UUID, so a crash between the rename and the WAL deletion rewrites
  the *same* file on replay instead of adding a duplicate.
- Layout `<dir>/group=<g>/date=<YYYY-MM-DD>/part-<first_sampled_at>-<uuid>.parquet`
  (UTC date of `sampled_at`; first_sampled_at in microseconds, 16 digits).
  Only `part-*.parquet` is data; temporaries start with "." and end in ".tmp"
  and are deleted at start.
- Finished days are compacted into fewer, larger files; a compacted file lists
  the files it replaces in its metadata, so a crash before the inputs are
  deleted never shows their rows twice (readers skip them, start deletes them).
- Parquet is written for size: rows sorted by (member_id, sampled_at),
  dictionary for strings, DELTA_BINARY_PACKED for integers and timestamps, zstd.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import datetime as dt
import hashlib
import os
import shutil
import struct
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgpack
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import structlog

from grstats.records import HISTORY_COLUMNS, HistoryRow

__all__ = [
    "HistoryError",
    "HistoryStats",
    "HistoryWriter",
    "history_schema",
    "read_history",
    "repair_wal",
    "rows_to_table",
    "write_segments",
]

log = structlog.get_logger("grstats.history")

WAL_MAGIC = b"GRSWAL1\n"
_RECORD_HEADER = struct.Struct("<II")
_MAX_RECORD = 1 << 20  # a row is ~300 bytes; anything larger is a corrupt length
_US_PER_DAY = 86_400_000_000
_COMPACT_MAX_ROWS = 2_000_000  # bounds the memory of one compaction
_MAX_PENDING = 1_000_000  # rows buffered while the disk fails; oldest dropped beyond
_META_SEGMENT = b"grstats.segment"
_META_REPLACES = b"grstats.replaces"
_NAMESPACE = uuid.UUID("6b1d3c1e-4f0a-5e2b-9a57-0c7d9e2f4a11")

_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int8": pa.int8(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "timestamp[us, tz=UTC]": pa.timestamp("us", tz="UTC"),
}
_NAMES = tuple(name for name, _ in HISTORY_COLUMNS)
_STRING_COLUMNS = [name for name, kind in HISTORY_COLUMNS if kind == "string"]
_DELTA_COLUMNS = [name for name, kind in HISTORY_COLUMNS if kind != "string"]
_row_values = attrgetter(*_NAMES)

ROW_GROUP_SIZE = 1 << 20  # rows: a member-day (86 400) or a compacted day is one group
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 9,
    "use_dictionary": _STRING_COLUMNS,
    "column_encoding": dict.fromkeys(_DELTA_COLUMNS, "DELTA_BINARY_PACKED"),
    "data_page_size": 1 << 20,
    "write_statistics": True,
}


class HistoryError(Exception):
    """The history could not be written (disk full, permissions, writer closed)."""


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


def history_schema() -> pa.Schema:
    """The Arrow schema of the history (HISTORY_COLUMNS, all nullable as written).

    Returns:
        The schema every segment carries.
    """
    return pa.schema([pa.field(name, _ARROW_TYPES[kind]) for name, kind in HISTORY_COLUMNS])


def rows_to_table(rows: Iterable[HistoryRow]) -> pa.Table:
    """Columnar copy of rows.

    Args:
        rows: samples in any order.

    Returns:
        A table with `history_schema()`.
    """
    columns: list[list[Any]] = [[] for _ in _NAMES]
    for row in rows:
        for column, value in zip(columns, _row_values(row), strict=True):
            column.append(value)
    return pa.table(dict(zip(_NAMES, columns, strict=True)), schema=history_schema())


# ---------------------------------------------------------------- Parquet segments


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _partition_name(group: str) -> str:
    # Hive-style value escaping (Spark and pyarrow unescape %XX); "" is Hive's null.
    return quote(group, safe="") if group else "__HIVE_DEFAULT_PARTITION__"


def _partition_dir(directory: Path, group: str, day: dt.date) -> Path:
    return directory / f"group={_partition_name(group)}" / f"date={day.isoformat()}"


def _ensure_dir(directory: Path, path: Path) -> None:
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True)
    # make the new directory entries durable up to the history root
    for parent in (path.parent, path.parent.parent, directory):
        _fsync_path(parent)


def _write_file(path: Path, table: pa.Table, metadata: dict[bytes, bytes]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    table = table.replace_schema_metadata(None)
    with pq.ParquetWriter(tmp, table.schema, **PARQUET_OPTIONS) as writer:
        writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
        # footer only: schema metadata would be stored twice (also in ARROW:schema)
        writer.add_key_value_metadata(metadata)
    _fsync_path(tmp)
    os.replace(tmp, path)
    _fsync_path(path.parent)


def write_segments(directory: Path, table: pa.Table, *, segment_id: str) -> list[Path]:
    """Write rows durably as Parquet, one file per (group, UTC date) partition.

    The daemon (one segment per WAL file) and `grstats simulate` (one per
    member-day) both write through here, so their files are identical in
    format.  File names are a function of `segment_id` and the partition:
    writing the same segment again replaces the file, it never adds one.

    Args:
        directory: the history root.
        table: rows with `history_schema()`, any order.
        segment_id: a text unique to this set of rows (e.g. the WAL file UUID).

    Returns:
        The paths written, in partition order.
    """
    if table.num_rows == 0:
        return []
    table = table.cast(history_schema())
    days = pc.divide(table["sampled_at"].cast(pa.int64()), _US_PER_DAY)
    keyed = table.append_column("_day", days)
    keys = keyed.group_by(["group_name", "_day"]).aggregate([]).sort_by("_day").to_pylist()
    written: list[Path] = []
    for key in keys:
        group, day_number = key["group_name"], key["_day"]
        if len(keys) == 1:
            part = table
        else:
            mask = pc.and_(
                pc.equal(keyed["group_name"], group), pc.equal(keyed["_day"], day_number)
            )
            part = table.filter(mask)
        part = part.sort_by(
            [("member_id", "ascending"), ("sampled_at", "ascending"), ("seq", "ascending")]
        )
        day = dt.date(1970, 1, 1) + dt.timedelta(days=day_number)
        target = _partition_dir(directory, group, day)
        _ensure_dir(directory, target)
        first = int(pc.min(part["sampled_at"].cast(pa.int64())).as_py())
        name_id = uuid.uuid5(_NAMESPACE, f"{segment_id}|{group}|{day.isoformat()}")
        path = target / f"part-{first:016d}-{name_id}.parquet"
        _write_file(path, part, {_META_SEGMENT: segment_id.encode()})
        written.append(path)
    return written


def _name_key(name: str) -> bytes:
    # 8 bytes per replaced file keeps a compacted day's footer small (1440 inputs: 15 KB)
    return hashlib.blake2b(name.encode(), digest_size=8).digest()


def _replaced_by_compaction(files: list[Path]) -> set[str]:
    """Names among `files` that a compacted file in the same list replaces."""
    keys: set[bytes] = set()
    for path in files:
        metadata = pq.read_metadata(path).metadata or {}
        if _META_REPLACES in metadata:
            raw = base64.b64decode(metadata[_META_REPLACES])
            keys.update(raw[i : i + 8] for i in range(0, len(raw), 8))
    return {path.name for path in files if _name_key(path.name) in keys}


def _partitions(directory: Path) -> Iterator[Path]:
    yield from sorted(p for p in directory.glob("group=*/date=*") if p.is_dir())


def read_history(directory: Path) -> pa.Table:
    """Every sample of a history directory (only `part-*.parquet`, never temporaries).

    Args:
        directory: the history root (as given to HistoryWriter or simulate).

    Returns:
        One table with `history_schema()`, ordered by partition and file name.
    """
    tables = [history_schema().empty_table()]
    for partition in _partitions(Path(directory)):
        files = sorted(partition.glob("part-*.parquet"))
        replaced = _replaced_by_compaction(files)
        tables.extend(
            pq.read_table(f).cast(history_schema()) for f in files if f.name not in replaced
        )
    return pa.concat_tables(tables).replace_schema_metadata(None)


def _compact_partition(directory: Path, partition: Path) -> int:
    """Merge a finished day's files into files of up to _COMPACT_MAX_ROWS rows."""
    files = sorted(partition.glob("part-*.parquet"))
    for name in _replaced_by_compaction(files):  # a crash left the inputs behind
        (partition / name).unlink(missing_ok=True)
    files = sorted(partition.glob("part-*.parquet"))
    batches: list[list[Path]] = [[]]
    rows = 0
    for path in files:
        count = pq.read_metadata(path).num_rows
        if batches[-1] and rows + count > _COMPACT_MAX_ROWS:
            batches.append([])
            rows = 0
        batches[-1].append(path)
        rows += count
    merged = 0
    for batch in (b for b in batches if len(b) > 1):
        table = pa.concat_tables(pq.read_table(p).cast(history_schema()) for p in batch)
        table = table.sort_by(
            [("member_id", "ascending"), ("sampled_at", "ascending"), ("seq", "ascending")]
        )
        names = [p.name for p in batch]
        digest = hashlib.sha256("\n".join(names).encode()).hexdigest()
        first = int(pc.min(table["sampled_at"].cast(pa.int64())).as_py())
        path = partition / f"part-{first:016d}-{uuid.uuid5(_NAMESPACE, digest)}.parquet"
        meta = {
            _META_SEGMENT: f"compact:{digest}".encode(),
            _META_REPLACES: base64.b64encode(b"".join(_name_key(n) for n in names)),
        }
        _write_file(path, table, meta)
        for old in batch:
            old.unlink()
        _fsync_path(partition)
        merged += len(batch)
    return merged


def _housekeep(directory: Path, retention_days: int, today: dt.date) -> None:
    """Retention by age, then compaction of finished days."""
    cutoff = today - dt.timedelta(days=retention_days)
    for partition in list(_partitions(directory)):
        try:
            day = dt.date.fromisoformat(partition.name.removeprefix("date="))
        except ValueError:
            continue  # not ours
        if day < cutoff:
            shutil.rmtree(partition)
            _fsync_path(partition.parent)
            log.info("history.partition_expired", partition=str(partition.relative_to(directory)))
            with contextlib.suppress(OSError):  # not empty: other dates remain
                partition.parent.rmdir()
        elif day < today and (merged := _compact_partition(directory, partition)):
            log.info(
                "history.partition_compacted",
                partition=str(partition.relative_to(directory)),
                files=merged,
            )


def _remove_temporaries(directory: Path) -> None:
    for tmp in directory.glob("**/.*.tmp"):
        tmp.unlink(missing_ok=True)
        log.info("history.temporary_removed", path=str(tmp.relative_to(directory)))


# ---------------------------------------------------------------- write-ahead log


def encode_record(row: HistoryRow) -> bytes:
    """One WAL record: u32 length + u32 CRC32 of the payload + msgpack payload.

    Args:
        row: the sample.

    Returns:
        The record bytes.
    """
    payload: bytes = msgpack.packb(_row_values(row), use_bin_type=True)
    return _RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True, slots=True)
class WalScan:
    """Result of reading one WAL file: the valid rows and where they end."""

    rows: list[HistoryRow]
    good_size: int  # bytes of the file that hold valid records (incl. the magic)
    file_size: int


def scan_wal(data: bytes) -> WalScan:
    """Decode the valid prefix of a WAL file's bytes.

    Args:
        data: the whole file.

    Returns:
        The rows up to the first torn or corrupt record and the valid size.
    """
    if not data.startswith(WAL_MAGIC):
        return WalScan([], 0, len(data))
    rows: list[HistoryRow] = []
    offset = len(WAL_MAGIC)
    while offset + _RECORD_HEADER.size <= len(data):
        length, crc = _RECORD_HEADER.unpack_from(data, offset)
        start = offset + _RECORD_HEADER.size
        if length > _MAX_RECORD or start + length > len(data):
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        try:
            values = msgpack.unpackb(payload, raw=False, strict_map_key=True)
            row = HistoryRow(*values)
        except (ValueError, TypeError, msgpack.exceptions.UnpackException):
            break  # CRC good but not a row of ours: treat as the end
        rows.append(row)
        offset = start + length
    return WalScan(rows, offset, len(data))


def repair_wal(path: Path) -> WalScan | None:
    """Read a WAL file and truncate (durably) a torn or corrupt tail.

    Args:
        path: the WAL file.

    Returns:
        The valid rows, or None when the file is not a grstats WAL (left untouched).
    """
    scan = scan_wal(path.read_bytes())
    if scan.good_size == 0 and scan.file_size >= len(WAL_MAGIC):
        log.error("history.wal_unknown_format", path=str(path))
        return None
    if scan.good_size < scan.file_size:
        with path.open("r+b") as f:
            f.truncate(scan.good_size)
            os.fsync(f.fileno())
        cut = scan.file_size - scan.good_size
        log.warning("history.wal_tail_cut", path=path.name, bytes=cut, rows=len(scan.rows))
    return scan


def _wal_id(path: Path) -> str:
    return path.stem.split("-", 1)[1]


class HistoryWriter:
    """Durable history of HistoryRow samples for the daemon.

    Args:
        directory: history root (created if missing).
        scope: "local" or "all"; stored for the daemon, the writer accepts any row.
        retention_days: date partitions older than this many days are deleted.
        flush_interval_s: how often the WAL is turned into Parquet segments.
        fsync_interval_s: how often buffered rows are appended and fsynced (<= 1 s).
    """

    def __init__(
        self,
        directory: Path,
        *,
        scope: str = "local",
        retention_days: int = 30,
        flush_interval_s: float = 60.0,
        fsync_interval_s: float = 1.0,
    ) -> None:
        self.directory = Path(directory)
        self.scope = scope
        self.retention_days = retention_days
        self.flush_interval_s = flush_interval_s
        self.fsync_interval_s = fsync_interval_s
        self._wal_dir = self.directory / "wal"
        self._cond = threading.Condition()
        self._pending: deque[HistoryRow] = deque()
        self._flush_waiters: list[concurrent.futures.Future[None]] = []
        self._stopping = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._counts = dict.fromkeys((f.name for f in fields(HistoryStats)), 0)
        # owned by the worker thread (or by start() before the thread exists)
        self._wal_fd: int | None = None
        self._wal_path: Path | None = None
        self._wal_size = 0
        self._closed_wals: list[Path] = []
        self._next_wal = 1
        self._housekept: dt.date | None = None
        self._housekeeper: threading.Thread | None = None

    @property
    def stats(self) -> HistoryStats:
        """A snapshot of the counters."""
        with self._cond:
            return HistoryStats(**self._counts)

    async def start(self) -> None:
        """Recover a previous run (temporaries, WAL replay, compaction), start the thread.

        Raises:
            HistoryError: the directory cannot be prepared or the WAL not replayed.
        """
        try:
            await asyncio.to_thread(self._recover)
        except OSError as exc:
            raise HistoryError(f"{self.directory}: cannot recover history: {exc}") from exc
        self._thread = threading.Thread(target=self._run, name="grstats-history", daemon=True)
        self._thread.start()

    def record(self, row: HistoryRow) -> None:
        """Buffer one sample; never blocks on I/O (safe on the event loop).

        Args:
            row: the sample.

        Raises:
            HistoryError: the writer is closed.
        """
        with self._cond:
            if self._closed:
                raise HistoryError("history writer is closed")
            if len(self._pending) >= _MAX_PENDING:
                self._pending.popleft()
                self._counts["rows_dropped"] += 1
            self._pending.append(row)
            self._counts["rows_recorded"] += 1

    async def flush(self) -> None:
        """Make every row recorded so far durable in the WAL and written as Parquet.

        Raises:
            HistoryError: writing failed (the rows stay in the WAL or buffer for a retry).
        """
        if self._thread is None:
            raise HistoryError("history writer not started")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._cond:
            self._flush_waiters.append(done)
            self._cond.notify()
        await asyncio.wrap_future(done)

    async def close(self) -> None:
        """Final flush (WAL fsync and Parquet), then stop the thread.

        Raises:
            HistoryError: the final flush failed (fsynced rows remain in the WAL).
        """
        with self._cond:
            self._closed = True
        if self._thread is None:
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._cond:
            self._stopping = True
            self._flush_waiters.append(done)
            self._cond.notify()
        try:
            await asyncio.wrap_future(done)
        finally:
            await asyncio.to_thread(self._thread.join)
            await asyncio.to_thread(self._join_housekeeper)

    # ------------------------------------------------------------ worker thread

    def _recover(self) -> None:
        self._wal_dir.mkdir(parents=True, exist_ok=True)
        _remove_temporaries(self.directory)
        wals = sorted(self._wal_dir.glob("wal-*.log"))
        for path in wals:
            self._next_wal = max(self._next_wal, int(path.stem.split("-")[1]) + 1)
        for path in wals:
            self._segment_wal(path, recovering=True)

    def _run(self) -> None:
        next_sync = time.monotonic() + self.fsync_interval_s
        next_flush = time.monotonic() + self.flush_interval_s
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: self._stopping or bool(self._flush_waiters),
                    timeout=max(0.0, next_sync - time.monotonic()),
                )
                stopping, waiters = self._stopping, self._flush_waiters
                self._flush_waiters = []
            failure: BaseException | None = None
            try:
                next_sync = time.monotonic() + self.fsync_interval_s
                self._sync_wal()
                if stopping or waiters or time.monotonic() >= next_flush:
                    next_flush = time.monotonic() + self.flush_interval_s
                    self._rotate()
                self._housekeep()
            except Exception as exc:  # thread boundary: hand it to the awaiting coroutine
                failure = exc
                with self._cond:
                    self._counts["errors"] += 1
                log.error("history.write_failed", error=str(exc), directory=str(self.directory))
            for waiter in waiters:
                if failure is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(HistoryError(f"{self.directory}: {failure}"))
            if stopping:
                return

    def _sync_wal(self) -> None:
        with self._cond:
            batch = list(self._pending)
            self._pending.clear()
        if not batch:
            return
        data = b"".join(encode_record(row) for row in batch)
        try:
            if self._wal_fd is None:
                self._open_wal()
            assert self._wal_fd is not None
            os.write(self._wal_fd, data)  # O_APPEND: one write, short writes raise
            os.fsync(self._wal_fd)
        except OSError:
            self._abandon_batch(batch)
            raise
        self._wal_size += len(data)
        with self._cond:
            self._counts["rows_durable"] += len(batch)

    def _abandon_batch(self, batch: list[HistoryRow]) -> None:
        # Cut what the failed write may have left, then retry the rows later.
        if self._wal_fd is not None:
            try:
                os.ftruncate(self._wal_fd, self._wal_size)
            except OSError:
                self._retire_wal()  # replay cuts its torn tail
        with self._cond:
            self._pending.extendleft(reversed(batch))

    def _open_wal(self) -> None:
        path = self._wal_dir / f"wal-{self._next_wal:012d}-{uuid.uuid4().hex}.log"
        self._next_wal += 1
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        os.write(fd, WAL_MAGIC)
        os.fsync(fd)
        _fsync_path(self._wal_dir)  # the new name must survive a crash too
        self._wal_fd, self._wal_path, self._wal_size = fd, path, len(WAL_MAGIC)

    def _retire_wal(self) -> None:
        if self._wal_fd is not None and self._wal_path is not None:
            os.close(self._wal_fd)
            self._closed_wals.append(self._wal_path)
        self._wal_fd, self._wal_path, self._wal_size = None, None, 0

    def _rotate(self) -> None:
        self._retire_wal()
        while self._closed_wals:
            self._segment_wal(self._closed_wals[0], recovering=False)
            self._closed_wals.pop(0)

    def _segment_wal(self, path: Path, *, recovering: bool) -> None:
        scan = repair_wal(path)
        if scan is None:
            return  # not ours: leave it for a human
        written = write_segments(self.directory, rows_to_table(scan.rows), segment_id=_wal_id(path))
        path.unlink()
        _fsync_path(self._wal_dir)
        with self._cond:
            self._counts["segments_written"] += len(written)
            if recovering:
                self._counts["rows_recovered"] += len(scan.rows)
                self._counts["wal_bytes_cut"] += scan.file_size - scan.good_size
        if recovering:
            log.info(
                "history.wal_replayed", path=path.name, rows=len(scan.rows), segments=len(written)
            )

    def _housekeep(self) -> None:
        # Retention and compaction can take seconds (a day of small files); they
        # run beside the writer thread so the WAL keeps its fsync cadence.  They
        # touch only finished days and only files listed before they start.
        today = dt.datetime.now(dt.UTC).date()
        if self._housekept == today or (self._housekeeper and self._housekeeper.is_alive()):
            return
        self._housekept = today
        self._housekeeper = threading.Thread(
            target=self._housekeep_day, args=(today,), name="grstats-history-housekeeping"
        )
        self._housekeeper.start()

    def _housekeep_day(self, today: dt.date) -> None:
        try:
            _housekeep(self.directory, self.retention_days, today)
        except Exception as exc:  # thread boundary: counted and logged, retried tomorrow
            with self._cond:
                self._counts["errors"] += 1
            log.error("history.housekeeping_failed", error=str(exc), directory=str(self.directory))

    def _join_housekeeper(self) -> None:
        if self._housekeeper is not None:
            self._housekeeper.join()
