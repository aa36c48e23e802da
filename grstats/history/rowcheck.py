"""What the history's daemon side needs of the Parquet layout, without pyarrow.

Strategy: the member daemon writes only its write-ahead log; the Parquet work
(segments, de-duplication marks, housekeeping) runs in a short-lived child
process (`grstats.history.offload`). What the daemon itself must know of the
layout -- which values a column can store, where a partition lives, how a
path is made durable, which temporaries are a writer's leftovers -- is here,
in the standard library only, and `grstats.history.parquet` re-exports it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
from operator import attrgetter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import structlog

from grstats.core.records import HISTORY_COLUMNS, HISTORY_IDENTITY, HISTORY_KEEPS, HistoryRow

__all__ = [
    "fsync_path",
    "invalid_column",
    "partition_dir",
    "remove_temporaries",
    "row_values",
    "storable_row",
    "unstorable_columns",
]

log = structlog.get_logger("grstats.history")

# inclusive value ranges of the integer kinds; a value outside cannot be stored
_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
    # 1970-01-01 .. 9999-12-31 23:59:59.999999: the partition date must exist
    "timestamp[us, tz=UTC]": (0, 253_402_300_799_999_999),
}
_NAMES = tuple(name for name, _ in HISTORY_COLUMNS)
row_values = attrgetter(*_NAMES)


def _fits(name: str, kind: str, value: object) -> bool:
    """Whether a non-NULL value can be stored in its column as it is."""
    if kind == "string":
        if not isinstance(value, str):
            return False
        if value.isascii():
            return True
        try:
            value.encode("utf-8")  # a lone surrogate (undecodable bytes) cannot be stored
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, bool):
        return False
    if kind == "double":
        if isinstance(value, int):  # Arrow converts only an int a double holds exactly
            return -(2**53) <= value <= 2**53
        if not isinstance(value, float):
            return False
        return math.isfinite(value) or value in HISTORY_KEEPS.get(name, ())
    if not isinstance(value, int):
        return False
    low, high = _INT_RANGES[kind]
    return low <= value <= high


def unstorable_columns(row: HistoryRow) -> tuple[str, ...]:
    """The columns whose value the history schema cannot store, in file order.

    Args:
        row: a sample.

    Returns:
        Their names; empty when every value fits its column (NULLs do).
    """
    return tuple(
        name
        for (name, kind), value in zip(HISTORY_COLUMNS, row_values(row), strict=True)
        if value is not None and not _fits(name, kind, value)
    )


def invalid_column(row: HistoryRow) -> str | None:
    """The first column whose value the history schema cannot store (None: all fit)."""
    bad = unstorable_columns(row)
    return bad[0] if bad else None


def storable_row(row: HistoryRow) -> tuple[HistoryRow | None, tuple[str, ...]]:
    """The row with every value the schema cannot store replaced by NULL.

    A value is unstorable when it is out of its column's range, of the wrong
    type, text that is not UTF-8, or a non-finite double the column does not
    declare meaningful (`HISTORY_KEEPS`: the catch-up ETA keeps +inf).

    Args:
        row: a sample.

    Returns:
        (the row to store, the columns set to NULL); the row is None when a
        column identifying the sample (`HISTORY_IDENTITY`) cannot be stored.
    """
    bad = unstorable_columns(row)
    if not bad:
        return row, ()
    if HISTORY_IDENTITY.intersection(bad):
        return None, bad
    nulls: dict[str, Any] = dict.fromkeys(bad)
    return dataclasses.replace(row, **nulls), bad


def fsync_path(path: Path) -> None:
    """fsync a file or directory by path (directories: their entries become durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _partition_name(group: str) -> str:
    # Hive-style value escaping (Spark and pyarrow unescape %XX); "" is Hive's null.
    return quote(group, safe="") if group else "__HIVE_DEFAULT_PARTITION__"


def partition_dir(directory: Path, group: str, day: dt.date) -> Path:
    """The directory of one (group, UTC date) partition."""
    return directory / f"group={_partition_name(group)}" / f"date={day.isoformat()}"


def remove_temporaries(directory: Path, writer: str = "") -> None:
    """Delete this writer's leftover temporaries (a crash during `write_file`).

    Args:
        directory: the history root.
        writer: the writer id; temporaries without one (older versions) go too.
    """
    leftovers = list(directory.glob("**/.part-*.parquet.tmp"))
    if writer:
        leftovers += directory.glob(f"**/.part-*.{writer}.tmp")
    for tmp in leftovers:
        tmp.unlink(missing_ok=True)
        log.info("history.temporary_removed", path=str(tmp.relative_to(directory)))
