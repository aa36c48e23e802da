"""`FlowListen`, the pure part of `grstats flow --bus`: messages in, replayed rows out.

Time is an argument; envelopes are built by hand; expected values by hand.
"""

from __future__ import annotations

from grstats.cli.busflow import FlowListen
from grstats.core import columns as col
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.topics import STATUS_OFFLINE
from tests.fixtures.member_tables import OTHER_GROUP, REMOTE, T0, THIRD, envelope, topic

SECOND = 1_000_000
SETTINGS = FlowControlSettings(applier_threshold=5)


def test_rows_per_group_and_member_with_the_bottleneck_by_hand() -> None:
    listen = FlowListen(SETTINGS)
    # REMOTE in GROUP: 9 waiting (4 over 5); THIRD in OTHER_GROUP: 2 waiting (under)
    listen.receive(
        topic(REMOTE), envelope(member=REMOTE, transactions_waiting_apply=9), T0, retained=False
    )
    listen.receive(
        topic(THIRD, group=OTHER_GROUP),
        envelope(member=THIRD, group=OTHER_GROUP, transactions_waiting_apply=2),
        T0,
        retained=False,
    )
    listen.step(T0 + SECOND)
    rows = listen.rows()
    assert [r[col.MEMBER_ID] for r in rows] == [REMOTE, THIRD]  # GROUP sorts first
    assert (rows[0][col.BOTTLENECK], rows[0][col.EXCESS_OVER_THRESHOLD]) == ("applier", 4)
    assert (rows[1][col.BOTTLENECK], rows[1][col.EXCESS_OVER_THRESHOLD]) == ("", 0)
    assert rows[0][col.SERVER_THROTTLE_COUNT] is None
    assert (listen.messages, listen.members, listen.steps) == (2, 2, 1)


def test_a_member_that_says_offline_leaves_the_replay_at_the_next_step() -> None:
    listen = FlowListen(SETTINGS)
    listen.receive(topic(REMOTE), envelope(member=REMOTE), T0, retained=False)
    listen.receive(topic(THIRD), envelope(member=THIRD), T0, retained=False)
    listen.step(T0 + SECOND)
    listen.receive(topic(THIRD, kind="status"), STATUS_OFFLINE, T0 + SECOND, retained=False)
    listen.step(T0 + 2 * SECOND)
    assert [r[col.MEMBER_ID] for r in listen.rows()] == [REMOTE]


def test_a_retained_copy_counts_at_its_sent_time_not_its_arrival() -> None:
    """Sent at T0, heard at T0 + 0.9 s (retained); the next one sent and heard at
    T0 + 1 s applied 10: 10 tx / 1 s = 10 tx/s (at arrival it would be 100)."""
    listen = FlowListen(SETTINGS)
    first = envelope(member=REMOTE, seq=1, sent_us=T0, transactions_applied=100)
    listen.receive(topic(REMOTE), first, T0 + 900_000, retained=True)
    second = envelope(member=REMOTE, seq=2, sent_us=T0 + SECOND, transactions_applied=110)
    listen.receive(topic(REMOTE), second, T0 + SECOND, retained=False)
    listen.step(T0 + 2 * SECOND)
    (row,) = listen.rows()
    assert row[col.APPLY_RATE] == 10.0


def test_a_refused_message_feeds_nothing() -> None:
    listen = FlowListen(SETTINGS)
    listen.receive(topic(REMOTE), b"\x00not an envelope", T0, retained=False)
    listen.step(T0 + SECOND)
    assert listen.rows() == []
    assert listen.messages == 0
