"""Lag percentiles of the member tables equal DuckDB's exact `quantile_cont` and `max`.

The history is made by hand: two members over two days, lag figures with
NULL gaps (single samples and a whole minute), a member whose first hour
sits in a file written before the lag columns existed (old schema, no lag
columns at all), and a duplicated file.  The rollup runs as production runs
it (`run_rollup`); the expected values come from DuckDB over the same Parquet
files, read independently (`union_by_name` fills the old file's columns
with NULL; duplicates are removed with DISTINCT).
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.core.records import LAG_HISTORY_COLUMNS
from spark_rollups.report import report
from spark_rollups.rollup import run_rollup
from tests.fixtures.rollup_oracle import LAGS, lag_sql
from tests.spark_rollups.history_rows import SCHEMA, row

pytestmark = pytest.mark.slow

DAY1 = dt.datetime(2026, 11, 17, tzinfo=dt.UTC)  # Tuesday of ISO week 2026-W47
DAY2 = DAY1 + dt.timedelta(days=1)
BUCKET_US = {
    "member_minute": 60_000_000,
    "member_hour": 3_600_000_000,
    "member_day": 86_400_000_000,
}


def _figures(i: int, scale: float) -> dict[str, float | None]:
    """Hand-made figures of sample i: irregular, some negative, some NULL."""
    return {
        "replication_lag_seconds": None if i % 7 == 3 else ((i * 37) % 101) / 10 - 1.5,
        "queue_lag_seconds": None if i % 5 == 0 else ((i * 13) % 17) / 4,
        "apply_lag_seconds": scale * (((i * 29) % 83) / 8 + 0.25),
        "apply_time_seconds": None if i % 11 == 0 else ((i * 7) % 23) / 100,
    }


def _rows(member: str, start: dt.datetime, seconds: int, scale: float = 1.0) -> list[Any]:
    rows = []
    for i in range(seconds):
        at = start + dt.timedelta(seconds=i)
        figures = _figures(i, scale)
        if at.minute == 1 and at.hour == 10:  # a whole minute without replication lag
            figures["replication_lag_seconds"] = None
        rows.append(row(member, at, checked=i, **figures))
    return rows


def _write(root: Path, rows: list[dict[str, Any]], name: str, *, old: bool = False) -> None:
    day = rows[0]["sampled_at"].date().isoformat()
    directory = root / "group=g1" / f"date={day}"
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    if old:  # the schema before issue 10: no lag columns at all
        table = table.drop_columns(list(LAG_HISTORY_COLUMNS))
    pq.write_table(table, directory / name)


@pytest.fixture(scope="module")
def lag_rollup(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lag")
    history, out = root / "history", root / "rollups"
    a1 = _rows("a", DAY1 + dt.timedelta(hours=10), 180) + _rows(
        "a", DAY1 + dt.timedelta(hours=11), 30
    )
    _write(history, a1, "part-a1.parquet")
    _write(history, a1[:10], "part-a1-dup.parquet")  # written twice (a crash replay)
    _write(history, _rows("a", DAY2 + dt.timedelta(hours=10), 60), "part-a2.parquet")
    _write(history, _rows("b", DAY1 + dt.timedelta(hours=10), 120), "part-b-old.parquet", old=True)
    # member b falls far behind from 11:00: the worst apply lag of the week
    _write(history, _rows("b", DAY1 + dt.timedelta(hours=11), 120, 40.0), "part-b-new.parquet")
    run_rollup(spark, str(history), str(out), since="2026-11-17")
    return history, out


def _expected(history: Path, table: str) -> dict[tuple[str, int], dict[str, Any]]:
    sql = lag_sql(history, BUCKET_US[table])
    result = duckdb.sql(sql).to_arrow_table().to_pylist()
    return {(r.pop("member_id"), r.pop("bucket")): r for r in result}


def _actual(out: Path, table: str) -> dict[tuple[str, int], dict[str, Any]]:
    columns = ", ".join(f"{lag}_{s}" for lag in LAGS for s in ("p50", "p95", "p99", "max"))
    sql = f"""
        SELECT member_id, epoch_us(bucket_start) AS bucket, {columns}
        FROM read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)
    """
    result = duckdb.sql(sql).to_arrow_table().to_pylist()
    return {(r.pop("member_id"), r.pop("bucket")): r for r in result}


@pytest.mark.parametrize("table", ["member_minute", "member_hour", "member_day"])
def test_lag_percentiles_equal_duckdb_quantile_cont(
    lag_rollup: tuple[Path, Path], table: str
) -> None:
    history, out = lag_rollup
    expected, actual = _expected(history, table), _actual(out, table)
    assert set(actual) == set(expected)
    for key, want in expected.items():
        for column, value in want.items():
            got = actual[key][column]
            if value is None:
                assert got is None, (key, column)
            else:
                assert got == pytest.approx(value, rel=1e-12, abs=1e-12), (key, column)


def test_buckets_without_lag_values_have_null_percentiles(lag_rollup: tuple[Path, Path]) -> None:
    _, out = lag_rollup
    actual = _actual(out, "member_hour")
    old_hour = actual[("b", int((DAY1 + dt.timedelta(hours=10)).timestamp()) * 1_000_000)]
    assert set(old_hour.values()) == {None}  # the old file's hour: no lag columns at all
    minute = int((DAY1 + dt.timedelta(hours=10, minutes=1)).timestamp()) * 1_000_000
    gap = _actual(out, "member_minute")[("a", minute)]
    assert gap["replication_lag_seconds_p95"] is None
    assert gap["replication_lag_seconds_max"] is None
    assert gap["apply_lag_seconds_p95"] is not None


def test_report_has_a_lag_section_with_the_worst_period_first(
    spark: Any, lag_rollup: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = lag_rollup
    written = report(spark, str(out), "2026-W47", tmp_path)
    directory = tmp_path / "g1"
    assert directory / "lag_worst_periods.csv" in written["g1"]
    # member b from 11:00: apply lag 40 * (((i * 29) % 83) / 8 + 0.25), i = 0..119
    values = [40.0 * (((i * 29) % 83) / 8 + 0.25) for i in range(120)]
    p95, peak = float(np.percentile(values, 95)), max(values)
    with (directory / "lag_worst_periods.csv").open(encoding="utf-8") as handle:
        worst = list(csv.DictReader(handle))
    assert len(worst) == 10
    first = worst[0]
    assert (first["member"], first["hour (UTC)"], first["stage"]) == (
        "host-b:3306",  # the history's host and port
        "2026-11-17 11:00",
        "apply",
    )
    assert float(first["p95 (s)"]) == pytest.approx(p95)
    assert float(first["max (s)"]) == pytest.approx(peak)
    with (directory / "lag_heatmap.csv").open(encoding="utf-8") as handle:
        heat = {(r["member"], r["date"]): r for r in csv.DictReader(handle)}
    assert float(heat[("host-b:3306", "2026-11-17")]["11"]) == pytest.approx(p95)
    assert heat[("host-b:3306", "2026-11-17")]["10"] == ""  # the old file's hour: no figure
    assert heat[("host-a:3306", "2026-11-20")]["10"] == ""  # a day without samples
    markdown = (directory / "report.md").read_text(encoding="utf-8")
    assert "## Replication lag" in markdown
    assert "![p95 apply lag (s), host-b:3306 (max " in markdown
    html = (directory / "report.html").read_text(encoding="utf-8")
    assert 'id="lag_heatmap_1"' in html and 'id="lag_heatmap_2"' in html  # a, b
    assert (directory / "lag_heatmap_2.png").read_bytes().startswith(b"\x89PNG")
