"""`grstats simulate` history with lag figures, rolled up and reported by Spark.

End to end: three simulated members (the last one slow: its applier falls
behind in the hot hours) over the first two days of ISO week 2026-W47. The
member rollups must carry lag percentiles for every member, and the weekly
report a "Replication lag" section with a heat map per member.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import pytest

from grstats.offline.backfill import member_ids, simulate_history
from spark_rollups.report import report
from spark_rollups.rollup import run_rollup

pytestmark = pytest.mark.slow

GROUP = "g-sim"
MONDAY = dt.date(2026, 11, 16)  # 2026-W47


def test_simulated_lag_reaches_the_rollups_and_the_weekly_report(
    spark: Any, tmp_path: Path
) -> None:
    members = member_ids(5, 3)
    history, rollups, out = tmp_path / "history", tmp_path / "rollups", tmp_path / "out"
    simulate_history(
        history, group=GROUP, members=members, days=2, seed=5, start=MONDAY, slow_member=True
    )
    run_rollup(spark, str(history), str(rollups))
    written = report(spark, str(rollups), "2026-W47", out)
    assert list(written) == [GROUP]

    sql = f"""
        SELECT member_id, count(*) AS days,
               count(replication_lag_seconds_p95) AS replication,
               count(queue_lag_seconds_p95) AS queue,
               count(apply_lag_seconds_p95) AS apply,
               max(apply_lag_seconds_max) AS worst
        FROM read_parquet('{rollups}/member_day/*/*/*.parquet', hive_partitioning = false)
        GROUP BY member_id
    """
    day = duckdb.connect().execute(sql).fetchall()
    by_member = {m: (days, rep, queue, apply, worst) for m, days, rep, queue, apply, worst in day}
    assert sorted(by_member) == sorted(members)
    for days, *counts, _ in by_member.values():
        assert counts == [days] * 3  # a percentile for every member-day
    slow_worst, healthy_worst = by_member[members[-1]][-1], by_member[members[0]][-1]
    assert slow_worst > 60.0 > healthy_worst  # the slow member's queue: minutes of lag

    text = (out / GROUP / "report.md").read_text(encoding="utf-8")
    section = text.split("## Replication lag", 1)[1].split("\n## ", 1)[0]
    assert "No lag figures" not in section
    # members are labelled host:port (as the simulated history carries them)
    hosts = (
        duckdb.connect()
        .execute(f"""
        SELECT DISTINCT member_id, member_host, member_port
        FROM read_parquet('{history}/*/*/*.parquet', hive_partitioning = false)
    """)
        .fetchall()
    )
    labels = {m: f"{host}:{port}" for m, host, port in hosts}
    assert sorted(labels) == sorted(members)
    for member in members:
        assert labels[member] in section
