"""What `grstats watch` shows: the member-stats view, rates, and its two renderings.

Strategy: `build_view` is pure (the member tables in, display rows out) so the
rate arithmetic is tested without a terminal; `live_table` is the rich table
drawn in place on a terminal (changed cells highlighted, UNREACHABLE in red),
`plain_table` the mysql-client table printed off a terminal. Both show the
80-column view by default (`NARROW`: short headers, a member as host:port,
ROLE and LAG_S kept, the rest given up from the right to fit) and every
column with the member's UUID with `wide=True` (`grstats watch --wide`).

Invariants: a counter that went down (member restart) shows no rate for that
refresh, never a negative one. Every cell shown goes through
`grstats.cli.render.cell_text`, which makes control characters visible:
remote text cannot move the cursor or recolour the operator's terminal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from rich import box
from rich.table import Table
from rich.text import Text

from grstats.cli import narrow, render
from grstats.core import columns as col
from grstats.core.labels import member_labels
from grstats.core.snapshot import (
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
    Row,
)
from protocol.humanize import duration

__all__ = [
    "COLUMNS",
    "NARROW",
    "RATE_COLUMNS",
    "ViewState",
    "build_view",
    "fit_columns",
    "fit_narrow",
    "live_table",
    "plain_table",
    "title_line",
]

# display column -> source column (member_stats unless noted)
RATE_COLUMNS: Mapping[str, str] = {
    "checked/s": col.COUNT_TRANSACTIONS_CHECKED,
    "conflicts/s": col.COUNT_CONFLICTS_DETECTED,
    "applied/s": col.COUNT_TRANSACTIONS_REMOTE_APPLIED,
}
COLUMNS: tuple[str, ...] = (
    "MEMBER",
    col.MEMBER_ID,
    "STATE",
    "ROLE",
    "IN_QUEUE",
    "APPLIER_QUEUE",
    "CHECKED",
    "checked/s",
    "CONFLICTS",
    "conflicts/s",
    "APPLIED",
    "applied/s",
    "PROPOSED",
    "ROLLBACK",
    "ROWS_VALIDATING",
    "LAG_S",
    "LAST_SEEN_S",
)
_STATS_SOURCES: Mapping[str, str] = {
    "IN_QUEUE": col.COUNT_TRANSACTIONS_IN_QUEUE,
    "APPLIER_QUEUE": col.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE,
    "CHECKED": col.COUNT_TRANSACTIONS_CHECKED,
    "CONFLICTS": col.COUNT_CONFLICTS_DETECTED,
    "APPLIED": col.COUNT_TRANSACTIONS_REMOTE_APPLIED,
    "PROPOSED": col.COUNT_TRANSACTIONS_LOCAL_PROPOSED,
    "ROLLBACK": col.COUNT_TRANSACTIONS_LOCAL_ROLLBACK,
    "ROWS_VALIDATING": col.COUNT_TRANSACTIONS_ROWS_VALIDATING,
}
# The default view: (header, display column), given up from the right to fit;
# the first six (member, state, role, lag, both queues) fit 80 in the worst case.
NARROW: tuple[tuple[str, str], ...] = (
    ("MEMBER", "MEMBER"),
    ("STATE", "STATE"),
    ("ROLE", "ROLE"),
    ("LAG", "LAG_S"),
    ("CERT_Q", "IN_QUEUE"),
    ("APPLY_Q", "APPLIER_QUEUE"),
    ("appl/s", "applied/s"),
    ("chk/s", "checked/s"),
    ("confl/s", "conflicts/s"),
    ("LAST_SEEN", "LAST_SEEN_S"),
)
_DURATION_HEADERS = frozenset({"LAG", "LAST_SEEN"})  # seconds read as `4 min 12 s`
_NARROW_KEEP = 6
_RIGHT = frozenset(COLUMNS) - {"MEMBER", col.MEMBER_ID, "STATE", "ROLE"}
_NOT_HIGHLIGHTED = {"LAG_S", "LAST_SEEN_S", "checked/s", "conflicts/s", "applied/s"}

# The mysql client's box: +---+ rules, | between cells.
MYSQL_BOX = box.Box("+-++\n| ||\n+-++\n| ||\n+-++\n+-++\n| ||\n+-++\n", ascii=True)


@dataclass(frozen=True, slots=True)
class ViewState:
    """What one refresh leaves for the next: counters and display rows per member."""

    at: float  # time.monotonic() of the read
    counters: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    shown: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def build_view(
    tables: Mapping[str, Sequence[Row]], at: float, previous: ViewState | None
) -> tuple[list[dict[str, object]], set[tuple[str, str]], ViewState]:
    """Join the four member tables per member and compute rates since `previous`.

    Args:
        tables: rows of replication_group_member_stats, replication_group_members
            grstats_member_status and replication_group_member_lag (all but the
            first may be missing or empty).
        at: monotonic seconds of this read.
        previous: what the last refresh returned, None on the first.

    Returns:
        (display rows keyed by COLUMNS, the (member_id, column) cells whose
        value changed since `previous`, the state for the next refresh).
        A rate is None on the first refresh, for a new member, or after a
        counter went down (a restart).
    """
    members = {str(r.get(col.MEMBER_ID)): r for r in tables.get(MEMBERS_TABLE, ())}
    status = {str(r.get(col.MEMBER_ID)): r for r in tables.get(MEMBER_STATUS_TABLE, ())}
    # the group applier channel's REPLICATION_LAG_SECONDS (Shell's figure; 0: all applied)
    lag = {
        str(r.get(col.MEMBER_ID)): r.get(col.REPLICATION_LAG_SECONDS)
        for r in tables.get(MEMBER_LAG_TABLE, ())
        if r.get(col.CHANNEL_NAME) == col.GROUP_REPLICATION_CHANNEL
    }
    rows: list[dict[str, object]] = []
    changed: set[tuple[str, str]] = set()
    counters: dict[str, dict[str, int]] = {}
    shown: dict[str, dict[str, object]] = {}
    labels = member_labels(tables.get(MEMBERS_TABLE, ()))
    elapsed = at - previous.at if previous is not None else 0.0
    for stats in tables.get(MEMBER_STATS_TABLE, ()):
        member_id = str(stats.get(col.MEMBER_ID) or "")
        member = members.get(member_id, {})
        row: dict[str, object] = {
            "MEMBER": labels.get(member_id, ""),
            col.MEMBER_ID: member_id,
            "STATE": member.get(col.MEMBER_STATE),
            "ROLE": member.get(col.MEMBER_ROLE),
            "LAST_SEEN_S": status.get(member_id, {}).get(col.LAST_SEEN_AGE_SECONDS),
            "LAG_S": lag.get(member_id),
        }
        for display, column in _STATS_SOURCES.items():
            row[display] = stats.get(column)
        now_counters = {
            column: value
            for column in RATE_COLUMNS.values()
            if (value := _int(stats.get(column))) is not None
        }
        before = previous.counters.get(member_id, {}) if previous is not None else {}
        for display, column in RATE_COLUMNS.items():
            rate: float | None = None
            if column in now_counters and column in before and elapsed > 0:
                step = now_counters[column] - before[column]
                rate = step / elapsed if step >= 0 else None
            row[display] = rate
        if previous is not None and member_id in previous.shown:
            old = previous.shown[member_id]
            changed.update(
                (member_id, col)
                for col in COLUMNS
                if col not in _NOT_HIGHLIGHTED and old.get(col) != row.get(col)
            )
        counters[member_id] = now_counters
        shown[member_id] = row
        rows.append(row)
    return rows, changed, ViewState(at=at, counters=counters, shown=shown)


def _cell(column: str, value: object, header: str = "") -> str:
    if header in _DURATION_HEADERS and isinstance(value, float) and not math.isnan(value):
        return duration(value)  # the default view: as a person reads it (not NaN)
    if value is None:
        return "" if column.endswith("/s") else "NULL"
    if column.endswith("/s") and isinstance(value, float):
        return f"{value:.1f}"
    if column == "LAST_SEEN_S" and isinstance(value, float):
        return f"{value:.1f}"
    if column == "LAG_S" and isinstance(value, float):
        return f"{value:.2f}"
    return render.cell_text(value)


def title_line(where: str, interval: float, error: str | None) -> str:
    clock = datetime.now(UTC).strftime("%H:%M:%S UTC")
    title = f"replication_group_member_stats @ {where}  every {interval:g}s  {clock}"
    return render.visible(f"{title}  [stale: {error}]" if error else title)


# Columns given up, in this order, when the terminal is too narrow; the member,
# its state and the queues and rates always stay.
_DROP_ORDER = (
    "PROPOSED",
    "APPLIED",
    "CHECKED",
    col.MEMBER_ID,  # first shortened to 8 characters, then dropped
    "ROWS_VALIDATING",
    "ROLE",
    "LAST_SEEN_S",
    "CONFLICTS",
    "ROLLBACK",
    "LAG_S",
)
_SHORT_ID = 8


def _needed(
    rows: Sequence[Mapping[str, object]], spec: Sequence[tuple[str, str]], short: bool
) -> int:
    """Terminal cells of a table of `spec`'s (header, column) with the mysql box."""
    total = 1
    for header, column in spec:
        cells = [_cell(column, row.get(column), header) for row in rows]
        if short and column == col.MEMBER_ID:
            cells = [c[:_SHORT_ID] for c in cells]
        total += max([len(header), *map(len, cells)]) + 3
    return total


def fit_columns(rows: Sequence[Mapping[str, object]], width: int) -> tuple[tuple[str, ...], bool]:
    """The columns of the wide view (`--wide`) that fit in `width` terminal cells.

    Args:
        rows: display rows from `build_view`.
        width: the terminal width.

    Returns:
        (columns in display order, whether MEMBER_ID is shortened).
    """

    def needed(columns: Sequence[str], short: bool) -> int:
        return _needed(rows, [(c, c) for c in columns], short)

    columns = list(COLUMNS)
    short = False
    for victim in _DROP_ORDER:
        if needed(columns, short) <= width:
            break
        if victim == col.MEMBER_ID and not short:
            short = True
            if needed(columns, short) <= width:
                break
        columns.remove(victim)
    return tuple(columns), short


def fit_narrow(rows: Sequence[Mapping[str, object]], width: int) -> tuple[tuple[str, str], ...]:
    """The (header, column) pairs of the default view that fit in `width` cells.

    Args:
        rows: display rows from `build_view`.
        width: the terminal width.

    Returns:
        A prefix of NARROW, never shorter than its member, state, role, lag and queues.
    """
    spec = list(NARROW)
    while len(spec) > _NARROW_KEEP and _needed(rows, spec, False) > width:
        spec.pop()
    return tuple(spec)


def _view(
    rows: Sequence[Mapping[str, object]], width: int, wide: bool
) -> tuple[tuple[tuple[str, str], ...], bool]:
    if not wide:
        return fit_narrow(rows, width), False
    columns, short = fit_columns(rows, width)
    return tuple((c, c) for c in columns), short


def live_table(
    rows: Sequence[Mapping[str, object]],
    changed: set[tuple[str, str]],
    title: str,
    width: int,
    *,
    wide: bool = False,
) -> Table:
    """The rich table of one refresh: mysql-client box, changes yellow, UNREACHABLE red.

    Args:
        rows: display rows from `build_view`.
        changed: (member_id, column) cells to highlight.
        title: the line above the table.
        width: terminal width (columns are given up to fit: `fit_narrow`, `fit_columns`).
        wide: every column under its full name, the member's UUID included.

    Returns:
        A `rich.table.Table`.
    """
    spec, short = _view(rows, width, wide)
    table = Table(
        box=MYSQL_BOX,
        title=render.visible(title),
        title_justify="left",
        caption=None if wide else _footer(spec),
        caption_justify="left",
        show_edge=True,
        pad_edge=True,
    )
    for header, column in spec:
        justify: Literal["left", "right"] = "right" if column in _RIGHT else "left"
        table.add_column(header, justify=justify, no_wrap=True)
    for row in rows:
        member_id = str(row[col.MEMBER_ID])
        unreachable = row.get("STATE") == "UNREACHABLE"
        cells: list[Text] = []
        for header, column in spec:
            style = ""
            if unreachable and column in ("STATE", "MEMBER", col.MEMBER_ID):
                style = "bold red"
            elif (member_id, column) in changed:
                style = "bold yellow"
            text = _cell(column, row.get(column), "" if wide else header)
            if short and column == col.MEMBER_ID:
                text = text[:_SHORT_ID]
            cells.append(Text(text, style=style))
        table.add_row(*cells, style="red" if unreachable else "")
    return table


def plain_table(rows: Sequence[Mapping[str, object]], title: str, *, wide: bool = False) -> str:
    """One refresh as a plain mysql-client table (off a terminal).

    Args:
        rows: display rows from `build_view`.
        title: the line above the table.
        wide: every column under its full name; else what fits
            the terminal's width (COLUMNS, else 80).

    Returns:
        The text.
    """
    spec = tuple((c, c) for c in COLUMNS) if wide else fit_narrow(rows, narrow.terminal_width())
    texts = [{h: _cell(c, r.get(c), "" if wide else h) for h, c in spec} for r in rows]
    right = {h for h, c in spec if c in _RIGHT}
    text = title + "\n" + render.table(texts, [h for h, _ in spec], right=right)
    return text if wide else text + _footer(spec) + "\n"


def _footer(spec: Sequence[tuple[str, str]]) -> str:
    """The narrow view's last line: the columns it left out and `--wide`."""
    shown = {column for _, column in spec}
    hidden = sum(1 for column in COLUMNS if column not in shown)
    return narrow.footer(hidden, len(COLUMNS), "all, and the member UUIDs: --wide")
