"""The weekly report's findings on the ground truth: a simulated week and the scenarios' histories.

One history, one Spark rollup and one report (ISO week 2026-W47) serve every
test here -- a Spark run costs minutes whatever the data, so everything shares
it:

- `grstats simulate`'s week of a healthy group (3 members, 7 days from Monday
  2026-11-16: hot hours 10, 11, 14 and 15 UTC at 3 times the load): by hand,
  no member lags (their appliers keep up with 1.25 times the busiest hour
  the workload draws: a second's queue at most), nobody is held, nothing is missing -- no finding
  at all, and every member failover-ready all week;
- `grstats simulate`'s Monday and Tuesday of a group whose last member is slow
  (1.5 times a normal hour's rate: its queue grows in every hot hour, to
  hundreds of thousands, and drains at night) at MySQL's default thresholds:
  a hold grants at least 1,125 a period, above the writers' 60-86 tx/s, so no
  writer is ever held -- the finding is that flow control did not contain it,
  with the threshold that would; its lag, hours, is built by the load of the
  hot hours (10:00 to 12:00 and 14:00 to 16:00 UTC, 3 times the median hour):
  that is when the advice says to move writes, not the evening the lag
  peaks in; its two peers stay failover-ready;
- each ground-truth scenario's minute, as its daemons recorded it (each
  member's own history rows): an errant write names db2, the spread names
  db2 and db3, the low-threshold slow applier names db3 as the member that
  held the group back, the slow link db3's consensus rounds; a healthy
  scenario, the lying member's and the rejoining one's have no finding but
  the data-gap ones of a minute's history.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from grstats.history.parquet import rows_to_table, write_segments
from grstats.offline.backfill import member_ids, simulate_history
from spark_rollups.findings import QUIET
from spark_rollups.report import report
from spark_rollups.rollup import run_rollup
from tests.fixtures.verdict_scenarios import HEALTHY, SCENARIOS, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # a JVM over ~2.4 M rows

WEEK = "2026-W47"
MONDAY = dt.date(2026, 11, 16)
HEALTHY_WEEK = "a1ea17e0-5ce0-4000-8000-000000000001"
SLOW_DAYS = "510e0000-5ce0-4000-8000-000000000002"
SEED = 5
GAPS = re.compile(r"^(No data on |\*\*[^*]+\*\* reported )")  # a short history's data gaps


@pytest.fixture(scope="module")
def reports(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report directory: one sub-directory per group."""
    root = tmp_path_factory.mktemp("verdicts")
    history, rollups, out = root / "history", root / "rollups", root / "out"
    members = member_ids(SEED, 3)
    simulate_history(history, group=HEALTHY_WEEK, members=members, days=7, seed=SEED, start=MONDAY)
    simulate_history(
        history, group=SLOW_DAYS, members=members, days=2, seed=SEED, start=MONDAY,
        slow_member=True,
    )  # fmt: skip
    for name in SCENARIOS:
        group = run(name)
        rows = [row for member in group.members for row in group.history(member)]
        write_segments(history, rows_to_table(rows), segment_id=f"scenario-{name}")
    run_rollup(spark, str(history), str(rollups))
    report(spark, str(rollups), WEEK, out)
    return out


def _findings(reports: Path, group: str) -> list[str]:
    text = (reports / group / "report.md").read_text(encoding="utf-8")
    section = text.split("## Findings\n", 1)[1].split("\n## ", 1)[0].strip()
    if section == QUIET:
        return []
    return [re.sub(r"^\d+\. ", "", line) for line in section.splitlines() if line.strip()]


def _verdicts(reports: Path, group: str) -> list[str]:
    """The findings but the data-gap ones (a scenario's history is a minute long)."""
    return [f for f in _findings(reports, group) if not GAPS.match(f)]


def _csv(reports: Path, group: str, name: str) -> list[dict[str, str]]:
    import csv  # noqa: PLC0415

    with (reports / group / f"{name}.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_healthy_simulated_week_has_no_finding_and_is_failover_ready(reports: Path) -> None:
    assert _findings(reports, HEALTHY_WEEK) == []
    catch_up = _csv(reports, HEALTHY_WEEK, "flow_catch_up")
    assert len(catch_up) == 3
    assert {float(r["not failover-ready (min)"]) for r in catch_up} == {0.0}


def test_a_slow_member_at_default_thresholds_is_not_contained_and_the_load_is_named(
    reports: Path,
) -> None:
    found = _verdicts(reports, SLOW_DAYS)
    assert not any("held the group back" in f for f in found)
    (contained,) = [f for f in found if f.startswith("Flow control did not contain")]
    assert "**127.0.0.1:3308**" in contained
    assert "at a threshold of 25,000 a hold grants at least 1,125 transactions" in contained
    assert "group_replication_flow_control_applier_threshold at most" in contained
    (lags,) = [f for f in found if " lags: " in f]
    assert lags.startswith("**127.0.0.1:3308** lags: its p95 apply lag reaches ")
    assert "arrives 10:00 to 12:00 and 14:00 to 16:00 UTC" in lags
    assert re.search(r"reaches \d+ h( \d+ min)? \(", lags)  # hours, written as h and min
    # the numbers behind it, in the report's own tables
    table = _csv(reports, SLOW_DAYS, "flow_not_containing")
    assert [r["member"] for r in table] == ["127.0.0.1:3308"]
    catch_up = {r["member"]: r for r in _csv(reports, SLOW_DAYS, "flow_catch_up")}
    for peer in ("127.0.0.1:3306", "127.0.0.1:3307"):
        assert float(catch_up[peer]["not failover-ready (min)"]) == 0.0
    assert float(catch_up["127.0.0.1:3308"]["not failover-ready (min)"]) > 0


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("errant_write", ["**db2:3306** had errant transactions"]),
        (
            "errant_spread",
            ["**db2:3306** had errant transactions", "**db3:3306** had errant transactions"],
        ),
        ("slow_applier_low_thresholds", ["**db3:3306** held the group back"]),
        ("slow_link", ["**db3:3306**'s consensus rounds took most of the group's commit time"]),
    ],
)
def test_a_scenario_s_findings_name_its_member(
    reports: Path, name: str, expected: list[str]
) -> None:
    group = SCENARIOS[name].settings.group
    found = _verdicts(reports, group)
    for start in expected:
        assert any(f.startswith(start) for f in found), (start, found)


@pytest.mark.parametrize("name", [*HEALTHY, "lying_member", "member_rejoining"])
def test_a_healthy_scenario_has_no_finding_but_its_short_history(reports: Path, name: str) -> None:
    assert _verdicts(reports, SCENARIOS[name].settings.group) == []
