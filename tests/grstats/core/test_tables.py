"""MemberTables: pure receive/expire/snapshot rules, driven with hand-built envelopes."""

from __future__ import annotations

from typing import Any

from grstats.core.sample import LocalMember, LocalSample
from grstats.core.snapshot import MEMBER_STATS_COLUMNS, DaemonSnapshot
from grstats.core.tables import (
    Accepted,
    Ignored,
    Limits,
    MemberTables,
    RegistryLimits,
    Rejected,
)
from protocol import (
    Envelope,
    MemberInfo,
    PipelineStats,
    encode_envelope,
    encode_pipeline_stats,
)

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
OTHER_GROUP = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
LOCAL = "11111111-1111-1111-1111-111111111111"
REMOTE = "22222222-2222-2222-2222-222222222222"
THIRD = "33333333-3333-3333-3333-333333333333"
PREFIX = "grstats/v1"
T0 = 1_700_000_000_000_000  # µs
PERIOD_US = 1_000_000


def topic(member: str = REMOTE, kind: str = "stats", group: str = GROUP) -> str:
    return f"{PREFIX}/{group}/{member}/{kind}"


def envelope(
    *,
    member: str = REMOTE,
    group: str = GROUP,
    incarnation: int = 7,
    seq: int = 1,
    state: str = "ONLINE",
    role: str = "PRIMARY",
    sent_us: int = T0,
    **stats: Any,
) -> bytes:
    body = encode_pipeline_stats(PipelineStats(**stats))
    return encode_envelope(
        Envelope(
            group=group,
            member=MemberInfo(
                id=member,
                host="10.0.0.2",
                port=3306,
                state=state,
                role=role,
                version="8.4.3",
                gcs_id="10.0.0.2:33061",
            ),
            view_id="17000000:3",
            incarnation=incarnation,
            seq=seq,
            sent_us=sent_us,
            stats=body,
        )
    )


def make_tables(**kwargs: Any) -> MemberTables:
    timing: dict[str, Any] = {"period_s": 1.0, "unreachable_after": 5, "forget_after_s": 60.0}
    for name in (*timing, "max_members_per_group", "max_groups", "max_pending_gtids_bytes"):
        if name in kwargs:
            timing[name] = kwargs.pop(name)
    limits = Limits(max_envelope_size=kwargs.pop("max_envelope_size", 65536))
    options: dict[str, Any] = {"group": GROUP, "local_member_id": LOCAL}
    options.update(kwargs)
    return MemberTables(**options, registry_limits=RegistryLimits(**timing), limits=limits)


def local_sample(state: str = "ONLINE", **stats: Any) -> LocalSample:
    return LocalSample(
        member=LocalMember(
            group_name=GROUP,
            member_id=LOCAL,
            host="10.0.0.1",
            port=3306,
            state=state,
            role="PRIMARY" if state == "ONLINE" else "",
            version="8.4.3",
            view_id="17000000:3" if state != "OFFLINE" else "",
        ),
        stats=PipelineStats(**stats),
        sampled_at_us=T0,
    )


def row_of(
    snapshot: DaemonSnapshot, member: str, table: str = "replication_group_member_stats"
) -> dict[str, Any]:
    rows = snapshot.table(table)
    matches = [dict(r) for r in rows if r["MEMBER_ID"] == member]
    assert len(matches) == 1, rows
    return matches[0]


def online_tables() -> MemberTables:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    return tables


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


def assert_rejected(tables: MemberTables, result: object, reason: str) -> None:
    assert isinstance(result, Rejected)
    assert result.reason == reason
    assert tables.rejected_total[reason] == 1


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
    assert tables.rejected_total["stale"] == 0


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
    assert tables.accepted_total == 0
    assert sum(tables.rejected_total.values()) == 0
    assert tables.own_total == 1


# -- time -------------------------------------------------------------------------


def test_member_is_unreachable_only_after_unreachable_after_periods() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(), T0)
    at_limit = tables.snapshot(T0 + 5 * PERIOD_US)
    assert row_of(at_limit, REMOTE, "replication_group_members")["MEMBER_STATE"] == "ONLINE"
    past = tables.snapshot(T0 + 5 * PERIOD_US + 1)
    row = row_of(past, REMOTE, "replication_group_members")
    assert row["MEMBER_STATE"] == "UNREACHABLE"
    assert row["MEMBER_ROLE"] == "PRIMARY"  # the role follows the state underneath


def test_member_is_forgotten_after_forget_after_seconds() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(), T0)
    assert tables.expire(T0 + 60 * 1_000_000) == []
    assert tables.expire(T0 + 60 * 1_000_000 + 1) == [(GROUP, REMOTE)]
    assert len(tables.snapshot(T0 + 61 * 1_000_000).table("replication_group_members")) == 1


def test_offline_status_removes_member() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(), T0)
    tables.receive(topic(kind="status"), b"offline", T0 + 1)
    assert [r["MEMBER_ID"] for r in tables.snapshot(T0 + 1).table("replication_group_members")] == [
        LOCAL
    ]


def test_retained_stats_after_offline_do_not_resurrect_but_live_ones_do() -> None:
    tables = online_tables()
    tables.receive(topic(kind="status"), b"offline", T0)
    ignored = tables.receive(topic(), envelope(seq=3), T0 + 1, retained=True)
    assert isinstance(ignored, Ignored)
    assert isinstance(tables.receive(topic(), envelope(seq=4), T0 + 2), Accepted)


def test_retained_message_is_aged_from_its_send_time() -> None:
    tables = online_tables()
    sent = T0 - 10 * PERIOD_US
    tables.receive(topic(), envelope(sent_us=sent), T0, retained=True)
    row = row_of(tables.snapshot(T0), REMOTE, "replication_group_members")
    assert row["MEMBER_STATE"] == "UNREACHABLE"  # silent for 10 periods > 5


def test_retained_gtids_topic_fills_gtid_columns_for_a_late_receiver() -> None:
    tables = online_tables()
    gtid = f"{GROUP}:1-9".encode()
    with_gtids = envelope(
        seq=4, transaction_gtids_present=True, transactions_committed_all_members=gtid
    )
    # A late subscriber receives the last stats message (flag '0') and the gtids topic.
    tables.receive(topic(), envelope(seq=6), T0, retained=True)
    result = tables.receive(topic(kind="gtids"), with_gtids, T0, retained=True)
    assert isinstance(result, Accepted)
    row = row_of(tables.snapshot(T0), REMOTE)
    assert row["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == f"{GROUP}:1-9"


def test_gtids_topic_delivered_before_stats_is_applied_when_stats_arrive() -> None:
    tables = online_tables()
    with_gtids = envelope(
        seq=4, transaction_gtids_present=True, transactions_committed_all_members=b"g:1"
    )
    tables.receive(topic(kind="gtids"), with_gtids, T0, retained=True)
    tables.receive(topic(), envelope(seq=6), T0, retained=True)
    assert row_of(tables.snapshot(T0), REMOTE)["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == "g:1"


def test_older_gtids_message_does_not_override_newer_flag_one() -> None:
    tables = online_tables()
    old = envelope(seq=2, transaction_gtids_present=True, transactions_committed_all_members=b"o")
    new = envelope(seq=3, transaction_gtids_present=True, transactions_committed_all_members=b"n")
    tables.receive(topic(), new, T0)
    tables.receive(topic(kind="gtids"), old, T0)
    assert row_of(tables.snapshot(T0), REMOTE)["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == "n"


# -- the local member ---------------------------------------------------------------


def test_before_first_sample_one_local_row_with_empty_identifiers_and_zero_counters() -> None:
    tables = make_tables()
    snap = tables.snapshot(T0)
    assert len(snap.table("replication_group_member_stats")) == 1
    row = dict(snap.table("replication_group_member_stats")[0])
    # MySQL (ps_information.cc, plugin never initialised): only CHANNEL_NAME is set.
    assert row["CHANNEL_NAME"] == "group_replication_applier"
    assert row["MEMBER_ID"] == ""
    assert row["VIEW_ID"] == ""
    assert row["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == ""
    counters = [c for c in MEMBER_STATS_COLUMNS if c.startswith("COUNT_")]
    assert all(row[c] == 0 for c in counters)
    assert dict(snap.table("replication_group_members")[0]) == {
        "CHANNEL_NAME": "group_replication_applier",
        "MEMBER_ID": "",
        "MEMBER_HOST": "",
        "MEMBER_PORT": None,
        "MEMBER_STATE": "OFFLINE",
        "MEMBER_ROLE": "",
        "MEMBER_VERSION": "",
        "MEMBER_COMMUNICATION_STACK": "",
    }


def test_local_offline_hides_remote_rows() -> None:
    tables = make_tables()
    tables.receive(topic(), envelope(), T0)
    tables.set_local(local_sample(state="OFFLINE", transactions_certified=5), incarnation=1, seq=1)
    snap = tables.snapshot(T0)
    assert [r["MEMBER_ID"] for r in snap.table("replication_group_member_stats")] == [LOCAL]
    assert snap.table("replication_group_member_stats")[0]["COUNT_TRANSACTIONS_CHECKED"] == 0
    assert [r["MEMBER_ID"] for r in snap.table("replication_group_members")] == [LOCAL]


def test_local_row_is_live_from_the_sample_with_gtids() -> None:
    tables = make_tables()
    tables.set_local(
        local_sample(
            transactions_certified=12,
            transactions_local_rollback=2,
            transactions_committed_all_members=b"g:1-12",
        ),
        incarnation=1,
        seq=3,
    )
    snap = tables.snapshot(T0 + 500_000)
    row = row_of(snap, LOCAL)
    assert row["COUNT_TRANSACTIONS_CHECKED"] == 12
    assert row["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"] == 2
    assert row["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == "g:1-12"
    status = row_of(snap, LOCAL, "grstats_member_status")
    assert status["IS_LOCAL"] == 1
    assert status["SEQ"] == 3
    assert status["LAST_SEEN_AGE_SECONDS"] == 0.5


# -- collector ------------------------------------------------------------------------


def test_collector_keys_rows_by_group_and_member() -> None:
    tables = make_tables(group=None, local_member_id=None)
    tables.receive(topic(REMOTE, group=GROUP), envelope(group=GROUP), T0)
    tables.receive(topic(REMOTE, group=OTHER_GROUP), envelope(group=OTHER_GROUP), T0)
    snap = tables.snapshot(T0)
    assert len(snap.table("replication_group_member_stats")) == 2
    assert sorted(r["GROUP_NAME"] for r in snap.table("grstats_member_status")) == [
        GROUP,
        OTHER_GROUP,
    ]


def test_collector_rejects_envelope_whose_group_differs_from_topic() -> None:
    tables = make_tables(group=None, local_member_id=None)
    result = tables.receive(topic(REMOTE, group=GROUP), envelope(group=OTHER_GROUP), T0)
    assert isinstance(result, Rejected)
    assert result.reason == "other_group"
