"""Row builders for the MySQL-shaped tables (performance_schema column names and rules).

Invariants (PROTOCOL.md section 8): numeric columns are shown as unsigned
64-bit (a negative wire value x shows as 2^64 - |x|); GTID texts are the
wire bytes as UTF-8; MEMBER_ROLE is empty unless the member is ONLINE or
RECOVERING, and an UNREACHABLE override of the state keeps the role of the
state underneath.
"""

from __future__ import annotations

from grstats.core.records import HistoryRow
from grstats.core.snapshot import GROUP_REPLICATION_CHANNEL, Row
from protocol import Envelope, MemberStatsState, PipelineStats, as_ps_unsigned


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
        The row keyed by the P_S column names.
    """
    return {
        "CHANNEL_NAME": GROUP_REPLICATION_CHANNEL,
        "VIEW_ID": view_id,
        "MEMBER_ID": member_id,
        "COUNT_TRANSACTIONS_IN_QUEUE": as_ps_unsigned(s.transactions_waiting_certification),
        "COUNT_TRANSACTIONS_CHECKED": as_ps_unsigned(s.transactions_certified),
        "COUNT_CONFLICTS_DETECTED": as_ps_unsigned(s.transactions_negative_certified),
        "COUNT_TRANSACTIONS_ROWS_VALIDATING": as_ps_unsigned(s.transactions_rows_validating),
        "TRANSACTIONS_COMMITTED_ALL_MEMBERS": _text(s.transactions_committed_all_members),
        "LAST_CONFLICT_FREE_TRANSACTION": _text(s.transaction_last_conflict_free),
        "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": as_ps_unsigned(s.transactions_waiting_apply),
        "COUNT_TRANSACTIONS_REMOTE_APPLIED": as_ps_unsigned(s.transactions_applied),
        "COUNT_TRANSACTIONS_LOCAL_PROPOSED": as_ps_unsigned(s.transactions_local),
        "COUNT_TRANSACTIONS_LOCAL_ROLLBACK": as_ps_unsigned(s.transactions_local_rollback),
    }


def member_row(
    *,
    member_id: str,
    host: str,
    port: int,
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
    shown_role = role if underlying_state in ("ONLINE", "RECOVERING") else ""
    return {
        "CHANNEL_NAME": GROUP_REPLICATION_CHANNEL,
        "MEMBER_ID": member_id,
        "MEMBER_HOST": host,
        "MEMBER_PORT": port,
        "MEMBER_STATE": state,
        "MEMBER_ROLE": shown_role,
        "MEMBER_VERSION": version,
        "MEMBER_COMMUNICATION_STACK": stack,
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
        stack=stack if isinstance(stack, str) else "XCOM",
    )


def history_row(envelope: Envelope, stats: PipelineStats, sampled_at_us: int) -> HistoryRow:
    """A history row for one accepted envelope (GTID columns None unless flag '1').

    Args:
        envelope: the accepted envelope.
        stats: its decoded stats.
        sampled_at_us: when it was sampled (the sender's clock).

    Returns:
        The HistoryRow.
    """
    m = envelope.member
    gtids = stats.transaction_gtids_present
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
        count_transactions_in_queue=stats.transactions_waiting_certification,
        count_transactions_checked=stats.transactions_certified,
        count_conflicts_detected=stats.transactions_negative_certified,
        count_transactions_rows_validating=stats.transactions_rows_validating,
        count_transactions_remote_in_applier_queue=stats.transactions_waiting_apply,
        count_transactions_remote_applied=stats.transactions_applied,
        count_transactions_local_proposed=stats.transactions_local,
        count_transactions_local_rollback=stats.transactions_local_rollback,
        transactions_committed_all_members=(
            stats.transactions_committed_all_members.decode("utf-8", "replace") if gtids else None
        ),
        last_conflict_free_transaction=(
            stats.transaction_last_conflict_free.decode("utf-8", "replace") if gtids else None
        ),
        flow_control_mode=stats.flow_control_mode,
    )
