"""Text renderings of table rows the way operators already read them.

Strategy: pure functions from rows (mappings keyed by column name, as the
daemon's API returns them) to one string, so they are trivially tested and the
commands only print. `table` draws the mysql client's `+----+` boxes (numbers
right-aligned, NULL for None, "N rows in set" / "Empty set"); `vertical` is the
mysql client's `\\G` output; `csv_text` and `json_text` are for scripts.

Invariants: the column order is the one given (the performance_schema order),
never the order keys happen to have in a row; a key missing from a row is NULL.
Text from the bus or a server is untrusted: every cell of the table, vertical
and CSV renderings goes through `visible`, which shows control characters as
escapes (`\x1b`, `\x9b`, `\u202e`), so a member's host, state or version
cannot move the cursor, clear or recolour the operator's terminal. A newline
(LF) inside a value is data, not a control: MySQL prints a GTID set with
",\n" between its UUIDs. The table shows such a value as a cell of several
lines, `vertical` prints it as the mysql client's \\G does (continuation lines
from the margin), CSV quotes the real newline (RFC 4180) so the value reads
back exactly; every other control character stays escaped. JSON escapes them
itself.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Mapping, Sequence

from grstats.core.visible import visible

__all__ = [
    "FORMATS",
    "cell_text",
    "csv_text",
    "json_text",
    "render",
    "table",
    "vertical",
    "visible",
]

FORMATS = ("table", "vertical", "json", "csv")

_STARS = "*" * 27


def _lines(text: str) -> str:
    # newlines are data (a GTID set's ",\n"); each line is escaped on its own
    return "\n".join(visible(line) for line in text.split("\n"))


def cell_text(value: object) -> str:
    """How the mysql client prints one value: NULL for None, numbers as digits.

    Args:
        value: a cell from a row.

    Returns:
        The printed text.
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.3f}"
    return _lines(str(value))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _rows_in_set(count: int) -> str:
    if count == 0:
        return "Empty set"
    return f"{count} row{'s' if count != 1 else ''} in set"


def table(
    rows: Sequence[Mapping[str, object]],
    columns: Sequence[str],
    *,
    right: Collection[str] | None = None,
) -> str:
    """The mysql client's default output: a boxed table and the row count.

    Args:
        rows: the rows to show.
        columns: the columns, in display order.
        right: columns to right-align; None right-aligns the columns whose
            values are all numbers (or NULL), as the mysql client does.

    Returns:
        The text, ending with a newline. No rows gives just "Empty set".
    """
    if not rows:
        return _rows_in_set(0) + "\n"
    texts = [[cell_text(row.get(col)).split("\n") for col in columns] for row in rows]
    widths = [len(col) for col in columns]
    for cells in texts:
        widths = [max(w, *map(len, t)) for w, t in zip(widths, cells, strict=True)]
    # The mysql client right-aligns a column whose values are numbers.
    numeric = [
        col in right
        if right is not None
        else any(_is_number(row.get(col)) for row in rows)
        and all(row.get(col) is None or _is_number(row.get(col)) for row in rows)
        for col in columns
    ]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [rule, "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |"]
    out.append(rule)
    for cells in texts:
        # a multi-line cell makes its row several lines high; the others pad with blanks
        for i in range(max(len(t) for t in cells)):
            parts = (
                (t[i] if i < len(t) else "").rjust(w)
                if num
                else (t[i] if i < len(t) else "").ljust(w)
                for t, w, num in zip(cells, widths, numeric, strict=True)
            )
            out.append("| " + " | ".join(parts) + " |")
    out.append(rule)
    out.append(_rows_in_set(len(rows)))
    return "\n".join(out) + "\n"


def vertical(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """The mysql client's `\\G` output: one block per row, names right-aligned.

    Args:
        rows: the rows to show.
        columns: the columns, in display order.

    Returns:
        The text, ending with a newline.
    """
    width = max((len(col) for col in columns), default=0)
    out: list[str] = []
    for number, row in enumerate(rows, start=1):
        out.append(f"{_STARS} {number}. row {_STARS}")
        out.extend(f"{col.rjust(width)}: {cell_text(row.get(col))}" for col in columns)
    out.append(_rows_in_set(len(rows)))
    return "\n".join(out) + "\n"


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    return _lines(value) if isinstance(value, str) else value


def csv_text(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """RFC 4180 CSV with a header line; None is an empty field, control characters escaped.

    A newline inside a value is kept (the field is quoted), so a GTID set reads
    back exactly with any RFC 4180 reader.

    Args:
        rows: the rows to show.
        columns: the columns, in order.

    Returns:
        The CSV text (CRLF line ends, as the csv module writes them).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(row.get(col)) for col in columns])
    return buffer.getvalue()


def json_text(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """A JSON array of objects keyed by column name, in column order (as the API).

    Args:
        rows: the rows to show.
        columns: the columns, in order.

    Returns:
        Indented JSON ending with a newline.
    """
    data = [{col: row.get(col) for col in columns} for row in rows]
    return json.dumps(data, indent=2) + "\n"


def render(fmt: str, rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """Dispatch to one of FORMATS.

    Args:
        fmt: one of FORMATS.
        rows: the rows to show.
        columns: the columns, in order.

    Returns:
        The text.

    Raises:
        ValueError: for a format not in FORMATS (a programming error; click
            validates user input).
    """
    if fmt == "table":
        return table(rows, columns)
    if fmt == "vertical":
        return vertical(rows, columns)
    if fmt == "json":
        return json_text(rows, columns)
    if fmt == "csv":
        return csv_text(rows, columns)
    raise ValueError(f"unknown format {fmt!r}")
