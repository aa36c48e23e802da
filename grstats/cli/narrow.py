"""The default table view of the table commands: what fits the terminal.

Strategy: a table's full column set (MySQL's names, `--wide`) rarely fits a
terminal: `lag` is ~1,100 characters wide, `commit-path` ~1,700. By default
each table shows a short, declared selection under short headers first, then
the table's other columns under their own names, taking each one that still
fits the terminal's width (`terminal_width`: COLUMNS, else the terminal,
else 80) -- so a wider terminal shows more. A member is `host:port` (its
MEMBER_HOST/MEMBER_PORT from replication_group_members, `core.labels`)
instead of its UUID -- with the UUID's first 8 digits added where two members
share a host:port (a lab on one host) -- in its own column and wherever a
cell names a member (DONORS, consensus leaders); a UUID inside a GTID (one
followed by `:`) is data and stays. Durations in seconds read as `4 min 12 s`
(`protocol.humanize.duration`). The last line says how many of the table's
columns are hidden and how to see them. JSON, CSV, `--vertical` and `--wide`
always show every column under MySQL's names, UUIDs and seconds as they are.
"""

from __future__ import annotations

import math
import re
import shutil
import textwrap
from collections.abc import Mapping, Sequence

from grstats.cli import render
from grstats.core import columns as col
from grstats.core.labels import label_order
from grstats.core.snapshot import (
    APPLIER_METRICS_TABLE,
    APPLIER_WORKERS_TABLE,
    COMMIT_PATH_TABLE,
    FLOW_CONTROL_TABLE,
    MEMBER_GTIDS_TABLE,
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
)
from protocol.humanize import duration

__all__ = [
    "DURATIONS",
    "NARROW",
    "SEE_ALL",
    "WIDTH",
    "footer",
    "member_text",
    "narrow_columns",
    "narrow_table",
    "terminal_width",
]

WIDTH = 80  # when the terminal's width is not known (a pipe, no COLUMNS)
MIN_WIDTH = 40  # a narrower COLUMNS is taken as this
SEE_ALL = "all, under MySQL's names: --wide, -E, --format json"
MEMBER = "MEMBER"
# table -> (short header, column) in display order; MEMBER is the host:port label
NARROW: Mapping[str, Sequence[tuple[str, str]]] = {
    MEMBERS_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("STATE", col.MEMBER_STATE),
        ("ROLE", col.MEMBER_ROLE),
        ("VERSION", col.MEMBER_VERSION),
    ),
    MEMBER_STATS_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("IN_QUEUE", col.COUNT_TRANSACTIONS_IN_QUEUE),
        ("CHECKED", col.COUNT_TRANSACTIONS_CHECKED),
        ("CONFLICTS", col.COUNT_CONFLICTS_DETECTED),
        ("APPLY_QUEUE", col.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE),
        ("APPLIED", col.COUNT_TRANSACTIONS_REMOTE_APPLIED),
    ),
    MEMBER_STATUS_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("LOCAL", "IS_LOCAL"),
        ("LAST_SEEN", "LAST_SEEN_AGE_SECONDS"),
        ("SEQ", "SEQ"),
        ("ACCEPTED", "ACCEPTED"),
    ),
    MEMBER_LAG_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("LAG", col.REPLICATION_LAG),
        ("QUEUE_LAG", col.QUEUE_LAG_SECONDS),
        ("APPLY_LAG", col.APPLY_LAG_SECONDS),
        ("CLOCK_OFFSET", col.CLOCK_OFFSET_SECONDS),
        ("CHANNEL", col.CHANNEL_NAME),
    ),
    FLOW_CONTROL_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("BOTTLENECK", "BOTTLENECK"),
        ("THROTTLING", "THROTTLING"),
        ("QUOTA", "GROUP_QUOTA"),
        ("CERT_Q", "CERTIFIER_QUEUE"),
        ("APPLY_Q", "APPLIER_QUEUE"),
        ("FAILOVER_READY", "FAILOVER_READY"),
    ),
    APPLIER_METRICS_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("CHANNEL", col.CHANNEL_NAME),
        ("COMMITTED", "TRANSACTIONS_COMMITTED_COUNT"),
        ("PENDING", "TRANSACTIONS_PENDING_COUNT"),
        ("ONGOING", "TRANSACTIONS_ONGOING_COUNT"),
        ("EVENTS", "EVENTS_COMMITTED_COUNT"),
    ),
    APPLIER_WORKERS_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("CHANNEL", col.CHANNEL_NAME),
        ("WORKER", "WORKER_ID"),
        ("TYPE", "ONGOING_TRANSACTION_TYPE"),
        ("FULL_B", "ONGOING_TRANSACTION_FULL_SIZE_BYTES"),
        ("APPLIED_B", "ONGOING_TRANSACTION_APPLIED_SIZE_BYTES"),
    ),
    MEMBER_GTIDS_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("ERRANT", col.ERRANT_COUNT),
        ("MISSING", col.MISSING_COUNT),
        ("RECOVERY", col.RECOVERY_METHOD),
        ("DONORS", col.DONORS),
        ("ERRANT_SINCE", col.ERRANT_SINCE),
    ),
    COMMIT_PATH_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("DOMINANT", col.COMMIT_PATH_DOMINANT),
        ("PERIOD", col.COMMIT_PATH_PERIOD),
        ("CONSENSUS", "CONSENSUS_SHARE"),
        ("CERT_GC", "CERTIFICATION_GC_SHARE"),
        ("BEFORE", "BEFORE_BEGIN_SHARE"),
        ("AFTER", "AFTER_TERMINATION_SHARE"),
        ("SYNC", "AFTER_SYNC_SHARE"),
        ("FLOW", "FLOW_CONTROL_SHARE"),
    ),
    # `grstats channels`: every member's channels, the newest error, its age and tries
    col.CHANNELS_OVERVIEW.name: (
        (MEMBER, col.MEMBER_ID),
        ("CHANNEL", col.CHANNEL_NAME),
        ("IO", col.IO_STATE),
        ("SQL", col.SQL_STATE),
        ("ERROR", col.LAST_ERROR_NUMBER),
        ("ERROR_AGE", col.ERROR_AGE_SECONDS),
        ("TRIES", col.ERROR_TRIES),
    ),
}

# Columns holding seconds that a person reads as a duration in the narrow view.
DURATIONS = frozenset(
    {
        col.LAST_SEEN_AGE_SECONDS,
        col.REPLICATION_LAG_SECONDS,
        col.QUEUE_LAG_SECONDS,
        col.APPLY_LAG_SECONDS,
        col.APPLY_TIME_SECONDS,
        col.CLOCK_OFFSET_SECONDS,
        col.THROTTLED_SECONDS,
        col.CATCH_UP_ETA_SECONDS,
        col.COMMIT_PATH_PERIOD,
        col.ERROR_AGE_SECONDS,
    }
)
# a UUID not followed by ':' (there it is a GTID's source, data to keep)
_UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?!:)", re.IGNORECASE
)


def terminal_width() -> int:
    """The width the narrow views fit: COLUMNS, else the terminal's, else WIDTH (80).

    A width below MIN_WIDTH is taken as MIN_WIDTH: the member column alone needs about that.
    """
    columns = shutil.get_terminal_size((WIDTH, 24)).columns
    return max(MIN_WIDTH, columns if columns > 0 else WIDTH)


def member_text(value: object, labels: Mapping[str, str]) -> object:
    """`value` with every member UUID (not a GTID's) replaced by the member's label.

    Args:
        value: a cell.
        labels: core.labels.member_labels() of the group.

    Returns:
        The cell as a person reads it; a value that is not text is returned as it is.
    """
    if not isinstance(value, str) or not labels:
        return value
    return _UUID.sub(lambda m: labels.get(m.group(), m.group()), value)


def _shown(column: str, value: object, labels: Mapping[str, str]) -> object:
    if column in DURATIONS and isinstance(value, int | float) and not isinstance(value, bool):
        return value if math.isnan(value) else duration(value)
    return member_text(value, labels)


def narrow_columns(table: str) -> Sequence[tuple[str, str]]:
    """(header, column) of `table`'s default view, in the order they are taken.

    The table's NARROW selection under its short headers, then every other
    declared column under its own name; a table without a selection shows
    its member as MEMBER first.

    Raises:
        KeyError: `table` is not a declared table.
    """
    names = col.table(table).names
    chosen = list(NARROW.get(table, ()))
    if not chosen and col.MEMBER_ID in names:
        chosen = [(MEMBER, col.MEMBER_ID)]
    taken = {c for _, c in chosen}
    return [*chosen, *((c, c) for c in names if c not in taken)]


def _cell_width(text: str) -> int:
    return max(map(len, text.split("\n")))


def _clip(text: str, limit: int) -> str:
    lines = text.split("\n")
    return "\n".join(line if len(line) <= limit else line[: limit - 1] + "~" for line in lines)


def by_label(
    rows: Sequence[Mapping[str, object]], labels: Mapping[str, str]
) -> list[Mapping[str, object]]:
    """`rows` in host:port order, as the live page lists members (core.labels.label_order;
    a member's rows, such as its channels, keep their order)."""
    return sorted(rows, key=lambda row: label_order(str(row.get(col.MEMBER_ID) or ""), labels))


def narrow_table(
    table: str,
    rows: Sequence[Mapping[str, object]],
    labels: Mapping[str, str],
    width: int | None = None,
) -> str:
    """The default (narrow) table text of `table`'s rows.

    Args:
        table: a declared table's name.
        rows: its rows.
        labels: core.labels.member_labels() of the group.
        width: the width to fit (None: `terminal_width()`).

    Returns:
        The text, no line wider than `width`, members in host:port order, with a
        last line saying how many of the table's columns are hidden and how to see them.
    """
    width = terminal_width() if width is None else width
    wanted = list(narrow_columns(table))
    total = len(col.table(table).names)
    if not rows:
        return render.table(rows, [h for h, _ in wanted[:1]])
    rows = by_label(rows, labels)
    limit = width - 4  # one column's box: "| " + cell + " |"
    cells = {
        header: [_clip(render.cell_text(_shown(c, row.get(c), labels)), limit) for row in rows]
        for header, c in wanted
    }
    right = {
        header
        for header, c in wanted
        if c in DURATIONS
        or all(
            row.get(c) is None
            or (isinstance(row.get(c), int | float) and not isinstance(row.get(c), bool))
            for row in rows
        )
    }
    used = 1  # the box's left edge; each column adds its width and " | "
    shown: list[str] = []
    for header, _ in wanted:
        needed = max(len(header), *(_cell_width(t) for t in cells[header])) + 3
        if shown and used + needed > width:
            continue  # a narrower column further on may still fit
        shown.append(header)
        used += needed
    texts = [{h: cells[h][i] for h in shown} for i in range(len(rows))]
    text = render.table(texts, shown, right=right & set(shown))
    return text + footer(total - len(shown), total, width=width) + "\n"


def footer(hidden: int, total: int, how: str = SEE_ALL, *, width: int = WIDTH) -> str:
    """The last line of a narrow view: how many of the columns it hides and how to see them.

    Args:
        hidden: the number of columns not shown.
        total: the table's number of columns.
        how: the options that show every column.
        width: the terminal's width: a longer line is wrapped.

    Returns:
        The line (lines), without a final newline.
    """
    what = f"{hidden} of {total} columns hidden" if hidden else f"all {total} columns shown"
    return textwrap.fill(f"({what}; {how})", width=width, break_on_hyphens=False)
