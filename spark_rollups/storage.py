"""Path-agnostic file operations for the rollups: local paths, hdfs://, s3a://, ...

Strategy: Spark reads and writes the tables itself; what the driver does
beside that (listing partitions, fingerprinting history segments, reading
and writing the manifest) goes through Hadoop's FileSystem API on the JVM
gateway, so that every scheme Hadoop knows works the same.  Only the
manifest write has a local special case: a plain path (or file://) is
written with the POSIX temp + fsync + rename dance, which Hadoop's checksummed
local file system does not offer.

Invariants:
- `write_text_atomic` never leaves a partial file under the final name: a
  reader sees the old content, the new content, or (after a crash between
  delete and rename on a store without atomic overwrite) no file at all.
- Partition values are returned as the directory spells them (escaped).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from typing import Any

from pyspark.sql import SparkSession

__all__ = [
    "PartitionFiles",
    "hadoop_fs",
    "is_local_path",
    "list_partitions",
    "local_path",
    "partition_fingerprints",
    "read_text",
    "write_text_atomic",
]

# group dir value (escaped) -> ISO date -> fingerprint of the partition's segments
PartitionFiles = dict[str, dict[str, str]]


def is_local_path(path: str) -> bool:
    """Whether a path is on the local file system.

    Args:
        path: a directory argument (plain path, file://, hdfs://, s3a://, ...).

    Returns:
        True for a plain path or a file: URL.
    """
    return "://" not in path or path.startswith("file:")


def local_path(path: str) -> str | None:
    """The local file system path of `path`, or None when it is not local.

    Args:
        path: as for `is_local_path`.

    Returns:
        `file:///x` and `file:/x` become `/x`; a plain path is returned as is.
    """
    if not is_local_path(path):
        return None
    if path.startswith("file:"):
        rest = path.removeprefix("file:")
        return "/" + rest.lstrip("/") if rest.startswith("/") else rest
    return path


def hadoop_fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """Hadoop's FileSystem for a path, and the path as a Hadoop Path.

    Args:
        spark: the session (its Hadoop configuration resolves the scheme).
        path: any path Hadoop understands.

    Returns:
        (org.apache.hadoop.fs.FileSystem, org.apache.hadoop.fs.Path) proxies.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath


def _partition_dirs(spark: SparkSession, root: str) -> list[tuple[str, str, Any]]:
    fs, path = hadoop_fs(spark, root)
    found: list[tuple[str, str, Any]] = []
    if not fs.exists(path):
        return found
    for group_status in fs.listStatus(path):
        name = group_status.getPath().getName()
        if not (group_status.isDirectory() and name.startswith("group=")):
            continue
        for date_status in fs.listStatus(group_status.getPath()):
            date_name = date_status.getPath().getName()
            if date_status.isDirectory() and date_name.startswith("date="):
                found.append(
                    (name.removeprefix("group="), date_name.removeprefix("date="), date_status)
                )
    return found


def list_partitions(spark: SparkSession, root: str) -> dict[str, set[str]]:
    """The `group=<g>/date=<d>` partition directories under a root.

    Args:
        spark: the session.
        root: the history or table directory.

    Returns:
        Directory group value (still escaped) -> set of ISO dates; empty if
        the root does not exist.
    """
    found: dict[str, set[str]] = {}
    for group, date, _ in _partition_dirs(spark, root):
        found.setdefault(group, set()).add(date)
    return found


def partition_fingerprints(spark: SparkSession, root: str) -> PartitionFiles:
    """Every history partition with a fingerprint of its `part-*.parquet` segments.

    The fingerprint hashes each segment's name, length and modification time:
    a new, replaced, compacted or deleted segment changes it.

    Args:
        spark: the session.
        root: the history directory.

    Returns:
        Directory group value (escaped) -> date -> 16 hex digits.
    """
    found: PartitionFiles = {}
    for group, date, status in _partition_dirs(spark, root):
        fs = status.getPath().getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        segments = []
        for file_status in fs.listStatus(status.getPath()):
            name = file_status.getPath().getName()
            if file_status.isFile() and name.startswith("part-") and name.endswith(".parquet"):
                segments.append(
                    f"{name}\t{file_status.getLen()}\t{file_status.getModificationTime()}"
                )
        digest = hashlib.sha256("\n".join(sorted(segments)).encode()).hexdigest()[:16]
        found.setdefault(group, {})[date] = digest
    return found


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small UTF-8 file's content.

    Args:
        spark: the session.
        path: the file.

    Returns:
        The text; None when the file does not exist or is not UTF-8.
    """
    local = local_path(path)
    try:
        if local is not None:
            with open(local, encoding="utf-8") as handle:
                return handle.read()
        return _read_hadoop(spark, path)
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def _read_hadoop(spark: SparkSession, path: str) -> str | None:
    fs, hpath = hadoop_fs(spark, path)
    if not fs.exists(hpath):
        return None
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    stream = fs.open(hpath)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode("utf-8")


def write_text_atomic(spark: SparkSession, path: str, text: str) -> None:
    """Replace a small file so that no reader ever sees it half written.

    Local: a temporary file in the same directory, fsync, rename over the
    target, fsync of the directory.  Elsewhere (Hadoop): a hidden temporary
    file, then delete + rename (a crash in between leaves no file, never a
    partial one; S3A's rename is a copy that appears whole).

    Args:
        spark: the session.
        path: the file to replace.
        text: its new content.
    """
    data = text.encode("utf-8")
    local = local_path(path)
    if local is not None:
        directory = os.path.dirname(os.path.abspath(local))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, local)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return
    _write_hadoop(spark, path, data)


def _write_hadoop(spark: SparkSession, path: str, data: bytes) -> None:
    fs, target = hadoop_fs(spark, path)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    parent = target.getParent()
    fs.mkdirs(parent)
    tmp = jvm.org.apache.hadoop.fs.Path(parent, f".{target.getName()}.{uuid.uuid4().hex}.tmp")
    stream = fs.create(tmp, True)
    try:
        stream.write(bytearray(data))
        stream.hsync()
    finally:
        stream.close()
    if fs.exists(target):
        fs.delete(target, False)
    if not fs.rename(tmp, target):
        fs.delete(tmp, False)
        raise OSError(f"could not rename {tmp} to {path}")
