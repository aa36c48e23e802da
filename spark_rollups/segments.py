"""Which history segments the rollup can read: the others are skipped and named.

Strategy: before Spark reads a partition, each `part-*.parquet` of it is
checked the cheap way a Parquet reader starts: a zero-length file, a file
without the `PAR1` magic at both ends, or a footer length that does not fit
the file is skipped (Spark would fail the whole run on it with a Py4J
traceback, or -- a zero-length file -- leave it out without a word).  A
partition with a skipped file is read as its list of good files; the others
as directories.  What was skipped is printed, written beside the rollups
(`_skipped_files.json`, read by the report's "Data quality" section), and
with `--strict` fails the run.  Local paths are checked with plain reads;
any other scheme through Hadoop's FileSystem.

Invariants:
- The check reads 12 bytes per file (4 at the head, 8 at the tail).
- `_skipped_files.json` lists the skipped files of every partition the last
  runs processed: a run replaces the entries of the partitions it processed
  and keeps the others.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import asdict, dataclass
from typing import Any

from pyspark.sql import SparkSession

from spark_rollups.storage import hadoop_fs, local_path, read_text, write_text_atomic

__all__ = [
    "SKIPPED_NAME",
    "Screened",
    "Skipped",
    "record_skipped",
    "screen_segments",
]

SKIPPED_NAME = "_skipped_files.json"
_MAGIC = b"PAR1"


@dataclass(frozen=True, slots=True)
class Skipped:
    """One history file the rollup could not read."""

    group: str  # the partition's group directory value (escaped)
    date: str
    path: str
    bytes: int
    reason: str


@dataclass(frozen=True, slots=True)
class Screened:
    """The paths Spark reads, and what was skipped."""

    paths: list[str]  # partition directories, or the good files of a partition with bad ones
    skipped: list[Skipped]


def _reason(size: int, head: bytes, tail: bytes) -> str | None:
    if size == 0:
        return "zero-length"
    if size < 12 or head != _MAGIC or tail[4:] != _MAGIC:
        return "truncated (no Parquet magic at both ends)"
    (footer,) = struct.unpack("<I", tail[:4])
    if footer + 12 > size:
        return "truncated (footer longer than the file)"
    return None


def _local_files(directory: str) -> list[tuple[str, str | None, int]]:
    found = []
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    for name in names:
        if not (name.startswith("part-") and name.endswith(".parquet")):
            continue
        path = os.path.join(directory, name)
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(4)
            handle.seek(max(0, size - 8))
            tail = handle.read(8)
        found.append((path, _reason(size, head, tail), size))
    return found


def _hadoop_files(spark: SparkSession, directory: str) -> list[tuple[str, str | None, int]]:
    fs, path = hadoop_fs(spark, directory)
    if not fs.exists(path):
        return []
    io = spark.sparkContext._jvm.org.apache.commons.io.IOUtils  # type: ignore[union-attr]
    found = []
    for status in fs.listStatus(path):
        name = status.getPath().getName()
        if not (status.isFile() and name.startswith("part-") and name.endswith(".parquet")):
            continue
        size = int(status.getLen())
        head = tail = b""
        if size:
            stream = fs.open(status.getPath())
            try:
                head = bytes(io.toByteArray(stream, min(4, size)))
                stream.seek(max(0, size - 8))
                tail = bytes(io.toByteArray(stream, min(8, size)))
            finally:
                stream.close()
        found.append((str(status.getPath()), _reason(size, head, tail), size))
    return sorted(found)


def screen_segments(spark: SparkSession, root: str, parts: dict[str, list[str]]) -> Screened:
    """Check the segments of the partitions a run reads.

    Args:
        spark: the session (for non-local paths).
        root: the history root.
        parts: escaped group value -> dates.

    Returns:
        The paths to hand to Spark and the files skipped.
    """
    paths: list[str] = []
    skipped: list[Skipped] = []
    local = local_path(root)
    for group, dates in parts.items():
        for date in dates:
            directory = f"{root}/group={group}/date={date}"
            if local is not None:
                files = _local_files(f"{local}/group={group}/date={date}")
            else:
                files = _hadoop_files(spark, directory)
            bad = [Skipped(group, date, p, n, r) for p, r, n in files if r is not None]
            if not bad:
                paths.append(directory)
                continue
            skipped += bad
            paths += [p for p, r, _ in files if r is None]
    return Screened(paths, skipped)


def record_skipped(
    spark: SparkSession, out: str, processed: dict[str, list[str]], skipped: list[Skipped]
) -> list[dict[str, Any]]:
    """Replace the processed partitions' entries of `<out>/_skipped_files.json`.

    Args:
        spark: the session.
        out: the rollup root.
        processed: escaped group value -> dates this run read.
        skipped: what this run skipped.

    Returns:
        The entries now in the file.
    """
    path = f"{out.rstrip('/')}/{SKIPPED_NAME}"
    done = {(g, d) for g, dates in processed.items() for d in dates}
    try:
        previous = json.loads(read_text(spark, path) or "[]")
    except ValueError:
        previous = []
    kept = [
        e for e in previous if isinstance(e, dict) and (e.get("group"), e.get("date")) not in done
    ]
    entries = sorted(kept + [asdict(s) for s in skipped], key=lambda e: str(e.get("path")))
    if entries or previous:
        write_text_atomic(spark, path, json.dumps(entries, indent=1) + "\n")
    return entries
