"""The report's line about the history files the rollup skipped (segments.py).

Strategy: the rollup writes `_skipped_files.json` beside the tables; the
report shows the entries of the week's dates of a group as one small table
in its "Data quality" section, so missing rows are never silent.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import unquote

from pyspark.sql import SparkSession

from spark_rollups.render import Table
from spark_rollups.segments import SKIPPED_NAME
from spark_rollups.storage import read_text

__all__ = ["skipped_in_week", "skipped_table"]


def skipped_in_week(
    spark: SparkSession, rollups: str, group: str, start: dt.date, end: dt.date
) -> list[dict[str, Any]]:
    """The files the rollup skipped for one group's dates in [start, end).

    Args:
        spark: the session.
        rollups: the rollup root.
        group: the group name (unescaped).
        start: first date.
        end: the day after the last date.

    Returns:
        `_skipped_files.json` entries (path, bytes, reason, ...), by path.
    """
    try:
        entries = json.loads(read_text(spark, f"{rollups.rstrip('/')}/{SKIPPED_NAME}") or "[]")
    except ValueError:
        return []
    return [
        e
        for e in entries
        if isinstance(e, dict)
        and unquote(str(e.get("group"))) == group
        and start.isoformat() <= str(e.get("date")) < end.isoformat()
    ]


def skipped_table(entries: list[dict[str, Any]]) -> list[Table]:
    """The report's "Data quality" line for skipped history files (none: no table)."""
    if not entries:
        return []
    rows = [[e.get("date"), e.get("path"), e.get("bytes"), e.get("reason")] for e in entries]
    return [
        Table(
            "skipped_files",
            "History files the rollup could not read (their rows are missing above)",
            ["date", "file", "bytes", "reason"],
            rows,
            note="kept in place; `rollup --strict` fails on them instead of skipping.",
        )
    ]
