"""Spark rollup of a simulated week (9 members, 1 Hz) beside DuckDB, table for table.

Usage: python benchmarks/bench_rollup.py [--history DIR] [--members 9] [--days 7]
       [--incremental-days 30] [--incremental-members 3]

The input is an existing history (--history, e.g. `grstats simulate --members
9 --days 7` output); otherwise the benchmark writes one with grstats'
simulate_history (the same code as `grstats simulate`), or, without grstats,
with an equivalent pyarrow generator.  It then times:
- the Spark session start (reported separately),
- `spark_rollups.rollup.run_rollup` on local[2], every table written, in a
  cold JVM and again warm, then each table group alone (rollup.TABLE_GROUPS:
  member+group tables, applier, flow control, GTID, commit path, member_hosts; warm),
- DuckDB computing the same tables with the tests' oracle queries
  (tests/fixtures/rollup_oracle.py: like for like) and writing them, per group,
- incremental (unless --incremental-days 0): a 30-day history (3 members)
  rolled up in full, one day appended, then the incremental run (manifest)
  beside DuckDB computing the same new day (with the day before),
and prints rows/s, the Spark/DuckDB ratios (every table cold and warm, per
group warm, incremental; wall time, and beside it CPU time -- the JVM's from
/proc on Linux, DuckDB's process time -- which a loaded machine blurs less),
the rows per table on both sides and the input's bytes per sample.  Figures
only; nothing is asserted.
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


def jvm_cpu(spark: Any) -> float:
    """CPU seconds (user + system) the session's JVM has used; NaN when unknown (not Linux)."""
    try:
        pid = spark.sparkContext._gateway.proc.pid  # spark-submit exec's the JVM
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (AttributeError, OSError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compare_counts(spark_out: Path, duck_out: Path) -> str:
    """Rows per table in both outputs (the same work was done)."""
    import duckdb  # noqa: PLC0415 - only the benchmark needs it

    from spark_rollups.rollup import WRITTEN_TABLES  # noqa: PLC0415

    con = duckdb.connect()
    parts = []
    for table in WRITTEN_TABLES:
        counts = [
            con.execute(
                f"SELECT count(*) FROM read_parquet('{root}/{table}/*/*/*.parquet')"
            ).fetchall()[0][0]
            if any((root / table).glob("*/*/*.parquet"))
            else 0  # nothing to write (e.g. no flow-control episode)
            for root in (spark_out, duck_out)
        ]
        parts.append(f"{table} {counts[0]}/{counts[1]}")
    con.close()
    return ", ".join(parts)


def _copy(con: Any, query: str, out: Path, table: str, bucket: str = "bucket_start") -> None:
    # partitioned like Spark's output: group, UTC date of the bucket
    con.execute(
        f"COPY (SELECT *, group_name AS \"group\", strftime({bucket}, '%Y-%m-%d') AS date "
        f"FROM ({query})) TO '{out}/{table}' "
        '(FORMAT parquet, PARTITION_BY ("group", date), OVERWRITE_OR_IGNORE)'
    )


def _duck_member(con: Any, history: Path, out: Path) -> None:
    from tests.fixtures.rollup_oracle import group_sql, member_sql, steps_sql  # noqa: PLC0415

    con.execute(f"CREATE OR REPLACE TEMP TABLE s AS {steps_sql(history)}")
    for unit in ("minute", "hour", "day"):
        con.execute(f"CREATE OR REPLACE TEMP TABLE member_{unit} AS {member_sql('s', unit)}")
        _copy(con, f"SELECT * FROM member_{unit}", out, f"member_{unit}")
    for unit in ("hour", "day"):
        _copy(con, group_sql(f"member_{unit}", unit), out, f"group_{unit}")


def _duck_applier(con: Any, history: Path, out: Path) -> None:
    from tests.fixtures.rollup_oracle import BUCKET_US, applier_sql, share_columns  # noqa: PLC0415

    for unit in ("hour", "day"):
        rows = applier_sql(history, BUCKET_US[unit])
        query = f"SELECT *, make_timestamp(bucket) AS bucket_start, {share_columns()} FROM ({rows})"
        _copy(con, query, out, f"applier_member_{unit}")


def _duck_commit(con: Any, history: Path, out: Path) -> None:
    # the commit-path test's oracle: counter_steps_sql of the history's cp_* counters
    # (cp_<op>_<unit> -> <op>_<unit>), with the means and shares Spark derives
    from grstats.core.records import COMMIT_PATH_HISTORY_COLUMNS  # noqa: PLC0415
    from tests.fixtures.rollup_oracle import BUCKET_US, counter_steps_sql  # noqa: PLC0415

    increases = {src: src.removeprefix("cp_") for src in COMMIT_PATH_HISTORY_COLUMNS}
    ops = [src.removesuffix("_count") for src in increases.values() if src.endswith("_count")]
    shared = [op for op in ops if op != "round_trip"]
    whole = " + ".join(f"coalesce({op}_us, 0)" for op in shared)
    derived = ", ".join(
        [f"CASE WHEN {op}_count > 0 THEN {op}_us / {op}_count / 1e6 END" for op in ops]
        + [f"CASE WHEN {whole} > 0 THEN {op}_us / ({whole}) END" for op in shared]
    )
    for unit in ("hour", "day"):
        rows = counter_steps_sql(history, increases, BUCKET_US[unit])
        query = f"SELECT *, make_timestamp(bucket) AS bucket_start, {derived} FROM ({rows})"
        _copy(con, query, out, f"commit_member_{unit}")


def _duck_gtid(con: Any, history: Path, out: Path) -> None:
    from tests.spark_rollups.gtid_history import ORACLE  # noqa: PLC0415 - the test's oracle

    for unit, seconds in (("hour", 3600), ("day", 86_400)):
        rows = ORACLE.format(history=history, bucket=seconds)
        query = f"SELECT *, make_timestamp(bucket * 1000000) AS bucket_start FROM ({rows})"
        _copy(con, query, out, f"gtid_member_{unit}")


def _duck_flow(con: Any, history: Path, out: Path) -> None:
    from tests.fixtures.rollup_oracle import FLOW_TABLES, flow_sql  # noqa: PLC0415

    for table in FLOW_TABLES:
        columns = "hour" if table != "flow_control_episodes" else "start_s"
        query = (
            f"SELECT *, make_timestamp({columns} * 1000000) AS b FROM ({flow_sql(history, table)})"
        )
        _copy(con, query, out, table, bucket="b")


def _duck_hosts(con: Any, history: Path, out: Path) -> None:
    from tests.fixtures.rollup_oracle import member_hosts_sql  # noqa: PLC0415

    _copy(con, member_hosts_sql(history), out, "member_hosts", bucket="day")


DUCK_GROUPS = {
    "member": _duck_member,
    "applier": _duck_applier,
    "flow": _duck_flow,
    "gtid": _duck_gtid,
    "commit": _duck_commit,
    "hosts": _duck_hosts,
}


def duckdb_rollup(
    history: Path,
    out: Path,
    threads: int,
    groups: tuple[str, ...] = tuple(DUCK_GROUPS),
    cpu_seconds: dict[str, float] | None = None,
) -> dict[str, float]:
    """Every table Spark writes, by the tests' DuckDB oracles, written as Parquet.

    `cpu_seconds`, when given, receives the process's CPU seconds per group.

    Returns:
        Seconds per table group (rollup.TABLE_GROUPS), each from its own read of the history.
    """
    import duckdb  # noqa: PLC0415 - only this function needs it

    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    seconds = {}
    for group in groups:
        started, cpu = time.monotonic(), time.process_time()
        DUCK_GROUPS[group](con, history, out)
        seconds[group] = time.monotonic() - started
        if cpu_seconds is not None:
            cpu_seconds[group] = time.process_time() - cpu
    con.close()
    return seconds


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
    duck = min(
        sum(duckdb_rollup(two_days.parent, work / f"inc-duck-{i}", threads=2).values())
        for i in range(2)
    )
    print(f"incremental: duckdb on the new day and the one before: {duck:.1f} s")
    return full, step, duck


def _ratios(spark_s: dict[str, float], duck_s: dict[str, float]) -> str:
    return ", ".join(f"{g} {spark_s[g] / duck_s[g]:.2f}x" for g in duck_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--history", type=Path, help="existing history (e.g. grstats simulate)")
    parser.add_argument("--members", type=int, default=9)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--incremental-days", type=int, default=30, help="0: no incremental run")
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

        from spark_rollups.rollup import TABLE_GROUPS, build_session, run_rollup  # noqa: PLC0415

        started = time.monotonic()
        spark = build_session("local[2]", "bench-rollup")
        spark.sparkContext.setLogLevel("ERROR")
        session_s = time.monotonic() - started
        print(f"spark session start: {session_s:.1f} s")
        timings, cpus = [], []
        for attempt in ("cold", "warm"):
            out = work / f"spark-{attempt}"
            started, cpu = time.monotonic(), jvm_cpu(spark)
            run_rollup(
                spark,
                str(history),
                str(out),
                since="1970-01-01",
                progress=lambda line: print("  " + line),
            )
            timings.append(time.monotonic() - started)
            cpus.append(jvm_cpu(spark) - cpu)
            print(
                f"spark rollup, every table ({attempt} JVM): {timings[-1]:.1f} s "
                f"(JVM CPU {cpus[-1]:.1f} s), "
                f"{rows / timings[-1] / 1e6:.2f} M rows/s"
            )
        # each group alone (warm JVM): its own read of the history, as DuckDB's below
        spark_groups, spark_cpu = {}, {}
        for group, tables in TABLE_GROUPS.items():
            started, cpu = time.monotonic(), jvm_cpu(spark)
            run_rollup(
                spark, str(history), str(work / "spark-groups"), since="1970-01-01", only=tables
            )
            spark_groups[group] = time.monotonic() - started
            spark_cpu[group] = jvm_cpu(spark) - cpu
        per_group = (f"{g} {t:.1f} s (CPU {spark_cpu[g]:.1f} s)" for g, t in spark_groups.items())
        print("spark rollup per table group (warm): " + ", ".join(per_group))
        inc = None
        if args.incremental_days > 0:
            inc = incremental(spark, work, args.incremental_members, args.incremental_days)
        spark.stop()
        duck_cpus: list[dict[str, float]] = [{}, {}]
        duck_runs = [
            duckdb_rollup(history, work / f"duckdb-{i}", threads=2, cpu_seconds=duck_cpus[i])
            for i in range(2)
        ]
        # per group the faster run: the ratio errs against Spark
        duck_groups = {g: min(run[g] for run in duck_runs) for g in duck_runs[0]}
        duck_cpu = {g: min(run[g] for run in duck_cpus) for g in duck_cpus[0]}
        duck = sum(duck_groups.values())
        print(
            f"duckdb rollup, every table (2 threads): "
            f"{' / '.join(f'{sum(r.values()):.1f}' for r in duck_runs)} s, "
            f"{rows / duck / 1e6:.2f} M rows/s; per group: "
            + ", ".join(f"{g} {t:.1f} s" for g, t in duck_groups.items())
        )
        print(
            f"rows per table spark/duckdb: {compare_counts(work / 'spark-warm', work / 'duckdb-1')}"
        )
        print(
            f"ratio spark/duckdb, every table: {timings[0] / duck:.2f} (cold), "
            f"{timings[-1] / duck:.2f} (warm); CPU time: {cpus[0] / sum(duck_cpu.values()):.2f} "
            f"(cold), {cpus[-1] / sum(duck_cpu.values()):.2f} (warm)"
        )
        print(f"ratio spark/duckdb per table group (warm): {_ratios(spark_groups, duck_groups)}")
        print(f"ratio spark/duckdb CPU time per table group (warm): {_ratios(spark_cpu, duck_cpu)}")
        if inc is not None:
            full, step, inc_duck = inc
            print(
                f"ratio spark/duckdb incremental (one new day, DuckDB on the same day): "
                f"{step / inc_duck:.2f}; incremental/full spark rollup: {step / full:.2f}"
            )
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
