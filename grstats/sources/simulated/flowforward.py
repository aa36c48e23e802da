"""The simulated group's flow-control episode where the quota cannot bind: no loop.

Strategy: where nothing is deferred and no writer offers more in a period than
the smallest quota flow control can give (`quota_floor`), the throttled group
is the unthrottled one for the rest of the hour: `fast_forward` computes the
applier queues with the loop's recursion, vectorised, and carries only
FlowControl's state on, stepping and receiving just the ticks whose result
matters.  Exact: it leaves the same `Episode` and writes the same queues as
`flowloop.episode_seconds` (tested over scripted episodes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grstats.core.flowcontrol import FlowControlSettings, FlowEntry, smallest_quota
from grstats.sources.simulated.flowloop import Episode, RawHour
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.workload import HOUR

__all__ = ["Forwarded", "fast_forward", "quota_floor"]


@dataclass(frozen=True, slots=True)
class Forwarded:
    """A fast-forwarded stretch: seconds [k0, stop) of the hour, whether the episode
    ended, and the applier queues of those seconds (members x seconds)."""

    stop: int
    ended: bool
    queues: I64


def quota_floor(settings: FlowControlSettings, members: int) -> int:
    """The smallest positive quota per writer that §9 can give a group
    (`core.flowcontrol.smallest_quota`: a release only raises it).

    Args:
        settings: the flow-control variables.
        members: the group's size.

    Returns:
        That quota (>= 1).
    """
    return smallest_quota(settings, members)


def fast_forward(ep: Episode, raw: RawHour, k0: int) -> Forwarded | None:
    """The rest of the hour from second k0 without the per-second loop, when the
    quota cannot bind there; None (nothing done) when it might.

    It cannot bind when nothing is deferred (no backlog, so every writer commits
    what it offers) and no writer offers more than `quota_floor` in any period
    of the hour while the quota in force is unlimited or at least that floor.
    Then commits and messages' deltas are the unthrottled ones, the applier
    queues follow the loop's recursion from the episode's queues (vectorised:
    a reflected walk; they differ from the unthrottled ones where those were
    carried in differently), and only FlowControl's state has to be carried
    on: a run of ticks whose messages all need flow control gives hold steps
    whose quota the next hold step replaces, so only the run's last two ticks
    are received and stepped; every other tick is stepped (a release). The
    episode ends where the loop would end it: the first second after a tick
    that left the quota unlimited with no hold pending at which every queue
    equals the unthrottled one. Exact: the same state and outputs as the loop
    (tested).
    """
    s = ep.fc.settings
    n, p = raw.members, s.period
    if any(ep.backlog_a) or any(ep.backlog_c) or k0 >= HOUR:
        return None
    floor = quota_floor(s, n)
    if 0 < ep.quota < floor:
        return None
    base_s = raw.h * HOUR
    a0, c0 = (raw.a[:, k0 - 1], raw.c[:, k0 - 1]) if k0 > 0 else (raw.base_a, raw.base_c)
    if ep.a != a0.tolist():
        return None
    a = raw.a[:, k0:]
    inc = np.diff(a, axis=1, prepend=a0[:, None])
    period_of = (base_s + np.arange(k0, HOUR)) // p
    starts = np.flatnonzero(np.diff(period_of, prepend=period_of[0] - 1))
    offered = np.add.reduceat(inc, starts, axis=1)
    if (base_s + k0) % p:  # the period in progress goes on (at a tick, used restarts)
        offered[:, 0] += np.array(ep.used, dtype=np.int64)
    if int(offered[raw.writers].max()) > floor:
        return None
    # the state at the end of each second k0 - 1 .. HOUR - 1 (column i: second k0 - 1 + i)
    ok = np.concatenate([(a0 - c0)[:, None], a - raw.c[:, k0:]], axis=1)
    arrivals = np.diff(ok.sum(axis=0)[None, :] - ok, axis=1)
    cap = raw.cap[:, k0:]
    walk = np.cumsum(arrivals - cap, axis=1)
    q_start = np.array(ep.queue, dtype=np.int64)
    queues = walk - np.minimum(np.minimum.accumulate(walk, axis=1), -q_start[:, None])
    q = np.concatenate([q_start[:, None], queues], axis=1)
    iq = np.concatenate([np.array(ep.iq, dtype=np.int64)[:, None], raw.iq[:, k0:]], axis=1)
    loc = np.concatenate([a0[:, None], a], axis=1)
    app = ok.sum(axis=0)[None, :] - ok - q
    app += np.array(ep.applied, dtype=np.int64)[:, None] - app[:, :1]
    cert = loc.sum(axis=0)
    over: list[bool] = np.logical_or(
        (q > s.applier_threshold).any(axis=0), (iq > s.certifier_threshold).any(axis=0)
    ).tolist()
    same: list[bool] = (queues == raw.q[:, k0:]).all(axis=0).tolist()  # per second k0 ..
    ticks = [k for k in range(k0, HOUR) if (base_s + k) % p == 0]
    need = [over[k - k0] for k in ticks]
    fc, names = ep.fc, [f"m{m}" for m in range(n)]

    def message(k: int) -> None:  # receive the messages of the tick at second k
        i = k - k0
        for m in range(n):
            if k - p >= k0:
                j = k - p - k0
                sc, sa, sl = int(cert[j]), int(app[m, j]), int(loc[m, j])
            else:
                sc, sa, sl = ep.sent[m]
            fc.receive(
                names[m],
                FlowEntry(
                    waiting_certification=int(iq[m, i]),
                    waiting_apply=int(q[m, i]),
                    delta_certified=int(cert[i]) - sc,
                    delta_applied=int(app[m, i]) - sa,
                    delta_local=int(loc[m, i]) - sl,
                ),
            )

    def ending(k: int, stop: int) -> int | None:  # the loop's end in seconds [k, stop)
        if ep.quota == 0 and fc.holds == 0:
            for x in range(k, stop):
                if same[x - k0]:
                    return x + 1
        return None

    done = ending(k0, ticks[0] if ticks else HOUR)
    t = 0
    while done is None and t < len(ticks):
        k = ticks[t]
        if fc.step_number != (base_s + k) // p:  # not the episode's first tick
            ep.quota = fc.step(0).quota
        if need[t]:
            last = t
            while last + 1 < len(ticks) and need[last + 1]:
                last += 1
            if last > t:  # hold steps up to ticks[last]: only the last one counts
                fc.step_number = (base_s + ticks[last - 1]) // p
                message(ticks[last - 1])
                ep.quota = fc.step(0).quota
            message(ticks[last])
            t = last + 1
            continue  # a hold is pending until the next tick: no end before it
        if t == len(ticks) - 1:
            message(k)
        t += 1
        done = ending(k, ticks[t] if t < len(ticks) else HOUR)
    stop = HOUR if done is None else done
    written = queues[:, : stop - k0]
    if done is not None:
        return Forwarded(stop, True, written)
    ep.a = loc[:, -1].tolist()
    ep.queue = q[:, -1].tolist()
    ep.iq = iq[:, -1].tolist()
    ep.applied = app[:, -1].tolist()
    if ticks:
        j = ticks[-1] - k0
        ep.sent = [(int(cert[j]), int(app[m, j]), int(loc[m, j])) for m in range(n)]
        counted = inc[:, ticks[-1] - k0 :].sum(axis=1)
        ep.used = (counted if ep.quota > 0 else np.zeros(n, dtype=np.int64)).tolist()
    elif ep.quota > 0:
        ep.used = (np.array(ep.used, dtype=np.int64) + inc.sum(axis=1)).tolist()
    return Forwarded(HOUR, False, written)
