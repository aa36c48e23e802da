"""MySQL Group Replication Pipeline_stats_member_message (cargo type 6), byte-exact.

CONTRACT STUB: the dataclass is final; encode/decode are being implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOW_CONTROL_DISABLED = 0
FLOW_CONTROL_QUOTA = 1


@dataclass(frozen=True, slots=True)
class PipelineStats:
    """The twelve message fields (vector names) plus item 13, the send timestamp."""

    transactions_waiting_certification: int = 0
    transactions_waiting_apply: int = 0
    transactions_certified: int = 0
    transactions_applied: int = 0
    transactions_local: int = 0
    transactions_negative_certified: int = 0
    transactions_rows_validating: int = 0
    transaction_gtids_present: bool = False
    transactions_committed_all_members: bytes = b""
    transaction_last_conflict_free: bytes = b""
    transactions_local_rollback: int = 0
    flow_control_mode: int = FLOW_CONTROL_QUOTA
    sent_timestamp: int | None = None


def encode_pipeline_stats(stats: PipelineStats) -> bytes:
    raise NotImplementedError


def decode_pipeline_stats(data: bytes) -> PipelineStats:
    raise NotImplementedError
