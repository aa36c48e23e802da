"""GTID divergence rollups equal DuckDB over the same history; the week's report section.

The history is tests/spark_rollups/gtid_history.py's scripted week; the
rollup runs as production runs it (`run_rollup`); the expected tables are
its DuckDB oracle over the same files (`union_by_name` reads the old file's
gtid_* as NULL), and the key figures are also worked out by hand, as are the
report's (rendered to Markdown and HTML from the same rollups: one Spark run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from grstats.core.records import GTID_HISTORY_COLUMNS
from spark_rollups.gtidrollup import GTID_MEMBER_COLUMNS
from spark_rollups.report import report
from spark_rollups.rollup import GTID_TABLES, run_rollup
from spark_rollups.schema import GTID_COLUMNS
from tests.spark_rollups import gtid_history
from tests.spark_rollups.gtid_history import TUE, WEEK

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # a JVM on a shared box

HOUR_S, DAY_S = 3600, 86_400
TUE_S = int(TUE.timestamp())
THU_S = TUE_S + 2 * DAY_S
US = 1_000_000


@pytest.fixture(scope="module")
def gtid_rollup(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("gtids")
    history, out = root / "history", root / "rollups"
    gtid_history.write(history)
    run_rollup(spark, str(history), str(out), since="2026-11-17")
    return history, out


def _spark(out: Path, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    files = f"read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)"
    sql = f"""
        SELECT group_name, member_id, epoch(bucket_start)::BIGINT AS bucket,
               {", ".join(GTID_MEMBER_COLUMNS[:-2])},
               epoch_us(first_errant) AS first_errant, epoch_us(last_errant) AS last_errant
        FROM {files}
    """
    return _keyed(duckdb.sql(sql).to_arrow_table().to_pylist())


def _oracle(history: Path, bucket_s: int) -> dict[tuple[Any, ...], dict[str, Any]]:
    sql = gtid_history.ORACLE.format(history=history, bucket=bucket_s)
    return _keyed(duckdb.sql(sql).to_arrow_table().to_pylist())


def _keyed(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    key = ("group_name", "member_id", "bucket")
    return {tuple(r[k] for k in key): {c: r[c] for c in r if c not in key} for r in rows}


def test_gtid_schema_copy_equals_grstats_records() -> None:
    arrow = {"int64": "bigint", "string": "string"}
    copied = [(name, kind.simpleString()) for name, kind in GTID_COLUMNS]
    assert copied == [(name, arrow[kind]) for name, kind in GTID_HISTORY_COLUMNS]


def test_the_gtid_tables_are_written(gtid_rollup: tuple[Path, Path]) -> None:
    _, out = gtid_rollup
    assert GTID_TABLES == ("gtid_member_hour", "gtid_member_day")
    for table in GTID_TABLES:
        assert sorted(p.name for p in (out / table / "group=g1").iterdir()) == [
            "date=2026-11-17",
            "date=2026-11-19",
        ]


@pytest.mark.parametrize(
    ("table", "bucket_s"), [("gtid_member_hour", HOUR_S), ("gtid_member_day", DAY_S)]
)
def test_gtid_tables_equal_duckdb(
    gtid_rollup: tuple[Path, Path], table: str, bucket_s: int
) -> None:
    history, out = gtid_rollup
    expected = _oracle(history, bucket_s)
    assert expected  # the oracle sees the scripted history
    assert _spark(out, table) == expected


def test_the_hand_figures(gtid_rollup: tuple[Path, Path]) -> None:
    _, out = gtid_rollup
    hours = _spark(out, "gtid_member_hour")
    a10 = hours[("g1", "a", TUE_S + 10 * HOUR_S)]
    assert a10 == {
        "minutes": 60,
        "errant_minutes": 34,  # 10:06 .. 10:39
        "clone_minutes": 34,
        "errant_max": 3,
        "missing_max": 0,
        "first_errant": (TUE_S + 10 * HOUR_S + 6 * 60) * US,
        "last_errant": (TUE_S + 10 * HOUR_S + 39 * 60 + 50) * US,
    }
    c11 = hours[("g1", "c", TUE_S + 11 * HOUR_S)]
    assert (c11["clone_minutes"], c11["errant_minutes"], c11["missing_max"]) == (30, 0, 1_200)
    assert hours[("g1", "c", TUE_S + 10 * HOUR_S)]["missing_max"] == 1_200  # from 10:50
    days = _spark(out, "gtid_member_day")
    assert days[("g1", "a", TUE_S)]["minutes"] == 120  # the duplicated rows count once
    b = days[("g1", "b", THU_S)]
    assert (b["minutes"], b["errant_minutes"], b["errant_max"]) == (20, 5, 1)
    # the old file (a, Thu 12:00) and the collector's rows (c, Thu 13:00) have no verdict
    assert ("g1", "a", THU_S) not in days and ("g1", "c", THU_S) not in days


# -- the weekly report over the same rollups --------------------------------------


@pytest.fixture(scope="module")
def gtid_report(spark: Any, gtid_rollup: tuple[Path, Path]) -> Path:
    _, out = gtid_rollup
    written = report(spark, str(out), WEEK, out.parent / "report")
    (files,) = written.values()
    return next(f for f in files if f.name == "report.md").parent


def _section(markdown: str) -> list[str]:
    after = markdown.split("## GTID divergence this week\n", 1)[1]
    return after.split("\n## ", 1)[0].strip().splitlines()


def test_the_report_section_names_who_was_errant_when_and_who_needed_clone(
    gtid_report: Path,
) -> None:
    lines = _section((gtid_report / "report.md").read_text(encoding="utf-8"))
    assert lines[0].startswith("2 of 3 members had errant transactions")
    assert "; 3 would have needed clone" in lines[0]
    # by hand: a errant 10:06:00 .. 10:39:50 (34 minutes, 3 GTIDs), b Thu 09:05 .. 09:09:50
    assert "| host-a:3306 | 2026-11-17 10:06 | 2026-11-17 10:39 | 34 | 3 |" in lines
    assert "| host-b:3306 | 2026-11-19 09:05 | 2026-11-19 09:09 | 5 | 1 |" in lines
    # clone, most minutes first: a while errant (34 of its 120 minutes), c after the
    # purge (30 of 120), b while errant (5 of its 140: Tuesday's 120 and Thursday's 20)
    clone = lines.index(
        "| member | clone-needed minutes | share of its minutes | most GTIDs missing |"
    )
    assert lines[clone + 2 : clone + 5] == [  # in host:port order
        "| host-a:3306 | 34 | 28.33% | 0 |",
        "| host-b:3306 | 5 | 3.57% | 0 |",
        "| host-c:3306 | 30 | 25.00% | 1,200 |",
    ]


def test_the_findings_open_with_the_errant_members(gtid_report: Path) -> None:
    markdown = (gtid_report / "report.md").read_text(encoding="utf-8")
    findings = markdown.split("## Findings\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    assert findings[0].startswith(
        "1. **host-a:3306** had errant transactions (up to 3 GTIDs a member that had applied "
        "past them lacked) from Tue 11-17 10:06 to 10:39 UTC, 34 min in all;"
    )
    assert findings[1].startswith("2. **host-b:3306** had errant transactions (up to 1 GTID ")


def test_the_html_report_has_the_section_and_its_tables(gtid_report: Path) -> None:
    page = (gtid_report / "report.html").read_text(encoding="utf-8")
    assert "<h2>GTID divergence this week</h2>" in page
    assert '<table id="gtid_errant">' in page and '<table id="gtid_clone">' in page
    assert '<td class="m" title="c">host-c:3306</td><td class="n">30</td>' in page
    assert "<li><strong>host-a:3306</strong> had errant transactions" in page
    assert (gtid_report / "gtid_errant.csv").is_file()
