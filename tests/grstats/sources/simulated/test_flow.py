"""The simulated group under MySQL's flow control (sources/simulated/flow.py).

Expected values: the quota sequence is checked against the independent §9
reading of tests/grstats/core/test_flowcontrol.py over the model's own stats
messages; the unthrottled figures come from the same model with mode DISABLED.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
import time
from typing import Any

import pytest

from grstats.core.flowcontrol import FlowControlSettings
from grstats.sources.simulated.model import GroupModel
from grstats.sources.simulated.settings import SimulationSettings
from grstats.sources.simulated.source import WARM_AHEAD_S, SimulatedSource
from protocol import PipelineStats
from tests.fixtures.flow_reference import reference_quotas

SLOW = "33333333-3333-3333-3333-333333333333"
THRESHOLD = 1000  # MySQL's floor is 5% of it: 50 tx/s, below the slow member's 60 tx/s
FC = FlowControlSettings(applier_threshold=THRESHOLD, certifier_threshold=THRESHOLD)
DAY = SimulationSettings().epoch_s + 86400 * 5  # a Tuesday (2026-01-06)
HOT = DAY + 10 * 3600  # hot hours 10 and 11


def _models() -> tuple[GroupModel, GroupModel]:
    on = SimulationSettings(slow_member=SLOW, flow_control=FC)
    off = dataclasses.replace(on, flow_control=dataclasses.replace(FC, mode="DISABLED"))
    return GroupModel(on), GroupModel(off)


def _col(model: GroupModel, member: str, name: str, start: int, n: int) -> list[int]:
    return model.history_columns(member, start, n)[name]


def test_slow_member_queue_bounded_and_writers_throttled() -> None:
    on, off = _models()
    q_on = _col(on, SLOW, "count_transactions_remote_in_applier_queue", HOT, 3600)
    q_off = _col(off, SLOW, "count_transactions_remote_in_applier_queue", HOT, 3600)
    assert max(q_off) > 10 * THRESHOLD  # unthrottled: the queue runs away
    assert max(q_on) < 1.5 * THRESHOLD  # throttled: near the threshold
    for member in on.settings.members:
        lp_on = _col(on, member, "count_transactions_local_proposed", HOT, 3600)
        lp_off = _col(off, member, "count_transactions_local_proposed", HOT, 3600)
        assert lp_on[-1] - lp_on[0] < 0.8 * (lp_off[-1] - lp_off[0])


def test_counters_consistent_under_throttling() -> None:
    on, _ = _models()
    cols = {m: on.history_columns(m, HOT, 3600) for m in on.settings.members}
    checked = [c["count_transactions_checked"] for c in cols.values()]
    assert all(x == checked[0] for x in checked)
    total_local = [
        sum(c["count_transactions_local_proposed"][k] for c in cols.values()) for k in (0, 3599)
    ]
    assert total_local == [checked[0][0], checked[0][3599]]
    for c in cols.values():
        for name in ("count_transactions_remote_applied", "count_transactions_local_proposed"):
            xs = c[name]
            assert all(b >= a for a, b in itertools.pairwise(xs))


def test_quota_sequence_equals_independent_reading() -> None:
    on, _ = _models()
    assert on._flow is not None
    on._flow.record = True
    on.stats_at(SLOW, (HOT + 3600) * 1_000_000)
    trace = on._flow.trace
    assert len(trace) > 100
    assert any(q > 0 for _, q, _ in trace)
    episodes: list[list[tuple]] = []  # a new episode (fresh FlowControl) after a gap
    for i, tick in enumerate(trace):
        if i == 0 or tick[0] - trace[i - 1][0] > FC.period:
            episodes.append([])
        episodes[-1].append(tick)
    compared = 0
    for ep in episodes:
        script = [
            {"msgs": {f"m{i}": _fields(e) for i, e in enumerate(msgs)}, "used": 0}
            for _, _, msgs in ep
        ]
        # the oracle starts at step 0; ten calm periods first keep trap 17 out of the way
        calm = {"msgs": dict.fromkeys(script[0]["msgs"], (0, 0, 1, 1, 1, 1)), "used": 0}
        expected = reference_quotas([calm] * 10 + script, {"cert": THRESHOLD, "apply": THRESHOLD})
        model = [q for _, q, _ in ep[1:]]
        assert model == expected[10 : 10 + len(model)]
        compared += len(model)
    assert compared > 100


def _fields(e: object) -> tuple[int, ...]:
    names = ("waiting_certification", "waiting_apply", "delta_certified")
    names += ("delta_applied", "delta_local", "mode")
    return tuple(getattr(e, n) for n in names)


def test_no_slow_member_nothing_throttled() -> None:
    s = SimulationSettings()  # MySQL's defaults
    on = GroupModel(s)
    off = GroupModel(dataclasses.replace(s, flow_control=FlowControlSettings(mode="DISABLED")))
    for member in s.members:
        a = on.history_columns(member, HOT, 600)
        b = off.history_columns(member, HOT, 600)
        assert a == b


class _Recording(GroupModel):
    """The real model, recording which thread evaluated which second (and overlap)."""

    def __init__(self, settings: SimulationSettings) -> None:
        super().__init__(settings)
        self.calls: list[tuple[int, int]] = []  # (thread id, second) per stats_at
        self.inside = 0
        self.overlapped = False
        self.guard = threading.Lock()

    def stats_at(self, member_id: str, t_us: int) -> PipelineStats:
        with self.guard:
            self.inside += 1
            self.overlapped |= self.inside > 1
        try:
            self.calls.append((threading.get_ident(), t_us // 1_000_000))
            return super().stats_at(member_id, t_us)
        finally:
            with self.guard:
                self.inside -= 1


async def test_source_evaluates_off_the_loop_and_warms_the_next_hour() -> None:
    model = _Recording(SimulationSettings(slow_member=SLOW, flow_control=FC))
    source = SimulatedSource(model, SLOW)
    loop_thread = threading.get_ident()
    early = HOT + 600  # not within WARM_AHEAD_S of the next hour: nothing warmed
    await source.sample(early * 1_000_000)
    assert model.calls == [(model.calls[0][0], early)]
    late = HOT + 3600 - WARM_AHEAD_S + 1
    samples = [source.sample((late + i) * 1_000_000) for i in range(3)]
    got = await asyncio.gather(*samples)  # concurrent samples: serialised in the model
    assert [s.sampled_at_us for s in got] == [(late + i) * 1_000_000 for i in range(3)]
    deadline = time.monotonic() + 60.0
    for _ in range(1200):  # poll for the warm-up (bounded in count and time)
        if (HOT + 3600) in [s for _, s in model.calls] or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    await source.close()
    seconds = [s for _, s in model.calls]
    assert seconds.count(HOT + 3600) == 1  # the next hour, warmed once
    assert all(thread != loop_thread for thread, _ in model.calls)
    assert not model.overlapped


@pytest.mark.parametrize(
    ("threshold", "period", "hopeless"), [(5000, 1, False), (25000, 7, False), (25000, 1, True)]
)
def test_fast_forward_equals_the_second_by_second_loop(
    threshold: int, period: int, hopeless: bool
) -> None:
    """Where the quota cannot bind the model skips the per-second loop; the reference
    is the same model with the skip switched off (the loop the quota test checks).
    A period of 7 s straddles hour boundaries (3600 is not a multiple of 7); a
    hopeless slow member (5 tx/s) never empties its queue, whose unthrottled carry
    then differs from the recursion the throttled group follows."""
    fc = FlowControlSettings(
        certifier_threshold=threshold, applier_threshold=threshold, period=period
    )
    settings = SimulationSettings(slow_member=SLOW, flow_control=fc)
    if hopeless:
        settings = dataclasses.replace(settings, write_rate=40.0, slow_capacity=5.0)
    fast, slow = GroupModel(settings), GroupModel(settings)
    assert fast._flow is not None and slow._flow is not None
    slow._flow.fast_forward = False
    outcomes: list[Any] = []
    forward = fast._flow._fast_forward

    def counting(*args: Any) -> Any:
        got = forward(*args)
        outcomes.append(got)
        return got

    fast._flow._fast_forward = counting  # type: ignore[method-assign]
    start, hours = DAY + 9 * 3600, 16  # hot hours 10, 11, 14, 15 and the evening after
    if hopeless:  # a Monday more than LOOKBACK_HOURS after the epoch: runs start at 00:00
        start, hours = settings.epoch_s + 18 * 86400 + 2 * 3600, 4
    for h in range(start // 3600, start // 3600 + hours):
        # the same state at every hour's end: commits, queues, messages sent, quota,
        # FlowControl's entries, stamps and step number
        assert fast._flow._run(h).episode == slow._flow._run(h).episode, h
        # and the same commits and applier queues, second by second
        assert (fast._workload.hour(h).a == slow._workload.hour(h).a).all()
        for m in range(len(settings.members)):
            assert (fast._queues.queue(m, h) == slow._queues.queue(m, h)).all()
    if hopeless:  # the quota (floor 375 per writer) never binds: all of it skipped
        assert outcomes and all(o is not None for o in outcomes)
        return  # (its GTID texts reach back weeks: too slow a reference for a unit test)
    for member in settings.members:
        assert fast.history_columns(member, start, hours * 3600) == slow.history_columns(
            member, start, hours * 3600
        )
    # every path was taken: the loop, a skipped stretch, an episode ending in one
    assert None in outcomes
    assert any(o is not None and not o.ended for o in outcomes)
    assert any(o is not None and o.ended for o in outcomes)
