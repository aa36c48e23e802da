"""render.py: cell text, self-contained HTML, one CSV per table."""

from __future__ import annotations

import csv
from pathlib import Path

from spark_rollups.render import Chart, Report, Table, format_value, write_report

PNG = b"\x89PNG\r\n\x1a\nfake"


def _report() -> Report:
    table = Table(
        "days",
        "Days <b>",
        ["date", "conflicts", "rate"],
        [["2026-11-16", 1234, 0.0123], ["2026-11-17", None, None]],
        percent=frozenset({"rate"}),
    )
    return Report("Title & co", "sub", [("Section", [Chart("c", "A chart", PNG), table])])


def test_cells_use_thousands_separators_percentages_and_na() -> None:
    assert format_value(1234567) == "1,234,567"
    assert format_value(None) == "n/a"
    assert format_value(0.0123, percent=True) == "1.230%"
    assert format_value(2.5) == "2.50"


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    write_report(_report(), tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'src="data:image/png;base64,' in page
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "Title &amp; co" in page and "Days &lt;b&gt;" in page


def test_every_table_is_written_as_csv_with_raw_numbers(tmp_path: Path) -> None:
    written = write_report(_report(), tmp_path)
    assert {p.name for p in written} == {"days.csv", "c.png", "report.md", "report.html"}
    with (tmp_path / "days.csv").open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["date", "conflicts", "rate"],
        ["2026-11-16", "1234", "0.0123"],
        ["2026-11-17", "", ""],
    ]


def test_markdown_links_the_png_and_the_csv(tmp_path: Path) -> None:
    write_report(_report(), tmp_path)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "![A chart](c.png)" in text
    assert "(days.csv)" in text
    assert "| 2026-11-16 | 1,234 | 1.230% |" in text
