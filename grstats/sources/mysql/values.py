"""Server values to wire values and the local sample, without I/O.

P_S shows every counter as BIGINT UNSIGNED; the wire message carries signed
two's complement (PROTOCOL.md §4, §8). `wire_int64` maps the unsigned value
back; `wire_int32` clamps the two queue sizes (see its docstring).
`local_sample_from` builds the `LocalSample` from the rows the server showed,
verbatim: nothing invented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import structlog

from grstats.core import columns as col
from grstats.core.columns import STATS_ITEM_COLUMNS
from grstats.core.sample import MEMBER_ROLES, MEMBER_STATES, LocalMember, ServerViewMember
from protocol import FLOW_CONTROL_DISABLED, FLOW_CONTROL_QUOTA, PipelineStats

log = structlog.get_logger("grstats.sources.mysql")

Result = tuple[list[str], list[Sequence[Any]]]


class PollFailed(Exception):
    """The connection is unusable (lost, timed out, or the server cannot identify itself)."""


# PipelineStats field <- replication_group_member_stats column (PROTOCOL.md §4), from
# the column registry; the two queue items are int32 on the wire, the rest int64.
_INT32_ITEMS = frozenset({"transactions_waiting_certification", "transactions_waiting_apply"})
_INT32_COLUMNS = {
    str(c.item): c.name for c in STATS_ITEM_COLUMNS if c.numeric and c.item in _INT32_ITEMS
}
_INT64_COLUMNS = {
    str(c.item): c.name for c in STATS_ITEM_COLUMNS if c.numeric and c.item not in _INT32_ITEMS
}
_TEXT_COLUMNS = {str(c.item): c.name for c in STATS_ITEM_COLUMNS if not c.numeric}

_INT32_MAX = (1 << 31) - 1


def wire_int64(value: int) -> int:
    """Map a P_S BIGINT UNSIGNED counter to the int64 MySQL puts on the wire.

    Args:
        value: the column value (any int; only its low 64 bits matter).

    Returns:
        The two's-complement int64: values >= 2**63 wrap to negative.
    """
    low = value & 0xFFFF_FFFF_FFFF_FFFF
    return low - (1 << 64) if low >= (1 << 63) else low


def wire_int32(value: int) -> int:
    """Map a P_S queue size to the int32 item of the wire message, clamped, never wrapped.

    MySQL's sender (pipeline_stats.cc, send_stats_member_message) puts
    ``static_cast<int32>(applier_module->get_message_queue_size())`` on the
    wire, which would wrap a size >= 2**31 into a negative number; and before
    MySQL fixed it, the waiting-apply counter could go negative (it is an
    int32 that P_S shows as 2**64 - |x|) -- the fix makes
    ``get_transactions_waiting_apply_during_recovery`` return 0 rather than go
    negative. A queue size is never negative, so a wrapped value would only
    show operators a nonsense number. Decision: read the column as the signed
    64-bit value P_S was given and clamp it to [0, 2**31 - 1]: a wrapped
    negative (>= 2**63) becomes 0, as fixed MySQL reports it, and a size too
    large for int32 saturates at 2**31 - 1 instead of wrapping.

    Args:
        value: the column value (BIGINT UNSIGNED; any int is accepted).

    Returns:
        An int32 in [0, 2**31 - 1].
    """
    return max(0, min(wire_int64(value), _INT32_MAX))


def errno_of(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], int) and args[0] > 0:
        return args[0]
    return None


def first_row(rows: Sequence[Sequence[Any]], width: int) -> Sequence[Any]:
    if not rows or len(rows[0]) < width:
        raise PollFailed("unexpected result shape")
    return rows[0]


def local_row(server_uuid: Any, rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """Of a GR table's rows, the one of `server_uuid` if the server shows one, else the
    one with an empty MEMBER_ID (GR never started), else {}: what ``WHERE MEMBER_ID =
    @@server_uuid OR MEMBER_ID = ''`` selects (a NULL MEMBER_ID matches neither)."""
    uuid = _text(server_uuid)
    mine = [
        r
        for r in rows
        if r.get(col.MEMBER_ID) is not None and _text(r[col.MEMBER_ID]) in (uuid, "")
    ]
    return next((r for r in mine if _text(r[col.MEMBER_ID])), mine[0] if mine else {})


def dict_rows(result: Result | None) -> list[dict[str, Any]]:
    if not result:
        return []
    names, rows = result
    return [dict(zip(names, row, strict=False)) for row in rows]


def _integer(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal | float):
        return int(value)
    if isinstance(value, bytes | bytearray):
        value = value.decode("ascii", "replace")
    try:
        return int(str(value).strip())
    except ValueError:
        log.warning("mysql.bad_number", value=str(value)[:40])
        return 0


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _raw(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    return str(value).encode("utf-8")


def flow_control_mode(value: Any) -> int:
    text = _text(value).strip().upper()
    if text in ("DISABLED", "0"):
        return FLOW_CONTROL_DISABLED
    return FLOW_CONTROL_QUOTA


def member_and_stats(
    server_uuid: Any,
    group_name: Any,
    stats_row: Mapping[str, Any],
    member_row: Mapping[str, Any],
    mode: int,
) -> tuple[LocalMember, PipelineStats]:
    """The local member and its stats exactly as the server showed them.

    Args:
        server_uuid: @@server_uuid (whom the daemon speaks for).
        group_name: @@group_replication_group_name (None without the plugin).
        stats_row, member_row: the local rows of the two P_S tables ({} when none:
            the plugin is not installed, shown like a GR that never started).
        mode: the flow-control mode for item 12.

    Returns:
        (member, stats) with `transaction_gtids_present` False.
    """
    state = _text(member_row.get(col.MEMBER_STATE)).upper() or "OFFLINE"
    if state not in MEMBER_STATES:
        log.warning("mysql.unknown_member_state", state=state)
        state = "ERROR"
    role = _text(member_row.get(col.MEMBER_ROLE)).upper()
    member_id = _text(member_row.get(col.MEMBER_ID))
    stats_member_id = _text(stats_row.get(col.MEMBER_ID)) if stats_row else member_id
    port = member_row.get(col.MEMBER_PORT)
    member = LocalMember(
        group_name=_text(group_name),
        member_id=member_id,
        host=_text(member_row.get(col.MEMBER_HOST)),
        port=None if port is None else _integer(port),
        state=state,
        role=role if role in MEMBER_ROLES else "",
        version=_text(member_row.get(col.MEMBER_VERSION)),
        view_id=_text(stats_row.get(col.VIEW_ID)),
        communication_stack=_text(member_row.get(col.MEMBER_COMMUNICATION_STACK)),
        stats_member_id=None if stats_member_id == member_id else stats_member_id,
        server_uuid=_text(server_uuid),
    )
    values: dict[str, Any] = {
        name: wire_int32(_integer(stats_row.get(c))) for name, c in _INT32_COLUMNS.items()
    }
    values.update(
        (name, wire_int64(_integer(stats_row.get(c)))) for name, c in _INT64_COLUMNS.items()
    )
    values.update((name, _raw(stats_row.get(c))) for name, c in _TEXT_COLUMNS.items())
    stats = PipelineStats(**values, transaction_gtids_present=False, flow_control_mode=mode)
    return member, stats


def server_view(
    server_uuid: Any,
    group_name: Any,
    stats_rows: Sequence[Mapping[str, Any]],
    member_rows: Sequence[Mapping[str, Any]],
    mode: int,
) -> tuple[ServerViewMember, ...]:
    """The other members of the server's view, as its two tables show them.

    Args:
        server_uuid: @@server_uuid (the local member, left out).
        group_name: @@group_replication_group_name.
        stats_rows, member_rows: every row of replication_group_member_stats and
            replication_group_members (column name -> cell).
        mode: the flow-control mode (the local one; MySQL shows none per member).

    Returns:
        One entry per MEMBER_ID in replication_group_members other than ours, in
        MEMBER_ID order; its stats are the stats row with that MEMBER_ID ({} when
        the server has none yet: counters 0, texts "", as MySQL shows it).
    """
    local = _text(server_uuid)
    stats = {_text(r.get(col.MEMBER_ID)): r for r in stats_rows}
    out = []
    for row in sorted(member_rows, key=lambda r: _text(r.get(col.MEMBER_ID))):
        member_id = _text(row.get(col.MEMBER_ID))
        if not member_id or member_id == local:
            continue
        member, member_stats = member_and_stats(
            member_id, group_name, stats.get(member_id, {}), row, mode
        )
        out.append(ServerViewMember(member, member_stats))
    return tuple(out)
