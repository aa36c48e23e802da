"""The weekly report, tried as a new user would: files, numbers, and a real browser.

History: three members sampled every 10 minutes from Sunday of ISO week
2026-W46 to the end of 2026-W47.  Member b detects 2 conflicts per sample,
member a 1, member c none, so the group (max over members) has 2 * 144 = 288
conflicts on each full day, 2016 in W47, and 286 on the W46 Sunday (its first
sample is only a baseline).  Member a proposes 10 and rolls back 1 per sample.
"""

from __future__ import annotations

import csv
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib import image as mpimg

from spark_rollups.report import report
from spark_rollups.rollup import run_rollup
from tests.spark_rollups.chromium import chromium, measure, screenshot
from tests.spark_rollups.history_rows import row, write_history

pytestmark = pytest.mark.slow

START = dt.datetime(2026, 11, 15, tzinfo=dt.UTC)  # Sunday of 2026-W46
STEP = dt.timedelta(minutes=10)
SAMPLES = 8 * 144
TABLES = (
    "totals",
    "conflicts_by_day",
    "heatmap",
    "top_conflict_hours",
    "rollbacks_by_member",
    "queue_pressure",
    "data_quality",
    "members",
)
SHOWN = len(TABLES) - 1  # the day x hour matrix is only in heatmap.csv
CHARTS = ("conflicts_by_day", "heatmap", "rollbacks_by_member", "queue_pressure")


@pytest.fixture(scope="module")
def report_dir(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    rows = []
    for i in range(SAMPLES):
        at = START + i * STEP
        rows.append(row("member-a", at, checked=100 * i, conflicts=i, proposed=10 * i, rollback=i))
        rows.append(row("member-b", at, checked=100 * i, conflicts=2 * i, queue=i % 7))
        rows.append(row("member-c", at, checked=100 * i, applier_queue=i % 5))
    write_history(root / "history", rows)
    run_rollup(spark, str(root / "history"), str(root / "rollups"), period_seconds=600)
    written = report(spark, str(root / "rollups"), "2026-W47", root / "out")
    assert list(written) == ["g1"]
    return root / "out" / "g1"


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_report_writes_markdown_html_and_a_csv_per_table(report_dir: Path) -> None:
    assert (report_dir / "report.md").stat().st_size > 0
    assert (report_dir / "report.html").stat().st_size > 0
    for table in TABLES:
        assert (report_dir / f"{table}.csv").is_file(), table
    for chart in CHARTS:
        assert (report_dir / f"{chart}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", chart


def test_totals_show_the_week_and_the_change_from_the_week_before(report_dir: Path) -> None:
    totals = {r["metric"]: r for r in _csv(report_dir / "totals.csv")}
    conflicts = totals["conflicts detected"]
    assert int(conflicts["this week"]) == 7 * 288
    assert int(conflicts["previous week"]) == 286
    assert float(conflicts["change"]) == pytest.approx((2016 - 286) / 286)
    assert float(totals["rollback ratio"]["this week"]) == pytest.approx(0.1)


def test_conflicts_by_day_lists_the_seven_days(report_dir: Path) -> None:
    days = _csv(report_dir / "conflicts_by_day.csv")
    assert [d["date"] for d in days] == [f"2026-11-{16 + i}" for i in range(7)]
    assert {int(d["conflicts"]) for d in days} == {288}
    assert float(days[0]["conflict rate"]) == pytest.approx(288 / (100 * 144))


def test_rollbacks_by_member_rank_the_originating_members(report_dir: Path) -> None:
    members = _csv(report_dir / "rollbacks_by_member.csv")
    assert members[0]["member"] == "host-member-a:3306"  # the history's host and port
    assert int(members[0]["rolled back"]) == 7 * 144
    assert float(members[0]["rollback ratio"]) == pytest.approx(0.1)
    assert members[1]["rollback ratio"] == ""  # nothing proposed: no ratio


def test_data_quality_shows_full_coverage(report_dir: Path) -> None:
    quality = _csv(report_dir / "data_quality.csv")
    assert [float(q["coverage"]) for q in quality] == pytest.approx([1.0, 1.0, 1.0])
    assert {q["counter resets"] for q in quality} == {"0"}


def test_html_renders_tables_and_images_in_chromium(report_dir: Path, tmp_path: Path) -> None:
    url = (report_dir / "report.html").resolve().as_uri()
    dom = chromium(f"--user-data-dir={tmp_path / 'profile-dom'}", "--dump-dom", url)
    assert dom.count("<table") == SHOWN
    assert dom.count('src="data:image/png;base64,') == len(CHARTS)
    assert "http://" not in dom and "https://" not in dom  # self-contained

    shot = tmp_path / "report.png"
    screenshot(report_dir / "report.html", tmp_path, shot)
    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (4000, 1400)
    assert float(np.std(pixels[:, :, :3])) > 0.05  # not a blank page
    shutil.copy(shot, report_dir / "screenshot.png")  # beside the report, for a reviewer


def test_a_history_without_flow_figures_says_so_in_the_flow_section(report_dir: Path) -> None:
    markdown = (report_dir / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Who held the group back\n", 1)[1].split("\n## ", 1)[0]
    assert section.strip().startswith("No flow-control figures this week")
    assert not (report_dir / "flow_by_member.csv").exists()


def test_the_page_fits_1400_px_without_horizontal_scroll_or_literal_stars(
    report_dir: Path, tmp_path: Path
) -> None:
    layout = measure(report_dir / "report.html", tmp_path)
    assert layout["inner_width"] == 1400
    assert layout["scroll_width"] <= layout["client_width"], layout
    assert layout["wide_tables"] == []
    assert layout["stars"] is False


def test_the_report_opens_with_findings_and_ends_with_the_members(report_dir: Path) -> None:
    markdown = (report_dir / "report.md").read_text(encoding="utf-8")
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Findings" and headings[-1] == "## Appendix: members"
    members = {r["UUID"]: r for r in _csv(report_dir / "members.csv")}
    assert members["member-b"]["host:port"] == "host-member-b:3306"
    assert members["member-b"]["member"] == "host-member-b:3306"
    assert members["member-b"]["first seen (UTC)"] == "2026-11-16 00:00"
