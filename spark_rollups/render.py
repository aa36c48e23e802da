"""Writing a report: Markdown, self-contained HTML, PNG charts and one CSV per table.

Strategy: a report is plain data (`Report` of sections holding `Table`,
`Chart` and text items) built by report.py from collected rows; this module
only formats it.  Charts are drawn with matplotlib's Agg backend (no display)
into PNG bytes, written beside the report and embedded in the HTML as
base64 data URIs, so report.html needs nothing else (inline CSS, no external
resource).  Markdown links the PNG files next to it.

Invariants: one number format per figure (a column's floats all with two
decimals, its ratios all as percentages with two decimals), a missing value
is "n/a" (never 0); a member is a `Member` cell -- its `host:port` label
shown, its UUID in the HTML tooltip; a `Table` with `shown=False` (a wide
matrix the heat maps already draw) is only linked, its CSV holds the
figures; text items may use Markdown's `**strong**` and `` `code` ``, which
the HTML renders.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: before pyplot is imported

import matplotlib.pyplot as plt

__all__ = [
    "Bullets",
    "Chart",
    "Member",
    "Report",
    "Table",
    "bar_chart",
    "format_value",
    "heatmap_chart",
    "stacked_chart",
    "twin_chart",
    "write_report",
]


@dataclass(frozen=True)
class Member:
    """A member in a table cell: shown by its label (`host:port`), its UUID in a tooltip."""

    member_id: str
    label: str

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Bullets:
    """A numbered (or plain) list of one-sentence items."""

    items: Sequence[str]
    ordered: bool = True


@dataclass(frozen=True)
class Table:
    """A table shown in the report and written as `<name>.csv`."""

    name: str
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    note: str = ""
    # ratio columns shown as percentages; also rows whose first cell is one of these
    # (a metric table: the "conflict rate" row)
    percent: frozenset[str] = frozenset()
    shown: bool = True  # False: only the CSV (a wide matrix a heat map draws)

    def cells(self, row: Sequence[Any]) -> list[str]:
        """Display text of one row."""
        ratios = bool(row) and isinstance(row[0], str) and row[0] in self.percent
        return [
            format_value(v, percent=c in self.percent or (ratios and i > 0))
            for i, (c, v) in enumerate(zip(self.columns, row, strict=True))
        ]


@dataclass(frozen=True)
class Chart:
    """A PNG chart written as `<name>.png` and embedded in the HTML."""

    name: str
    title: str
    png: bytes


Item = Table | Chart | Bullets | str


@dataclass
class Report:
    """Title plus sections of (heading, items); items are Table, Chart or text."""

    title: str
    subtitle: str
    sections: list[tuple[str, list[Item]]] = field(default_factory=list)


def format_value(value: Any, *, percent: bool = False) -> str:
    """Human text of one cell: thousands separators, two decimals, "n/a" for null.

    Args:
        value: a cell.
        percent: show a ratio as a percentage.

    Returns:
        Its text.
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if percent and isinstance(value, int | float):
        return f"{value:.2%}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:,.2f}"  # NaN: no value
    return str(value)


# ------------------------------------------------------------------- charts


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def heatmap_chart(
    name: str,
    title: str,
    rows: Sequence[str],
    matrix: Sequence[Sequence[float]],
    *,
    unit: str = "conflicts",
    vmax: float | None = None,
) -> Chart:
    """Day x hour heatmap.

    Args:
        name: file stem.
        title: chart title.
        rows: one label per row (days).
        matrix: rows x 24 values (NaN: no value, drawn grey).
        unit: the colour bar's label.
        vmax: the top of the colour scale (one scale shared by several maps);
            None = this map's largest value.

    Returns:
        The chart.
    """
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.6))
    cmap = matplotlib.colormaps["YlOrRd"].with_extremes(bad="#d9d9d9")
    image = ax.imshow(matrix, aspect="auto", cmap=cmap, interpolation="nearest", vmin=0, vmax=vmax)
    ax.set_yticks(range(len(rows)), labels=list(rows))
    ax.set_xticks(range(24), labels=[f"{h:02d}" for h in range(24)])
    ax.set_xlabel("hour of day (UTC)")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label=unit)
    return Chart(name, title, _png(fig))


def bar_chart(
    name: str, title: str, labels: Sequence[str], values: Sequence[float], ylabel: str
) -> Chart:
    """Simple bar chart.

    Args:
        name: file stem.
        title: chart title.
        labels: x labels.
        values: bar heights.
        ylabel: y axis label.

    Returns:
        The chart.
    """
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.bar(range(len(values)), values, color="#c0392b")
    ax.set_xticks(range(len(labels)), labels=list(labels), rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return Chart(name, title, _png(fig))


def twin_chart(
    name: str,
    title: str,
    *,
    bars: Sequence[float],
    bar_label: str,
    lines: dict[str, Sequence[float | None]],
    line_axis: str,
    ticks: Sequence[tuple[int, str]],
) -> Chart:
    """Bars (left axis) with lines on a second axis: queue pressure beside conflicts.

    Args:
        name: file stem.
        title: chart title.
        bars: one value per x position.
        bar_label: legend/axis label of the bars.
        lines: legend label -> one value (or None) per x position.
        line_axis: right axis label.
        ticks: (x position, label) pairs.

    Returns:
        The chart.
    """
    fig, ax = plt.subplots(figsize=(11, 3.8))
    ax.bar(range(len(bars)), bars, color="#e67e22", alpha=0.7, label=bar_label, width=1.0)
    ax.set_ylabel(bar_label)
    other = ax.twinx()
    for (label, values), color in zip(lines.items(), ("#2c3e50", "#2980b9"), strict=False):
        other.plot(
            range(len(values)),
            [float("nan") if v is None else v for v in values],
            color=color,
            label=label,
            linewidth=1.2,
        )
    other.set_ylabel(line_axis)
    ax.set_xticks([t for t, _ in ticks], labels=[label for _, label in ticks])
    ax.set_title(title)
    handles = ax.get_legend_handles_labels()
    more = other.get_legend_handles_labels()
    ax.legend(handles[0] + more[0], handles[1] + more[1], loc="upper left", fontsize=8)
    return Chart(name, title, _png(fig))


def stacked_chart(
    name: str,
    title: str,
    series: Mapping[str, Sequence[float]],
    *,
    ticks: Sequence[tuple[int, str]],
    ylabel: str,
) -> Chart:
    """Stacked bars: one bar per x position, one coloured part per series.

    Args:
        name: file stem.
        title: chart title.
        series: legend label -> one value per x position (all the same length).
        ticks: (x position, label) pairs.
        ylabel: y axis label.

    Returns:
        The chart.
    """
    fig, ax = plt.subplots(figsize=(11, 3.8))
    colors = ("#c0392b", "#2980b9", "#27ae60", "#8e44ad", "#f39c12", "#7f8c8d")
    bottom: list[float] = []
    for (label, values), color in zip(series.items(), colors * len(series), strict=False):
        bottom = bottom or [0.0] * len(values)
        ax.bar(range(len(values)), values, bottom=bottom, width=1.0, color=color, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks([t for t, _ in ticks], labels=[label for _, label in ticks])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return Chart(name, title, _png(fig))


# ------------------------------------------------------------------- output

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1240px;color:#222;padding:0 1em}
h1{border-bottom:2px solid #c0392b;padding-bottom:.2em}
h2{margin-top:1.8em;color:#7b241c}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px}
th{background:#f4ece9;text-align:left;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.m{white-space:nowrap}
tr:nth-child(even) td{background:#fafafa}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
p.note,p.sub{color:#666;font-size:13px}
div.wrap{overflow-x:auto;max-width:100%}
caption{text-align:left;font-weight:600;padding:.2em 0}
ol.findings{background:#fdf6f4;border-left:4px solid #c0392b;padding:.6em 1em .6em 2.4em}
ol.findings li{margin:.3em 0}
code{background:#f4f4f4;padding:0 .2em}
"""
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """HTML of a text item: escaped, with Markdown's **strong** and `code` rendered."""
    escaped = html.escape(text)
    escaped = _STRONG.sub(r"<strong>\1</strong>", escaped)
    return _CODE.sub(r"<code>\1</code>", escaped)


def _markdown_table(item: Table) -> list[str]:
    link = f"([{item.name}.csv]({item.name}.csv))"
    if not item.shown:
        return [f"**{item.title}**: the figures are in {link}."]
    lines = [f"**{item.title}** {link}", ""]
    lines.append("| " + " | ".join(item.columns) + " |")
    lines.append("|" + "|".join("---" for _ in item.columns) + "|")
    for row in item.rows:
        cells = (text.replace("|", "\\|") for text in item.cells(row))
        lines.append("| " + " | ".join(cells) + " |")
    if item.note:
        lines += ["", f"_{item.note}_"]
    return lines


def _markdown(report: Report) -> str:
    lines = [f"# {report.title}", "", report.subtitle, ""]
    for heading, items in report.sections:
        lines += [f"## {heading}", ""]
        for item in items:
            if isinstance(item, Table):
                lines += _markdown_table(item)
            elif isinstance(item, Chart):
                lines.append(f"![{item.title}]({item.name}.png)")
            elif isinstance(item, Bullets):
                lines += [
                    f"{n}. {text}" if item.ordered else f"- {text}"
                    for n, text in enumerate(item.items, start=1)
                ]
            else:
                lines.append(item)
            lines.append("")
    return "\n".join(lines)


def _html_cell(value: Any, text: str) -> str:
    esc = html.escape
    if isinstance(value, Member):
        return f'<td class="m" title="{esc(value.member_id)}">{esc(text)}</td>'
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'<td class="n">{esc(text)}</td>'
    return f"<td>{esc(text)}</td>"


def _html_table(item: Table) -> list[str]:
    esc = html.escape
    link = f'<a href="{esc(item.name)}.csv">{esc(item.name)}.csv</a>'
    if not item.shown:
        return [
            f'<p class="note"><strong>{esc(item.title)}</strong>: the figures are in {link}.</p>'
        ]
    parts = [f'<div class="wrap"><table id="{esc(item.name)}">']
    parts.append(f"<caption>{esc(item.title)}</caption>")
    parts.append("<tr>" + "".join(f"<th>{esc(c)}</th>" for c in item.columns) + "</tr>")
    for row in item.rows:
        cells = (_html_cell(v, text) for v, text in zip(row, item.cells(row), strict=True))
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table></div>")
    if item.note:
        parts.append(f'<p class="note">{esc(item.note)}</p>')
    return parts


def _html(report: Report) -> str:
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(report.title)}</h1>",
        f'<p class="sub">{esc(report.subtitle)}</p>',
    ]
    for heading, items in report.sections:
        parts.append(f"<h2>{esc(heading)}</h2>")
        for item in items:
            if isinstance(item, Table):
                parts += _html_table(item)
            elif isinstance(item, Chart):
                data = base64.b64encode(item.png).decode("ascii")
                parts.append(
                    f'<img id="{esc(item.name)}" alt="{esc(item.title)}" '
                    f'src="data:image/png;base64,{data}">'
                )
            elif isinstance(item, Bullets):
                tag = "ol" if item.ordered else "ul"
                parts.append(f'<{tag} class="findings">')
                parts += [f"<li>{_inline(text)}</li>" for text in item.items]
                parts.append(f"</{tag}>")
            else:
                parts.append(f"<p>{_inline(item)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(report: Report, out: Path) -> list[Path]:
    """Write report.md, report.html, a CSV per table and a PNG per chart.

    Args:
        report: the report.
        out: the directory (created).

    Returns:
        The files written.
    """
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for _, items in report.sections:
        for item in items:
            if isinstance(item, Table):
                path = out / f"{item.name}.csv"
                with path.open("w", newline="", encoding="utf-8") as handle:
                    writer = csv.writer(handle)
                    writer.writerow(item.columns)
                    writer.writerows(["" if v is None else v for v in row] for row in item.rows)
                written.append(path)
            elif isinstance(item, Chart):
                path = out / f"{item.name}.png"
                path.write_bytes(item.png)
                written.append(path)
    for name, text in (("report.md", _markdown(report)), ("report.html", _html(report))):
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
