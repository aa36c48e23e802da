"""Hostile and odd input on the receive path: ids, bounds, ranges, replay, departures."""

from __future__ import annotations

import uuid

import pytest

from grstats.core.tables import Accepted, Ignored, Rejected
from tests.fixtures.member_tables import (
    GROUP,
    PERIOD_US,
    REMOTE,
    T0,
    THIRD,
    envelope,
    local_sample,
    make_tables,
    online_tables,
    row_of,
    topic,
)


@pytest.mark.parametrize(
    "member",
    ["not-a-uuid", "x" * 36, "22222222-2222-2222-2222-22222222222", "../../etc"],
)
def test_member_id_that_is_not_a_uuid_is_rejected_and_creates_no_row(member: str) -> None:
    tables = online_tables()
    result = tables.receive(topic(member), envelope(member=member), T0)
    assert isinstance(result, Rejected)
    assert result.reason == "invalid_id"
    assert (
        len(tables.snapshot(T0).table("replication_group_member_stats")) == 1
    )  # the local row only


def test_thousands_of_fake_members_stop_at_the_cap_and_are_counted() -> None:
    tables = make_tables(max_members_per_group=64)
    tables.set_local(local_sample(), incarnation=1, seq=1)
    ids = [str(uuid.UUID(int=i + 1_000)) for i in range(5_000)]
    for member in ids:
        tables.receive(topic(member), envelope(member=member), T0)
    snap = tables.snapshot(T0)
    assert (
        len(snap.table("replication_group_member_stats")) == 64
    )  # the local member has one of the 64 seats
    assert tables.received.rejected["over_limit"] == 5_000 - 63


def test_collector_caps_the_number_of_groups() -> None:
    tables = make_tables(group=None, local_member_id=None, max_groups=3)
    groups = [str(uuid.UUID(int=i + 77)) for i in range(5)]
    for g in groups:
        tables.receive(topic(REMOTE, group=g), envelope(group=g), T0)
    assert len(tables.snapshot(T0).table("replication_group_member_stats")) == 3
    assert tables.received.rejected["over_limit"] == 2


def test_sent_us_far_in_the_future_is_rejected() -> None:
    tables = online_tables()
    result = tables.receive(topic(), envelope(sent_us=T0 + 3600 * 1_000_000), T0)
    assert isinstance(result, Rejected)
    assert result.reason == "future"
    # a little ahead (clock skew between members) is fine
    ok = tables.receive(topic(), envelope(seq=2, sent_us=T0 + 2_000_000), T0)
    assert isinstance(ok, Accepted)


@pytest.mark.parametrize("seq", [0, 2**63, 2**64 - 1])
def test_seq_outside_1_to_2_63_is_rejected_as_out_of_range(seq: int) -> None:
    tables = online_tables()
    result = tables.receive(topic(), envelope(seq=seq), T0)
    assert isinstance(result, Rejected)
    assert result.reason == "out_of_range"


def test_flow_control_mode_above_127_is_rejected_as_out_of_range() -> None:
    tables = online_tables()
    result = tables.receive(topic(), envelope(flow_control_mode=200), T0)
    assert isinstance(result, Rejected)
    assert result.reason == "out_of_range"


def test_one_forged_huge_seq_does_not_lock_the_member_out() -> None:
    tables = online_tables()
    assert isinstance(tables.receive(topic(), envelope(seq=10), T0), Accepted)
    forged = tables.receive(topic(), envelope(seq=2**63 - 1), T0 + 100_000)
    assert isinstance(forged, Rejected)
    # the real member's next message (one period later) is still accepted
    real = tables.receive(topic(), envelope(seq=11, transactions_certified=5), T0 + PERIOD_US)
    assert isinstance(real, Accepted)
    assert row_of(tables.snapshot(T0 + PERIOD_US), REMOTE)["COUNT_TRANSACTIONS_CHECKED"] == 5


def test_seq_may_jump_as_far_as_the_silence_allows() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1), T0)
    # ten minutes away (broker outage for that member): 600 ticks went by
    later = T0 + 600 * PERIOD_US
    assert isinstance(tables.receive(topic(), envelope(seq=601), later), Accepted)


def test_forged_incarnation_hides_a_member_only_for_the_unreachable_window() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(incarnation=7, seq=5), T0)
    forged = tables.receive(topic(), envelope(incarnation=666, seq=1), T0 + 1)
    assert isinstance(forged, Accepted)  # indistinguishable from a restart when it comes
    soon = tables.receive(topic(), envelope(incarnation=7, seq=6), T0 + PERIOD_US)
    assert isinstance(soon, Rejected)
    assert soon.reason == "stale"
    # the forged incarnation stays silent; the real one keeps talking
    later = T0 + 7 * PERIOD_US
    back = tables.receive(topic(), envelope(incarnation=7, seq=12, transactions_certified=9), later)
    assert isinstance(back, Accepted)
    assert row_of(tables.snapshot(later), REMOTE)["COUNT_TRANSACTIONS_CHECKED"] == 9


def test_oversized_status_payload_is_rejected_and_counted() -> None:
    tables = online_tables()
    result = tables.receive(topic(kind="status"), b"offline" + b" " * 10_000, T0)
    assert isinstance(result, Rejected)
    assert result.reason == "oversized"


def test_garbage_status_payload_is_malformed() -> None:
    tables = online_tables()
    result = tables.receive(topic(kind="status"), b"\x1b[2Jpwned", T0)
    assert isinstance(result, Rejected)
    assert result.reason == "malformed"


@pytest.mark.parametrize("state", ["OFFLINE", "ERROR"])
def test_member_that_says_it_left_is_dropped_at_once(state: str) -> None:
    # MySQL drops a member that left (STOP GROUP_REPLICATION, or ERROR) from the
    # other members' replication_group_members at the next view change; an ERROR
    # member shows ERROR only in its own table.
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1), T0)
    tables.receive(topic(THIRD), envelope(member=THIRD, seq=1), T0)
    result = tables.receive(topic(), envelope(seq=2, state=state), T0 + PERIOD_US)
    assert isinstance(result, Ignored)
    snap = tables.snapshot(T0 + PERIOD_US)
    assert REMOTE not in [r["MEMBER_ID"] for r in snap.table("replication_group_members")]
    assert THIRD in [r["MEMBER_ID"] for r in snap.table("replication_group_members")]


def test_member_that_left_comes_back_when_it_rejoins() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1), T0)
    tables.receive(topic(), envelope(seq=2, state="OFFLINE"), T0 + PERIOD_US)
    back = tables.receive(topic(), envelope(seq=3, state="RECOVERING"), T0 + 2 * PERIOD_US)
    assert isinstance(back, Accepted)
    snap = tables.snapshot(T0 + 2 * PERIOD_US)
    assert row_of(snap, REMOTE, "replication_group_members")["MEMBER_STATE"] == "RECOVERING"


def test_group_in_topic_must_be_a_uuid() -> None:
    tables = make_tables(group=None, local_member_id=None)
    result = tables.receive(topic(group="prod"), envelope(group="prod"), T0)
    assert isinstance(result, Rejected)
    assert result.reason == "invalid_id"
    assert GROUP  # the normal group still works
    assert isinstance(tables.receive(topic(), envelope(), T0), Accepted)


def test_forgotten_and_departed_members_are_remembered_for_monitoring() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1), T0)
    tables.receive(topic(THIRD), envelope(member=THIRD, seq=1), T0)
    tables.receive(topic(THIRD, kind="status"), b"offline", T0 + PERIOD_US)
    forget = T0 + 61 * PERIOD_US  # forget_after is 60 s
    assert tables.expire(forget) == [(GROUP, REMOTE)]
    gone = {d.member_id: (d.state, d.last_seen_us) for d in tables.snapshot(forget).departed}
    assert gone == {REMOTE: ("UNREACHABLE", T0), THIRD: ("OFFLINE", T0)}
    # back again: no longer departed
    tables.receive(topic(), envelope(incarnation=9, seq=1), forget)
    assert [d.member_id for d in tables.snapshot(forget).departed] == [THIRD]
    # silent again, forgotten again: departed again; a day later both are still
    # departed (a departure never expires by time, only by the member's return)
    later = forget + 86_400 * PERIOD_US
    tables.expire(later)
    assert [d.member_id for d in tables.snapshot(later).departed] == [REMOTE, THIRD]
