"""A collector's history is as complete as a member's: its rows carry the flow-control replay.

A collector (no group, no local member) replays MySQL's flow control per
group, stepped by its own clock (`MemberTables.tick`, once a period), so its
rows carry the same fc_* figures a member daemon's do. Before, every fc_*
of a collector's row was NULL, and a fleet rolled up from a collector had an
empty "Who held the group back". Expected figures are worked out by hand
from PROTOCOL.md section 9 (MySQL's QUOTA algorithm), thresholds 100.
"""

from __future__ import annotations

import pytest

from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.records import FLOW_HISTORY_COLUMNS, HistoryRow
from grstats.daemon import receiver as receiver_module
from grstats.daemon.receiver import Receiver
from tests.fixtures.member_tables import (
    GROUP,
    REMOTE,
    T0,
    THIRD,
    envelope,
    make_tables,
    topic,
)
from tests.fixtures.publishing import Sink

pytestmark = pytest.mark.faults

S = 1_000_000
LOW = FlowControlSettings(certifier_threshold=100, applier_threshold=100)
FLOW = [name for name, _ in FLOW_HISTORY_COLUMNS]


def _flow(row: HistoryRow) -> dict[str, object]:
    return {name: getattr(row, name) for name in FLOW}


def _figures(
    kind: str, excess: int, quota: int, eta: float | None, ready: int | None
) -> dict[str, object]:
    return dict(zip(FLOW, (kind, excess, quota, int(quota > 0), eta, ready), strict=True))


def test_collector_rows_carry_the_replay_of_their_group(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [T0]
    monkeypatch.setattr(receiver_module, "now_us", lambda: now[0])
    sink = Sink()
    collector = make_tables(group=None, local_member_id=None, flow_control=LOW)
    receiver = Receiver(collector, sink)  # type: ignore[arg-type]

    def third(k: int) -> None:  # a writer keeping up: 100 a second, nothing queued
        now[0] = T0 + k * S
        count = 100 * (k + 1)
        body = envelope(
            member=THIRD,
            seq=k + 1,
            sent_us=now[0],
            transactions_certified=count,
            transactions_applied=count,
            transactions_local=count,
        )
        receiver.on_message(topic(THIRD), body, retained=False)

    for k in range(12):  # the collector's own clock: one step a second, 12 steps
        third(k)
        collector.tick(T0 + k * S + S // 2)
    third(12)
    now[0] = T0 + 12 * S + S // 4
    first = envelope(
        seq=1,
        sent_us=now[0],
        transactions_waiting_apply=500,
        transactions_applied=1000,
        transactions_certified=2000,
    )
    receiver.on_message(topic(REMOTE), first, retained=False)
    collector.tick(T0 + 12 * S + S // 2)  # step 13 counts REMOTE's hold
    third(13)
    now[0] = T0 + 13 * S + S // 4
    second = envelope(
        seq=2,
        sent_us=now[0],
        transactions_waiting_apply=400,
        transactions_applied=1300,
        transactions_certified=2300,
    )
    receiver.on_message(topic(REMOTE), second, retained=False)
    remote = [r for r in sink.rows if r.member_id == REMOTE]
    others = [r for r in sink.rows if r.member_id == THIRD]
    assert len(remote) == 2 and len(others) == 14
    # excess 500 - 100; the quota of step 12 (no hold yet) is 0; no rates yet
    assert _flow(remote[0]) == _figures("applier", 400, 0, None, None)
    # step 13: apply_min = REMOTE's delta applied 1000 (the only member over the
    # threshold); safe = the least delta certified/applied of all: THIRD's 100;
    # capacity = max(min(1000, 100), floor 5) = 100; quota 100 * 0.9 = 90, one
    # writer (THIRD). Rates over 1 s: apply 300, queue -100 -> incoming 200;
    # ETA 400 / (300 - 200) = 4 s <= 60: failover-ready.
    assert _flow(remote[1]) == _figures("applier", 300, 90, 4.0, 1)
    # THIRD keeps up: no bottleneck, caught up; its last row sees the quota too
    assert _flow(others[-1]) == _figures("", 0, 90, 0.0, 1)


def test_a_collector_replays_each_group_apart_and_drops_a_group_with_its_last_member() -> None:
    other_group = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
    collector = make_tables(group=None, local_member_id=None, flow_control=LOW)
    collector.receive(topic(REMOTE), envelope(transactions_waiting_apply=500), T0)
    collector.receive(
        topic(THIRD, group=other_group), envelope(member=THIRD, group=other_group), T0
    )
    replay = collector.replay(other_group)
    assert replay is not None and replay.members() == (THIRD,)
    mine = collector.replay(GROUP)
    assert mine is not None and mine.members() == (REMOTE,)
    collector.tick(T0 + 61 * S)  # forget_after 60 s: both members forgotten, so the replays go
    assert collector.replay(other_group) is None
    assert collector.replay(GROUP) is None


def test_a_departed_member_leaves_the_replay_at_the_next_tick() -> None:
    for tables in (
        make_tables(flow_control=LOW),
        make_tables(group=None, local_member_id=None, flow_control=LOW),
    ):
        tables.receive(topic(REMOTE), envelope(), T0)
        tables.receive(topic(THIRD), envelope(member=THIRD), T0)
        tables.receive(topic(THIRD, "status"), b"offline", T0 + 1)  # it left
        tables.tick(T0 + 2)
        replay = tables.replay(GROUP)
        assert replay is not None and replay.members() == (REMOTE,)
