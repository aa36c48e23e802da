"""History Parquet segments: layout, format, compaction, retention (DESIGN.md section 6).

Strategy: every Parquet file of the history -- the daemon's segments (one per
WAL file), `grstats simulate`'s (one per member-day) and compacted days -- is
written by `write_segments`/`_write_file` here, so all of them share one
format: rows sorted by (member_id, sampled_at), dictionary for strings,
DELTA_BINARY_PACKED for integers and timestamps, zstd level 9, one large row
group.

Invariants:
- Layout `<dir>/group=<g>/date=<YYYY-MM-DD>/part-<first_sampled_at>-<uuid>.parquet`
  (UTC date of `sampled_at`; first_sampled_at in microseconds, 16 digits; the
  group Hive-escaped).  Only `part-*.parquet` is data.
- A file is written as `.<name>.tmp` beside its target, fsynced, renamed with
  `os.replace`, and the directory fsynced: a reader sees a whole file or none.
- File names are a function of the segment id and the partition: writing the
  same segment again replaces the file, never adds a second copy.
- A compacted file lists (as 8-byte name digests in its footer) the files it
  replaces; readers skip those and housekeeping deletes them, so a crash
  between the rename and the deletions never shows rows twice.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import structlog

from grstats.core.records import HISTORY_COLUMNS, HistoryRow

__all__ = [
    "PARQUET_OPTIONS",
    "ROW_GROUP_SIZE",
    "fsync_path",
    "history_schema",
    "housekeep",
    "read_history",
    "remove_temporaries",
    "row_values",
    "rows_to_table",
    "write_segments",
]

log = structlog.get_logger("grstats.history")

_US_PER_DAY = 86_400_000_000
_COMPACT_MAX_ROWS = 2_000_000  # bounds the memory of one compaction
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
row_values = attrgetter(*_NAMES)

ROW_GROUP_SIZE = 1 << 20  # rows: a member-day (86 400) or a compacted day is one group
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 9,
    "use_dictionary": _STRING_COLUMNS,
    "column_encoding": dict.fromkeys(_DELTA_COLUMNS, "DELTA_BINARY_PACKED"),
    "data_page_size": 1 << 20,
    "write_statistics": True,
}


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
        for column, value in zip(columns, row_values(row), strict=True):
            column.append(value)
    return pa.table(dict(zip(_NAMES, columns, strict=True)), schema=history_schema())


def fsync_path(path: Path) -> None:
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
        fsync_path(parent)


def _write_file(path: Path, table: pa.Table, metadata: dict[bytes, bytes]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    table = table.replace_schema_metadata(None)
    with pq.ParquetWriter(tmp, table.schema, **PARQUET_OPTIONS) as writer:
        writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
        # footer only: schema metadata would be stored twice (also in ARROW:schema)
        writer.add_key_value_metadata(metadata)
    fsync_path(tmp)
    os.replace(tmp, path)
    fsync_path(path.parent)


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
        fsync_path(partition)
        merged += len(batch)
    return merged


def housekeep(directory: Path, retention_days: int, today: dt.date) -> None:
    """Retention by age, then compaction of finished days."""
    cutoff = today - dt.timedelta(days=retention_days)
    for partition in list(_partitions(directory)):
        try:
            day = dt.date.fromisoformat(partition.name.removeprefix("date="))
        except ValueError:
            continue  # not ours
        if day < cutoff:
            shutil.rmtree(partition)
            fsync_path(partition.parent)
            log.info("history.partition_expired", partition=str(partition.relative_to(directory)))
            with contextlib.suppress(OSError):  # not empty: other dates remain
                partition.parent.rmdir()
        elif day < today and (merged := _compact_partition(directory, partition)):
            log.info(
                "history.partition_compacted",
                partition=str(partition.relative_to(directory)),
                files=merged,
            )


def remove_temporaries(directory: Path) -> None:
    for tmp in directory.glob("**/.*.tmp"):
        tmp.unlink(missing_ok=True)
        log.info("history.temporary_removed", path=str(tmp.relative_to(directory)))
