"""History Parquet segments: schema, layout, format, atomic writes, reading (DESIGN.md 6).

Strategy: every Parquet file of the history -- the daemon's segments (one per
WAL file), `grstats simulate`'s (one per member-day) and compacted days -- is
written by `write_segments`/`write_file` here, so all of them share one
format: rows sorted by (member_id, sampled_at), the applier's counters kept on
the last sample of each 10 s window (`cadence`: every hour's sums exact),
dictionary for strings, DELTA_BINARY_PACKED for integers and timestamps, zstd
level 9 (15 for integer running sums, `zstd_level`), one large row group.
Every choice is a rule over a column's kind and name -- a column added later
gets its encoding too -- except the few `ENCODING_CHOICES` measured better:
each names its figures.  Every encoding is one Spark 3.5 reads.

Invariants:
- Layout `<dir>/group=<g>/date=<YYYY-MM-DD>/part-<first_sampled_at>[-<writer>]-<uuid>.parquet`
  (UTC date of `sampled_at`; first_sampled_at in microseconds, 16 digits; the
  group Hive-escaped; `<writer>` is the id of the daemon's writer, absent in
  files of `grstats simulate`).  Only `part-*.parquet` is data.
- A file is written as `.<name>[.<writer>].tmp` beside its target, fsynced,
  renamed with `os.replace`, and the directory fsynced: a reader sees a whole
  file or none.  A failed write deletes its temporary (a full disk stays no
  fuller); each writer removes only its own leftovers at start.
- File names are a function of the segment id and the partition: writing the
  same segment again replaces the file, never adds a second copy.
- A compacted file lists (as 8-byte name digests in its footer) the files it
  replaces; readers skip those and housekeeping deletes them, so a crash
  between the rename and the deletions never shows rows twice.
- Columns are only appended to HISTORY_COLUMNS: a file written before a
  column existed is read (`conform`) with that column NULL.
- A value a column cannot store (out of range, wrong type, NaN, an infinity
  the column does not declare meaningful) is stored NULL (`storable_row`),
  never a reason to drop the sample: a NaN would poison every percentile
  after it, and the row's other values are good.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import structlog

from grstats.core.records import HISTORY_COLUMNS, HistoryRow
from grstats.history.cadence import one_value, thin_counters
from grstats.history.modes import make_dirs, private
from grstats.history.rowcheck import (
    fsync_path,
    invalid_column,
    partition_dir,
    remove_temporaries,
    row_values,
    storable_row,
    unstorable_columns,
)

__all__ = [
    "ENCODING_CHOICES",
    "META_REPLACES",
    "META_SEGMENT",
    "NAMESPACE",
    "PARQUET_OPTIONS",
    "ROW_GROUP_SIZE",
    "SUM_ZSTD_LEVEL",
    "WRITE_BUFFER",
    "ZSTD_LEVEL",
    "conform",
    "fsync_path",
    "history_schema",
    "invalid_column",
    "is_corrupt",
    "name_key",
    "partition_dir",
    "partitions",
    "read_history",
    "remove_temporaries",
    "replaced_by_compaction",
    "row_values",
    "rows_to_table",
    "segment_parts",
    "storable_row",
    "unstorable_columns",
    "write_file",
    "write_segments",
    "zstd_level",
]

log = structlog.get_logger("grstats.history")

_US_PER_DAY = 86_400_000_000
META_SEGMENT = b"grstats.segment"
META_REPLACES = b"grstats.replaces"
NAMESPACE = uuid.UUID("6b1d3c1e-4f0a-5e2b-9a57-0c7d9e2f4a11")

_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int8": pa.int8(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "double": pa.float64(),
    "timestamp[us, tz=UTC]": pa.timestamp("us", tz="UTC"),
}
_NAMES = tuple(name for name, _ in HISTORY_COLUMNS)
# Columns whose measured best differs from their kind's rule (bytes per sample of a
# simulated 9 x 7 history, one file per member-day; `make bench-history` lists them).
# Only encodings Spark 3.5 reads (parquet-mr 1.13): not BYTE_STREAM_SPLIT of integers.
# Measured and left out: count_transactions_rows_validating (a sawtooth) as PLAIN at
# zstd 15 stores 1.48 instead of 1.74 but costs 230 ms more per member-day (the writer's
# whole member-day: 170 ms); BYTE_STREAM_SPLIT would store 1.29.
ENCODING_CHOICES: dict[str, str] = {
    # queue lengths: few distinct values, a dictionary stores 0.77 (delta 0.93) and
    # 0.015 (0.025)
    "count_transactions_in_queue": "RLE_DICTIONARY",
    "count_transactions_remote_in_applier_queue": "RLE_DICTIONARY",
}
_STRING_COLUMNS = [name for name, kind in HISTORY_COLUMNS if kind == "string"]
_DICTIONARY_COLUMNS = [
    *_STRING_COLUMNS,
    *(name for name, choice in ENCODING_CHOICES.items() if choice == "RLE_DICTIONARY"),
]
# DELTA_BINARY_PACKED is for integers only; doubles stay PLAIN (every reader knows it, and
# the history's doubles are quantised figures: BYTE_STREAM_SPLIT made them 1.3-1.7x bigger)
_DELTA_COLUMNS = [
    name
    for name, kind in HISTORY_COLUMNS
    if kind not in ("string", "double") and name not in ENCODING_CHOICES
]

ZSTD_LEVEL = 9
# A running sum (nanoseconds waited, bytes committed) grows by large, noisy steps: its
# bit-packed deltas are the bulk of a sample, and zstd finds their repeats only from
# level 15 (about 10% of a simulated sample; each level costs write time, not read time).
SUM_ZSTD_LEVEL = 15


def zstd_level(name: str, kind: str) -> int:
    """The zstd level of a history column, by rule: integer running sums get more effort.

    Args:
        name: the column's history name.
        kind: its kind in HISTORY_COLUMNS.

    Returns:
        The level its pages are compressed with.
    """
    is_sum = name.endswith(("_sum", "_sum_time"))
    return SUM_ZSTD_LEVEL if is_sum and kind not in ("string", "double") else ZSTD_LEVEL


ROW_GROUP_SIZE = 1 << 20  # rows: a member-day (86 400) or a compacted day is one group
WRITE_BUFFER = 1 << 20  # bytes a Parquet file is written in (the file is the same)
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": {name: zstd_level(name, kind) for name, kind in HISTORY_COLUMNS},
    "use_dictionary": _DICTIONARY_COLUMNS,
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


def is_corrupt(exc: BaseException) -> bool:
    """Whether a read error means the file's bytes are bad (not the disk or the OS).

    pyarrow reports a damaged file as ArrowInvalid, or as an OSError without
    an errno (a failed decompression); an OSError from the kernel has one.

    Args:
        exc: what reading a Parquet file raised.

    Returns:
        True when the file should be quarantined.
    """
    if isinstance(exc, pa.ArrowInvalid):
        return True
    return isinstance(exc, OSError) and exc.errno is None


def conform(table: pa.Table) -> pa.Table:
    """A table read from any history file, in `history_schema()`.

    Args:
        table: a history file's rows; a file older than a column lacks it.

    Returns:
        The rows with every column of the schema, in schema order (a column the
        file did not have is NULL).
    """
    schema = history_schema()
    columns = [
        table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, names=schema.names).cast(schema)


def _ensure_dir(directory: Path, path: Path) -> None:
    if path.is_dir():
        return
    make_dirs(path)
    # make the new directory entries durable up to the history root
    for parent in (path.parent, path.parent.parent, directory):
        fsync_path(parent)


def write_file(
    path: Path, table: pa.Table, metadata: dict[bytes, bytes], *, writer: str = ""
) -> None:
    """Write one Parquet file atomically: temporary, fsync, rename, fsync the directory.

    Args:
        path: the target.
        table: its rows.
        metadata: footer key-values.
        writer: the writer id, part of the temporary's name (two writers never share one).
    """
    tmp = path.with_name(f".{path.name}.{writer}.tmp" if writer else f".{path.name}.tmp")
    table = table.replace_schema_metadata(None)
    try:
        # buffered: the writer's pieces (page headers, pages, its position asked at each)
        # reach the file in a few large writes, not ~700 writes and ~350 seeks a file
        with (
            pa.output_stream(str(tmp), compression=None, buffer_size=WRITE_BUFFER) as sink,
            pq.ParquetWriter(sink, table.schema, **PARQUET_OPTIONS) as parquet,
        ):
            parquet.write_table(table, row_group_size=ROW_GROUP_SIZE)
            # footer only: schema metadata would be stored twice (also in ARROW:schema)
            parquet.add_key_value_metadata(metadata)
        private(tmp)  # before the rename makes it visible
        fsync_path(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not keep half a file
        raise
    os.replace(tmp, path)
    fsync_path(path.parent)


def _in_order(table: pa.Table) -> bool:
    """Whether rows are already in file order: one member, sampled_at strictly rising
    (a simulated member-day is; the sort would copy every column for nothing)."""
    if not one_value(table["member_id"]):
        return False
    at = table["sampled_at"].cast(pa.int64())
    if at.null_count:
        return False
    return pc.all(pc.greater(at[1:], at[:-1])).as_py() is not False


def write_segments(
    directory: Path, table: pa.Table, *, segment_id: str, writer: str = ""
) -> list[Path]:
    """Write rows durably as Parquet, one file per (group, UTC date) partition.

    The daemon (one segment per WAL file) and `grstats simulate` (one per
    member-day) both write through here, so their files are identical in
    format.  File names are a function of `segment_id` and the partition:
    writing the same segment again replaces the file, it never adds one.

    Args:
        directory: the history root.
        table: rows with `history_schema()`, any order.
        segment_id: a text unique to this set of rows (e.g. the WAL file UUID).
        writer: the daemon writer's id, part of the file names ("" for simulate).

    Returns:
        The paths written, in partition order.
    """
    written: list[Path] = []
    for group, day, part, name_id in segment_parts(table, segment_id):
        target = partition_dir(directory, group, day)
        _ensure_dir(directory, target)
        first = int(pc.min(part["sampled_at"].cast(pa.int64())).as_py())
        tag = f"{writer}-" if writer else ""
        path = target / f"part-{first:016d}-{tag}{name_id}.parquet"
        write_file(path, part, {META_SEGMENT: segment_id.encode()}, writer=writer)
        written.append(path)
    return written


def segment_parts(
    table: pa.Table, segment_id: str
) -> list[tuple[str, dt.date, pa.Table, uuid.UUID]]:
    """The rows of a segment as its files would hold them: one part per partition.

    `write_segments` writes these; the SQL endpoint's WAL tail reads the same
    parts (values thinned alike) before they are written.

    Args:
        table: rows with `history_schema()`, any order.
        segment_id: the segment's id (the WAL file's).

    Returns:
        (group, UTC date, the part's rows in file order, the id in its file name).
    """
    if table.num_rows == 0:
        return []
    table = table.cast(history_schema())
    days = pc.divide(table["sampled_at"].cast(pa.int64()), _US_PER_DAY)
    keyed = table.append_column("_day", days)
    keys = _partition_keys(keyed["group_name"], days)
    parts: list[tuple[str, dt.date, pa.Table, uuid.UUID]] = []
    for group, day_number in keys:
        if len(keys) == 1:
            part = table
        else:
            mask = pc.and_(
                pc.equal(keyed["group_name"], group), pc.equal(keyed["_day"], day_number)
            )
            part = table.filter(mask)
        if not _in_order(part):
            part = part.sort_by(
                [("member_id", "ascending"), ("sampled_at", "ascending"), ("seq", "ascending")]
            )
        part = thin_counters(part)  # the applier's counters: each window's last sample
        day = dt.date(1970, 1, 1) + dt.timedelta(days=day_number)
        name_id = uuid.uuid5(NAMESPACE, f"{segment_id}|{group}|{day.isoformat()}")
        parts.append((group, day, part, name_id))
    return parts


def _partition_keys(groups: pa.ChunkedArray, days: pa.ChunkedArray) -> list[tuple[str, int]]:
    """The (group, day number) pairs present, by day then group.

    Not `Table.group_by`: it loads pyarrow's acero and dataset modules, ~1/10 of the
    CPU of the history's child process that writes a minute's segment.
    """
    # one group, one day (a member-day, a minute's segment): compared, not hashed
    names = [groups[0].as_py()] if one_value(groups) else pc.unique(groups).to_pylist()
    keys: list[tuple[str, int]] = []
    for group in names:
        in_group = days if len(names) == 1 else days.filter(pc.equal(groups, group))
        if one_value(in_group):
            keys.append((group, in_group[0].as_py()))
        else:
            keys.extend((group, day) for day in pc.unique(in_group).to_pylist())
    return sorted(keys, key=lambda key: (key[1], key[0]))


def name_key(name: str) -> bytes:
    """The digest by which a compacted file lists a file it replaces."""
    # 8 bytes per replaced file keeps a compacted day's footer small (1440 inputs: 15 KB)
    return hashlib.blake2b(name.encode(), digest_size=8).digest()


def replaced_by_compaction(files: list[Path]) -> set[str]:
    """Names among `files` (one partition) that a compacted file in the list replaces."""
    keys: set[bytes] = set()
    for path in files:
        metadata = pq.read_metadata(path).metadata or {}
        if META_REPLACES in metadata:
            raw = base64.b64decode(metadata[META_REPLACES])
            keys.update(raw[i : i + 8] for i in range(0, len(raw), 8))
    return {path.name for path in files if name_key(path.name) in keys}


def partitions(directory: Path) -> Iterator[Path]:
    """The `group=*/date=*` partition directories of a history root, sorted."""
    yield from sorted(p for p in directory.glob("group=*/date=*") if p.is_dir())


def read_history(directory: Path) -> pa.Table:
    """Every sample of a history directory (only `part-*.parquet`, never temporaries).

    Args:
        directory: the history root (as given to HistoryWriter or simulate).

    Returns:
        One table with `history_schema()`, ordered by partition and file name.
    """
    tables = [history_schema().empty_table()]
    for partition in partitions(Path(directory)):
        files = sorted(partition.glob("part-*.parquet"))
        replaced = replaced_by_compaction(files)
        tables.extend(conform(pq.read_table(f)) for f in files if f.name not in replaced)
    return pa.concat_tables(tables).replace_schema_metadata(None)
