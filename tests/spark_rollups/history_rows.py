"""Test helper: history rows written as the daemon's Parquet, read back by Spark.

Rows go through real Parquet (uint64 incarnation, timestamp[us, tz=UTC]) so
the tests read what the rollup reads in production.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F

from grstats.history.parquet import history_schema
from spark_rollups import transforms

SCHEMA = history_schema()  # the daemon's own, so the tests read what production writes
T0 = dt.datetime(2026, 11, 17, 10, 0, tzinfo=dt.UTC)  # a Tuesday, 10:00 UTC


def row(
    member: str,
    at: dt.datetime | float,
    *,
    checked: int = 0,
    conflicts: int = 0,
    applied: int = 0,
    proposed: int = 0,
    rollback: int = 0,
    queue: int = 0,
    applier_queue: int = 0,
    validating: int = 0,
    incarnation: int = 1,
    seq: int | None = None,
    group: str = "g1",
    **lags: float | None,
) -> dict[str, Any]:
    """One history row; `at` is a datetime or seconds after T0; lag figures by name."""
    when = at if isinstance(at, dt.datetime) else T0 + dt.timedelta(seconds=at)
    micros = int(when.timestamp() * 1_000_000)
    return {
        "group_name": group,
        "member_id": member,
        "member_host": f"host-{member}",
        "member_port": 3306,
        "member_state": "ONLINE",
        "member_role": "SECONDARY",
        "member_version": "8.4.3",
        "view_id": "1:1",
        "incarnation": incarnation,
        "seq": micros // 1_000_000 if seq is None else seq,
        "sampled_at": when,
        "count_transactions_in_queue": queue,
        "count_transactions_checked": checked,
        "count_conflicts_detected": conflicts,
        "count_transactions_rows_validating": validating,
        "count_transactions_remote_in_applier_queue": applier_queue,
        "count_transactions_remote_applied": applied,
        "count_transactions_local_proposed": proposed,
        "count_transactions_local_rollback": rollback,
        "transactions_committed_all_members": None,
        "last_conflict_free_transaction": None,
        "flow_control_mode": 1,
        **lags,
    }


def write_history(root: Path, rows: Iterable[dict[str, Any]], name: str = "part-0.parquet") -> None:
    """Write rows as `root/group=<g>/date=<d>/<name>`, partitioned like history.py."""
    parts: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        key = (r["group_name"], r["sampled_at"].astimezone(dt.UTC).date().isoformat())
        parts.setdefault(key, []).append(r)
    for (group, date), items in parts.items():
        directory = root / f"group={group}" / f"date={date}"
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(items, schema=SCHEMA), directory / name)


def read_samples(spark: Any, root: Path) -> Any:
    """The history under root as Spark reads it (select_samples applied)."""
    return transforms.select_samples(
        spark.read.schema(transforms.HISTORY_SCHEMA).parquet(str(root))
    )


def rows_of(frame: Any) -> list[dict[str, Any]]:
    """Collected rows as dicts ordered by their keys (tiny results only)."""
    keys = [c for c in ("group_name", "member_id", "bucket_start") if c in frame.columns]
    if "bucket_start" in frame.columns:  # UTC text: collect() would use the local time zone
        text = F.date_format("bucket_start", "yyyy-MM-dd'T'HH:mm:ss")
        frame = frame.withColumn("bucket_start", text)
    return [r.asDict() for r in frame.orderBy(*keys).collect()]
