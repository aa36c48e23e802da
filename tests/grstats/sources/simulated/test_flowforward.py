"""The flow-control fast-forward equals the second-by-second loop over scripted episodes.

The hour is written by hand (commits, certifier queues, applier capacities);
its unthrottled applier queues come from a plain per-second Lindley recursion
here, independent of both pieces under test.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from grstats.core.flowcontrol import FlowControl, FlowControlSettings, FlowEntry
from grstats.sources.simulated.flowforward import fast_forward, quota_floor
from grstats.sources.simulated.flowloop import Episode, RawHour, episode_seconds
from grstats.sources.simulated.workload import HOUR

H = 500_000  # an hour (1027-01-15), any will do
MEMBERS = 3
# floor 5 (5 % of 100) x 0.9 = 4, split among 3 members: 1 transaction a period
FC = FlowControlSettings(certifier_threshold=100, applier_threshold=100, period=1)


def unthrottled_queues(ok: np.ndarray, cap: np.ndarray, q0: list[int]) -> np.ndarray:
    """Each member's applier queue: it receives the others' transactions, applies cap."""
    queues = np.zeros_like(ok)
    queue = list(q0)
    previous = [0] * MEMBERS
    for k in range(HOUR):
        total = int(ok[:, k].sum())
        for m in range(MEMBERS):
            arrivals = total - int(ok[m, k]) - (sum(previous) - previous[m])
            queue[m] = max(queue[m] + arrivals - int(cap[m, k]), 0)
            queues[m, k] = queue[m]
        previous = [int(x) for x in ok[:, k]]
    return queues


def scripted_hour(hold_seconds: range, stop: range, q0: list[int]) -> RawHour:
    """Writers 0 and 1 commit one transaction every other second (no conflicts);
    member 2's applier stops during `stop`; certifier queues exceed the threshold
    in `hold_seconds`."""
    base_a = np.array([1_000, 2_000, 0], dtype=np.int64)
    steps = np.zeros((MEMBERS, HOUR), dtype=np.int64)
    steps[0, ::2] = 1
    steps[1, 1::2] = 1
    a = base_a[:, None] + np.cumsum(steps, axis=1)
    c = np.zeros_like(a)
    cap = np.full((MEMBERS, HOUR), 5, dtype=np.int64)
    cap[2, stop.start : stop.stop] = 0
    # the per-second arrivals of the recursion: this second's commits
    queues = unthrottled_queues(steps, cap, q0)
    iq = np.zeros((MEMBERS, HOUR), dtype=np.int64)
    iq[1, hold_seconds.start : hold_seconds.stop] = 150
    writers = np.array([0, 1], dtype=np.int64)
    return RawHour(H, a, c, queues, iq, base_a, np.zeros(MEMBERS, np.int64), cap, writers)


def episode(raw: RawHour, queue: list[int]) -> Episode:
    return Episode(
        fc=FlowControl(FC, step_number=H * HOUR // FC.period),
        a=raw.base_a.tolist(),
        backlog_a=[0] * MEMBERS,
        backlog_c=[0] * MEMBERS,
        queue=list(queue),
        applied=[0] * MEMBERS,
        iq=[0, 150, 0],  # an episode starts at a tick whose messages need flow control
        sent=[(3_000, 0, int(x)) for x in raw.base_a],
        used=[0] * MEMBERS,
    )


@pytest.mark.parametrize(
    ("hold_seconds", "stop", "episode_queue", "ends"),
    [
        (range(0, 40), range(100, 400), [30, 0, 7], True),  # holds, then the queues agree
        (range(0, HOUR, 7), range(0, 0), [0, 0, 0], False),  # a hold every 7 s: no end
        (range(10, 3000), range(2000, 3500), [0, 0, 50], False),  # a long hold, a stop
    ],
)
def test_fast_forward_equals_the_loop_over_a_scripted_episode(
    hold_seconds: range, stop: range, episode_queue: list[int], ends: bool
) -> None:
    raw = scripted_hour(hold_seconds, stop, q0=[0, 0, 0])
    assert quota_floor(FC, MEMBERS) == 1  # so the writers' one a period cannot be held
    looped, forwarded = episode(raw, episode_queue), episode(raw, episode_queue)
    zeros = np.zeros((MEMBERS, HOUR), dtype=np.int64)
    out = (zeros, zeros.copy(), raw.q.copy())
    trace: list[tuple[int, int, tuple[FlowEntry, ...]]] = []
    stop_at, ended = episode_seconds(looped, raw, 0, out, trace)
    got = fast_forward(forwarded, raw, 0)

    assert got is not None  # it did fast-forward: the comparison is not vacuous
    assert any(quota > 0 for _, quota, _ in trace)  # and the quota moved in the episode
    assert (got.stop, got.ended) == (stop_at, ended)
    assert ended is ends
    assert (out[0] == 0).all() and (out[1] == 0).all()  # nothing deferred
    assert (got.queues == out[2][:, :stop_at]).all()
    if not ended:  # the state carried into the next hour, FlowControl's included
        assert forwarded == looped


def test_fast_forward_declines_where_the_quota_could_bind() -> None:
    raw = scripted_hour(range(0, 40), range(0, 0), q0=[0, 0, 0])
    busy = copy.deepcopy(raw)
    object.__setattr__(busy, "a", raw.a + np.arange(HOUR) * 2)  # writers: 3 a second
    assert fast_forward(episode(busy, [0, 0, 0]), busy, 0) is None
