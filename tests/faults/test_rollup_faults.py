"""Rollup faults (issue 21): a zero-length or truncated segment is skipped and named.

A real local Spark reads a real history tree with one good, one zero-length
and one truncated segment in one partition.  Expected: the good member's
rows are rolled up, both bad files are named (progress lines,
`_skipped_files.json` with their sizes, the report's "Data quality"
section), and `--strict` fails the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_rollups.report import report
from spark_rollups.rollup import RollupError, run_rollup
from tests.spark_rollups.history_rows import row, write_history

pytestmark = pytest.mark.faults

DAY = "2026-11-17"  # history_rows.T0; ISO week 2026-W47


def _history(root: Path) -> tuple[Path, Path]:
    for member in ("m1", "m2", "m3"):
        rows = [row(member, s, checked=10 * s, applied=10 * s, seq=s + 1) for s in range(60)]
        write_history(root, rows, name=f"part-{member}.parquet")
    partition = root / "group=g1" / f"date={DAY}"
    empty, truncated = partition / "part-m2.parquet", partition / "part-m3.parquet"
    empty.write_bytes(b"")
    truncated.write_bytes(truncated.read_bytes()[:700])
    return empty, truncated


def test_rollup_skips_and_names_a_zero_length_and_a_truncated_segment(
    spark: Any, tmp_path: Path
) -> None:
    history, out = tmp_path / "history", tmp_path / "rollups"
    empty, truncated = _history(history)
    lines: list[str] = []
    counts = run_rollup(spark, str(history), str(out), progress=lines.append)
    assert counts["member_day"] == 1
    members = {r["member_id"] for r in spark.read.parquet(str(out / "member_day")).collect()}
    assert members == {"m1"}
    assert any(str(empty) in line and "(0 bytes)" in line for line in lines)
    assert any(str(truncated) in line and "(700 bytes)" in line for line in lines)
    skipped = json.loads((out / "_skipped_files.json").read_text(encoding="utf-8"))
    assert [(e["path"], e["bytes"], e["date"]) for e in skipped] == [
        (str(empty), 0, DAY),
        (str(truncated), 700, DAY),
    ]

    written = report(spark, str(out), "2026-W47", tmp_path / "report")
    markdown = next(p for p in written["g1"] if p.name == "report.md").read_text(encoding="utf-8")
    quality = markdown[markdown.index("Data quality") :]
    assert "part-m2.parquet" in quality and "part-m3.parquet" in quality
    assert "700" in quality


def test_rollup_strict_fails_on_an_unreadable_segment_before_writing(
    spark: Any, tmp_path: Path
) -> None:
    history, out = tmp_path / "history", tmp_path / "rollups"
    _history(history)
    with pytest.raises(RollupError, match="2 unreadable history file"):
        run_rollup(spark, str(history), str(out), strict=True)
    assert not (out / "member_day").exists()
