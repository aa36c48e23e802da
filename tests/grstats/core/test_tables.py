"""MemberTables: pure receive/apply/reject rules, driven with hand-built envelopes.

The rest (members over time, the local member, the collector): test_tables_aging.py.
"""

from __future__ import annotations

from grstats.core.tables import Accepted, Ignored
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.member_tables import (
    GROUP,
    LOCAL,
    OTHER_GROUP,
    PERIOD_US,
    REMOTE,
    T0,
    THIRD,
    assert_rejected,
    envelope,
    local_sample,
    make_tables,
    online_tables,
    row_of,
    topic,
)

# The modules not moved yet import these from here: they live in
# tests/fixtures/member_tables.py (issue 25), import them from there.


# -- accepting and applying ----------------------------------------------------


def test_first_message_creates_row_with_its_counters_and_delta_equal_to_counters() -> None:
    tables = online_tables()
    result = tables.receive(
        topic(), envelope(transactions_certified=100, transactions_applied=40), T0
    )
    assert isinstance(result, Accepted)
    row = row_of(tables.snapshot(T0), REMOTE)
    assert row["COUNT_TRANSACTIONS_CHECKED"] == 100
    assert row["COUNT_TRANSACTIONS_REMOTE_APPLIED"] == 40
    state = tables.remote_state(REMOTE)
    assert state is not None
    assert state.delta_transactions_certified == 100
    assert state.delta_transactions_applied == 40


def test_deltas_are_per_message() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1, transactions_certified=100), T0)
    tables.receive(topic(), envelope(seq=2, transactions_certified=130), T0 + 1)
    state = tables.remote_state(REMOTE)
    assert state is not None
    assert state.delta_transactions_certified == 30  # 130 - 100


def test_gtid_columns_change_only_with_flag_one() -> None:
    tables = online_tables()
    gtid = f"{GROUP}:1-5".encode()
    tables.receive(
        topic(),
        envelope(
            seq=1,
            transaction_gtids_present=True,
            transactions_committed_all_members=gtid,
            transaction_last_conflict_free=f"{GROUP}:5".encode(),
        ),
        T0,
    )
    tables.receive(topic(), envelope(seq=2, transaction_gtids_present=False), T0 + 1)
    row = row_of(tables.snapshot(T0 + 2), REMOTE)
    assert row["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == f"{GROUP}:1-5"
    assert row["LAST_CONFLICT_FREE_TRANSACTION"] == f"{GROUP}:5"


def test_flag_one_with_empty_strings_clears_gtid_columns() -> None:
    tables = online_tables()
    tables.receive(
        topic(),
        envelope(seq=1, transaction_gtids_present=True, transactions_committed_all_members=b"x:1"),
        T0,
    )
    tables.receive(topic(), envelope(seq=2, transaction_gtids_present=True), T0 + 1)
    row = row_of(tables.snapshot(T0 + 2), REMOTE)
    assert row["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == ""


def test_negative_queue_sizes_are_clamped_to_zero_and_counted() -> None:
    # MySQL's table setters take the int32 queue items as unsigned 64-bit, so a
    # negative wire value would show as 2^64 - 1; MySQL keeps the sizes from going
    # negative at the sender (pipeline_stats.cc,
    # get_transactions_waiting_apply_during_recovery returns 0). We clamp on receipt.
    tables = online_tables()
    result = tables.receive(
        topic(),
        envelope(
            transactions_waiting_certification=-1,
            transactions_waiting_apply=-7,
            transactions_rows_validating=-2,
            transactions_certified=-5,
        ),
        T0,
    )
    assert isinstance(result, Accepted)
    row = row_of(tables.snapshot(T0), REMOTE)
    assert row["COUNT_TRANSACTIONS_IN_QUEUE"] == 0
    assert row["COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"] == 0
    assert row["COUNT_TRANSACTIONS_ROWS_VALIDATING"] == 0
    # a counter is a uint64 carried as int64: -5 is the legal value 2^64 - 5
    assert row["COUNT_TRANSACTIONS_CHECKED"] == 18446744073709551611
    assert tables.counters().envelopes_clamped == 1


def test_new_incarnation_is_a_reset_not_a_negative_delta() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(incarnation=7, seq=50, transactions_certified=1000), T0)
    result = tables.receive(
        topic(), envelope(incarnation=8, seq=1, transactions_certified=3), T0 + 1
    )
    assert isinstance(result, Accepted)
    state = tables.remote_state(REMOTE)
    assert state is not None
    assert state.transactions_certified == 3
    assert state.delta_transactions_certified == 3  # from a fresh entry, not 3 - 1000
    status = row_of(tables.snapshot(T0 + 1), REMOTE, "grstats_member_status")
    assert status["INCARNATION"] == 8
    assert status["SEQ"] == 1


def test_member_role_is_empty_unless_online_or_recovering() -> None:
    tables = online_tables()
    tables.receive(topic(THIRD), envelope(member=THIRD, state="RECOVERING", role="SECONDARY"), T0)
    tables.receive(topic(REMOTE), envelope(member=REMOTE, role="PRIMARY"), T0)
    snap = tables.snapshot(T0 + 6 * PERIOD_US)  # REMOTE and THIRD silent: UNREACHABLE
    assert row_of(snap, THIRD, "replication_group_members")["MEMBER_ROLE"] == "SECONDARY"
    assert row_of(snap, THIRD, "replication_group_members")["MEMBER_VERSION"] == "8.4.3"
    assert row_of(snap, REMOTE, "replication_group_members")["MEMBER_STATE"] == "UNREACHABLE"
    assert row_of(snap, REMOTE, "replication_group_members")["MEMBER_ROLE"] == "PRIMARY"


# -- rejections ------------------------------------------------------------------


def test_oversized_payload_is_rejected_unread() -> None:
    tables = make_tables(max_envelope_size=300)
    tables.set_local(local_sample(), incarnation=1, seq=1)
    result = tables.receive(topic(), b"\x00" * 301, T0)
    assert_rejected(tables, result, "oversized")
    assert len(tables.snapshot(T0).table("replication_group_member_stats")) == 1


def test_garbage_is_malformed() -> None:
    tables = online_tables()
    assert_rejected(tables, tables.receive(topic(), b"\xc1garbage", T0), "malformed")
    assert len(tables.snapshot(T0).table("replication_group_member_stats")) == 1


def test_truncated_envelope_is_malformed() -> None:
    tables = online_tables()
    data = envelope()
    assert_rejected(tables, tables.receive(topic(), data[: len(data) // 2], T0), "malformed")


def test_envelope_with_truncated_stats_message_is_malformed() -> None:
    tables = online_tables()
    # Cut inside the timestamp item: its header promises 8 bytes, 5 remain.
    stats = encode_pipeline_stats(PipelineStats(sent_timestamp=T0))[:-3]
    data = encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(REMOTE, "h", 1, "ONLINE", "PRIMARY", "8.4.3", "h:1"),
            view_id="v",
            incarnation=1,
            seq=1,
            sent_us=T0,
            stats=stats,
        )
    )
    assert_rejected(tables, tables.receive(topic(), data, T0), "malformed")


def test_envelope_naming_another_member_than_its_topic_is_spoofed() -> None:
    tables = online_tables()
    result = tables.receive(topic(REMOTE), envelope(member=THIRD), T0)
    assert_rejected(tables, result, "spoofed")
    assert len(tables.snapshot(T0).table("replication_group_member_stats")) == 1


def test_envelope_of_another_group_is_rejected() -> None:
    tables = online_tables()
    result = tables.receive(topic(REMOTE), envelope(group=OTHER_GROUP), T0)
    assert_rejected(tables, result, "other_group")


def test_replayed_seq_is_stale_and_leaves_the_row_unchanged() -> None:
    tables = online_tables()
    first = envelope(seq=5, transactions_certified=10)
    tables.receive(topic(), first, T0)
    tables.receive(topic(), envelope(seq=6, transactions_certified=20), T0 + 1)
    assert_rejected(tables, tables.receive(topic(), first, T0 + 2), "stale")
    row = row_of(tables.snapshot(T0 + 2), REMOTE)
    assert row["COUNT_TRANSACTIONS_CHECKED"] == 20


def test_duplicate_of_last_message_is_stale() -> None:
    tables = online_tables()
    data = envelope(seq=5)
    tables.receive(topic(), data, T0)
    assert_rejected(tables, tables.receive(topic(), data, T0 + 1), "stale")


def test_retained_copy_of_an_applied_message_is_ignored_not_counted() -> None:
    tables = online_tables()
    data = envelope(seq=5)
    tables.receive(topic(), data, T0)
    result = tables.receive(topic(), data, T0 + 1, retained=True)  # after a reconnect
    assert isinstance(result, Ignored)
    assert tables.received.rejected["stale"] == 0


def test_replay_of_an_older_incarnation_is_stale_not_a_restart() -> None:
    tables = online_tables()
    old = envelope(incarnation=7, seq=9, transactions_certified=1)
    tables.receive(topic(), old, T0)
    tables.receive(topic(), envelope(incarnation=8, seq=1, transactions_certified=2), T0 + 1)
    assert_rejected(tables, tables.receive(topic(), old, T0 + 2), "stale")
    state = tables.remote_state(REMOTE)
    assert state is not None
    assert state.transactions_certified == 2


def test_rejections_are_counted_per_member_in_member_status() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1), T0)
    tables.receive(topic(), envelope(seq=1), T0)
    tables.receive(topic(), b"junk", T0)
    status = row_of(tables.snapshot(T0), REMOTE, "grstats_member_status")
    assert status["ACCEPTED"] == 1
    assert status["REJECTED_STALE"] == 1
    assert status["REJECTED_MALFORMED"] == 1
    assert status["IS_LOCAL"] == 0


def test_our_own_messages_are_ignored_not_counted() -> None:
    tables = online_tables()
    result = tables.receive(topic(LOCAL), envelope(member=LOCAL, transactions_certified=9), T0)
    assert isinstance(result, Ignored)
    assert tables.received.accepted == 0
    assert sum(tables.received.rejected.values()) == 0
    assert tables.received.own == 1
