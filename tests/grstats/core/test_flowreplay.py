"""grstats.core.flowreplay: attribution, since-when, throttled seconds, catch-up ETA.

Expected values are worked out by hand from PROTOCOL.md section 9.
"""

from __future__ import annotations

import math

from grstats.core import columns as col
from grstats.core.flowreplay import FlowReplay
from grstats.core.sample import ServerFlowControl
from protocol import MemberStatsState

A, B, C = "a" * 8, "b" * 8, "c" * 8
S = 1_000_000  # one second in µs


def _state(queue: int, applied: int, local: int, *, dq: int = 0, da: int = 0) -> MemberStatsState:
    return MemberStatsState(
        transactions_waiting_apply=queue,
        transactions_applied=applied,
        transactions_local=local,
        delta_transactions_applied=da,
        delta_transactions_local=local and 100,
        delta_transactions_certified=300,
    )


def _run(replay: FlowReplay, steps: int, slow_queue: int, t0: int = 0) -> int:
    """`steps` periods: A and B write, C is slow with `slow_queue` waiting."""
    t = t0
    for k in range(steps):
        t = t0 + (k + 1) * S
        replay.step(t)
        replay.receive(A, _state(0, 0, 1, da=300), t)
        replay.receive(B, _state(0, 0, 1, da=300), t)
        replay.receive(C, _state(slow_queue + 10 * k, 0, 0, da=90), t)
    return t


def _row(replay: FlowReplay, member: str) -> dict[str, object]:
    return dict(next(r for r in replay.rows() if r[col.MEMBER_ID] == member))


def test_slow_member_named_bottleneck_and_quota_from_floor() -> None:
    replay = FlowReplay()
    _run(replay, 12, 30000)  # past the first ten steps (trap 17)
    row = _row(replay, C)
    assert row[col.BOTTLENECK] == "applier"
    assert row[col.EXCESS_OVER_THRESHOLD] == 30000 + 110 - 25000
    # capacity 90 < floor 5% of 25000 = 1250; 1250 * 0.9 = 1125 // 2 writers
    assert row[col.GROUP_QUOTA] == 562
    assert row[col.THROTTLING] == 1
    assert _row(replay, A)[col.BOTTLENECK] == ""


def test_bottleneck_since_and_throttled_seconds_accumulate() -> None:
    replay = FlowReplay()
    _run(replay, 12, 30000)
    row = _row(replay, C)
    # C's first message needing flow control was received at 1 s; the step at 2 s saw it
    assert row[col.BOTTLENECK_SINCE] == "1970-01-01 00:00:02.000000"
    # quota limited from the step at 2 s (holds during the first steps purge every
    # entry but still limit); throttled seconds counted between steps 2 s .. 12 s
    assert row[col.THROTTLED_SECONDS] == 10.0
    assert _row(replay, A)[col.THROTTLED_SECONDS] == 0.0


def test_release_when_queue_drains_clears_bottleneck() -> None:
    replay = FlowReplay()
    t = _run(replay, 12, 30000)
    t += S
    replay.step(t)
    replay.receive(C, _state(100, 0, 0, da=90), t)
    replay.step(t + S)
    row = _row(replay, C)
    assert row[col.BOTTLENECK] == ""
    assert row[col.BOTTLENECK_SINCE] is None
    assert row[col.GROUP_QUOTA] == 843  # 562 * 1.5 released
    assert row[col.THROTTLING] == 1


def test_catch_up_eta_from_rates() -> None:
    replay = FlowReplay(catch_up_limit_s=60.0)
    replay.receive(C, _state(10000, 0, 0), 0)
    replay.receive(C, _state(9000, 0, 0, da=3000), 2 * S)  # apply 1500/s, incoming 1000/s
    row = _row(replay, C)
    assert row[col.APPLY_RATE] == 1500.0
    assert row[col.INCOMING_RATE] == 1000.0
    assert row[col.CATCH_UP_ETA_SECONDS] == 18.0  # 9000 / 500
    assert row[col.FAILOVER_READY] == 1
    assert row[col.CATCH_UP] == "18.0 s"


def test_catch_up_never_when_queue_grows() -> None:
    replay = FlowReplay(catch_up_limit_s=60.0)
    replay.receive(C, _state(1000, 0, 0), 0)
    replay.receive(C, _state(1500, 0, 0, da=100), S)
    row = _row(replay, C)
    assert math.isinf(float(str(row[col.CATCH_UP_ETA_SECONDS])))
    assert row[col.CATCH_UP] == "never at this rate"
    assert row[col.FAILOVER_READY] == 0


def test_server_figures_only_on_local_row() -> None:
    replay = FlowReplay()
    _run(replay, 2, 0)
    server = ServerFlowControl(count=3, time_sum=1500, active_count=0, last_throttle="x")
    rows = {r[col.MEMBER_ID]: r for r in replay.rows(A, server)}
    assert rows[A][col.SERVER_THROTTLE_COUNT] == 3
    assert rows[B][col.SERVER_THROTTLE_COUNT] is None


def test_rates_span_a_second_when_messages_come_faster() -> None:
    """At a 0.25 s period with applied counts moving once a second, the rates hold still.

    Each second C applies 40 transactions, all reported in the second's last message
    (deltas 0, 0, 0, 40) while its queue grows by 8 a second (2 a message). Rates over one
    message would read 0 or 160/s by turns; over a second they read 40/s and 48/s.
    """
    replay = FlowReplay(catch_up_limit_s=60.0)
    quarter = S // 4
    replay.receive(C, _state(100, 0, 0), 0)
    seen = []
    for k in range(1, 13):
        replay.receive(C, _state(100 + 2 * k, 0, 0, da=40 if k % 4 == 0 else 0), k * quarter)
        row = _row(replay, C)
        seen.append((row[col.APPLY_RATE], row[col.INCOMING_RATE]))
    assert seen[:3] == [(None, None)] * 3  # less than a second seen yet
    assert set(seen[3:]) == {(40.0, 48.0)}
