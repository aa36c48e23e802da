"""The default table view of the table commands: what fits 80 columns.

Strategy: a table's full column set (MySQL's names, `--wide`) rarely fits a
terminal: `lag` is ~1,100 characters wide. By default each table shows a
short, declared selection under short headers, a member as `host:port`
(its MEMBER_HOST/MEMBER_PORT from replication_group_members) instead of
its UUID — with the UUID's first 8 digits added where two members share a
host:port (a lab on one host) — and then, if the values still make it wider
than 80 columns, drops columns from the right and says how many. JSON, CSV,
`--vertical` and `--wide` always show every column under MySQL's names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grstats.cli import render
from grstats.core import columns as col
from grstats.core.snapshot import (
    APPLIER_METRICS_TABLE,
    APPLIER_WORKERS_TABLE,
    FLOW_CONTROL_TABLE,
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
)

__all__ = ["NARROW", "WIDTH", "narrow_columns", "narrow_table"]

WIDTH = 80
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
        ("AGE_S", "LAST_SEEN_AGE_SECONDS"),
        ("SEQ", "SEQ"),
        ("ACCEPTED", "ACCEPTED"),
    ),
    MEMBER_LAG_TABLE: (
        (MEMBER, col.MEMBER_ID),
        ("LAG", col.REPLICATION_LAG),
        ("QUEUE_S", col.QUEUE_LAG_SECONDS),
        ("APPLY_S", col.APPLY_LAG_SECONDS),
        ("OFFSET_S", col.CLOCK_OFFSET_SECONDS),
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
    # `grstats channels`: core.channel_explain.channel_overview's rows
    "channels": (
        (MEMBER, col.MEMBER_ID),
        ("CHANNEL", "CHANNEL"),
        ("IO", "IO"),
        ("SQL", "SQL"),
        ("ERROR", "ERROR"),
        ("ERROR_AGE", "ERROR_AGE"),
        ("TRIES", "TRIES"),
    ),
}


def narrow_columns(table: str) -> Sequence[tuple[str, str]]:
    """(short header, column) of `table`'s default view, in display order.

    A table without a NARROW selection shows its member as MEMBER, then its
    other declared columns under their own names (as many as fit).

    Raises:
        KeyError: `table` is not a declared table.
    """
    if table in NARROW:
        return NARROW[table]
    names = col.table(table).names
    rest = [(c, c) for c in names if c != col.MEMBER_ID]
    return [(MEMBER, col.MEMBER_ID), *rest] if col.MEMBER_ID in names else rest


def narrow_table(
    table: str, rows: Sequence[Mapping[str, object]], labels: Mapping[str, str]
) -> str:
    """The default (narrow) table text of `table`'s rows.

    Args:
        table: a declared table's name.
        rows: its rows.
        labels: core.labels.member_labels() of the group.

    Returns:
        The text, at most WIDTH columns wide, with a last line naming what was left out.
    """
    wanted = list(narrow_columns(table))
    if not rows:
        return render.table(rows, [h for h, _ in wanted])
    shown_rows = [
        {
            header: (
                labels.get(str(row.get(col)), row.get(col)) if header == MEMBER else row.get(col)
            )
            for header, col in wanted
        }
        for row in rows
    ]
    headers = [h for h, _ in wanted]
    while True:
        text = render.table(shown_rows, headers)
        if len(headers) == 1 or max(len(line) for line in text.splitlines()) <= WIDTH:
            break
        headers.pop()
    hidden = len(wanted) - len(headers)
    return text + footer(hidden, "all, as MySQL names them: --wide, -E, --format json") + "\n"


def footer(hidden: int, how: str) -> str:
    """The last line of a narrow view: how many columns it left out and how to see them.

    Args:
        hidden: the number of columns left out (0: none, the line still says how).
        how: the options that show every column.

    Returns:
        The line, without a newline.
    """
    more = f"{hidden} column(s) left out; " if hidden else ""
    return f"({more}{how})"
