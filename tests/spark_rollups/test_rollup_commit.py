"""Commit-path rollups (commit_member_hour, commit_member_day) equal an independent DuckDB query.

The history is made by hand, a row every 5 s with the commit path's counters on
every other one (as a daemon keeps them: once per 10 s): member a over two days
(irregular increments, certification GC its largest cost, a stretch without the
section, a Group Replication restart that resets the counters, a duplicated
file), member b with a slow link (consensus its largest cost) whose first hour
sits in a file written before the columns existed, member c with a day missing
between its samples, member d whose counters never move (no time spent). The
rollup runs as production runs it (`run_rollup`, once over every date and once
incrementally from day 2). The increases come from DuckDB over the same Parquet
files (`oracles.counter_steps`); the means, shares and the dominant operation
are then worked out here in Python from the issue's definitions.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.core.records import COMMIT_PATH_HISTORY_COLUMNS
from spark_rollups.rollup import run_rollup
from tests.spark_rollups.history_rows import SCHEMA, row
from tests.spark_rollups.oracles import assert_rows_equal, counter_steps, rollup_rows

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # a JVM on a shared box

DAY1 = dt.datetime(2026, 11, 17, tzinfo=dt.UTC)  # Tuesday of ISO week 2026-W47
DAY2 = DAY1 + dt.timedelta(days=1)
DAY3 = DAY1 + dt.timedelta(days=2)
OPS = (
    "consensus",
    "round_trip",
    "certification_gc",
    "before_begin",
    "after_termination",
    "after_sync",
    "flow_control",
)
SHARED = [op for op in OPS if op != "round_trip"]  # the round trip contains the round
INCREASES = {f"cp_{op}_{unit}": f"{op}_{unit}" for op in OPS for unit in ("count", "us")}
BUCKET_US = {"commit_member_hour": 3_600_000_000, "commit_member_day": 86_400_000_000}


def _counters(i: int, kind: str) -> dict[str, int]:
    """The cumulative counters at kept sample i, by hand."""
    if kind == "idle":
        return dict.fromkeys(INCREASES, 7)
    rounds = 3 * i + i % 4
    round_us = 51_000 if kind == "slow" else 2_000
    consensus_us = round_us * 3 * i + (i % 5) * 100
    gc = i // 6
    throttled = i // 3 if kind == "slow" else i // 30
    return {
        "cp_consensus_count": rounds,
        "cp_consensus_us": consensus_us,
        "cp_round_trip_count": rounds + i // 2,
        "cp_round_trip_us": consensus_us + 100 * i,
        "cp_certification_gc_count": gc,
        "cp_certification_gc_us": gc * (200_000 if kind == "gc" else 20_000),
        "cp_before_begin_count": i // 10,
        "cp_before_begin_us": (i // 10) * 300,
        "cp_after_termination_count": 0,
        "cp_after_termination_us": 0,
        "cp_after_sync_count": i // 20,
        "cp_after_sync_us": (i // 20) * 1_000,
        "cp_flow_control_count": throttled,
        "cp_flow_control_us": throttled * 7_000,
    }


def _rows(
    member: str, start: dt.datetime, n: int, *, kind: str = "gc", first: int = 0
) -> list[dict[str, Any]]:
    """n kept samples 10 s apart from `start`, each followed 5 s later by a row without."""
    rows = []
    for k in range(n):
        i = first + k
        at = start + dt.timedelta(seconds=10 * k)
        figures: dict[str, int | None] = dict(_counters(i, kind))
        if 300 <= i < 320:  # no commit_path section for 200 s
            figures = dict.fromkeys(figures)
        rows.append(row(member, at, checked=i, seq=2 * i, **figures))  # type: ignore[arg-type]
        rows.append(row(member, at + dt.timedelta(seconds=5), checked=i, seq=2 * i + 1))
    return rows


def _write(root: Path, rows: list[dict[str, Any]], name: str, *, old: bool = False) -> None:
    day = rows[0]["sampled_at"].date().isoformat()
    directory = root / "group=g1" / f"date={day}"
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    if old:  # the schema before issue 27: no commit-path columns at all
        table = table.drop_columns(list(COMMIT_PATH_HISTORY_COLUMNS))
    pq.write_table(table, directory / name)


def _restart(rows: list[dict[str, Any]], at: int) -> None:
    """Group Replication restarts at row `at`: every counter from 0 again."""
    base = {c: rows[at - 2][c] for c in INCREASES}
    for r in rows[at:]:
        for c in INCREASES:
            if r.get(c) is not None:
                r[c] -= base[c]


@pytest.fixture(scope="module")
def commit_rollup(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("commit")
    history, out, incremental = root / "history", root / "rollups", root / "incremental"
    a1 = _rows("a", DAY1 + dt.timedelta(hours=10), 550)  # 10:00 .. 11:31:35
    _restart(a1, 2 * 400)
    _write(history, a1, "part-a1.parquet")
    _write(history, a1[100:140], "part-a1-dup.parquet")  # written twice (a crash replay)
    _write(history, _rows("a", DAY2, 100, first=550), "part-a2.parquet")
    b = _rows("b", DAY1 + dt.timedelta(hours=10), 720, kind="slow")  # 10:00 .. 11:59:55
    _write(history, b[:720], "part-b-old.parquet", old=True)
    _write(history, b[720:], "part-b-new.parquet")
    _write(history, _rows("c", DAY1 + dt.timedelta(hours=23), 50), "part-c1.parquet")
    _write(history, _rows("c", DAY3, 50, first=50), "part-c3.parquet")
    _write(history, _rows("d", DAY1 + dt.timedelta(hours=12), 30, kind="idle"), "part-d.parquet")
    run_rollup(spark, str(history), str(out), since="2026-11-17")
    run_rollup(spark, str(history), str(incremental), since="2026-11-18")
    return history, out, incremental


def expected_commit(history: Path, table: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The commit-path table: DuckDB's increases, then means, shares and the dominant."""
    expected = counter_steps(history, INCREASES, BUCKET_US[table])
    for r in expected.values():
        for op in OPS:
            count, time_us = r[f"{op}_count"], r[f"{op}_us"]
            r[f"{op}_mean_seconds"] = time_us / count / 1e6 if count else None
        spent = {op: r[f"{op}_us"] for op in SHARED if r[f"{op}_us"] is not None}
        whole = sum(spent.values())
        for op in SHARED:
            time_us = r[f"{op}_us"]
            r[f"{op}_share"] = time_us / whole if whole and time_us is not None else None
        if not spent:
            r["dominant"] = None
        else:
            r["dominant"] = max(spent, key=lambda op: spent[op]) if whole else ""
    return expected


def _columns() -> list[str]:
    return [
        *INCREASES.values(),
        *(f"{op}_mean_seconds" for op in OPS),
        *(f"{op}_share" for op in SHARED),
        "dominant",
        "samples",
        "resets",
    ]


@pytest.mark.parametrize("table", ["commit_member_hour", "commit_member_day"])
def test_commit_rollups_equal_duckdb(commit_rollup: tuple[Path, Path, Path], table: str) -> None:
    history, out, _ = commit_rollup
    assert_rows_equal(rollup_rows(out, table, _columns()), expected_commit(history, table))


def test_an_incremental_run_takes_the_first_steps_from_the_day_before(
    commit_rollup: tuple[Path, Path, Path],
) -> None:
    history, _, incremental = commit_rollup
    day2 = int(DAY2.timestamp()) * 1_000_000
    for table in BUCKET_US:
        expected = {k: v for k, v in expected_commit(history, table).items() if k[1] >= day2}
        assert_rows_equal(rollup_rows(incremental, table, _columns()), expected)


def test_the_data_has_the_cases_the_rules_are_about(
    commit_rollup: tuple[Path, Path, Path],
) -> None:
    _, out, _ = commit_rollup
    hours = rollup_rows(out, "commit_member_hour", _columns())
    h10 = int((DAY1 + dt.timedelta(hours=10)).timestamp()) * 1_000_000
    h11, h12 = h10 + 3_600_000_000, h10 + 7_200_000_000
    assert ("b", h10) not in hours  # the old file's hour: no commit-path columns, no row
    assert hours[("b", h11)]["dominant"] == "consensus"  # the slow link
    # b 11:00 .. 11:59:50: kept samples i = 360 .. 719, the first without a step (the
    # hour before has no figures): 359 steps of 3 rounds of 51 ms, + (719 % 5) x 100 µs
    assert hours[("b", h11)]["consensus_us"] == 359 * 3 * 51_000 + 400
    assert hours[("a", h10)]["dominant"] == "certification_gc"  # 200 ms a run
    assert hours[("a", h11)]["resets"] == 1  # the restart at kept sample 400 (11:06:40)
    assert hours[("a", h10)]["samples"] == 360 - 20  # 20 kept samples without the section
    assert hours[("a", h10)]["after_termination_mean_seconds"] is None  # none happened
    assert hours[("a", h10)]["after_termination_share"] == 0.0
    assert hours[("d", h12)]["dominant"] == ""  # no time spent
    assert hours[("d", h12)]["consensus_share"] is None
    days = rollup_rows(out, "commit_member_day", _columns())
    # c has no sample on day 2, so day 3's first sample (i = 50) is a baseline only:
    # 49 steps of 10 s x 3 rounds of 2 ms, plus the wobble from i = 50 to 99
    wobble = (99 % 5 - 50 % 5) * 100
    assert days[("c", int(DAY3.timestamp()) * 1_000_000)]["consensus_us"] == (
        2_000 * 3 * 49 + wobble
    )
