"""`grstats simulate` history with a slow member and a slow link, rolled up and reported.

End to end: three simulated members over Monday 2026-11-16 (ISO week 2026-W47),
the last one slow twice over: its applier falls behind in the hot hours
(`--slow-member`) and its link is slow from 10:00 to 13:00 UTC
(`--slow-link 10-13`). One history, one rollup and one report serve every
test here (a Spark rollup and report cost the same tens of seconds whatever
the figures).

Lag: the member rollups carry lag percentiles for every member-day, the slow
member's worst apply lag is minutes, and the weekly report has a "Replication
lag" section naming every member.

Commit path, expected by hand from the modelled links (commitpath.py): a round
on normal links takes 2 x (0.5 + 0.5) ms = 2 ms; the slow member's nearest
peer is then 2 x (25 + 0.5) ms = 51 ms away, while the two others still find
each other in 2 ms (the applier's capacity plays no part in a consensus
round). The history keeps the counters every 10 s, so a step ending at
hh:00:00 covers hh-1:59:51 .. hh:00:00: hours 11 and 12 are slow throughout
(51 ms a round), hour 10 all but its first nine seconds, hour 13 only those
nine. The slow member's consensus rounds then dominate the group (> 50 % of
its commit time at more than twice the others' round) in exactly the hours
10, 11 and 12.

Applier: the expected figures come from DuckDB over the same history, by the
definition of an increase: with no reset and the first sample of the history
only a baseline, a member's week increase is its last value minus its first,
and a share is the wait's increase over the active time's. The expected
verdicts are the rule's, by hand from those shares: the two normal members
wait for work over half of the time (starved); the slow one waits for work
under half of the time, and its largest bottleneck, the commit order, is over
the 20 % bound.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import pytest

from grstats.offline.backfill import member_ids, simulate_history
from spark_rollups.report import report
from spark_rollups.rollup import run_rollup
from tests.spark_rollups.chromium import measure

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # a JVM on a shared box

GROUP = "g-sim"
MONDAY = dt.date(2026, 11, 16)  # 2026-W47
MEMBERS = member_ids(5, 3)
SLOW = MEMBERS[-1]


@pytest.fixture(scope="module")
def simulated(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(history, rollups, the group's report directory) of the simulated day."""
    root = tmp_path_factory.mktemp("simulated")
    history, rollups, out = root / "history", root / "rollups", root / "out"
    simulate_history(
        history,
        group=GROUP,
        members=MEMBERS,
        days=1,
        seed=5,
        start=MONDAY,
        slow_member=True,
        slow_link_hours=(10, 13),
    )
    run_rollup(spark, str(history), str(rollups))
    assert list(report(spark, str(rollups), "2026-W47", out)) == [GROUP]
    return history, rollups, out / GROUP


def _labels(history: Path) -> dict[str, str]:
    """member UUID -> host:port, as the simulated history carries them."""
    hosts = duckdb.sql(f"""
        SELECT DISTINCT member_id, member_host, member_port
        FROM read_parquet('{history}/*/*/*.parquet', hive_partitioning = false)
    """).fetchall()
    labels = {m: f"{host}:{port}" for m, host, port in hosts}
    assert sorted(labels) == sorted(MEMBERS)
    return labels


def _section(text: str, heading: str) -> str:
    return text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]


def test_simulated_lag_reaches_the_rollups_and_the_weekly_report(
    simulated: tuple[Path, Path, Path],
) -> None:
    history, rollups, directory = simulated
    text = (directory / "report.md").read_text(encoding="utf-8")
    day = duckdb.sql(f"""
        SELECT member_id, count(*) AS days,
               count(replication_lag_seconds_p95) AS replication,
               count(queue_lag_seconds_p95) AS queue,
               count(apply_lag_seconds_p95) AS apply,
               max(apply_lag_seconds_max) AS worst
        FROM read_parquet('{rollups}/member_day/*/*/*.parquet', hive_partitioning = false)
        GROUP BY member_id
    """).fetchall()
    by_member = {m: (days, rep, queue, apply, worst) for m, days, rep, queue, apply, worst in day}
    assert sorted(by_member) == sorted(MEMBERS)
    for days, *counts, _ in by_member.values():
        assert counts == [days] * 3  # a percentile for every member-day
    slow_worst, healthy_worst = by_member[SLOW][-1], by_member[MEMBERS[0]][-1]
    assert slow_worst > 60.0 > healthy_worst  # the slow member's queue: minutes of lag

    section = _section(text, "Replication lag")
    assert "No lag figures" not in section
    labels = _labels(history)
    for member in MEMBERS:
        assert labels[member] in section


def test_a_slow_link_shows_as_consensus_time_in_exactly_its_hours(
    simulated: tuple[Path, Path, Path],
) -> None:
    history, rollups, directory = simulated
    text = (directory / "report.md").read_text(encoding="utf-8")
    means = duckdb.sql(f"""
        SELECT member_id, CAST(epoch(bucket_start) AS BIGINT) // 3600 % 24 AS h,
               consensus_mean_seconds AS mean
        FROM read_parquet('{rollups}/commit_member_hour/*/*/*.parquet', hive_partitioning = false)
    """).fetchall()
    # the UTC hour from the epoch: DuckDB's hour() of a TIMESTAMPTZ is in the local zone (TZ)
    by = {(m, h): mean for m, h, mean in means}
    assert len(by) == 3 * 24
    for (m, h), mean in by.items():
        if m == SLOW and h in (11, 12):
            assert mean == pytest.approx(0.051, rel=1e-12), (m, h)
        elif m == SLOW and h in (10, 13):
            assert 0.002 < mean < 0.051, (m, h)
        else:
            assert mean == pytest.approx(0.002, rel=1e-12), (m, h)

    labels = _labels(history)
    section = _section(text, "Where commit time went")
    rows = {line.split("|")[1].strip(): line for line in section.splitlines() if "|" in line}
    slow_row = next(line for label, line in rows.items() if label.startswith(labels[SLOW]))
    assert "Mon 11-16 10:00 to 13:00" in slow_row
    assert "consensus rounds" in slow_row
    for m in MEMBERS[:-1]:
        row = next(line for label, line in rows.items() if label.startswith(labels[m]))
        assert "Mon 11-16" not in row
    assert section.count("commit_path_") >= 3  # a stacked chart per member
    found = _section(text, "Findings")
    assert f"**{labels[SLOW]}**'s consensus rounds" in found
    assert "3 hour(s) (Mon 11-16 10:00 to 13:00 UTC" in found


# ------------------------------------------------------------ the applier section

WAITS = {
    "work from source share": ("waits_for_work_from_source_sum_time",),
    "commit order share": ("waits_due_to_commit_order_sum_time",),
    "dependencies share": ("waits_commit_schedule_dependency_sum_time",),
    "queue memory share": (
        "waits_for_worker_queues_memory_sum_time",
        "waits_worker_queues_full_sum_time",
    ),
    "too few workers share": ("waits_for_available_worker_sum_time",),
    "relay log read share": ("read_from_relay_log_sum_time",),
}


def _increase(column: str) -> str:
    return f"(arg_max({column}, sampled_at) - arg_min({column}, sampled_at))"


def _expected(history: Path) -> dict[str, dict[str, Any]]:
    active = _increase("total_active_time_duration")
    shares = ", ".join(
        f'({" + ".join(_increase(c) for c in columns)}) / {active} AS "{name}"'
        for name, columns in WAITS.items()
    )
    sql = f"""
        SELECT member_id, {_increase("transactions_committed_count")} AS committed,
               {_increase("transactions_committed_size_bytes_sum")} AS committed_bytes,
               {shares}
        FROM read_parquet('{history}/*/*/part-*.parquet', hive_partitioning = false)
        GROUP BY member_id
    """
    rows = duckdb.sql(sql).to_arrow_table().to_pylist()
    return {r.pop("member_id"): r for r in rows}


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _uuids(directory: Path) -> dict[str, str]:
    """host:port label -> UUID, from the report's members appendix."""
    return {r["member"]: r["UUID"] for r in _csv(directory / "members.csv")}


def _verdicts(directory: Path) -> dict[str, dict[str, str]]:
    uuids = _uuids(directory)
    return {uuids[r["member"]]: r for r in _csv(directory / "applier_verdicts.csv")}


def test_the_slow_member_waits_for_the_commit_order_the_others_for_work(
    simulated: tuple[Path, Path, Path],
) -> None:
    _, _, directory = simulated
    *normal, slow = MEMBERS
    verdicts = _verdicts(directory)
    assert {m: v["verdict"] for m, v in verdicts.items()} == {
        normal[0]: "starved",
        normal[1]: "starved",
        slow: "commit_order",
    }


def test_the_numbers_behind_the_verdicts_equal_duckdb(simulated: tuple[Path, Path, Path]) -> None:
    history, _, directory = simulated
    expected = _expected(history)
    verdicts = _verdicts(directory)
    assert set(verdicts) == set(expected)
    for member, want in expected.items():
        got = verdicts[member]
        assert int(got["committed"]) == want["committed"]
        assert int(got["committed bytes"]) == want["committed_bytes"]
        for name in WAITS:
            assert float(got[name]) == pytest.approx(want[name], rel=1e-9), (member, name)
    # by hand, the rule on those shares: >= 50 % waiting for work is starved; else the
    # largest bottleneck over 20 % names the verdict
    *normal, slow = MEMBERS
    slow_shares = expected[slow]
    assert slow_shares["work from source share"] < 0.5
    bottlenecks = {k: v for k, v in slow_shares.items() if k.endswith("share")}
    del bottlenecks["work from source share"]
    assert max(bottlenecks, key=bottlenecks.__getitem__) == "commit order share"
    assert slow_shares["commit order share"] >= 0.2
    for member in normal:
        assert expected[member]["work from source share"] >= 0.5


def test_the_section_says_what_to_change(simulated: tuple[Path, Path, Path]) -> None:
    history, _, directory = simulated
    *_, slow = MEMBERS
    share = _expected(history)[slow]["commit order share"]
    markdown = (directory / "report.md").read_text(encoding="utf-8")
    assert "## Applier: why is it slow" in markdown
    label = {uuid: label for label, uuid in _uuids(directory).items()}[slow]
    assert label == "127.0.0.1:3308"  # the simulated third member's host and port
    paragraph = next(line for line in markdown.splitlines() if line.startswith(f"**{label}"))
    assert f"commit order waits take {share:.1%} of its active time" in paragraph
    assert "replica_preserve_commit_order=ON" in paragraph  # advice GR allows
    assert "replica_preserve_commit_order=OFF" not in markdown
    assert 'id="applier_verdicts"' in (directory / "report.html").read_text(encoding="utf-8")


def test_the_full_report_fits_1400_px_and_renders_its_emphasis(
    simulated: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    # this report has every section (lag, applier, flow control) and UUID members
    _, _, directory = simulated
    layout = measure(directory / "report.html", tmp_path)
    assert layout["inner_width"] == 1400
    assert layout["scroll_width"] <= layout["client_width"], layout
    assert layout["wide_tables"] == []
    assert layout["stars"] is False
    page = (directory / "report.html").read_text(encoding="utf-8")
    assert "<strong>127.0.0.1:3308: commit_order</strong>" in page
