"""The weekly report's applier section over `grstats simulate --slow-member` history.

The rollups run as production runs them; the expected figures come from
DuckDB over the same history, by the definition of an increase: with no
reset and the first sample of the history only a baseline, a member's week
increase is its last value minus its first, and a share is the wait's
increase over the active time's.  The expected verdicts are the rule's, by
hand from those shares: the two normal members wait for work over half of
the time (starved); the slow one waits for work under half of the time, and
its largest bottleneck, the commit order (about 45 %), is over the 20 % bound.
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

pytestmark = pytest.mark.slow

SEED = 3
GROUP = "g1"
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


@pytest.fixture(scope="module")
def applier_report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("applier-report")
    history, rollups, out = root / "history", root / "rollups", root / "report"
    members = member_ids(SEED, 3)
    simulate_history(
        history,
        group=GROUP,
        members=members,
        days=1,
        seed=SEED,
        start=dt.date(2026, 11, 18),  # Wednesday of ISO week 2026-W47
        slow_member=True,
    )
    run_rollup(spark, str(history), str(rollups), since="2026-11-18")
    report(spark, str(rollups), "2026-W47", out)
    return history, out / GROUP


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
    applier_report: tuple[Path, Path],
) -> None:
    _, directory = applier_report
    *normal, slow = member_ids(SEED, 3)
    verdicts = _verdicts(directory)
    assert {m: v["verdict"] for m, v in verdicts.items()} == {
        normal[0]: "starved",
        normal[1]: "starved",
        slow: "commit_order",
    }


def test_the_numbers_behind_the_verdicts_equal_duckdb(applier_report: tuple[Path, Path]) -> None:
    history, directory = applier_report
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
    *normal, slow = member_ids(SEED, 3)
    slow_shares = expected[slow]
    assert slow_shares["work from source share"] < 0.5
    bottlenecks = {k: v for k, v in slow_shares.items() if k.endswith("share")}
    del bottlenecks["work from source share"]
    assert max(bottlenecks, key=bottlenecks.__getitem__) == "commit order share"
    assert slow_shares["commit order share"] >= 0.2
    for member in normal:
        assert expected[member]["work from source share"] >= 0.5


def test_the_section_says_what_to_change(applier_report: tuple[Path, Path]) -> None:
    history, directory = applier_report
    *_, slow = member_ids(SEED, 3)
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
    applier_report: tuple[Path, Path], tmp_path: Path
) -> None:
    # this report has every section (lag, applier, flow control) and UUID members
    _, directory = applier_report
    layout = measure(directory / "report.html", tmp_path)
    assert layout["inner_width"] == 1400
    assert layout["scroll_width"] <= layout["client_width"], layout
    assert layout["wide_tables"] == []
    assert layout["stars"] is False
    page = (directory / "report.html").read_text(encoding="utf-8")
    assert "<strong>127.0.0.1:3308: commit_order</strong>" in page
