"""What the live page shows of each member: its columns declared once, and their texts.

Strategy: the page is a table of members, host:port first (`core.labels`),
each of its columns a few declared figures (`PageField`: a declared table,
one of its columns, how the figure reads). The server renders the first
paint from these declarations (`grstats.api.page`) and writes each figure's
table, column and format into the page, so the page's script updates it from
the same `/v1/tables/<name>` JSON without a second list of columns: a new
figure is one `PageField` here. What no table holds -- rates over the last
step and the sparklines -- comes from `core.recent`; a table declared with
MySQL's channel error columns (LAST_ERROR_NUMBER, LAST_ERROR_MESSAGE) is
shown in the channel errors column as soon as it is declared.

Invariants: every text from a row goes through `visible` (control
characters as escapes) and is cut at `MAX_TEXT` characters, saying how many
more there were (the JSON has the whole value); a cell's tone (ok, warn,
bad) only ever repeats what its text says -- colour is never the only
carrier. Nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from grstats.core import columns as col
from grstats.core.labels import label_order, member_labels
from grstats.core.snapshot import (
    COMMIT_PATH_TABLE,
    FLOW_CONTROL_TABLE,
    MEMBER_GTIDS_TABLE,
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
    DaemonSnapshot,
    Row,
)
from grstats.core.visible import visible
from protocol.humanize import duration

__all__ = [
    "MAX_TEXT",
    "PAGE_COLUMNS",
    "RECENT",
    "MemberRow",
    "PageColumn",
    "PageField",
    "error_tables",
    "field_text",
    "group_rows",
    "groups",
    "page_tables",
]

Format = Literal["text", "count", "duration", "rate", "state", "ready", "flag", "dominant"]
Tone = Literal["", "ok", "warn", "bad"]

MAX_TEXT: Final = 120  # characters of one text shown; the rest is counted
RECENT: Final = "recent"  # the pseudo-table of what core.recent holds (rates)
NULL_TEXT: Final = "\u2014"  # an em dash: the value is NULL (not known)
# MySQL's channel error columns (replication_connection_status,
# replication_applier_status_by_coordinator / _by_worker show the error now)
_ERROR_COLUMNS: Final = frozenset(
    {col.MEMBER_ID, col.CHANNEL_NAME, col.LAST_ERROR_NUMBER, col.LAST_ERROR_MESSAGE}
)

_STATE_TONE: Final[Mapping[str, Tone]] = {
    "ONLINE": "ok",
    "RECOVERING": "warn",
    "UNREACHABLE": "bad",
    "ERROR": "bad",
    "OFFLINE": "bad",
}


@dataclass(frozen=True, slots=True)
class PageField:
    """One figure in a page column.

    Attributes:
        table: the declared table it is read from (or RECENT).
        column: the column of that table.
        fmt: how it reads (see `field_text`).
        label: a word shown before it ("" for none).
    """

    table: str
    column: str
    fmt: Format
    label: str = ""


@dataclass(frozen=True, slots=True)
class PageColumn:
    """One column of the page's member table.

    Attributes:
        key: its name in the page (a CSS class and the JSON key of its sparkline).
        header: what the column header says.
        fields: its figures, in order.
        spark: the sparkline drawn under it ("" for none; a `core.recent` series group).
    """

    key: str
    header: str
    fields: tuple[PageField, ...]
    spark: str = ""


PAGE_COLUMNS: Final = (
    PageColumn(
        "state",
        "State",
        (
            PageField(MEMBERS_TABLE, col.MEMBER_STATE, "state"),
            PageField(MEMBERS_TABLE, col.MEMBER_ROLE, "text"),
        ),
    ),
    PageColumn(
        "queues",
        "Queues",
        (
            PageField(MEMBER_STATS_TABLE, col.COUNT_TRANSACTIONS_IN_QUEUE, "count", "certifier"),
            PageField(
                MEMBER_STATS_TABLE,
                col.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE,
                "count",
                "applier",
            ),
        ),
        spark="queues",
    ),
    PageColumn(
        "rates",
        "Per second",
        (
            PageField(RECENT, "checked_rate", "rate", "checked"),
            PageField(RECENT, "conflicts_rate", "rate", "conflicts"),
            PageField(RECENT, "applied_rate", "rate", "applied"),
        ),
        spark="applied",
    ),
    PageColumn(
        "lag",
        "Lag",
        (
            PageField(MEMBER_LAG_TABLE, col.REPLICATION_LAG_SECONDS, "duration"),
            PageField(MEMBER_LAG_TABLE, col.QUEUE_LAG_SECONDS, "duration", "queue"),
            PageField(MEMBER_LAG_TABLE, col.APPLY_LAG_SECONDS, "duration", "apply"),
        ),
        spark="lag",
    ),
    PageColumn(
        "ready",
        "Catch-up, failover",
        (
            PageField(FLOW_CONTROL_TABLE, col.CATCH_UP, "text"),
            PageField(FLOW_CONTROL_TABLE, col.FAILOVER_READY, "ready"),
        ),
    ),
    PageColumn(
        "flow",
        "Flow control",
        (
            PageField(FLOW_CONTROL_TABLE, col.BOTTLENECK, "flag", "bottleneck"),
            PageField(FLOW_CONTROL_TABLE, col.THROTTLING, "flag", "throttling"),
        ),
    ),
    PageColumn(
        "gtids",
        "GTIDs",
        (
            PageField(MEMBER_GTIDS_TABLE, col.ERRANT_COUNT, "count", "errant"),
            PageField(MEMBER_GTIDS_TABLE, col.MISSING_COUNT, "count", "missing"),
            PageField(MEMBER_GTIDS_TABLE, col.RECOVERY_METHOD, "text", "recovery"),
        ),
    ),
    PageColumn(
        "commit",
        "Commit path",
        (PageField(COMMIT_PATH_TABLE, col.COMMIT_PATH_DOMINANT, "dominant"),),
    ),
)


def error_tables() -> tuple[str, ...]:
    """The declared tables with MySQL's channel error columns, read now (channel errors)."""
    return tuple(t.name for t in col.TABLES if set(t.names) >= _ERROR_COLUMNS)


def page_tables() -> tuple[str, ...]:
    """Every declared table the page reads, in order (the script fetches these)."""
    named = [f.table for c in PAGE_COLUMNS for f in c.fields if f.table != RECENT]
    wanted = [MEMBERS_TABLE, MEMBER_STATUS_TABLE, *named, *error_tables()]
    return tuple(dict.fromkeys(wanted))


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def _text(value: object) -> str:
    text = visible(str(value))
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\u2026 ({len(text) - MAX_TEXT:,} more characters)"


def field_text(field: PageField, row: Mapping[str, object] | None) -> tuple[str, Tone]:
    """The text and tone of one figure of one member (its row of `field.table`).

    Formats: text (escaped, cut at MAX_TEXT), count (1,355), duration
    (`protocol.humanize.duration`), rate (per second, one decimal below 100),
    state (a member state; its tone says how well), ready (FAILOVER_READY:
    ready / not ready), flag (THROTTLING yes / no; BOTTLENECK its kind or
    no), dominant (the commit path's dominant cost and its share).

    Args:
        field: the figure.
        row: the member's row of that table (None: the member has none).

    Returns:
        (text, tone); a NULL or missing value reads NULL_TEXT.
    """
    value = None if row is None else row.get(field.column)
    number = _number(value)
    fmt = field.fmt
    if fmt == "dominant":
        return _dominant(row)
    if value is None or (fmt in ("count", "duration", "rate", "ready") and number is None):
        return NULL_TEXT, ""
    if fmt == "count":
        return f"{round(number or 0):,}", ""
    if fmt == "duration":
        return duration(number or 0.0), ""
    if fmt == "rate":
        rate = number or 0.0
        return (f"{rate:.1f}" if rate < 100 else f"{rate:,.0f}"), ""
    if fmt == "state":
        text = str(value)
        return _text(text), _STATE_TONE.get(text, "warn")
    if fmt == "ready":
        return ("ready", "ok") if number else ("not ready", "bad")
    if fmt == "flag":
        if value in ("", 0):
            return "no", ""
        return ("yes" if value == 1 else _text(value)), "warn"
    return _text(value), ""


def _dominant(row: Mapping[str, object] | None) -> tuple[str, Tone]:
    dominant = None if row is None else row.get(col.COMMIT_PATH_DOMINANT)
    if not isinstance(dominant, str) or not dominant:
        return NULL_TEXT, ""
    share = _number((row or {}).get(f"{dominant.upper()}_SHARE"))
    name = _text(dominant.replace("_", " "))
    return (name if share is None else f"{name} {100 * share:.0f} %"), ""


@dataclass(frozen=True, slots=True)
class MemberRow:
    """One member as the page shows it.

    Attributes:
        member_id: its server UUID.
        label: host:port (with the UUID's first digits where two share one).
        local: True for the member this daemon speaks for.
        rows: its row of each table the page reads, by table name (first
            row of the group's applier channel where a member has several).
        errors: its channel errors, one text each (table, channel, number, message).
    """

    member_id: str
    label: str
    local: bool
    rows: Mapping[str, Row]
    errors: tuple[str, ...]


def groups(snapshot: DaemonSnapshot) -> dict[str, int]:
    """Group name -> its number of members, in name order (a collector's index)."""
    counted: dict[str, int] = {}
    for row in snapshot.table(MEMBER_STATUS_TABLE):
        name = str(row.get(col.GROUP_NAME) or "")
        counted[name] = counted.get(name, 0) + 1
    return dict(sorted(counted.items()))


def _of_member(rows: Sequence[Row], member: str) -> Row | None:
    first = None
    for row in rows:
        if row.get(col.MEMBER_ID) == member:
            if row.get(col.CHANNEL_NAME, col.GROUP_REPLICATION_CHANNEL) == (
                col.GROUP_REPLICATION_CHANNEL
            ):
                return row
            first = first or row
    return first


def _errors(snapshot: DaemonSnapshot, member: str) -> tuple[str, ...]:
    out = []
    for table in error_tables():
        for row in snapshot.table(table):
            number = row.get(col.LAST_ERROR_NUMBER)
            if row.get(col.MEMBER_ID) != member or number in (None, 0):
                continue
            channel = _text(row.get(col.CHANNEL_NAME) or "")
            message = _text(row.get(col.LAST_ERROR_MESSAGE) or "")
            out.append(f"{channel}: error {_text(number)}: {message}")
    return tuple(out)


def group_rows(snapshot: DaemonSnapshot, group: str) -> list[MemberRow]:
    """The members of `group` as the page shows them, in host:port order.

    Args:
        snapshot: the daemon's (or collector's) snapshot.
        group: the group's name (a member daemon's own; one of a collector's).

    Returns:
        One MemberRow per member the snapshot lists in `group`.
    """
    status = [r for r in snapshot.table(MEMBER_STATUS_TABLE) if r.get(col.GROUP_NAME) == group]
    members = {str(r.get(col.MEMBER_ID)) for r in status}
    labels = member_labels(
        [r for r in snapshot.table(MEMBERS_TABLE) if r.get(col.MEMBER_ID) in members]
    )
    by_table = {
        name: [r for r in snapshot.table(name) if r.get(col.MEMBER_ID) in members]
        for name in page_tables()
    }
    out = []
    for facts in status:
        member = str(facts.get(col.MEMBER_ID))
        found = {name: _of_member(rs, member) for name, rs in by_table.items()}
        rows = {name: row for name, row in found.items() if row is not None}
        out.append(
            MemberRow(
                member_id=member,
                label=_text(labels.get(member, member)),
                local=facts.get(col.IS_LOCAL) == 1,
                rows=rows,
                errors=_errors(snapshot, member),
            )
        )
    return sorted(out, key=lambda m: label_order(m.member_id, labels))
