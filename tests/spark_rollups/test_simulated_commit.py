"""`grstats simulate` with a slow link for three hours, rolled up and reported by Spark.

End to end: three simulated members over Monday 2026-11-16 (ISO week 2026-W47);
the last member's link is slow from 10:00 to 13:00 UTC (`--slow-link 10-13`).
Expected by hand from the modelled links (commitpath.py): a round on normal links
takes 2 x (0.5 + 0.5) ms = 2 ms; the slow member's nearest peer is then
2 x (25 + 0.5) ms = 51 ms away, while the two others still find each other in
2 ms. The history keeps the counters every 10 s, so a step ending at hh:00:00
covers hh-1:59:51 .. hh:00:00: hours 11 and 12 are slow throughout (51 ms a
round), hour 10 all but its first nine seconds, hour 13 only those nine. The
slow member's consensus rounds then dominate the group (> 50 % of its commit
time at more than twice the others' round) in exactly the hours 10, 11 and 12.
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

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # a JVM on a shared box

GROUP = "g-link"
MONDAY = dt.date(2026, 11, 16)  # 2026-W47


def test_a_slow_link_shows_as_consensus_time_in_exactly_its_hours(
    spark: Any, tmp_path: Path
) -> None:
    members = member_ids(5, 3)
    slow = members[-1]
    history, rollups, out = tmp_path / "history", tmp_path / "rollups", tmp_path / "out"
    simulate_history(
        history,
        group=GROUP,
        members=members,
        days=1,
        seed=5,
        start=MONDAY,
        slow_link_hours=(10, 13),
    )
    run_rollup(spark, str(history), str(rollups))
    assert list(report(spark, str(rollups), "2026-W47", out)) == [GROUP]

    means = duckdb.sql(f"""
        SELECT member_id, CAST(epoch(bucket_start) AS BIGINT) // 3600 % 24 AS h,
               consensus_mean_seconds AS mean
        FROM read_parquet('{rollups}/commit_member_hour/*/*/*.parquet', hive_partitioning = false)
    """).fetchall()
    # the UTC hour from the epoch: DuckDB's hour() of a TIMESTAMPTZ is in the local zone (TZ)
    by = {(m, h): mean for m, h, mean in means}
    assert len(by) == 3 * 24
    for (m, h), mean in by.items():
        if m == slow and h in (11, 12):
            assert mean == pytest.approx(0.051, rel=1e-12), (m, h)
        elif m == slow and h in (10, 13):
            assert 0.002 < mean < 0.051, (m, h)
        else:
            assert mean == pytest.approx(0.002, rel=1e-12), (m, h)

    hosts = duckdb.sql(f"""
        SELECT DISTINCT member_id, member_host, member_port
        FROM read_parquet('{history}/*/*/*.parquet', hive_partitioning = false)
    """).fetchall()
    labels = {m: f"{host}:{port}" for m, host, port in hosts}
    text = (out / GROUP / "report.md").read_text(encoding="utf-8")
    section = text.split("## Where commit time went", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines() if "|" in line}
    slow_row = next(line for label, line in rows.items() if label.startswith(labels[slow]))
    assert "Mon 11-16 10:00 to 13:00" in slow_row
    assert "consensus rounds" in slow_row
    for m in members[:-1]:
        row = next(line for label, line in rows.items() if label.startswith(labels[m]))
        assert "Mon 11-16" not in row
    assert section.count("commit_path_") >= 3  # a stacked chart per member
    found = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert f"**{labels[slow]}**'s consensus rounds" in found
    assert "3 hour(s) (Mon 11-16 10:00 to 13:00 UTC" in found
