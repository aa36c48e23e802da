"""`rollup`: history Parquet -> member/group minute, hour and day tables, and the applier's.

Strategy: one Spark application per run.  The dates to process are chosen
per group from the partition directories: `--since`/`--until`, or
incrementally the dates whose history segments changed since the last run
(manifest.py; a missing or corrupt manifest means every date).  The samples
are read with column pruning (only `part-*.parquet`, as history.py writes
them), ordered once (`with_steps`), the member minutes are aggregated and
persisted, and every coarser table is derived from them exactly (p95 too,
from the minutes' sorted values, see transforms.py).  The day before the
first processed date is read too, only for each member's last sample, so the
first step of an incremental run is right.  The applier tables (hour, day;
applier.py) come from their own pass over the same samples, the flow-control
tables from one persisted scan of member-seconds (flowrollup.py).  The tables
are small; they are written by concurrent jobs in two waves (member tables
and applier hours, persisted as they are written, then the tables that read
them and the rest), each table's rows counted by an Observation during its
write (no second job per table).  The manifest is replaced last.  Adding a
table: its module's builder, one `if wanted & ...` block in `run_rollup` and
its name in `TABLE_GROUPS`/`WRITTEN_TABLES`.

Invariants:
- Output `<out>/<table>/group=<g>/date=<YYYY-MM-DD>/*.parquet`, one file per
  partition; dynamic partition overwrite replaces exactly the partitions a
  run writes, so re-running a date is idempotent and other dates are kept.
- Path-agnostic: history and output may be any Hadoop path (hdfs://,
  s3a://, ...); the driver touches them only through storage.py.
- Timestamps are UTC (session time zone, session.py), partition values are
  strings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from spark_rollups import flowrollup as FR
from spark_rollups import gtidrollup as GR
from spark_rollups import manifest as M
from spark_rollups import transforms as T
from spark_rollups.applier import APPLIER_TABLES, applier_tables
from spark_rollups.commitrollup import COMMIT_TABLES, commit_tables
from spark_rollups.manifest import plan_run
from spark_rollups.memberdim import MEMBER_HOSTS, MEMBER_HOSTS_SCHEMA, member_hosts
from spark_rollups.schema import FLOW_INPUT_COLUMNS, FLOW_SCHEMA
from spark_rollups.segments import record_skipped, screen_segments
from spark_rollups.session import build_session, run_command, session_settings
from spark_rollups.storage import (
    hadoop_fs,
    is_local_path,
    list_partitions,
    local_path,
    partition_fingerprints,
    read_text,
    write_text_atomic,
)

__all__ = [
    "ALL_TABLES",
    "APPLIER_TABLES",
    "COMMIT_TABLES",
    "FLOW_TABLES",
    "GROUP_TABLES",
    "GTID_TABLES",
    "MEMBER_TABLES",
    "TABLES",
    "TABLE_GROUPS",
    "WRITTEN_TABLES",
    "RollupError",
    "build_parser",
    "build_session",
    "is_local_path",
    "list_partitions",
    "main",
    "plan_run",
    "run_command",
    "run_rollup",
    "session_settings",
]

MEMBER_TABLES = ("member_minute", "member_hour", "member_day")
GROUP_TABLES = ("group_hour", "group_day")
TABLES = (*MEMBER_TABLES, *GROUP_TABLES, *APPLIER_TABLES)
FLOW_TABLES = FR.FLOW_TABLES  # flow control (flowrollup.py): straight from the history
GTID_TABLES = GR.GTID_TABLES  # GTID divergence (gtidrollup.py): straight from the history
ALL_TABLES = (*TABLES, *FLOW_TABLES, *GTID_TABLES, *COMMIT_TABLES)  # commit path: commitrollup.py
# every directory a run writes under OUT (the SQL endpoint's catalog lists the same)
WRITTEN_TABLES = (*ALL_TABLES, MEMBER_HOSTS)
# the tables by the pass that computes them (`run_rollup(only=...)`, the benchmark's groups)
TABLE_GROUPS: dict[str, tuple[str, ...]] = {
    "member": (*MEMBER_TABLES, *GROUP_TABLES),
    "applier": APPLIER_TABLES,
    "flow": FLOW_TABLES,
    "gtid": GTID_TABLES,
    "commit": COMMIT_TABLES,
    "hosts": (MEMBER_HOSTS,),
}


class RollupError(Exception):
    """A user mistake or missing input, reported as one line (exit status 2)."""


# ----------------------------------------------------------------------- run


def _read(spark: SparkSession, paths: list[str]) -> DataFrame | None:
    # partition directories, or the readable files of one with a skipped file (segments.py)
    if not paths:
        return None
    # The explicit schema: files written before a column existed read it as NULL.
    reader = spark.read.schema(T.HISTORY_SCHEMA).option("pathGlobFilter", "part-*.parquet")
    return T.select_samples(reader.parquet(*paths))


def _read_flow(spark: SparkSession, paths: list[str]) -> DataFrame:
    reader = spark.read.schema(FLOW_SCHEMA).option("pathGlobFilter", "part-*.parquet")
    return reader.parquet(*paths).select(*FLOW_INPUT_COLUMNS)


def _read_hosts(spark: SparkSession, paths: list[str]) -> DataFrame:
    reader = spark.read.schema(MEMBER_HOSTS_SCHEMA).option("pathGlobFilter", "part-*.parquet")
    return reader.parquet(*paths)


def _since(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"


def _write(frame: DataFrame, out: str, table: str) -> int:
    """Write one table; returns its rows, counted while writing (no second job)."""
    # The tables are small (a week of minutes of nine members is 90 k rows): one
    # writing task gives one sorted file per partition without another shuffle.
    keys = [
        c
        for c in ("group", "date", "member_id", T.BUCKET)
        if c in frame.columns or c in ("group", "date")
    ]
    rows = Observation(f"rollup_rows_{table}_{uuid.uuid4().hex}")
    (
        frame.observe(rows, F.count(F.lit(1)).alias("rows"))
        .withColumn("group", F.col(T.GROUP_NAME))
        .withColumn("date", F.date_format(T.DAY, "yyyy-MM-dd"))
        .drop(T.DAY)
        .coalesce(1)
        .sortWithinPartitions(*keys)
        .write.mode("overwrite")
        .partitionBy("group", "date")
        .parquet(f"{out}/{table}")
    )
    return int(rows.get["rows"])


def run_rollup(
    spark: SparkSession,
    history: str,
    out: str,
    *,
    since: str | None = None,
    until: str | None = None,
    group: str | None = None,
    period_seconds: float = 1.0,
    progress: Callable[[str], None] = lambda line: None,
    strict: bool = False,
    only: Collection[str] | None = None,
) -> dict[str, int]:
    """Roll the history up into the seven tables, the flow-control, GTID and commit-path
    tables and member_hosts.

    Args:
        spark: the session (`build_session`).
        history: history root directory.
        out: rollup root directory.
        since: first date to process; None = incremental (see plan_run).
        until: last date to process; None = all.
        group: only this group; None = all.
        period_seconds: sampling period, for coverage.
        progress: called with one line per step.
        strict: fail (before writing anything) when a history file cannot be read,
            instead of skipping it (each skipped file is named either way).
        only: write only these tables (a measurement: the manifest and the skipped
            files are then left as they were); None = every table.

    Returns:
        Rows written per table (empty when there was nothing to do).

    Raises:
        RollupError: the history directory does not exist, or `strict` and a
            history file cannot be read.
    """
    fs, root = hadoop_fs(spark, history)
    if not fs.exists(root):
        raise RollupError(f"history directory not found: {history}")
    manifest_path = f"{out.rstrip('/')}/{M.MANIFEST_NAME}"
    previous = M.parse(read_text(spark, manifest_path), period_seconds)
    if previous is None and since is None:
        progress("rollup: no usable manifest: every date is rolled up")
    # Fingerprints before reading: a segment landing meanwhile is redone next time.
    fingerprints = partition_fingerprints(spark, history)
    plan = plan_run(
        fingerprints,
        list_partitions(spark, f"{out}/member_day"),
        previous,
        since=since,
        until=until,
        group=group,
    )
    if not plan.dates:
        progress("rollup: nothing to do")
        return {}
    for key, days in plan.dates.items():
        progress(f"rollup: group {unquote(key)}: {days[0]} .. {days[-1]} ({len(days)} dates)")
    screened = screen_segments(spark, history, plan.dates)
    base = screen_segments(spark, history, plan.baselines)
    for bad in (*screened.skipped, *base.skipped):
        progress(f"rollup: skipped unreadable {bad.path} ({bad.bytes} bytes): {bad.reason}")
    if strict and (screened.skipped or base.skipped):
        count = len(screened.skipped) + len(base.skipped)
        raise RollupError(f"{count} unreadable history file(s) (--strict); see the lines above")
    samples = _read(spark, screened.paths)
    if samples is None:  # every segment of every date unreadable: recorded, nothing to roll up
        record_skipped(spark, out, plan.dates, screened.skipped)
        return {}
    baseline = _read(spark, base.paths)
    wanted = {t for t in WRITTEN_TABLES if only is None or t in only}
    tables: dict[str, DataFrame] = {}
    persisted: list[DataFrame] = []
    if wanted & set(TABLE_GROUPS["member"]):
        # The one expensive pass (ordering every sample); the member and group tables read it.
        started = time.monotonic()
        raw_minutes = T.member_minute(T.with_steps(samples)).persist(StorageLevel.MEMORY_AND_DISK)
        minute_rows = raw_minutes.count()
        progress(f"rollup: samples ordered into {minute_rows} member minutes in {_since(started)}")
        minutes = T.apply_day_boundary(
            raw_minutes, None if baseline is None else T.last_samples(baseline)
        ).persist(StorageLevel.MEMORY_AND_DISK)
        persisted += [minutes, raw_minutes]
        tables.update(T.tables_from_minutes(minutes, period_seconds))
    if wanted & set(TABLE_GROUPS["applier"]):
        # The applier tables order the samples once more, per member and with the
        # baseline days in the same window (applier.py); only their columns are read.
        tables.update(applier_tables(samples, baseline))
    if wanted & set(TABLE_GROUPS["commit"]):
        tables.update(commit_tables(samples, baseline))  # the commit path, the same way
    if wanted & set(TABLE_GROUPS["flow"]):
        # flow control: its own (pruned) scan of the same dates, per-day figures only;
        # the member-seconds persisted and counted before the writes (three concurrent
        # jobs would each compute them before any had cached them): one scan
        seconds = FR.flow_seconds(_read_flow(spark, screened.paths))
        persisted.append(seconds.persist(StorageLevel.MEMORY_AND_DISK))
        seconds.count()
        tables.update(FR.flow_tables_from_seconds(seconds))
    if wanted & set(TABLE_GROUPS["gtid"]):
        # GTID divergence: its own (pruned) scan, per-day figures only
        tables.update(GR.gtid_tables(GR.read_gtid_columns(spark, screened.paths)))
    if MEMBER_HOSTS in wanted:
        # the members dimension (memberdim.py): host:port labels for the report
        tables[MEMBER_HOSTS] = member_hosts(_read_hosts(spark, screened.paths))
    counts: dict[str, int] = {}

    # The tables are small: their jobs wait on scheduling and file commits more
    # than on the cores, so they run side by side (the group and applier-day
    # tables read the hour and day tables of the first wave, persisted as they
    # are written: two waves).
    first = tuple(t for t in (*MEMBER_TABLES, APPLIER_TABLES[0], COMMIT_TABLES[0]) if t in wanted)
    second = tuple(t for t in WRITTEN_TABLES if t in wanted and t not in first)
    for table in first:
        if table != "member_minute":  # read again by the second wave
            persisted.append(tables[table].persist())

    def write(table: str) -> None:
        started = time.monotonic()
        counts[table] = _write(tables[table], out, table)
        progress(f"rollup: {table}: {counts[table]} rows written in {_since(started)}")

    workers = max(len(first), len(second))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollup") as pool:
        for wave in (first, second):
            list(pool.map(write, wave))
    for frame in persisted:
        frame.unpersist()
    if only is not None:
        return counts
    record_skipped(spark, out, plan.dates, screened.skipped)
    # Last: a crash before this line leaves the old manifest, and the next run redoes.
    write_text_atomic(
        spark,
        manifest_path,
        M.next_manifest(previous, fingerprints, plan, period_seconds).dumps(),
    )
    return counts


# ----------------------------------------------------------------------- CLI


def _date(text: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `rollup` command line.

    Args:
        parser: a (sub)parser to fill; None creates one.

    Returns:
        The parser.
    """
    if parser is None:
        parser = argparse.ArgumentParser(prog="python -m spark_rollups rollup")
    parser.description = (
        "Roll grstats history up into member_minute, member_hour, member_day, "
        "group_hour, group_day (docs/report.md), applier_member_hour and "
        "applier_member_day, and the flow-control tables flow_control_group_hour, "
        "flow_control_member_hour and flow_control_episodes, the GTID divergence tables "
        "gtid_member_hour and gtid_member_day, the commit-path tables "
        "commit_member_hour and commit_member_day, and the members dimension "
        "member_hosts (Parquet)."
    )
    parser.epilog = (
        "examples:\n"
        "  python -m spark_rollups rollup --history /var/lib/grstats/history --out rollups\n"
        "  python -m spark_rollups rollup --history hist --out rollups --since 2026-11-16\n"
        "  spark-submit --master spark://head:7077 spark_rollups/__main__.py rollup "
        "--history hdfs:///grstats/history --out hdfs:///grstats/rollups\n"
        "Without --since: only the dates whose history segments changed since the last run\n"
        "(and the day after each), tracked in OUT/_rollup_manifest.json; without a usable\n"
        "manifest, every date.  With --since: every date from it on, whatever changed."
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--history", required=True, metavar="DIR", help="history root (group=<g>/date=<d>/)"
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="rollup root (one directory per table)"
    )
    parser.add_argument(
        "--since", type=_date, metavar="DATE", help="redo every date from this one (YYYY-MM-DD)"
    )
    parser.add_argument(
        "--until", type=_date, metavar="DATE", help="last date to roll up (YYYY-MM-DD)"
    )
    parser.add_argument("--group", metavar="NAME", help="only this group")
    parser.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    parser.add_argument(
        "--period", type=float, default=1.0, help="sampling period in seconds (coverage)"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail when a history file cannot be read (default: skip it, name it in the "
        "output and in OUT/_skipped_files.json)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `rollup` (what the systemd timer runs).

    Args:
        argv: arguments after the command name; None = sys.argv[1:].

    Returns:
        0 on success, 2 on a user error (one line on stderr).
    """
    args = build_parser().parse_args(argv)
    local = local_path(args.history)
    if local is not None and not os.path.isdir(local):
        print(f"rollup: history directory not found: {args.history}", file=sys.stderr)
        return 2
    if args.period <= 0:
        print("rollup: --period must be positive", file=sys.stderr)
        return 2

    def work(spark: SparkSession, started: float) -> None:
        print(f"rollup: spark session ready in {_since(started)}", flush=True)
        counts = run_rollup(
            spark,
            args.history,
            args.out,
            since=args.since,
            until=args.until,
            group=args.group,
            period_seconds=args.period,
            progress=lambda line: print(line, flush=True),
            strict=args.strict,
        )
        written = sum(counts.values())
        print(f"rollup: done in {_since(started)} ({written} rows written)", flush=True)

    return run_command("rollup", args.master, "grstats-rollup", work, (RollupError,))
