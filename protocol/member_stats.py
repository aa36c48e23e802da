"""Receiver bookkeeping of PROTOCOL.md section 7 (stored values, GTID strings, deltas).

Strategy: one immutable value per sender; `apply` returns the next value for
an accepted message, exactly as MySQL's update_member_stats does:

* items 1, 2, 6, 7, 10 and 11 overwrite the stored values;
* items 3, 4 and 5 yield a per-message delta (new - stored, signed 64-bit
  wrap-around like the C++ int64 subtraction), then overwrite;
* the two GTID strings are replaced only when the message's flag (item 12)
  is '1' — then even by empty strings.

A message the decoder rejects never reaches `apply`: the caller keeps the old
state. The flow-control stamp and hold counting belong to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.pipeline_stats import FLOW_CONTROL_QUOTA, PipelineStats

_U64_MASK = (1 << 64) - 1
_I64_SIGN = 1 << 63


def _wrap_int64(value: int) -> int:
    """Reduce an integer to the signed 64-bit range the way C++ int64 arithmetic wraps."""
    return ((value + _I64_SIGN) & _U64_MASK) - _I64_SIGN


@dataclass(frozen=True, slots=True)
class MemberStatsState:
    """What a receiver stores for one sender after each accepted message."""

    transactions_waiting_certification: int = 0
    transactions_waiting_apply: int = 0
    transactions_certified: int = 0
    transactions_applied: int = 0
    transactions_local: int = 0
    transactions_negative_certified: int = 0
    transactions_rows_validating: int = 0
    transactions_committed_all_members: bytes = b""
    transaction_last_conflict_free: bytes = b""
    transactions_local_rollback: int = 0
    flow_control_mode: int = FLOW_CONTROL_QUOTA
    delta_transactions_certified: int = 0
    delta_transactions_applied: int = 0
    delta_transactions_local: int = 0

    def apply(self, stats: PipelineStats) -> MemberStatsState:
        """Return the state after one accepted message from this sender.

        The first message after the entry is created is applied to the default
        (all-zero) state, so its deltas equal the absolute counters; a restarted
        sender produces negative deltas.

        Args:
            stats: the decoded message.

        Returns:
            The new state; `self` is unchanged.
        """
        if stats.transaction_gtids_present:
            committed = stats.transactions_committed_all_members
            last_conflict_free = stats.transaction_last_conflict_free
        else:
            committed = self.transactions_committed_all_members
            last_conflict_free = self.transaction_last_conflict_free
        return MemberStatsState(
            transactions_waiting_certification=stats.transactions_waiting_certification,
            transactions_waiting_apply=stats.transactions_waiting_apply,
            transactions_certified=stats.transactions_certified,
            transactions_applied=stats.transactions_applied,
            transactions_local=stats.transactions_local,
            transactions_negative_certified=stats.transactions_negative_certified,
            transactions_rows_validating=stats.transactions_rows_validating,
            transactions_committed_all_members=committed,
            transaction_last_conflict_free=last_conflict_free,
            transactions_local_rollback=stats.transactions_local_rollback,
            flow_control_mode=stats.flow_control_mode,
            delta_transactions_certified=_wrap_int64(
                stats.transactions_certified - self.transactions_certified
            ),
            delta_transactions_applied=_wrap_int64(
                stats.transactions_applied - self.transactions_applied
            ),
            delta_transactions_local=_wrap_int64(
                stats.transactions_local - self.transactions_local
            ),
        )
