"""A week of GTID divergence history, scripted by hand, and its DuckDB oracle.

ISO week 2026-W47; three members recorded every 10 s (their daemons' verdicts
of grstats_member_gtids, as the history keeps them), grace window 60 s (two
30 s GTID intervals):

- Tue 11-17 10:05:00: an errant write of 3 transactions on member a; flagged
  from 10:06:00 (errant 3, recovery CLONE) until the others receive the same
  GTIDs (empty transactions injected) at 10:40:00; a's rows are partly
  written twice (a second recording daemon);
- c falls 1,200 transactions behind from 10:50:00; at 11:00:00 a and b purge
  their binary logs past what c lacks: c would need clone until it has
  caught up at 11:30:00;
- Thu 11-19 09:05:00: an errant write of 1 transaction on member b, flagged
  until 09:09:50 (its rows end at 09:19:50);
- a file from before the GTID columns and a collector's rows (no verdict)
  count nowhere.

Hand figures (minutes are UTC minutes with a verdict): a at Tue 10:00 has 60
minutes, 34 errant and clone-needed (10:06 .. 10:39), errant max 3, first
errant 10:06:00, last 10:39:50; c at Tue 11:00 has 30 clone-needed minutes,
missing max 1,200; b on Thu has 20 minutes, 5 errant (09:05 .. 09:09).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from grstats.core.records import GTID_HISTORY_COLUMNS
from tests.spark_rollups.history_rows import SCHEMA, row

TUE = dt.datetime(2026, 11, 17, tzinfo=dt.UTC)  # Tuesday of ISO week 2026-W47
THU = TUE + dt.timedelta(days=2)
WEEK = "2026-W47"
STEP = dt.timedelta(seconds=10)


def _at(day: dt.datetime, hh: int, mm: int, ss: int = 0) -> dt.datetime:
    return day + dt.timedelta(hours=hh, minutes=mm, seconds=ss)


def _verdict(errant: int, missing: int, method: str) -> dict[str, Any]:
    return {
        "gtid_errant_count": errant,
        "gtid_missing_count": missing,
        "gtid_recovery_method": method,
    }


def _a(at: dt.datetime) -> dict[str, Any]:
    errant = _at(TUE, 10, 6) <= at < _at(TUE, 10, 40)
    return row("a", at, **_verdict(3 if errant else 0, 0, "CLONE" if errant else "INCREMENTAL"))


def _b(at: dt.datetime) -> dict[str, Any]:
    errant = _at(THU, 9, 5) <= at < _at(THU, 9, 10)
    return row("b", at, **_verdict(int(errant), 0, "CLONE" if errant else "INCREMENTAL"))


def _c(at: dt.datetime) -> dict[str, Any]:
    behind = _at(TUE, 10, 50) <= at < _at(TUE, 11, 30)
    purged = _at(TUE, 11, 0) <= at
    method = "CLONE" if behind and purged else "INCREMENTAL"
    return row("c", at, **_verdict(0, 1_200 if behind else 0, method))


def _times(start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    out, at = [], start
    while at < end:
        out.append(at)
        at += STEP
    return out


def history() -> dict[str, list[dict[str, Any]]]:
    """File name -> rows (every file of group g1)."""
    tuesday = _times(_at(TUE, 10, 0), _at(TUE, 12, 0))
    a = [_a(at) for at in tuesday]
    c = [_c(at) for at in tuesday]
    b = [_b(at) for at in tuesday] + [_b(at) for at in _times(_at(THU, 9, 0), _at(THU, 9, 20))]
    old = [row("a", _at(THU, 12, 0, s)) for s in range(0, 60, 10)]  # before issue 26
    # a collector's rows: no divergence state, so no verdict (NULL)
    collector = [row("c", _at(THU, 13, 0, s)) for s in range(0, 60, 10)]
    return {"a": a, "a-dup": a[30:90], "b": b, "c": c, "old": old, "collector": collector}


def write(root: Path) -> None:
    """The history under `root` (group=g1/date=<d>/part-<file>.parquet)."""
    for name, rows in history().items():
        by_day: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_day.setdefault(r["sampled_at"].date().isoformat(), []).append(r)
        for day, items in by_day.items():
            directory = root / "group=g1" / f"date={day}"
            directory.mkdir(parents=True, exist_ok=True)
            table = pa.Table.from_pylist(items, schema=SCHEMA)
            if name == "old":
                table = table.drop_columns([n for n, _ in GTID_HISTORY_COLUMNS])
            pq.write_table(table, directory / f"part-{name}.parquet")


# The definitions of spark_rollups/gtidrollup.py's docstring, in DuckDB SQL over the
# history files; times as epoch seconds (no session time zone involved).
ORACLE = """
    WITH rows AS (
        SELECT * FROM read_parquet('{history}/*/*/part-*.parquet',
                                   union_by_name = true, hive_partitioning = false)
    ), member_minutes AS (
        SELECT group_name, member_id,
               epoch_us(sampled_at) // 60000000 * 60 AS minute,
               bool_or(coalesce(gtid_errant_count > 0, false)) AS errant,
               bool_or(gtid_recovery_method = 'CLONE') AS clone,
               max(gtid_errant_count) AS errant_max,
               max(gtid_missing_count) AS missing_max,
               min(epoch_us(sampled_at)) FILTER (gtid_errant_count > 0) AS first_errant,
               max(epoch_us(sampled_at)) FILTER (gtid_errant_count > 0) AS last_errant
        FROM rows WHERE gtid_recovery_method IS NOT NULL GROUP BY ALL
    )
    SELECT group_name, member_id, minute // {bucket} * {bucket} AS bucket,
           count(*) AS minutes,
           count(*) FILTER (errant) AS errant_minutes,
           count(*) FILTER (clone) AS clone_minutes,
           max(errant_max) AS errant_max,
           max(missing_max) AS missing_max,
           min(first_errant) AS first_errant,
           max(last_errant) AS last_errant
    FROM member_minutes GROUP BY ALL
"""
