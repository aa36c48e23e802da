"""Spark rollup of a simulated week (9 members, 1 Hz, ~5.4 M rows) beside DuckDB.

Usage: python benchmarks/bench_rollup.py [--history DIR] [--members 9] [--days 7]
       [--incremental-days 30] [--incremental-members 3]

The input is an existing history (--history, e.g. `grstats simulate --members
9 --days 7` output); otherwise the benchmark writes one with grstats'
simulate_history (the same code as `grstats simulate`), or, without grstats,
with an equivalent pyarrow generator.  It then times:
- the Spark session start (reported separately),
- `spark_rollups.rollup.run_rollup` on local[2] (all five tables, written),
- the same five tables computed by DuckDB over the same Parquet and written,
- incremental: a 30-day history (3 members) rolled up in full, one day
  appended, then the incremental run (manifest) beside DuckDB computing the
  same new day (with the day before, for its first steps),
and prints rows/s, the cold, warm and incremental ratios Spark/DuckDB and
the input's bytes per sample.  Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

START = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)  # a Monday (ISO week 2026-W47)
START_DAY = START.date()


def generate(out: Path, members: int, days: int, seed: int = 7, start: dt.date = START_DAY) -> int:
    """Write a synthetic history: per member 1 Hz samples, one counter reset, one restart.

    Returns:
        Rows written.
    """
    try:  # the daemon's exact Parquet options when the package is available
        from grstats.history.parquet import PARQUET_OPTIONS, history_schema  # noqa: PLC0415

        options, schema = dict(PARQUET_OPTIONS), history_schema()
    except ImportError:  # pragma: no cover - benchmark run outside the repo
        options, schema = {"compression": "zstd"}, None
    rng = np.random.default_rng(seed)
    first = dt.datetime(start.year, start.month, start.day, tzinfo=dt.UTC)
    n = 86_400
    total = 0
    group_checked = np.zeros(members, dtype=np.int64)
    state = [np.zeros(5, dtype=np.int64) for _ in range(members)]
    for day in range(days):
        date = (first + dt.timedelta(days=day)).date()
        base_us = int((first + dt.timedelta(days=day)).timestamp() * 1_000_000)
        columns: dict[str, list[np.ndarray]] = {}
        for m in range(members):
            t = base_us + np.arange(n, dtype=np.int64) * 1_000_000 + m * 37_000
            load = 40 + 30 * np.sin(np.arange(n) / n * 2 * np.pi - 1.5)
            checked_step = rng.poisson(load * members).astype(np.int64)
            proposed_step = rng.binomial(checked_step, 1.0 / members)
            conflict_step = rng.binomial(checked_step, 0.004)
            rollback_step = rng.binomial(proposed_step, 0.004)
            applied_step = checked_step - proposed_step
            steps = np.stack(
                [checked_step, conflict_step, applied_step, proposed_step, rollback_step]
            )
            values = np.cumsum(steps, axis=1) + state[m][:, None]
            incarnation = np.full(n, 1000 + m, dtype=np.uint64)
            if m == 1 and day == 2:  # server restart at noon: counters start again at 0
                values[:, n // 2 :] -= values[:, n // 2 - 1 : n // 2]
                incarnation[n // 2 :] += 100
            state[m] = values[:, -1]
            group_checked[m] = values[0, -1]
            cols = {
                "group_name": np.full(n, "bench", dtype=object),
                "member_id": np.full(n, f"00000000-0000-0000-0000-{m:012d}", dtype=object),
                "member_host": np.full(n, f"db{m}", dtype=object),
                "member_port": np.full(n, 3306, dtype=np.int32),
                "member_state": np.full(n, "ONLINE", dtype=object),
                "member_role": np.full(n, "PRIMARY" if m == 0 else "SECONDARY", dtype=object),
                "member_version": np.full(n, "8.4.3", dtype=object),
                "view_id": np.full(n, "17000000:1", dtype=object),
                "incarnation": incarnation,
                "seq": (day * n + np.arange(n)).astype(np.int64),
                "sampled_at": t,
                "count_transactions_in_queue": rng.poisson(3, n).astype(np.int64),
                "count_transactions_checked": values[0],
                "count_conflicts_detected": values[1],
                "count_transactions_rows_validating": rng.poisson(20, n).astype(np.int64),
                "count_transactions_remote_in_applier_queue": rng.poisson(5, n).astype(np.int64),
                "count_transactions_remote_applied": values[2],
                "count_transactions_local_proposed": values[3],
                "count_transactions_local_rollback": values[4],
                "transactions_committed_all_members": np.full(n, None, dtype=object),
                "last_conflict_free_transaction": np.full(n, None, dtype=object),
                "flow_control_mode": np.ones(n, dtype=np.int8),
            }
            for key, value in cols.items():
                columns.setdefault(key, []).append(value)
        arrays = {k: np.concatenate(v) for k, v in columns.items()}
        table = pa.table(
            {
                k: pa.array(v, type=pa.timestamp("us", tz="UTC")) if k == "sampled_at" else v
                for k, v in arrays.items()
            }
        )
        if schema is not None:
            table = table.cast(schema)
        part = out / "group=bench" / f"date={date.isoformat()}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, part / "part-0000000000000000-bench.parquet", **options)
        total += table.num_rows
    return total


def simulate(out: Path, members: int, days: int, start: dt.date = START_DAY) -> tuple[int, str]:
    """`grstats simulate` in process when grstats is importable, else `generate`.

    Returns:
        (rows written, which generator).
    """
    try:
        from grstats.offline.backfill import member_ids, simulate_history  # noqa: PLC0415
    except ImportError:  # pragma: no cover - benchmark run without grstats
        return generate(out, members, days, start=start), "pyarrow"
    result = simulate_history(
        out, group="bench", members=member_ids(1, members), days=days, seed=1, start=start
    )
    return result.rows, "grstats simulate"


def compare_counts(spark_out: Path, duck_out: Path) -> str:
    """Rows per table in both outputs (the same work was done)."""
    import duckdb  # noqa: PLC0415 - only the benchmark needs it

    con = duckdb.connect()
    parts = []
    for table in ("member_minute", "member_hour", "member_day", "group_hour", "group_day"):
        counts = [
            con.execute(
                f"SELECT count(*) FROM read_parquet('{root}/{table}/*/*/*.parquet')"
            ).fetchall()[0][0]
            for root in (spark_out, duck_out)
        ]
        parts.append(f"{table} {counts[0]}/{counts[1]}")
    con.close()
    return ", ".join(parts)


def duckdb_rollup(history: Path, out: Path, threads: int) -> float:
    """The five tables in DuckDB (same semantics as transforms.py), written as Parquet."""
    import duckdb  # noqa: PLC0415 - only this function needs it

    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    counters = {
        "transactions_checked": "count_transactions_checked",
        "conflicts_detected": "count_conflicts_detected",
        "transactions_remote_applied": "count_transactions_remote_applied",
        "transactions_local_proposed": "count_transactions_local_proposed",
        "transactions_local_rollback": "count_transactions_local_rollback",
    }
    gauges = {
        "transactions_in_queue": "count_transactions_in_queue",
        "transactions_remote_in_applier_queue": "count_transactions_remote_in_applier_queue",
        "transactions_rows_validating": "count_transactions_rows_validating",
    }
    lags = ", ".join(f"lag({src}) OVER w AS p_{out}" for out, src in counters.items())
    steps = ", ".join(
        f"CASE WHEN {src} - p_{out} < 0 THEN {src} ELSE {src} - p_{out} END AS {out}"
        for out, src in counters.items()
    )
    reset = " OR ".join(f"{src} < p_{out}" for out, src in counters.items())
    con.execute(
        f"""
        CREATE TEMP TABLE s AS
        SELECT group_name, member_id, sampled_at, {steps},
               coalesce({reset}, false) AS is_reset,
               coalesce(p_inc <> incarnation, false) AS is_restart,
               {", ".join(f"{src} AS {out}_g" for out, src in gauges.items())}
        FROM (
          SELECT *, lag(incarnation) OVER w AS p_inc, {lags}
          FROM (SELECT DISTINCT ON (member_id, incarnation, seq) *
                FROM read_parquet('{history}/*/*/part-*.parquet', hive_partitioning = false))
          WINDOW w AS (PARTITION BY group_name, member_id ORDER BY sampled_at, incarnation, seq)
        )
        """
    )
    sums = ", ".join(f"coalesce(sum({out}), 0) AS {out}" for out in counters)
    member_aggs = {}
    for unit, seconds in (("minute", 60), ("hour", 3600), ("day", 86400)):
        gauge_aggs = ", ".join(
            f"min({g}_g) AS {g}_min, avg({g}_g) AS {g}_avg, max({g}_g) AS {g}_max"
            + (
                f", quantile_cont({g}_g, 0.95) AS {g}_p95"
                if g != "transactions_rows_validating"
                else ""
            )
            for g in gauges
        )
        member_aggs[unit] = (
            f"SELECT group_name, member_id, date_trunc('{unit}', sampled_at) AS bucket_start, "
            f"{sums}, {gauge_aggs}, count(*) AS samples, count(*) / {seconds}.0 AS coverage, "
            "sum(is_reset::INT) AS resets, sum(is_restart::INT) AS restarts FROM s "
            "GROUP BY ALL"
        )
        con.execute(f"CREATE TEMP TABLE member_{unit} AS {member_aggs[unit]}")
    for unit, seconds in (("hour", 3600), ("day", 86400)):
        con.execute(
            f"""CREATE TEMP TABLE group_{unit} AS
            SELECT group_name, bucket_start, count(*) AS members,
              max(transactions_checked) AS transactions_checked,
              max(conflicts_detected) AS conflicts_detected,
              max(transactions_remote_applied) AS transactions_remote_applied,
              sum(transactions_local_proposed) AS transactions_local_proposed,
              sum(transactions_local_rollback) AS transactions_local_rollback,
              max(conflicts_detected) / nullif(max(transactions_checked), 0) AS conflict_rate,
              max(transactions_in_queue_max) AS transactions_in_queue_max,
              max(transactions_remote_in_applier_queue_max)
                AS transactions_remote_in_applier_queue_max,
              sum(samples) AS samples, sum(samples) / (count(*) * {seconds}.0) AS coverage,
              sum(resets) AS resets, sum(restarts) AS restarts
            FROM member_{unit} GROUP BY ALL"""
        )
    for table in ("member_minute", "member_hour", "member_day", "group_hour", "group_day"):
        con.execute(
            f"COPY (SELECT *, strftime(bucket_start, '%Y-%m-%d') AS date FROM {table}) "
            f"TO '{out}/{table}' (FORMAT parquet, PARTITION_BY (group_name, date), "
            "OVERWRITE_OR_IGNORE)"
        )
    con.close()
    return time.monotonic() - started


def incremental(spark: Any, work: Path, members: int, days: int) -> tuple[float, float, float]:
    """Full rollup of `days` days, one day appended, incremental rollup; DuckDB on that day.

    Returns:
        (full seconds, incremental seconds, DuckDB seconds for the new day).
    """
    from spark_rollups.rollup import run_rollup  # noqa: PLC0415

    history, held = work / "inc-history", work / "inc-held"
    start = START_DAY - dt.timedelta(days=days)
    started = time.monotonic()
    rows, _ = simulate(history, members, days + 1, start)
    print(
        f"incremental: generated {days + 1} days x {members} members, {rows} rows in "
        f"{time.monotonic() - started:.1f} s"
    )
    new_day = history / "group=bench" / f"date={(start + dt.timedelta(days=days)).isoformat()}"
    shutil.move(new_day, held)
    out = work / "inc-out"
    started = time.monotonic()
    run_rollup(spark, str(history), str(out))
    full = time.monotonic() - started
    print(f"incremental: full rollup of {days} days: {full:.1f} s")
    shutil.move(held, new_day)
    started = time.monotonic()
    run_rollup(spark, str(history), str(out), progress=lambda line: print("  " + line))
    step = time.monotonic() - started
    print(f"incremental: one new day: {step:.1f} s ({full / step:.1f}x faster than the full run)")
    two_days = work / "inc-duck-history" / "group=bench"
    two_days.mkdir(parents=True)
    previous = history / "group=bench" / f"date={(start + dt.timedelta(days=days - 1)).isoformat()}"
    for day in (previous, new_day):
        shutil.copytree(day, two_days / day.name)
    duck = min(duckdb_rollup(two_days.parent, work / f"inc-duck-{i}", threads=2) for i in range(2))
    print(f"incremental: duckdb on the new day and the one before: {duck:.1f} s")
    return full, step, duck


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--history", type=Path, help="existing history (e.g. grstats simulate)")
    parser.add_argument("--members", type=int, default=9)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--incremental-days", type=int, default=30)
    parser.add_argument("--incremental-members", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-rollup-"))
    try:
        history = args.history
        if history is None:
            history = work / "history"
            started = time.monotonic()
            rows, how = simulate(history, args.members, args.days)
            print(f"generated {rows} rows in {time.monotonic() - started:.1f} s ({how})")
        files = list(history.rglob("part-*.parquet"))
        rows = sum(pq.read_metadata(f).num_rows for f in files)
        size = sum(f.stat().st_size for f in files)
        machine = f"{platform.machine()} {os.cpu_count()} cpus"
        print(f"machine: {machine}, python {platform.python_version()}")
        print(
            f"input: {rows} rows, {len(files)} files, {size / 1e6:.1f} MB, "
            f"{size / rows:.2f} bytes/sample"
        )

        from spark_rollups.rollup import build_session, run_rollup  # noqa: PLC0415

        started = time.monotonic()
        spark = build_session("local[2]", "bench-rollup")
        spark.sparkContext.setLogLevel("ERROR")
        session_s = time.monotonic() - started
        print(f"spark session start: {session_s:.1f} s")
        timings = []
        for attempt in ("cold", "warm"):
            out = work / f"spark-{attempt}"
            started = time.monotonic()
            run_rollup(
                spark,
                str(history),
                str(out),
                since="1970-01-01",
                progress=lambda line: print("  " + line),
            )
            timings.append(time.monotonic() - started)
            print(
                f"spark rollup ({attempt} JVM): {timings[-1]:.1f} s, "
                f"{rows / timings[-1] / 1e6:.2f} M rows/s"
            )
        full, step, inc_duck = incremental(
            spark, work, args.incremental_members, args.incremental_days
        )
        spark.stop()
        duck_runs = [duckdb_rollup(history, work / f"duckdb-{i}", threads=2) for i in range(2)]
        duck = min(duck_runs)  # the faster run: the ratio errs against Spark
        print(
            f"duckdb rollup (2 threads): {' / '.join(f'{d:.1f}' for d in duck_runs)} s, "
            f"{rows / duck / 1e6:.2f} M rows/s"
        )
        print(
            f"rows per table spark/duckdb: {compare_counts(work / 'spark-warm', work / 'duckdb-1')}"
        )
        print(
            f"ratio spark/duckdb: {timings[0] / duck:.2f} (cold), {timings[-1] / duck:.2f} (warm), "
            f"{step / inc_duck:.2f} (incremental: one new day, DuckDB on the same day)"
        )
        print(f"ratio incremental/full spark rollup: {step / full:.2f}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
