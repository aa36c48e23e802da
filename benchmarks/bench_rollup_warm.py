"""The fixed cost of a warm Spark rollup: N `run_rollup` calls on a tiny history, one session.

Usage: python benchmarks/bench_rollup_warm.py [--runs 3] [--members 3] [--days 2]
       [--history DIR] [--event-log DIR] [--tests-session]

The input is a simulated history (grstats' simulate_history, as the tests
build it) cut to the five minutes around every hour (the tests' small
history: 3 members x 2 days ~ 43 k rows), unless --history is given.  The
session is `spark_rollups.session.build_session("local[2]")`, or with
--tests-session the test fixture's settings (local[2], 1 GB, two shuffle
partitions).  After one unmeasured run (JIT, class loading), each run rolls
every date up again (`since` = the first date) into a fresh output directory,
and the benchmark prints per run: wall time, the JVM's CPU time (/proc),
the Spark jobs, stages and tasks it launched, and from Spark's event log the
time its jobs ran (their union) beside the rest (driver: planning, Python,
file listing and commits).  With --event-log the log is kept for reading.
The load average is printed at the start and the end (a shared machine).
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: another tree can be measured
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

START_DAY = dt.date(2026, 11, 16)
AROUND_THE_HOUR = (58, 59, 0, 1, 2)  # the tests' cut (tests/spark_rollups/history_cut.py)


def _history(root: Path, members: int, days: int) -> Path:
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    from grstats.offline.backfill import member_ids, simulate_history  # noqa: PLC0415

    whole = root / "whole"
    ids = member_ids(5, members)
    simulate_history(whole, group="g-bench", members=ids, days=days, seed=5, start=START_DAY)
    cut = root / "history"
    for source in sorted(whole.rglob("part-*.parquet")):
        table = pq.read_table(source)
        minute = pc.cast(table["sampled_at"], pa.int64()).to_numpy() // 60_000_000 % 60
        target = cut / source.relative_to(whole)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.filter(pa.array(np.isin(minute, AROUND_THE_HOUR))), target)
    shutil.rmtree(whole)
    return cut


def _session(tests_session: bool, event_log: Path | None) -> Any:
    from spark_rollups.session import build_session, session_settings  # noqa: PLC0415

    extra = {}
    if event_log is not None:  # it costs the driver time itself (plans as JSON)
        event_log.mkdir(parents=True, exist_ok=True)
        extra = {
            "spark.eventLog.enabled": "true",
            "spark.eventLog.compress": "false",
            "spark.eventLog.dir": event_log.as_uri(),
        }
    if not tests_session:  # the product's session, the event log passed to the launcher
        confs = " ".join(f"--conf {key}={value}" for key, value in extra.items())
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"{confs} pyspark-shell"
        return build_session("local[2]", "grstats-bench-warm")
    from pyspark.sql import SparkSession  # noqa: PLC0415

    builder = (  # tests/fixtures/spark.py's session
        SparkSession.builder.master("local[2]")
        .appName("grstats-bench-warm")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
    )
    for key, value in {**session_settings(), **extra}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _jvm_cpu_seconds(spark: Any) -> float:
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _events(log_dir: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for path in sorted(log_dir.rglob("*")):  # Spark 4: a directory of rolled files
        if path.is_file() and path.name.startswith(("events_", "local-")):
            with path.open(encoding="utf-8") as handle:
                events.extend(json.loads(line) for line in handle if line.strip())
    return events


def _window(events: list[dict[str, Any]], start_ms: float, end_ms: float) -> dict[str, Any]:
    """Jobs, stages, tasks and the union of job run times between two instants."""
    jobs: dict[int, list[float]] = {}
    stages = tasks = 0
    executor_run_ms = 0.0
    for event in events:
        kind = event.get("Event", "")
        if kind == "SparkListenerJobStart" and start_ms <= event["Submission Time"] <= end_ms:
            jobs[event["Job ID"]] = [event["Submission Time"], event["Submission Time"]]
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]][1] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            if start_ms <= info.get("Submission Time", 0) <= end_ms:
                stages += 1
                tasks += info["Number of Tasks"]
        elif kind == "SparkListenerTaskEnd":
            info = event["Task Info"]
            if start_ms <= info["Launch Time"] <= end_ms:
                executor_run_ms += event.get("Task Metrics", {}).get("Executor Run Time", 0)
    union = 0.0
    last = 0.0
    for submitted, end in sorted(jobs.values()):
        begin = max(submitted, last)
        if end > begin:
            union += end - begin
            last = end
    return {
        "jobs": len(jobs),
        "stages": stages,
        "tasks": tasks,
        "jobs_s": union / 1000,
        "task_run_s": executor_run_ms / 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=3, help="warm runs timed after one warm-up run (default 3)"
    )
    parser.add_argument(
        "--members", type=int, default=3, help="simulated members (default 3, as the tests)"
    )
    parser.add_argument(
        "--days", type=int, default=2, help="simulated days, cut as the tests' (default 2)"
    )
    parser.add_argument(
        "--history",
        type=Path,
        help="an existing history directory to roll up instead of a simulated one",
    )
    parser.add_argument(
        "--event-log",
        type=Path,
        help="a directory for Spark's event log: adds jobs, stages and tasks per run",
    )
    parser.add_argument(
        "--tests-session",
        action="store_true",
        help="the test fixture's session (local[2], 1 GB, 2 shuffle partitions)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a runtime SQL setting for every run (a measurement of a setting)",
    )
    args = parser.parse_args()
    if args.history is not None and not args.history.is_dir():
        parser.error(f"--history: {args.history} is not a directory")

    from spark_rollups.rollup import run_rollup  # noqa: PLC0415

    print(f"load average at start: {os.getloadavg()}", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-rollup-warm-"))
    try:
        history = args.history or _history(scratch, args.members, args.days)
        spark = _session(args.tests_session, args.event_log)
        spark.sparkContext.setLogLevel("WARN")
        for setting in args.conf:
            key, _, value = setting.partition("=")
            spark.conf.set(key, value)
        rows = spark.read.parquet(str(history)).count()
        since = START_DAY.isoformat() if args.history is None else None
        print(f"history: {rows} rows; session: {spark.sparkContext.master}", flush=True)
        print(f"settings: {args.conf}", flush=True)
        results = []
        for run in range(args.runs + 1):
            out = scratch / f"out-{run}"
            cpu0, t0, wall0 = _jvm_cpu_seconds(spark), time.monotonic(), time.time() * 1000
            counts = run_rollup(spark, str(history), str(out), since=since)
            seconds, wall1 = time.monotonic() - t0, time.time() * 1000
            cpu = _jvm_cpu_seconds(spark) - cpu0
            results.append((run, seconds, cpu, wall0, wall1, sum(counts.values())))
        events: list[dict[str, Any]] = []
        if args.event_log is not None:
            time.sleep(3)  # the event log is flushed by a listener thread
            events = _events(args.event_log)
        print("run  wall s  jvm cpu s  jobs  stages  tasks  jobs' span s  task run s  rows")
        walls = []
        for run, seconds, cpu, wall0, wall1, written in results:
            w = _window(events, wall0, wall1)
            label = "warm-up" if run == 0 else str(run)
            if run:
                walls.append(seconds)
            spark_figures = (
                f"{w['jobs']:5d} {w['stages']:7d} {w['tasks']:6d} {w['jobs_s']:13.2f} "
                f"{w['task_run_s']:11.2f}"
                if events
                else f"{'(no --event-log)':>45}"
            )
            print(f"{label:>7} {seconds:6.2f} {cpu:9.2f} {spark_figures} {written:6d}")
        walls.sort()
        print(f"warm run median: {walls[len(walls) // 2]:.2f} s over {len(walls)} runs")
        print(f"load average at end: {os.getloadavg()}", flush=True)
        spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
