"""MemberTables over time, the local member and the collector, with hand-built envelopes.

Members become unreachable then forgotten, retained copies are aged from their
send time; the rules of receiving and rejecting: test_tables.py.
"""

from __future__ import annotations

from grstats.core.snapshot import MEMBER_STATS_COLUMNS
from grstats.core.tables import Accepted, Ignored, Rejected
from tests.fixtures.member_tables import (
    GROUP,
    LOCAL,
    OTHER_GROUP,
    PERIOD_US,
    REMOTE,
    T0,
    envelope,
    local_sample,
    make_tables,
    online_tables,
    row_of,
    topic,
)

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
