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


def _state(
    queue: int, applied: int, local: int, *, dq: int = 0, da: int = 0, writes: int = 100
) -> MemberStatsState:
    return MemberStatsState(
        transactions_waiting_apply=queue,
        transactions_applied=applied,
        transactions_local=local,
        delta_transactions_applied=da,
        delta_transactions_local=local and writes,
        delta_transactions_certified=300,
    )


def _run(replay: FlowReplay, steps: int, slow_queue: int, t0: int = 0, writes: int = 100) -> int:
    """`steps` periods: A and B write `writes` a period, C is slow with `slow_queue` waiting."""
    t = t0
    for k in range(steps):
        t = t0 + (k + 1) * S
        replay.step(t)
        replay.receive(A, _state(0, 0, 1, da=300, writes=writes), t)
        replay.receive(B, _state(0, 0, 1, da=300, writes=writes), t)
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


def test_a_quota_the_writers_never_reach_holds_nobody() -> None:
    # the quota, 562 a writer (above), is active from the step at 2 s; A and B commit 100 a
    # period: no commit waits in do_wait (quota_used never passes quota_size), so MySQL
    # counts nothing throttled and neither does the replay
    replay = FlowReplay()
    _run(replay, 12, 30000)
    row = _row(replay, C)
    # C's first message needing flow control was received at 1 s; the step at 2 s saw it
    assert row[col.BOTTLENECK_SINCE] == "1970-01-01 00:00:02.000000"
    assert row[col.THROTTLING] == 1 and row[col.WRITERS_HELD] == 0
    assert row[col.THROTTLED_SECONDS] == 0.0


def test_writers_at_the_quota_are_held_and_the_bottleneck_charged() -> None:
    # A and B commit 600 a period. Steps 2 s .. 9 s purge every entry (trap 17: step < 10),
    # so their quota is MAXTPS x 0.9 = 1,932,735,282; from the step at 10 s it is 562 a
    # writer (by hand above). The step at 11 s judges by the larger of the two quotas
    # before it (1,932,735,282): not held; from the step at 12 s both are 562 and the
    # writers' 600 reach it: held. Each of the steps at 12 s .. 20 s adds its second to C,
    # the bottleneck since 2 s: 9 s
    replay = FlowReplay()
    _run(replay, 20, 30000, writes=600)
    row = _row(replay, C)
    assert row[col.WRITERS_HELD] == 1
    assert row[col.THROTTLED_SECONDS] == 9.0
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
    assert row[col.CATCH_UP] == "18 s"
    # writes stopped: 9000 at its capacity of 1500/s, 6 s
    assert row[col.APPLY_CAPACITY] == 1500.0
    assert row[col.FAILOVER_SECONDS] == 6.0
    assert row[col.FAILOVER_READY] == 1


def test_catch_up_never_under_load_is_not_a_failover_alarm() -> None:
    # the primary: a steady queue of 3 at 50 tx/s in and out. Under this load it
    # never catches up (ETA +inf), and is ready: writes stopped, 3 / 50 = 0.06 s
    replay = FlowReplay(catch_up_limit_s=60.0)
    replay.receive(C, _state(3, 0, 0), 0)
    replay.receive(C, _state(3, 0, 0, da=50), S)
    row = _row(replay, C)
    assert math.isinf(float(str(row[col.CATCH_UP_ETA_SECONDS])))
    assert row[col.CATCH_UP] == "never at this rate"
    assert row[col.FAILOVER_SECONDS] == 0.06
    assert row[col.FAILOVER_READY] == 1


def test_failover_time_uses_the_best_rate_of_the_last_minute() -> None:
    # C applied 500/s, then 100/s for 59 s: its capacity is still 500/s, so 30,000 queued
    # take 60 s, at the limit; one second later the 500/s span is over a minute old:
    # 30,000 / 100 = 300 s, not ready
    replay = FlowReplay(catch_up_limit_s=60.0)
    replay.receive(C, _state(30_000, 0, 0), 0)
    replay.receive(C, _state(30_000, 0, 0, da=500), S)
    for k in range(2, 61):
        replay.receive(C, _state(30_000, 0, 0, da=100), k * S)
    row = _row(replay, C)
    assert row[col.APPLY_CAPACITY] == 500.0 and row[col.FAILOVER_SECONDS] == 60.0
    assert row[col.FAILOVER_READY] == 1
    replay.receive(C, _state(30_000, 0, 0, da=100), 61 * S)
    row = _row(replay, C)
    assert row[col.APPLY_CAPACITY] == 100.0 and row[col.FAILOVER_SECONDS] == 300.0
    assert row[col.FAILOVER_READY] == 0


def test_a_stopped_applier_is_never_ready() -> None:
    replay = FlowReplay(catch_up_limit_s=60.0)
    replay.receive(C, _state(10, 0, 0), 0)
    replay.receive(C, _state(20, 0, 0), S)  # applied nothing in the minute
    row = _row(replay, C)
    assert math.isinf(float(str(row[col.FAILOVER_SECONDS])))
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
