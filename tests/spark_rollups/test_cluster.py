"""The rollup and the report on a real Spark standalone cluster equal local mode's.

A master and two 1-core workers on loopback (tests/fixtures/spark.py), a
one-day history of three members written by `grstats simulate` and cut to the
minutes around two full hours (history_cut.py: 09:58 .. 10:02 and 10:58 ..
11:02, a busy hour of the model among them; three hour buckets, every table
still has rows, each member's file its own task), and the command lines a user
runs, one after the other in one cluster driver: `rollup --master spark://...`,
then `report --master spark://...` over what it wrote (the entry point of
`python -m spark_rollups` called with each; the second finds the first's
session, as one spark-submit running both would: one driver and one set of
executors to start instead of two).  Every table and every CSV of the report
must equal what the in-process local session writes; the local rollup and
report go on while the cluster's driver runs (most of a cluster run is waiting
on its executors).
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spark_rollups.report import report
from spark_rollups.rollup import TABLES, run_rollup
from tests.fixtures.spark import SparkCluster
from tests.spark_rollups.history_cut import cut_around_the_hour

# JVMs start on a shared box; the first test's limit holds the setup (both modes'
# rollup and report)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

GROUP = "g-cluster"
DAY = "2026-11-17"  # a Tuesday of ISO week 2026-W47
WEEK = "2026-W47"
HOURS = (10, 11)  # the full hours whose minutes around are kept (10: a busy hour)
# the cluster's driver: `python -m spark_rollups`'s entry point, once per command line
DRIVER = """\
import json, sys
from spark_rollups.__main__ import main
for argv in json.loads(sys.argv[1]):
    status = main(argv)
    if status:
        sys.exit(status)
"""


@dataclass(frozen=True)
class Side:
    """What one mode wrote: the rollup root and the report directory."""

    rollups: Path
    report: Path


def _start(history: Path, side: Side, cluster: SparkCluster) -> subprocess.Popen[str]:
    """The rollup, then the report over its tables, on the cluster: started, not waited for."""
    commands = [
        ["rollup", "--history", str(history), "--out", str(side.rollups)],
        ["report", "--rollups", str(side.rollups), "--week", WEEK, "--out", str(side.report)],
    ]
    argvs = [[*argv, "--master", cluster.url] for argv in commands]
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(argvs)],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(driver: subprocess.Popen[str], timeout: float = 800) -> str:
    try:
        stdout, stderr = driver.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        driver.kill()  # by the PID we started
        driver.communicate()
        raise
    assert driver.returncode == 0, stderr[-4000:]
    return stdout


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cluster-history")
    grstats = shutil.which("grstats", path=str(Path(sys.executable).parent)) or "grstats"
    command = [grstats, "simulate", "--members", "3", "--days", "1", "--start", DAY]
    subprocess.run([*command, "--group", GROUP, "--out", str(root)], check=True, timeout=120)
    cut = tmp_path_factory.mktemp("cluster-history-cut")
    return cut_around_the_hour(root, cut, hours=HOURS)


@pytest.fixture(scope="module")
def outputs(
    spark: Any, spark_cluster: SparkCluster, history: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Side, Side]:
    work = tmp_path_factory.mktemp("cluster-out")
    cluster = Side(work / "cluster" / "rollups", work / "cluster" / "report")
    local = Side(work / "local" / "rollups", work / "local" / "report")
    driver = _start(history, cluster, spark_cluster)
    try:
        run_rollup(spark, str(history), str(local.rollups))
        report(spark, str(local.rollups), WEEK, local.report)
    finally:
        lines = _finish(driver)
    assert f"rollup: group {GROUP}: {DAY} .. {DAY} (1 dates)" in lines
    return cluster, local


@pytest.mark.parametrize("table", TABLES)
def test_cluster_table_equals_local_mode(
    spark: Any, outputs: tuple[Side, Side], table: str
) -> None:
    roots = [side.rollups for side in outputs]
    cluster, local = (spark.read.parquet(str(root / table)) for root in roots)
    assert cluster.columns == local.columns
    assert cluster.count() == local.count() > 0
    assert cluster.exceptAll(local).count() == 0
    assert local.exceptAll(cluster).count() == 0
    layout = [
        sorted(p.relative_to(root).as_posix() for p in root.glob(f"{table}/*/*")) for root in roots
    ]
    assert layout[0] == layout[1] == [f"{table}/group={GROUP}/date={DAY}"]


def test_cluster_report_equals_local_mode(outputs: tuple[Side, Side]) -> None:
    cluster_dir, local_dir = (side.report / GROUP for side in outputs)
    compared = sorted(p.name for p in local_dir.iterdir() if p.suffix in (".csv", ".md"))
    assert len(compared) > 3
    match, mismatch, errors = filecmp.cmpfiles(local_dir, cluster_dir, compared, shallow=False)
    assert (mismatch, errors) == ([], [])
    assert match == compared
