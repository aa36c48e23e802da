"""Receiver bookkeeping of PROTOCOL.md section 7 (stored values, GTID strings, deltas).

CONTRACT STUB: being implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.pipeline_stats import FLOW_CONTROL_QUOTA, PipelineStats


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
        raise NotImplementedError
