"""Row builders for the MySQL-shaped tables (performance_schema column names and rules).

Every mapping here is derived from `grstats.core.columns`: a stats column with
an `item` is filled from that PipelineStats (or MemberStatsState) field, and
its history column from the same field.

Invariants (PROTOCOL.md section 8): numeric columns are shown as unsigned
64-bit; the queue items are never negative by admission (`core.admission`
clamps them), so nothing wraps to 2^64 - x; GTID texts are the wire bytes as
UTF-8; MEMBER_ROLE is empty unless the member is ONLINE or RECOVERING, and an
UNREACHABLE override of the state keeps the role of the state underneath.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.applierrows import CHANNEL_COLUMNS
from grstats.core.commitpath import OP_FIELDS
from grstats.core.flowreplay import FlowReplay
from grstats.core.lag import APPLIER_CHANNEL, MemberLag
from grstats.core.lagrows import lag_rows
from grstats.core.records import APPLIER_HISTORY_COLUMNS, HistoryRow
from grstats.core.sample import in_group
from grstats.core.snapshot import Row
from protocol import (
    CommitPathCounters,
    Envelope,
    MemberStatsState,
    PipelineStats,
    as_ps_unsigned,
)

_NUMERIC_ITEMS = tuple((c.name, c.item) for c in col.STATS_ITEM_COLUMNS if c.numeric)
_TEXT_ITEMS = tuple((c.name, c.item) for c in col.STATS_ITEM_COLUMNS if not c.numeric)
_HISTORY_NUMERIC = tuple((c.history, c.item) for c in col.STATS_ITEM_COLUMNS if c.numeric)
_HISTORY_TEXT = tuple((c.history, c.item) for c in col.STATS_ITEM_COLUMNS if not c.numeric)
# The receive path builds one history row per envelope: names and getters made once.
_HISTORY_NUMERIC_NAMES = tuple(str(h) for h, _ in _HISTORY_NUMERIC)
_HISTORY_TEXT_NAMES = tuple(str(h) for h, _ in _HISTORY_TEXT)
_history_numbers = attrgetter(*(str(item) for _, item in _HISTORY_NUMERIC))
_history_texts = attrgetter(*(str(item) for _, item in _HISTORY_TEXT))
_NO_TEXTS: dict[str, Any] = dict.fromkeys(_HISTORY_TEXT_NAMES)
_HISTORY_LAG = tuple((c.name, str(c.history)) for c in col.MEMBER_LAG.columns if c.history)
# (ApplierChannel field, history column) of the applier counters the history keeps
_HISTORY_APPLIER = tuple(
    (field, str(col.APPLIER_METRICS.column(name).history))
    for field, name in CHANNEL_COLUMNS
    if col.APPLIER_METRICS.column(name).history in APPLIER_HISTORY_COLUMNS
)
_INT64_MAX = (1 << 63) - 1
_HISTORY_FLOW = tuple(
    (c.name, str(c.history))
    for c in col.FLOW_CONTROL.columns
    if c.name in col.FLOW_HISTORY or c.name in col.FLOW_HELD_HISTORY
)
# every figure None, copied per row (no generator per envelope on the receive path)
_NO_LAG: dict[str, float | None] = dict.fromkeys(h for _, h in _HISTORY_LAG)
_NO_APPLIER: dict[str, int | None] = dict.fromkeys(h for _, h in _HISTORY_APPLIER)
_NO_FLOW: dict[str, Any] = dict.fromkeys(h for _, h in _HISTORY_FLOW)


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def stats_row(view_id: str, member_id: str, s: PipelineStats | MemberStatsState) -> Row:
    """One replication_group_member_stats row from live stats or stored state.

    Args:
        view_id: the VIEW_ID to show.
        member_id: the member's server UUID.
        s: the local member's live PipelineStats or a remote member's stored state
            (both carry the same field names).

    Returns:
        The row keyed by the P_S column names, in table order.
    """
    values: dict[str, str | int | None] = {
        col.CHANNEL_NAME: col.GROUP_REPLICATION_CHANNEL,
        col.VIEW_ID: view_id,
        col.MEMBER_ID: member_id,
    }
    for name, item in _NUMERIC_ITEMS:
        values[name] = as_ps_unsigned(getattr(s, str(item)))
    for name, item in _TEXT_ITEMS:
        values[name] = _text(getattr(s, str(item)))
    return {name: values[name] for name in col.MEMBER_STATS.names}


def empty_stats_row(member_id: str) -> Row:
    """The row MySQL shows for a member with no statistics: identifiers and zero counters."""
    row: dict[str, str | int | None] = {
        c.name: (0 if c.numeric else "") for c in col.MEMBER_STATS.columns
    }
    row[col.CHANNEL_NAME] = col.GROUP_REPLICATION_CHANNEL
    row[col.MEMBER_ID] = member_id
    return row


def member_row(
    *,
    member_id: str,
    host: str,
    port: int | None,
    state: str,
    underlying_state: str,
    role: str,
    version: str,
    stack: str,
) -> Row:
    """One replication_group_members row.

    Args:
        member_id, host, port, version, stack: the identifying columns.
        state: the state to show (UNREACHABLE overrides the reported one).
        underlying_state: the state the member reported (decides MEMBER_ROLE).
        role: the reported role.

    Returns:
        The row keyed by the P_S column names.
    """
    shown_role = role if in_group(underlying_state) else ""
    return {
        col.CHANNEL_NAME: col.GROUP_REPLICATION_CHANNEL,
        col.MEMBER_ID: member_id,
        col.MEMBER_HOST: host,
        col.MEMBER_PORT: port,
        col.MEMBER_STATE: state,
        col.MEMBER_ROLE: shown_role,
        col.MEMBER_VERSION: version,
        col.MEMBER_COMMUNICATION_STACK: stack,
    }


def remote_member_row(envelope: Envelope, *, unreachable: bool) -> Row:
    """The replication_group_members row of a remote member from its last envelope."""
    m = envelope.member
    stack = envelope.ext.get("communication_stack") if envelope.ext else None
    return member_row(
        member_id=m.id,
        host=m.host,
        port=m.port,
        state="UNREACHABLE" if unreachable else m.state,
        underlying_state=m.state,
        role=m.role,
        version=m.version,
        stack=stack if isinstance(stack, str) else "",
    )


def lag_history(lag: MemberLag | None, offset_s: float | None) -> dict[str, float | None]:
    """The history's lag columns: the applier channel's figures of `lag`.

    The same values replication_group_member_lag shows for the member (one
    rule, `core.lagrows`), so the history and the live table never disagree.

    Args:
        lag: the member's lag report; None or no applier channel: every figure None.
        offset_s: its clock minus ours (0.0 for the local member); None unknown.

    Returns:
        History column name -> seconds or None.
    """
    figures = dict(_NO_LAG)
    if lag is None:
        return figures
    applier = MemberLag(lag.at_us, tuple(c for c in lag.channels if c.channel == APPLIER_CHANNEL))
    for row in lag_rows("", applier, offset_s=offset_s, spread_s=None)[:1]:
        for name, history in _HISTORY_LAG:
            value = row[name]
            figures[history] = None if value is None else float(value)
    return figures


def applier_history(applier: MemberApplier | None) -> dict[str, int | None]:
    """The history's applier columns: the group_replication_applier channel's counters.

    The values replication_applier_metrics shows for that channel (nanoseconds,
    bytes, counts), so the history and the live table never disagree.

    Args:
        applier: the member's applier metrics; None or no applier channel: every
            figure None.

    Returns:
        History column name -> value or None (None also for a value past int64,
        which the history cannot store and no real counter reaches).
    """
    figures = dict(_NO_APPLIER)
    if applier is None:
        return figures
    for channel in applier.channels:
        if channel.channel == APPLIER_CHANNEL:
            for field, history in _HISTORY_APPLIER:
                value = getattr(channel, field)
                figures[history] = value if value is None or 0 <= value <= _INT64_MAX else None
    return figures


def flow_history(replay: FlowReplay | None, member_id: str) -> dict[str, Any]:
    """The history's flow-control columns: the replay's figures for `member_id` now.

    The same values grstats_flow_control shows for the member (one rule,
    `FlowReplay.row`), so the history and the live table never disagree.

    Args:
        replay: the flow-control replay of the member's group; None: every figure None.
        member_id: the member the row is of.

    Returns:
        History column name -> value or None.
    """
    row = None if replay is None else replay.row(member_id)
    if row is None:
        return dict(_NO_FLOW)
    return {history: row[name] for name, history in _HISTORY_FLOW}


def commit_path_history(counters: CommitPathCounters | None) -> dict[str, int | None]:
    """The history's commit-path columns: each operation's count and time (µs) so far.

    An operation's count and time are the sums of its server counters
    (`core.commitpath.OP_FIELDS`: the message round trip adds the data and the
    control messages), so the rollups derive exactly what grstats_member_commit_path
    shows for a period.

    Args:
        counters: the member's Gr_* counters as its server showed them; None: no
            commit-path figures (every column None).

    Returns:
        History column name -> value or None (None where a summed counter is None;
        a sum past int64 is stored NULL and counted by the history writer).
    """
    figures: dict[str, int | None] = {}
    for op, count, time_us in col.COMMIT_PATH_HISTORY:
        for name, fields in zip((count, time_us), OP_FIELDS[op], strict=True):
            values = [None if counters is None else getattr(counters, f) for f in fields]
            figures[name] = None if None in values else sum(v for v in values if v is not None)
    return figures


def commit_path_due(previous_us: int | None, at_us: int) -> bool:
    """Whether a sample keeps the commit path in the history: the first of its bucket.

    Buckets are `columns.COMMIT_PATH_HISTORY_EVERY_S` seconds of the member's own
    clock, so a sample is kept whatever the period (every one when the period is
    longer than a bucket).

    Args:
        previous_us: when the member's previous sample (report) was read; None: none.
        at_us: when this one was.

    Returns:
        True when the row carries the cp_* columns.
    """
    every_us = col.COMMIT_PATH_HISTORY_EVERY_S * 1_000_000
    return previous_us is None or previous_us // every_us != at_us // every_us


def history_row(
    envelope: Envelope,
    stats: PipelineStats,
    sampled_at_us: int,
    figures: Mapping[str, Any] | None = None,
) -> HistoryRow:
    """A history row for one accepted envelope (GTID columns None unless flag '1').

    Args:
        envelope: the accepted envelope.
        stats: its decoded stats.
        sampled_at_us: when it was sampled (the sender's clock).
        figures: history column -> value beyond the stats: every section's block
            (`core.sections.history_figures`), the flow-control and GTID verdict
            columns (`core.tables.MemberTables.history_row`); a column left out is NULL.

    Returns:
        The HistoryRow.
    """
    m = envelope.member
    numbers = dict(zip(_HISTORY_NUMERIC_NAMES, _history_numbers(stats), strict=True))
    texts = _NO_TEXTS
    if stats.transaction_gtids_present:
        gtid_texts = zip(_HISTORY_TEXT_NAMES, _history_texts(stats), strict=True)
        texts = {name: _text(value) for name, value in gtid_texts}
    return HistoryRow(
        group_name=envelope.group,
        member_id=m.id,
        member_host=m.host,
        member_port=m.port,
        member_state=m.state,
        member_role=m.role,
        member_version=m.version,
        view_id=envelope.view_id,
        incarnation=envelope.incarnation,
        seq=envelope.seq,
        sampled_at=sampled_at_us,
        flow_control_mode=stats.flow_control_mode,
        **numbers,
        **texts,
        **(figures or {}),
    )
