"""The rollup and the report on a real Spark standalone cluster equal local mode's.

A master and two 1-core workers on loopback (tests/fixtures/spark.py), a
one-day history of three members written by `grstats simulate` and cut to the
minutes around every hour (history_cut.py: every hour bucket and every table
still has rows, the tasks a twelfth of the samples), and the command line a
user runs: `python -m spark_rollups rollup --master spark://...` and `report
--master spark://...`.  Every table and every CSV of the report must equal
what the in-process local session writes; the local run goes on while the
cluster's driver runs (most of a cluster run is waiting on its executors).
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spark_rollups.report import report
from spark_rollups.rollup import TABLES, run_rollup
from tests.fixtures.spark import SparkCluster
from tests.spark_rollups.history_cut import cut_around_the_hour

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # JVMs start on a shared box

GROUP = "g-cluster"
DAY = "2026-11-17"  # a Tuesday of ISO week 2026-W47
WEEK = "2026-W47"


def _start(argv: list[str], cluster: SparkCluster) -> subprocess.Popen[str]:
    """The command line on the cluster, started: the local run goes on meanwhile."""
    return subprocess.Popen(
        [sys.executable, "-m", "spark_rollups", *argv, "--master", cluster.url],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(driver: subprocess.Popen[str], timeout: float = 420) -> str:
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
    return cut_around_the_hour(root, tmp_path_factory.mktemp("cluster-history-cut"))


@pytest.fixture(scope="module")
def outputs(
    spark: Any, spark_cluster: SparkCluster, history: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("cluster-out")
    driver = _start(
        ["rollup", "--history", str(history), "--out", str(work / "cluster")], spark_cluster
    )
    try:
        run_rollup(spark, str(history), str(work / "local"))
    finally:
        lines = _finish(driver)
    assert f"group {GROUP}: {DAY} .. {DAY} (1 dates)" in lines
    return work / "cluster", work / "local"


@pytest.mark.parametrize("table", TABLES)
def test_cluster_table_equals_local_mode(
    spark: Any, outputs: tuple[Path, Path], table: str
) -> None:
    cluster, local = (spark.read.parquet(str(root / table)) for root in outputs)
    assert cluster.columns == local.columns
    assert cluster.count() == local.count() > 0
    assert cluster.exceptAll(local).count() == 0
    assert local.exceptAll(cluster).count() == 0
    layout = [
        sorted(p.relative_to(root).as_posix() for p in root.glob(f"{table}/*/*"))
        for root in outputs
    ]
    assert layout[0] == layout[1] == [f"{table}/group={GROUP}/date={DAY}"]


def test_cluster_report_equals_local_mode(
    spark: Any, spark_cluster: SparkCluster, outputs: tuple[Path, Path], tmp_path: Path
) -> None:
    cluster_rollups, local_rollups = outputs
    argv = ["report", "--rollups", str(cluster_rollups), "--week", WEEK]
    driver = _start([*argv, "--out", str(tmp_path / "cluster")], spark_cluster)
    try:
        report(spark, str(local_rollups), WEEK, tmp_path / "local")
    finally:
        _finish(driver)
    cluster_dir, local_dir = tmp_path / "cluster" / GROUP, tmp_path / "local" / GROUP
    compared = sorted(p.name for p in local_dir.iterdir() if p.suffix in (".csv", ".md"))
    assert len(compared) > 3
    match, mismatch, errors = filecmp.cmpfiles(local_dir, cluster_dir, compared, shallow=False)
    assert (mismatch, errors) == ([], [])
    assert match == compared
