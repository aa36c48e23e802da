"""A simulated group rolled up by Spark, checked against an independent computation.

The history is `grstats simulate` output (3 members, 2 days) with day two
made awkward on purpose: a gap, a server restart (counters drop), a daemon
restart (new incarnation, counters go on) and a file of duplicate rows.  The
expected tables are computed here with numpy, separately from transforms.py:
drop duplicates, sort, diff, then contiguous-segment reductions.

The tests of run semantics (a rerun, `since`/`until`, an incremental run, a
replayed segment, a corrupt manifest) roll up a small cut of the same history:
the five minutes around every hour (hh:58 .. hh+1:03), which keeps both days,
the midnight between them and every awkward spot of day two (the duplicates
at 08:00, the gap from 10:00, the new incarnation at 12:00, the reset at
15:00), with its own expected tables from the same independent computation.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from grstats.offline.backfill import member_ids, simulate_history
from spark_rollups.rollup import APPLIER_TABLES, GROUP_TABLES, MEMBER_TABLES, TABLES, run_rollup
from tests.fixtures.rollup_oracle import group_sql, member_sql, steps_sql
from tests.spark_rollups.history_cut import cut_around_the_hour
from tests.spark_rollups.test_rollup_applier import expected_applier

pytestmark = pytest.mark.slow

GROUP = "g-test"
DAY1, DAY2 = dt.date(2026, 11, 16), dt.date(2026, 11, 17)
COUNTERS = {
    "transactions_checked": "count_transactions_checked",
    "conflicts_detected": "count_conflicts_detected",
    "transactions_remote_applied": "count_transactions_remote_applied",
    "transactions_local_proposed": "count_transactions_local_proposed",
    "transactions_local_rollback": "count_transactions_local_rollback",
}
GAUGES = {
    "transactions_in_queue": "count_transactions_in_queue",
    "transactions_remote_in_applier_queue": "count_transactions_remote_in_applier_queue",
    "transactions_rows_validating": "count_transactions_rows_validating",
}
US = 1_000_000


def _at(day: dt.date, hour: int, minute: int = 0) -> int:
    moment = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=dt.UTC)
    return int(moment.timestamp()) * US


def _make_awkward(history: Path, members: list[str]) -> None:
    """Rewrite day two with a gap, a counter reset, a new incarnation and duplicates."""
    partition = history / f"group={GROUP}" / f"date={DAY2.isoformat()}"
    files = sorted(partition.glob("part-*.parquet"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    schema = table.schema
    for f in files:
        f.unlink()
    t = pc.cast(table["sampled_at"], pa.int64()).to_numpy()
    member = np.array(table["member_id"].to_pylist())
    columns = {name: table[name].to_numpy(zero_copy_only=False).copy() for name in schema.names}
    # member 2: nothing from 10:00 to 10:30 (a gap)
    keep = ~((member == members[2]) & (t >= _at(DAY2, 10)) & (t < _at(DAY2, 10, 30)))
    # member 1: server restart at 15:00, the counters start again near zero
    restarted = (member == members[1]) & (t >= _at(DAY2, 15))
    before = (member == members[1]) & (t == _at(DAY2, 15) - US)
    for src in COUNTERS.values():
        columns[src][restarted] -= columns[src][before][0]
    # member 0: daemon restart at 12:00: new incarnation, seq again from 1, counters go on
    daemon = (member == members[0]) & (t >= _at(DAY2, 12))
    columns["incarnation"][daemon] += 1
    columns["seq"][daemon] = np.arange(1, int(daemon.sum()) + 1)
    # back to Arrow with NULL where numpy made NaN (sparse int64 columns: the commit path's)
    arrays = {n: pa.array(columns[n], schema.field(n).type, from_pandas=True) for n in schema.names}
    rewritten = pa.table(arrays, schema=schema).filter(pa.array(keep))
    pq.write_table(rewritten, partition / "part-0000-rewritten.parquet")
    # the same five minutes of member 0 written twice (a crash replay)
    dup_t = pc.cast(rewritten["sampled_at"], pa.int64())
    mask = pc.and_(
        pc.equal(rewritten["member_id"], members[0]),
        pc.and_(pc.greater_equal(dup_t, _at(DAY2, 8)), pc.less(dup_t, _at(DAY2, 8, 5))),
    )
    pq.write_table(rewritten.filter(mask), partition / "part-0001-duplicates.parquet")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history")
    members = member_ids(5, 3)
    simulate_history(root, group=GROUP, members=members, days=2, seed=5, start=DAY1)
    _make_awkward(root, members)
    return root


@pytest.fixture(scope="module")
def small_history(history: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`history` cut to the five minutes around every hour, its files kept apart."""
    return cut_around_the_hour(history, tmp_path_factory.mktemp("small-history"))


# --------------------------------------------------------------- expected


def _member_tables(history: Path) -> dict[str, dict[tuple[str, int], dict[str, Any]]]:
    """Independent member tables keyed by (member, bucket start in seconds)."""
    table = pa.concat_tables(pq.read_table(f) for f in sorted(history.rglob("part-*.parquet")))
    member = np.array(table["member_id"].to_pylist())
    inc = np.array(table["incarnation"].to_pylist(), dtype=object)
    seq = table["seq"].to_numpy()
    t = pc.cast(table["sampled_at"], pa.int64()).to_numpy()
    values = {name: table[src].to_numpy() for name, src in {**COUNTERS, **GAUGES}.items()}
    out: dict[str, dict[tuple[str, int], dict[str, Any]]] = {
        "member_minute": {},
        "member_hour": {},
        "member_day": {},
    }
    for m in sorted(set(member)):
        idx = np.flatnonzero(member == m)
        order = sorted(idx, key=lambda i: (t[i], inc[i], seq[i]))
        unique: list[int] = []
        for i in order:  # drop exact duplicates (same incarnation and seq)
            if unique and inc[unique[-1]] == inc[i] and seq[unique[-1]] == seq[i]:
                continue
            unique.append(i)
        rows = np.array(unique)
        n = len(rows)
        steps = {}
        reset = np.zeros(n, dtype=bool)
        for name in COUNTERS:
            v = values[name][rows]
            diff = np.diff(v, prepend=v[0])
            steps[name] = np.where(diff < 0, v, diff)
            steps[name][0] = 0  # the first sample is only a baseline
            reset |= diff < 0
        incs = inc[rows]
        restart = np.array([False] + [incs[k] != incs[k - 1] for k in range(1, n)])
        for table_name, seconds in (
            ("member_minute", 60),
            ("member_hour", 3600),
            ("member_day", 86400),
        ):
            bucket = t[rows] // (seconds * US) * seconds
            starts = np.flatnonzero(np.diff(bucket, prepend=bucket[0] - 1))
            ends = [*starts[1:], n]
            for a, b in zip(starts, ends, strict=True):
                rec: dict[str, Any] = {name: int(steps[name][a:b].sum()) for name in COUNTERS}
                for name in GAUGES:
                    g = values[name][rows][a:b]
                    rec[f"{name}_min"] = int(g.min())
                    rec[f"{name}_max"] = int(g.max())
                    rec[f"{name}_avg"] = float(g.mean())
                    if name != "transactions_rows_validating":
                        rec[f"{name}_p95"] = float(np.percentile(g, 95))  # linear interpolation
                rec["samples"] = int(b - a)
                rec["coverage"] = (b - a) / seconds
                rec["resets"] = int(reset[a:b].sum())
                rec["restarts"] = int(restart[a:b].sum())
                out[table_name][(m, int(bucket[a]))] = rec
    return out


def _group_tables(
    members: dict[str, dict[tuple[str, int], dict[str, Any]]], seconds: int
) -> dict[int, dict[str, Any]]:
    by_bucket: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for (_, bucket), rec in members.items():
        by_bucket[bucket].append(rec)
    out = {}
    for bucket, recs in by_bucket.items():
        checked = max(r["transactions_checked"] for r in recs)
        conflicts = max(r["conflicts_detected"] for r in recs)
        out[bucket] = {
            "members": len(recs),
            "transactions_checked": checked,
            "conflicts_detected": conflicts,
            "transactions_remote_applied": max(r["transactions_remote_applied"] for r in recs),
            "transactions_local_proposed": sum(r["transactions_local_proposed"] for r in recs),
            "transactions_local_rollback": sum(r["transactions_local_rollback"] for r in recs),
            "conflict_rate": conflicts / checked if checked else None,
            "samples": sum(r["samples"] for r in recs),
            "coverage": sum(r["samples"] for r in recs) / (len(recs) * seconds),
            "resets": sum(r["resets"] for r in recs),
        }
    return out


def _expected_members(history: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    members = _member_tables(history)
    return {
        **members,
        "group_hour": _group_tables(members["member_hour"], 3600),
        "group_day": _group_tables(members["member_day"], 86400),
    }


def _expected_appliers(history: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    return {  # DuckDB's, keyed like the others by bucket start in seconds
        table: {(m, b // US): rec for (m, b), rec in expected_applier(history, table).items()}
        for table in APPLIER_TABLES
    }


@pytest.fixture(scope="module")
def expected_members(history: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    return _expected_members(history)


@pytest.fixture(scope="module")
def expected(
    history: Path, expected_members: dict[str, dict[Any, dict[str, Any]]]
) -> dict[str, dict[Any, dict[str, Any]]]:
    return {**expected_members, **_expected_appliers(history)}


@pytest.fixture(scope="module")
def small_expected(small_history: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    return {**_expected_members(small_history), **_expected_appliers(small_history)}


# --------------------------------------------------------------- actual


def _read(out: Path, table: str) -> dict[Any, dict[str, Any]]:
    """A table as the rollup wrote it (every partition), read by DuckDB, not by Spark.

    Keyed like the expected tables: (member, bucket start in seconds), or the
    bucket start alone for the group tables.
    """
    frame = duckdb.sql(
        f"SELECT * REPLACE (epoch_us(bucket_start) // {US} AS bucket_start) "
        f"FROM read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)"
    )
    result = {}
    for rec in frame.to_arrow_table().to_pylist():
        key = (rec["member_id"], rec["bucket_start"]) if "member_id" in rec else rec["bucket_start"]
        assert key not in result, f"{table}: {key} twice"
        result[key] = rec
    return result


def _assert_same(
    table: str, actual: dict[Any, dict[str, Any]], expected: dict[Any, dict[str, Any]]
) -> None:
    assert set(actual) == set(expected), table
    for key, want in expected.items():
        got = actual[key]
        for column, value in want.items():
            if isinstance(value, float):
                assert got[column] == pytest.approx(value, rel=1e-9, abs=1e-9), (table, key, column)
            else:
                assert got[column] == value, (table, key, column)


@pytest.fixture(scope="module")
def rolled(spark: Any, history: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rollups")
    # the seven tables the full-day tests check (the flow, GTID and commit passes
    # have their own modules); the run semantics are the small history's tests
    run_rollup(spark, str(history), str(out), only=TABLES)
    return out


@pytest.fixture(scope="module")
def small_rolled(spark: Any, small_history: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("small-rollups")
    run_rollup(spark, str(small_history), str(out))
    return out


def test_the_small_history_keeps_the_awkward_spots(small_history: Path) -> None:
    table = pa.concat_tables(pq.read_table(f) for f in sorted(small_history.rglob("*.parquet")))
    t = pc.cast(table["sampled_at"], pa.int64()).to_numpy()
    member = np.array(table["member_id"].to_pylist())
    members = member_ids(5, 3)
    assert t.min() == _at(DAY1, 0) and t.max() == _at(DAY2, 23, 59) + 59 * US  # both days
    assert {_at(DAY2, 0) - US, _at(DAY2, 0)} <= set(t.tolist())  # the midnight between
    dup = t[(member == members[0]) & (t >= _at(DAY2, 8)) & (t < _at(DAY2, 8, 5))]
    assert len(dup) == 2 * len(set(dup.tolist())) > 0  # the duplicates
    assert not ((member == members[2]) & (t >= _at(DAY2, 10)) & (t < _at(DAY2, 10, 30))).any()
    assert ((member == members[2]) & (t >= _at(DAY2, 9, 58)) & (t < _at(DAY2, 10))).any()
    incarnations = zip(table["incarnation"].to_pylist(), member, strict=True)
    assert len({i for i, m in incarnations if m == members[0]}) == 2  # the restart at 12:00
    checked = table["count_transactions_checked"].to_numpy()
    restart = (member == members[1]) & (t >= _at(DAY2, 14, 58)) & (t < _at(DAY2, 15, 3))
    assert (np.diff(checked[restart][np.argsort(t[restart])]) < 0).any()  # the reset


@pytest.mark.parametrize("table", [*MEMBER_TABLES, *GROUP_TABLES])
def test_the_shared_duckdb_oracle_equals_the_independent_computation(
    history: Path, expected_members: dict[str, Any], table: str
) -> None:
    # the queries the benchmark times DuckDB with (like for like with Spark)
    unit = table.split("_")[1]
    members = f"({member_sql(f'({steps_sql(history)})', unit)})"
    sql = members if table.startswith("member") else group_sql(members, unit)
    frame = duckdb.sql(f"SELECT *, epoch(bucket_start)::BIGINT AS bucket_s FROM ({sql})")
    actual = {}
    for rec in frame.to_arrow_table().to_pylist():
        key = (rec["member_id"], rec["bucket_s"]) if "member_id" in rec else rec["bucket_s"]
        actual[key] = rec
    _assert_same(table, actual, expected_members[table])


@pytest.mark.parametrize("table", TABLES)
def test_table_equals_the_independent_computation(
    rolled: Path, expected: dict[str, Any], table: str
) -> None:
    _assert_same(table, _read(rolled, table), expected[table])


def test_tables_are_partitioned_by_group_and_date(rolled: Path) -> None:
    for table in TABLES:
        partitions = sorted(
            p.relative_to(rolled / table).as_posix() for p in (rolled / table).glob("*/*")
        )
        assert partitions == [f"group={GROUP}/date={DAY1}", f"group={GROUP}/date={DAY2}"]
        for partition in (rolled / table).glob("*/*"):
            assert len(list(partition.glob("*.parquet"))) == 1


def _files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _copy_day(history: Path, to: Path, day: dt.date) -> None:
    part = Path(f"group={GROUP}") / f"date={day.isoformat()}"
    shutil.copytree(history / part, to / part)


def test_until_incremental_and_since_runs_on_one_output(
    spark: Any, small_history: Path, tmp_path: Path, small_expected: dict[str, Any]
) -> None:
    # One output, in order (each run costs a Spark pass): a day, then the next
    # day arrives; `until` bounds an incremental run; the incremental run rolls
    # up only the new day and equals one run over both; running again does
    # nothing; rerunning a date with `since` replaces it and leaves the others.
    grown, out = tmp_path / "history", tmp_path / "rollups"
    _copy_day(small_history, grown, DAY1)
    run_rollup(spark, str(grown), str(out))
    _copy_day(small_history, grown, DAY2)  # the next day arrives
    day2 = out / "member_day" / f"group={GROUP}" / f"date={DAY2}"
    assert run_rollup(spark, str(grown), str(out), until=DAY1.isoformat()) == {}
    assert not day2.exists()  # after `until`: not rolled up
    lines: list[str] = []
    run_rollup(spark, str(grown), str(out), progress=lines.append)
    assert any(f"{DAY2} .. {DAY2} (1 dates)" in line for line in lines), lines
    for table in TABLES:
        _assert_same(table, _read(out, table), small_expected[table])
    before = _files(out)
    lines.clear()
    assert run_rollup(spark, str(grown), str(out), progress=lines.append) == {}
    assert lines[-1] == "rollup: nothing to do"
    assert _files(out) == before  # nothing rewritten, the manifest included
    day1 = out / "member_minute" / f"group={GROUP}" / f"date={DAY1}"
    day1_files, day2_files = sorted(day1.iterdir()), sorted(day2.iterdir())
    lines.clear()
    run_rollup(spark, str(grown), str(out), since=DAY2.isoformat(), progress=lines.append)
    assert any(f"{DAY2} .. {DAY2} (1 dates)" in line for line in lines), lines
    assert sorted(day1.iterdir()) == day1_files  # other dates untouched
    assert sorted(day2.iterdir()) != day2_files  # the date rewritten
    for table in TABLES:
        _assert_same(table, _read(out, table), small_expected[table])


def test_a_replayed_segment_redoes_its_date_and_the_day_after(
    spark: Any,
    small_history: Path,
    small_rolled: Path,
    tmp_path: Path,
    small_expected: dict[str, Any],
) -> None:
    grown, out = tmp_path / "history", tmp_path / "rollups"
    shutil.copytree(small_history, grown)
    shutil.copytree(small_rolled, out)
    day1 = grown / f"group={GROUP}" / f"date={DAY1}"
    first = sorted(day1.glob("part-*.parquet"))[0]
    shutil.copy(first, day1 / "part-9999-replayed.parquet")  # every sample of it twice
    lines: list[str] = []
    run_rollup(spark, str(grown), str(out), progress=lines.append)
    assert any(f"{DAY1} .. {DAY2} (2 dates)" in line for line in lines), lines
    for table in TABLES:
        _assert_same(table, _read(out, table), small_expected[table])


def test_a_corrupt_manifest_means_a_full_run(
    spark: Any,
    small_history: Path,
    small_rolled: Path,
    tmp_path: Path,
    small_expected: dict[str, Any],
) -> None:
    out = tmp_path / "rollups"
    shutil.copytree(small_rolled, out)
    manifest = out / "_rollup_manifest.json"
    assert manifest.exists()
    manifest.write_text('{"format": "grstats-rollup-manifest/1", "gro')  # a torn write
    lines: list[str] = []
    run_rollup(spark, str(small_history), str(out), progress=lines.append)
    assert any("no usable manifest" in line for line in lines)
    assert any(f"{DAY1} .. {DAY2} (2 dates)" in line for line in lines), lines
    for table in TABLES:
        _assert_same(table, _read(out, table), small_expected[table])
    assert run_rollup(spark, str(small_history), str(out)) == {}  # the manifest is whole again
