"""Receiver bookkeeping (PROTOCOL.md section 7) against pipeline_stats_member_update.json."""

from __future__ import annotations

from typing import Any

import pytest

from protocol import (
    MemberStatsState,
    PipelineStats,
    ProtocolError,
    decode_pipeline_stats,
)
from tests.fixtures.paths import load_vectors
from tests.protocol.vectors import field_value


def _cases() -> list[Any]:
    return [
        pytest.param(v, id=v["name"]) for v in load_vectors("pipeline_stats_member_update.json")
    ]


def _expected_state(snapshot: dict[str, Any]) -> MemberStatsState:
    names = list(MemberStatsState.__dataclass_fields__)
    return MemberStatsState(**{name: field_value(snapshot, name) for name in names})


def _receive(state: MemberStatsState, message: bytes) -> tuple[MemberStatsState, bool]:
    """The receive path: a message the decoder rejects leaves the state alone."""
    try:
        stats = decode_pipeline_stats(message)
    except ProtocolError:
        return state, True
    return state.apply(stats), False


@pytest.mark.parametrize("case", _cases())
def test_member_update_vector_states(case: dict[str, Any]) -> None:
    state = MemberStatsState()
    assert len(case["messages_hex"]) == len(case["states_after_each_message"])
    for index, (message, snapshot) in enumerate(
        zip(case["messages_hex"], case["states_after_each_message"], strict=True)
    ):
        state, skipped = _receive(state, bytes.fromhex(message))
        assert skipped == snapshot["skipped"], f"message {index}"
        assert state == _expected_state(snapshot), f"message {index}"


def test_initial_state_is_zero_with_quota_mode() -> None:
    assert MemberStatsState() == MemberStatsState(
        transactions_certified=0, transactions_committed_all_members=b"", flow_control_mode=1
    )


def test_first_message_deltas_equal_absolute_counters() -> None:
    stats = PipelineStats(transactions_certified=10, transactions_applied=9, transactions_local=4)
    state = MemberStatsState().apply(stats)
    assert (
        state.delta_transactions_certified,
        state.delta_transactions_applied,
        state.delta_transactions_local,
    ) == (10, 9, 4)


def test_counters_going_backwards_give_negative_deltas() -> None:
    before = MemberStatsState().apply(PipelineStats(transactions_certified=100))
    after = before.apply(PipelineStats(transactions_certified=30))
    assert after.delta_transactions_certified == -70
    assert after.transactions_certified == 30


def test_delta_wraps_like_signed_64_bit_subtraction() -> None:
    # (2^63 - 1) - (-2^63) = 2^64 - 1, which wraps to -1 in int64.
    before = MemberStatsState().apply(PipelineStats(transactions_local=-(2**63)))
    after = before.apply(PipelineStats(transactions_local=2**63 - 1))
    assert after.delta_transactions_local == -1


def test_strings_kept_when_flag_is_not_1() -> None:
    before = MemberStatsState().apply(
        PipelineStats(
            transaction_gtids_present=True,
            transactions_committed_all_members=b"set",
            transaction_last_conflict_free=b"gtid",
        )
    )
    after = before.apply(
        PipelineStats(
            transaction_gtids_present=False,
            transactions_committed_all_members=b"other",
            transaction_last_conflict_free=b"other",
        )
    )
    assert (after.transactions_committed_all_members, after.transaction_last_conflict_free) == (
        b"set",
        b"gtid",
    )


def test_flag_1_with_empty_strings_clears_them() -> None:
    before = MemberStatsState(
        transactions_committed_all_members=b"set", transaction_last_conflict_free=b"gtid"
    )
    after = before.apply(PipelineStats(transaction_gtids_present=True))
    assert (after.transactions_committed_all_members, after.transaction_last_conflict_free) == (
        b"",
        b"",
    )


def test_overwritten_items_follow_the_last_message() -> None:
    stats = PipelineStats(
        transactions_waiting_certification=1,
        transactions_waiting_apply=2,
        transactions_negative_certified=6,
        transactions_rows_validating=7,
        transactions_local_rollback=10,
        flow_control_mode=0,
    )
    state = MemberStatsState(flow_control_mode=1, transactions_rows_validating=99).apply(stats)
    assert (
        state.transactions_waiting_certification,
        state.transactions_waiting_apply,
        state.transactions_negative_certified,
        state.transactions_rows_validating,
        state.transactions_local_rollback,
        state.flow_control_mode,
    ) == (1, 2, 6, 7, 10, 0)


def test_apply_leaves_the_old_state_unchanged() -> None:
    before = MemberStatsState()
    before.apply(PipelineStats(transactions_certified=5))
    assert before == MemberStatsState()
