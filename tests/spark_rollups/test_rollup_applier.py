"""Applier rollups (applier_member_hour, applier_member_day) equal an independent DuckDB query.

The history is made by hand: member a over two days (irregular increments,
single samples and a whole stretch without the applier section, the relay
log figure alone missing for a while, a metrics reset, a duplicated file),
member b whose first hour sits in a file written before the applier columns
existed, member c with a day missing between its samples (its next day's
first sample is only a baseline).  The rollup runs as production runs it
(`run_rollup`, once over every date and once incrementally from day 2); the
expected values come from DuckDB over the same Parquet files, written from
the definitions (DESIGN.md section 7 steps, `rollup_oracle.counter_steps_sql`): each
sample's predecessor is the member's latest earlier sample with applier figures,
found with an ASOF join, not with a window; a counter NULL in either of the two
has no step there.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.core.records import APPLIER_HISTORY_COLUMNS
from spark_rollups.rollup import run_rollup
from tests.fixtures.rollup_oracle import INCREASES, SHARES, applier_sql, share_columns
from tests.spark_rollups.history_rows import SCHEMA, row
from tests.spark_rollups.oracles import assert_rows_equal, rollup_rows

pytestmark = pytest.mark.slow

DAY1 = dt.datetime(2026, 11, 17, tzinfo=dt.UTC)  # Tuesday of ISO week 2026-W47
DAY2 = DAY1 + dt.timedelta(days=1)
DAY3 = DAY1 + dt.timedelta(days=2)
NS = 1_000_000_000
BUCKET_US = {"applier_member_hour": 3_600_000_000, "applier_member_day": 86_400_000_000}


def _counters(i: int, slow: bool) -> dict[str, int]:
    """Counters after sample i (every 5 s): irregular increments, by hand."""
    committed = sum((k * 7) % 13 for k in range(i + 1))
    active = 5 * NS * (i + 1) - (i % 3) * 1_000_000
    commit_order = (active * (6 if slow else 1)) // 10 - (i % 5) * 1_000
    work = (active * (1 if slow else 8)) // 10 + (i % 7) * 1_000
    return {
        "total_active_time_duration": active,
        "transactions_committed_count": committed,
        "transactions_committed_size_bytes_sum": committed * 1_200 + i,
        "events_committed_count": committed * 5,
        "waits_for_work_from_source_count": i * 3,
        "waits_for_work_from_source_sum_time": work,
        "waits_for_available_worker_count": i // 4,
        "waits_for_available_worker_sum_time": (i // 4) * 2_000_000,
        "waits_commit_schedule_dependency_count": (i * 5) // 3,
        "waits_commit_schedule_dependency_sum_time": active // 20 + (i % 11),
        "waits_for_worker_queues_memory_count": 0,
        "waits_for_worker_queues_memory_sum_time": 0,
        "waits_worker_queues_full_count": i // 50,
        "waits_worker_queues_full_sum_time": (i // 50) * 7_000,
        "waits_due_to_commit_order_count": i * (4 if slow else 1),
        "waits_due_to_commit_order_sum_time": commit_order,
        "read_from_relay_log_sum_time": active // 100,
    }


def _rows(
    member: str, start: dt.datetime, n: int, *, slow: bool = False, first: int = 0
) -> list[dict[str, Any]]:
    rows = []
    for k in range(n):
        i = first + k
        at = start + dt.timedelta(seconds=5 * k)
        figures: dict[str, int | None] = dict(_counters(i, slow))
        if i % 17 == 5 or 300 <= i < 330:  # no applier section: single samples, 150 s
            figures = dict.fromkeys(figures)
        elif 400 <= i < 460:  # relay log reading unknown for five minutes
            figures["read_from_relay_log_sum_time"] = None
        rows.append(row(member, at, checked=i, **figures))  # type: ignore[arg-type]
    return rows


def _write(root: Path, rows: list[dict[str, Any]], name: str, *, old: bool = False) -> None:
    day = rows[0]["sampled_at"].date().isoformat()
    directory = root / "group=g1" / f"date={day}"
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    if old:  # the schema before issue 11: no applier columns at all
        table = table.drop_columns(list(APPLIER_HISTORY_COLUMNS))
    pq.write_table(table, directory / name)


def _reset(rows: list[dict[str, Any]], at: int) -> None:
    """The metrics restart (server restart) at sample `at`: counters from 0 again."""
    base = {c: rows[at - 1][c] for c in INCREASES}
    for r in rows[at:]:
        for c in INCREASES:
            if r[c] is not None and base[c] is not None:
                r[c] = r[c] - base[c] if c != "total_active_time_duration" else r[c] // 50


@pytest.fixture(scope="module")
def applier_rollup(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("applier")
    history, out, incremental = root / "history", root / "rollups", root / "incremental"
    a1 = _rows("a", DAY1 + dt.timedelta(hours=10), 1_100)  # 10:00 .. 11:31:35
    _reset(a1, 700)
    _write(history, a1, "part-a1.parquet")
    _write(history, a1[100:120], "part-a1-dup.parquet")  # written twice (a crash replay)
    _write(history, _rows("a", DAY2, 200, first=1_100), "part-a2.parquet")
    b = _rows("b", DAY1 + dt.timedelta(hours=10), 1_440, slow=True)  # 10:00 .. 11:59:55
    _write(history, b[:720], "part-b-old.parquet", old=True)
    _write(history, b[720:], "part-b-new.parquet")
    _write(history, _rows("c", DAY1 + dt.timedelta(hours=23), 100), "part-c1.parquet")
    _write(history, _rows("c", DAY3, 100, first=100), "part-c3.parquet")
    run_rollup(spark, str(history), str(out), since="2026-11-17")
    run_rollup(spark, str(history), str(incremental), since="2026-11-18")
    return history, out, incremental


def expected_applier(history: Path, table: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The applier table from DuckDB: (member, bucket start in µs) -> columns."""
    rows = applier_sql(history, BUCKET_US[table])
    sql = f"SELECT * EXCLUDE (group_name), {share_columns()} FROM ({rows})"
    result = duckdb.sql(sql).to_arrow_table().to_pylist()
    return {(r.pop("member_id"), r.pop("bucket")): r for r in result}


def _actual(out: Path, table: str) -> dict[tuple[str, int], dict[str, Any]]:
    return rollup_rows(out, table, [*INCREASES.values(), *SHARES, "samples", "resets"])


@pytest.mark.parametrize("table", ["applier_member_hour", "applier_member_day"])
def test_applier_rollups_equal_duckdb(applier_rollup: tuple[Path, Path, Path], table: str) -> None:
    history, out, _ = applier_rollup
    assert_rows_equal(_actual(out, table), expected_applier(history, table))


def test_an_incremental_run_takes_the_first_steps_from_the_day_before(
    applier_rollup: tuple[Path, Path, Path],
) -> None:
    history, _, incremental = applier_rollup
    for table in BUCKET_US:
        day2 = int(DAY2.timestamp()) * 1_000_000
        expected = {k: v for k, v in expected_applier(history, table).items() if k[1] >= day2}
        assert_rows_equal(_actual(incremental, table), expected)


def test_the_data_has_the_cases_the_rules_are_about(
    applier_rollup: tuple[Path, Path, Path],
) -> None:
    _, out, _ = applier_rollup
    hours = _actual(out, "applier_member_hour")
    h10 = int((DAY1 + dt.timedelta(hours=10)).timestamp()) * 1_000_000
    h11 = h10 + 3_600_000_000
    assert ("b", h10) not in hours  # the old file's hour: no applier columns, no row
    assert hours[("b", h11)]["samples"] == sum(i % 17 != 5 for i in range(720, 1_440))
    assert hours[("a", h10)]["resets"] == 1  # the metrics reset at sample 700 (10:58:20)
    without = [i for i in range(720) if i % 17 == 5 or 300 <= i < 330]
    assert len(without) == 41 + 30  # 43 single gaps, 2 of them inside the 30 in a row
    assert hours[("a", h10)]["samples"] == 720 - len(without)
    days = _actual(out, "applier_member_day")
    # c has no sample on day 2, so day 3's first sample (i = 100) is a baseline; no
    # reset, so the day's active time is active(199) - active(100) = 5 s x 99
    assert days[("c", int(DAY3.timestamp()) * 1_000_000)]["active_ns"] == 99 * 5 * NS
    assert days[("b", int(DAY1.timestamp()) * 1_000_000)]["commit_order_share"] > 0.5
