"""render.py: cell text, self-contained HTML, one CSV per table."""

from __future__ import annotations

import csv
from pathlib import Path

from spark_rollups.render import (
    Bullets,
    Chart,
    Member,
    Report,
    Table,
    format_value,
    write_report,
)

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
    assert format_value(0.0123, percent=True) == "1.23%"
    assert format_value(2.5) == "2.50"


def test_a_figure_has_one_number_format_whatever_its_size() -> None:
    # a conflict rate of 0.009989 and one of 0.2 in the same column: two decimals of a
    # percent both; floats two decimals both
    assert [format_value(v, percent=True) for v in (0.009989, 0.2, 1.5)] == [
        "1.00%",
        "20.00%",
        "150.00%",
    ]
    assert [format_value(v) for v in (0.004, 12345.678)] == ["0.00", "12,345.68"]
    assert format_value(float("nan")) == "n/a"


def test_a_ratio_row_of_a_metric_table_is_a_percentage_in_every_column() -> None:
    table = Table(
        "totals",
        "Totals",
        ["metric", "this week", "previous week"],
        [["conflicts", 418_651, 400_000], ["conflict rate", 0.009989, 0.0101]],
        percent=frozenset({"conflict rate"}),
    )
    assert [table.cells(r) for r in table.rows] == [
        ["conflicts", "418,651", "400,000"],
        ["conflict rate", "1.00%", "1.01%"],
    ]


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
    assert "| 2026-11-16 | 1,234 | 1.23% |" in text


def _styled() -> Report:
    member = Member("dddddddd-0000-4000-8000-0000000000a3", "db3:3306")
    return Report(
        "T",
        "s",
        [
            ("Findings", [Bullets(["**db3:3306** held the group back; do `this`."])]),
            ("Applier", ["**db3:3306: commit_order** -- advice"]),
            ("Members", [Table("m", "Members", ["member", "n"], [[member, 1]])]),
            ("Matrix", [Table("wide", "Wide", ["a", "b"], [[1, None]], shown=False)]),
        ],
    )


def test_html_renders_markdown_emphasis_instead_of_printing_it(tmp_path: Path) -> None:
    write_report(_styled(), tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "**" not in page
    assert '<ol class="findings">' in page
    assert "<li><strong>db3:3306</strong> held the group back; do <code>this</code>.</li>" in page
    assert "<p><strong>db3:3306: commit_order</strong> -- advice</p>" in page
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "1. **db3:3306** held the group back; do `this`." in markdown


def test_a_member_shows_its_label_with_the_uuid_in_a_tooltip(tmp_path: Path) -> None:
    write_report(_styled(), tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<td class="m" title="dddddddd-0000-4000-8000-0000000000a3">db3:3306</td>' in page
    assert "| db3:3306 | 1 |" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_a_matrix_not_shown_is_linked_and_written_whole_as_csv(tmp_path: Path) -> None:
    write_report(_styled(), tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="wide"' not in page and '<a href="wide.csv">wide.csv</a>' in page
    assert "| a | b |" not in (tmp_path / "report.md").read_text(encoding="utf-8")
    with (tmp_path / "wide.csv").open(encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["a", "b"], ["1", ""]]
