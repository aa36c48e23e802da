"""The write-ahead log: record codec, torn-tail repair, and the one open WAL file.

Strategy: a WAL file is the only place a sample is durable before it is in
Parquet.  It is append-only and fsynced after every batch; a segment is always
built by re-reading a *closed* WAL file from disk, with the same function that
replays a previous run's files at start.

Invariants:
- A file starts with `WAL_MAGIC`; a record is u32 length + u32 CRC32 (little
  endian) + a msgpack list of the row's values in HISTORY_COLUMNS order.
- A record whose length or CRC does not check out is skipped and reading
  resynchronises on the next valid frame (found by its payload's msgpack
  array marker, then checked by length and CRC): one flipped bit costs one
  record.  Only an incomplete last record (a crash during an append) is cut;
  a file with any other damage is kept whole (copied to the quarantine).
- A record with more values than this version's columns (written by a newer
  grstats) keeps the values it knows.
- `WalFile` holds at most one file descriptor.  A failed append leaves the
  file as it was before the append (truncated back), or closes it: the torn
  tail is cut at replay.  A failed open closes its descriptor and deletes the
  half-made file: a full disk never leaks either.
- Names: `wal-<writer>-<counter>-<uuid>.log`.  A writer replays only its own
  files (and those of older versions, `wal-<counter>-<uuid>.log`), so several
  writers can share one history directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import socket
import struct
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import structlog

from grstats.core.records import HISTORY_COLUMNS, HistoryRow
from grstats.history.fileops import FileOps
from grstats.history.modes import FILE_MODE, private
from grstats.history.rowcheck import fsync_path, row_values

__all__ = [
    "WAL_MAGIC",
    "WalFile",
    "WalScan",
    "encode_record",
    "ends_torn",
    "new_wal_path",
    "repair_wal",
    "scan_wal",
    "wal_counter",
    "wal_id",
    "writer_id",
    "writer_wals",
]

log = structlog.get_logger("grstats.history")

WAL_MAGIC = b"GRSWAL1\n"
_RECORD_HEADER = struct.Struct("<II")
_MAX_RECORD = 1 << 20  # a row is ~300 bytes; anything larger is a corrupt length


def encode_record(row: HistoryRow) -> bytes:
    """One WAL record: u32 length + u32 CRC32 of the payload + msgpack payload.

    Args:
        row: the sample.

    Returns:
        The record bytes.
    """
    payload: bytes = msgpack.packb(row_values(row), use_bin_type=True)
    return _RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True, slots=True)
class WalScan:
    """Result of reading one WAL file: the valid rows, and what was not readable."""

    rows: list[HistoryRow]
    good_size: int  # where the last valid record ends (incl. the magic); the torn tail starts
    file_size: int
    damaged: int = 0  # stretches of bytes skipped between or after valid records (not a torn tail)
    damaged_bytes: int = 0
    newer_records: int = 0  # records with more columns than this version knows (kept, cut)

    @property
    def torn_bytes(self) -> int:
        """The incomplete last record a crash during an append left (safe to cut)."""
        return self.file_size - self.good_size if not self.damaged else 0


_FIELDS = len(HISTORY_COLUMNS)
_ARRAY16 = 0xDC  # msgpack array16: a row has 22 or more values, never a fixarray


def _frame(data: bytes, offset: int) -> tuple[int, list[Any] | None]:
    """The record at `offset`: (its end, its values), (0, None) when it is not one.

    A frame whose checksum holds but that is not a row ends at its end with no values.
    """
    length, crc = _RECORD_HEADER.unpack_from(data, offset)
    start = offset + _RECORD_HEADER.size
    end = start + length
    if length > _MAX_RECORD or end > len(data) or zlib.crc32(data[start:end]) != crc:
        return 0, None
    try:
        values = msgpack.unpackb(data[start:end], raw=False, strict_map_key=True)
    except (ValueError, TypeError, msgpack.exceptions.UnpackException):
        return end, None
    return end, values if isinstance(values, list) else None


def _resync(data: bytes, after: int) -> int:
    """The offset of the next valid frame after `after`, or -1 (searched by payload marker)."""
    marker = data.find(bytes((_ARRAY16,)), after + 1 + _RECORD_HEADER.size)
    while marker != -1:
        end, values = _frame(data, marker - _RECORD_HEADER.size)
        if values is not None and end:
            return marker - _RECORD_HEADER.size
        marker = data.find(bytes((_ARRAY16,)), marker + 1)
    return -1


def _is_torn(data: bytes, offset: int) -> bool:
    # an append cut short by a crash: a partial header, or a frame running past the end
    if offset + _RECORD_HEADER.size > len(data):
        return True
    length: int = _RECORD_HEADER.unpack_from(data, offset)[0]
    return length <= _MAX_RECORD and offset + _RECORD_HEADER.size + length > len(data)


def ends_torn(data: bytes, offset: int) -> bool:
    """Whether the bytes of a WAL file from `offset` on are an append cut short (a record's
    prefix), not damage: what a reader of part of a file left for its next read."""
    return _is_torn(data, offset)


def scan_wal(data: bytes) -> WalScan:
    """Decode every valid record of a WAL file's bytes, resynchronising past damage.

    A record that fails its length or CRC check (or is not a row) is skipped
    and reading goes on at the next valid frame: samples are independent, so
    one flipped bit costs one record, not the rest of the file.  A record
    with more values than this version's columns (a newer grstats) keeps the
    ones it knows.

    Args:
        data: the whole file.

    Returns:
        The rows in file order, where the last one ends, and the damage seen.
    """
    if not data.startswith(WAL_MAGIC):
        return WalScan([], 0, len(data))
    rows: list[HistoryRow] = []
    offset = good = len(WAL_MAGIC)
    damaged = damaged_bytes = newer = 0
    while offset < len(data):
        end, values = (
            _frame(data, offset) if offset + _RECORD_HEADER.size <= len(data) else (0, None)
        )
        row = None
        if values is not None:
            newer += len(values) > _FIELDS
            try:
                row = HistoryRow(*values[:_FIELDS])
            except TypeError:  # too few values: not a row of any version
                row = None
        if row is not None:
            rows.append(row)
            offset = good = end
            continue
        following = _resync(data, offset)
        if following == -1:
            if not _is_torn(data, offset):
                damaged, damaged_bytes = damaged + 1, damaged_bytes + len(data) - offset
            break
        damaged, damaged_bytes = damaged + 1, damaged_bytes + following - offset
        offset = following
    return WalScan(rows, good, len(data), damaged, damaged_bytes, newer)


def repair_wal(path: Path, keep: Callable[[Path], object] | None = None) -> WalScan | None:
    """Read a WAL file; cut (durably) only an incomplete last record.

    A file with damage in or after its records is never cut: `keep` gets it
    first (the writer copies it to the quarantine directory), and it is
    segmented as it is -- the valid records around the damage are kept.

    Args:
        path: the WAL file.
        keep: called with the path when the file holds damage.

    Returns:
        The valid rows, or None when the file is not a grstats WAL (left untouched).
    """
    scan = scan_wal(path.read_bytes())
    if scan.good_size == 0 and scan.file_size >= len(WAL_MAGIC):
        log.error("history.wal_unknown_format", path=str(path))
        return None
    if scan.damaged:
        log.error(
            "history.wal_damaged",
            path=path.name,
            stretches=scan.damaged,
            bytes=scan.damaged_bytes,
            rows=len(scan.rows),
        )
        if keep is not None:
            keep(path)
    elif scan.torn_bytes:
        with path.open("r+b") as f:
            f.truncate(scan.good_size)
            os.fsync(f.fileno())
        log.warning(
            "history.wal_tail_cut", path=path.name, bytes=scan.torn_bytes, rows=len(scan.rows)
        )
    if scan.newer_records:
        log.warning("history.wal_newer_columns", path=path.name, records=scan.newer_records)
    return scan


_LEGACY_WAL = re.compile(r"wal-(\d{12})-[0-9a-zA-Z]+\.log")


def writer_id(instance: str = "") -> str:
    """A stable, file-name-safe id of one writer: from the host name and `instance`.

    Args:
        instance: tells apart writers of one host sharing a directory (e.g. a member id).

    Returns:
        "w" + 10 hex digits.
    """
    key = f"{socket.gethostname()}\0{instance}".encode()
    return "w" + hashlib.blake2b(key, digest_size=5).hexdigest()


def writer_wals(wal_dir: Path, writer: str) -> list[Path]:
    """The WAL files `writer` owns: its own and older versions', oldest first.

    Args:
        wal_dir: the `wal/` directory.
        writer: the writer id.

    Returns:
        Paths ordered by their counter.
    """
    legacy = sorted(p for p in wal_dir.glob("wal-*.log") if _LEGACY_WAL.fullmatch(p.name))
    return legacy + sorted(wal_dir.glob(f"wal-{writer}-*.log"))


def new_wal_path(wal_dir: Path, writer: str, counter: int) -> Path:
    """The name of a writer's next WAL file."""
    return wal_dir / f"wal-{writer}-{counter:012d}-{uuid.uuid4().hex}.log"


def wal_counter(path: Path) -> int:
    """The counter in a WAL file's name (either naming)."""
    return int(path.stem.split("-")[-2])


def wal_id(path: Path) -> str:
    """The segment id of a WAL file: its name without `wal-` and `.log`.

    Args:
        path: a WAL file path.

    Returns:
        The id its Parquet segments are named from.
    """
    return path.stem.split("-", 1)[1]


class WalFile:
    """The one open WAL file of a writer (owned by a single thread).

    Args:
        path: the file to create (must not exist).
        ops: the OS-call boundary.

    Raises:
        OSError: the file could not be created; nothing is left behind.
    """

    def __init__(self, path: Path, ops: FileOps) -> None:
        self.path = path
        self._ops = ops
        self.last_fsync_s = 0.0
        # read-write: if the directory is deleted under us, `read_back` still has the rows
        fd = ops.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, FILE_MODE)
        try:
            private(fd)  # the umask may have left it more open
            self._write_all(fd, WAL_MAGIC)
            ops.fsync(fd)
            fsync_path(path.parent)  # the new name must survive a crash too
        except BaseException:
            ops.close(fd)
            path.unlink(missing_ok=True)
            raise
        self._fd: int | None = fd
        self.size = len(WAL_MAGIC)

    def _write_all(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a regular file may take less than asked (e.g. disk full)
            view = view[self._ops.write(fd, view) :]

    def append(self, data: bytes) -> None:
        """Append records and fsync them.

        Args:
            data: encoded records.

        Raises:
            OSError: the write or fsync failed; the file may hold a partial tail.
        """
        assert self._fd is not None
        self._write_all(self._fd, data)
        started = time.monotonic()
        self._ops.fsync(self._fd)
        self.last_fsync_s = time.monotonic() - started
        self.size += len(data)

    def read_back(self) -> bytes:
        """The records written so far (after the magic), read through the descriptor.

        Works when the file's name is gone (its directory deleted under a
        running writer): the descriptor keeps the unlinked file alive.

        Raises:
            OSError: the read failed.
        """
        assert self._fd is not None
        chunks: list[bytes] = []
        offset = len(WAL_MAGIC)
        while offset < self.size:
            chunk = os.pread(self._fd, self.size - offset, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def truncate_to_good(self) -> None:
        """Cut what a failed append may have left.

        Raises:
            OSError: the truncate failed.
        """
        assert self._fd is not None
        self._ops.ftruncate(self._fd, self.size)

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self._ops.close(fd)


class WriterLock:
    """One writer id per history tree at a time: an flock on `wal/.lock-<id>`.

    Two processes with the same writer id would replay and delete each
    other's write-ahead logs; the second one refuses to start instead.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self._path = path
        self._fd: int | None = fd

    @classmethod
    def take(cls, wal_dir: Path, writer_id: str, tree: Path) -> WriterLock:
        """Lock `writer_id` on the tree whose WAL directory is `wal_dir`.

        Raises:
            LockedError: another live process holds it.
        """
        path = wal_dir / f".lock-{writer_id}"
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
            try:
                private(fd)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise LockedError(
                    f"{tree}: another writer with id {writer_id} is running "
                    "on it (several collectors on one host: give each its own [bus] client_id)"
                ) from None
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    return cls(path, fd)
            except FileNotFoundError:
                pass
            os.close(fd)  # the holder removed it as we opened it: take the new one

    def release(self) -> None:
        """Unlock; the file is removed while still held, so a racing opener sees a stale inode."""
        if self._fd is not None:
            self._path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


class LockedError(Exception):
    """Another process writes with the same writer id."""
