"""The simulated group's flow-control episode, second by second (`flow.FlowModel`).

Strategy: an episode's state (`Episode`: commits, backlogs, queues, the
messages last sent, one `core.flowcontrol.FlowControl`) is stepped over the
unthrottled hour (`RawHour`) one second at a time: at each acting tick the
FlowControl steps and receives every member's stats message, then each writer
commits at most its quota and the applier queues follow the same recursion as
`applier.ApplierQueues`.  `flowforward.fast_forward` computes the same where
the quota cannot bind, without the loop; the two are tested equal.

Invariants: backlogs >= 0 (committed <= offered, per writer, cumulatively);
conflicts committed <= proposals committed in every second.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grstats.core.flowcontrol import FlowControl, FlowEntry
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.workload import HOUR

__all__ = ["Episode", "RawHour", "episode_seconds"]


@dataclass(slots=True)
class Episode:
    """The live state of a second-by-second episode (Python ints: a hot loop)."""

    fc: FlowControl
    a: list[int]  # committed proposals, cumulative
    backlog_a: list[int]  # offered but not yet committed
    backlog_c: list[int]  # conflicts among the backlog
    queue: list[int]
    applied: list[int]  # relative to the episode's start
    iq: list[int]  # certifier queue of the previous second
    sent: list[tuple[int, int, int]]  # (certified, applied, local) at the last message
    quota: int = 0
    used: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RawHour:
    """The unthrottled group in hour h, per member and second: cumulative proposals and
    conflicts, applier queues, certifier queues and applier capacities (each
    (members, 3600)); the cumulative proposals and conflicts before the hour
    (members,), and which members write."""

    h: int
    a: I64
    c: I64
    q: I64
    iq: I64
    base_a: I64
    base_c: I64
    cap: I64
    writers: I64

    @property
    def members(self) -> int:
        return int(self.a.shape[0])


def episode_seconds(
    ep: Episode,
    raw: RawHour,
    k0: int,
    out: tuple[I64, I64, I64],
    trace: list[tuple[int, int, tuple[FlowEntry, ...]]] | None = None,
) -> tuple[int, bool]:
    """Simulate from second k0 of the hour until the episode ends or the hour does,
    writing (deficits of proposals, of conflicts, queues) into `out`; returns the
    first second not simulated and whether the episode ended.

    A hot loop over Python ints (n members, one pass per second): everything it
    reads is hoisted into locals first.  `trace`, when given, receives every
    tick's (second, quota, messages).
    """
    n, p = raw.members, ep.fc.settings.period
    h = raw.h
    writers = raw.writers.tolist()
    inc_a = np.diff(np.concatenate([raw.base_a[:, None], raw.a], axis=1), axis=1).tolist()
    inc_c = np.diff(np.concatenate([raw.base_c[:, None], raw.c], axis=1), axis=1).tolist()
    cap = raw.cap.tolist()
    iq_l, q_raw = raw.iq.tolist(), raw.q.tolist()
    fc, record = ep.fc, trace is not None
    receive, step = fc.receive, fc.step
    names = [f"m{m}" for m in range(n)]
    members = range(n)
    a_l, bl_a, bl_c, queue, applied, iq_prev, sent, used = (
        ep.a,
        ep.backlog_a,
        ep.backlog_c,
        ep.queue,
        ep.applied,
        ep.iq,
        ep.sent,
        ep.used,
    )
    ok = [0] * n
    base_s = h * HOUR
    cols_a: list[list[int]] = [[] for _ in members]  # per member, seconds k0 ..
    cols_c: list[list[int]] = [[] for _ in members]
    cols_q: list[list[int]] = [[] for _ in members]
    quota = ep.quota
    k = k0
    ended = False
    while k < HOUR:
        s = base_s + k
        if s % p == 0:
            if fc.step_number != s // p:  # not the episode's first tick
                quota = ep.quota = step(0).quota
                for m in members:
                    used[m] = 0
            certified = sum(a_l)  # proposals checked so far (CHECKED)
            msgs = []
            for m in members:
                sc, sa, sl = sent[m]
                e = FlowEntry(
                    waiting_certification=iq_prev[m],
                    waiting_apply=queue[m],
                    delta_certified=certified - sc,
                    delta_applied=applied[m] - sa,
                    delta_local=a_l[m] - sl,
                )
                receive(names[m], e)
                sent[m] = (certified, applied[m], a_l[m])
                if record:
                    msgs.append(e)
            if trace is not None:
                trace.append((s, quota, tuple(msgs)))
        tot = 0
        for m in writers:
            offered = bl_a[m] + inc_a[m][k]
            conflicts = bl_c[m] + inc_c[m][k]
            if quota > 0:
                take = min(offered, max(0, quota - used[m]))
                used[m] += take
            else:
                take = offered
            nc = conflicts * take // offered if offered else 0
            a_l[m] += take
            bl_a[m] = offered - take
            bl_c[m] = conflicts - nc
            ok[m] = take - nc
            tot += take - nc
        for m in members:
            x = queue[m] + tot - ok[m]
            nq = max(x - cap[m][k], 0)
            applied[m] += x - nq
            queue[m] = nq
            iq_prev[m] = iq_l[m][k]
            cols_a[m].append(bl_a[m])
            cols_c[m].append(bl_c[m])
            cols_q[m].append(nq)
        k += 1
        if (
            quota == 0
            and fc.holds == 0
            and not any(bl_a)
            and all(queue[m] == q_raw[m][k - 1] for m in members)
        ):
            ended = True
            break
    if k > k0:
        da, dc, qs = out
        da[:, k0:k] = cols_a
        dc[:, k0:k] = cols_c
        qs[:, k0:k] = cols_q
    return k, ended
