"""The Spark side every command shares: the session and the command's shell.

Strategy: `build_session` makes the one SparkSession of a run (rollup.py,
report.py, the benchmark); `session_settings` holds what the rollups rely on
whatever the master (the test fixture applies them too); `run_command` is the
tail of both commands: start Spark, run, turn the user's mistakes into one
line and exit status 2.

Invariants:
- Local mode stays on loopback: the driver binds to 127.0.0.1 and
  SPARK_LOCAL_IP defaults to it; a cluster master (spark-submit --master ...)
  keeps its own settings.
- Timestamps are UTC (session time zone).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

__all__ = ["build_session", "run_command", "session_settings"]


def build_session(master: str | None = None, app_name: str = "grstats-rollup") -> SparkSession:
    """A SparkSession configured for the rollups (loopback and small shuffles when local).

    Args:
        master: Spark master URL; None keeps spark-submit's, else `local[*]`.
        app_name: the application name.

    Returns:
        The (possibly existing) session.
    """
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit
    if master is None and not submitted:
        master = "local[*]"
    builder = SparkSession.builder.appName(app_name)
    local = master is not None and master.startswith("local")
    if master is not None:
        builder = builder.master(master)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
        # The driver is the executor: sorting a week of samples in 1 GB (the default)
        # spends a third of the time collecting garbage.
        builder = builder.config("spark.driver.memory", os.environ.get("SPARK_DRIVER_MEMORY", "3g"))
        # A batch job of seconds: the throughput collector beats G1's pauses-first
        # trade-off (about 15 % faster on the week benchmark).
        builder = builder.config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
    for key, value in session_settings().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if (spark.sparkContext.master or "").startswith("local"):  # also spark-submit --master local
        # A few partitions per core instead of 200: task overhead dominates locally.
        cores = spark.sparkContext.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * cores))
        # The scan too: by default small segments are packed into defaultParallelism + 1
        # splits (3 on 2 cores, the last one running alone); 2 per core keeps both busy.
        spark.conf.set("spark.sql.files.minPartitionNum", str(2 * cores))
    return spark


def session_settings() -> dict[str, str]:
    """Settings the rollups rely on (also applied by the test fixture).

    Returns:
        Spark configuration keys and values.
    """
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        # collect_list (the minutes' gauge values) is an object aggregate: the default
        # (128 groups per task) falls back to sorting; 64 k minute groups of ~60
        # values stay well within memory.
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # Results reach Python as Arrow batches (report.py), never as pickled rows.
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # One rollup compiles more generated classes than the default 100 kept: each
        # later run in the session (the tests, a notebook) compiled them all again
        # with Janino; keeping them costs a few MB of metaspace.
        "spark.sql.codegen.cache.maxEntries": "2000",
    }


def run_command(
    command: str,
    master: str | None,
    app_name: str,
    work: Callable[[SparkSession, float], None],
    user_errors: tuple[type[Exception], ...],
) -> int:
    """The shared tail of `rollup` and `report`: start Spark, run, map user errors.

    Args:
        command: the command name, prefixed to the error line.
        master: Spark master URL (see `build_session`).
        app_name: the Spark application name.
        work: called with the session and the monotonic start time.
        user_errors: exception types that are the user's mistake.

    Returns:
        0 on success, 2 after a user error (one line on stderr).
    """
    started = time.monotonic()
    spark = build_session(master, app_name)
    spark.sparkContext.setLogLevel("WARN")  # the progress lines are the output
    try:
        work(spark, started)
    except user_errors as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    return 0
