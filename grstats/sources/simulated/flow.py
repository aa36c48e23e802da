"""Flow control in the simulated group: MySQL's QUOTA throttles the writers.

Strategy: the closed-form model (workload.py, applier.py) is the *unthrottled*
group. While no member's stats message needs flow control the throttled group
equals it. From the first acting tick whose messages need flow control (an
*episode*), the group runs second by second: at each acting tick (every
`period` seconds) one `core.flowcontrol.FlowControl` steps, then receives every
member's stats message (the state at the end of the previous second: queues,
deltas of certified, applied and local since the member's last message), and
each writer commits at most `quota` proposals in the period that follows (0 =
unlimited); the excess waits in the writer's backlog and is committed, oldest
first, when the quota allows. Applier queues follow the same Lindley recursion
and capacities as applier.py on the committed transactions. The episode ends
when no backlog is left, the quota is back to unlimited and every queue equals
the unthrottled one; from then on the closed form holds again. Where the
quota cannot bind (no backlog, and no writer offers more in a period than the
smallest quota §9 can give: `quota_floor`; MySQL's default thresholds at the
model's rates) the rest of the hour is fast-forwarded: the group is the
unthrottled one and only FlowControl's state is carried on, exactly as the
loop would leave it (`_fast_forward`).

Every member receives the same messages, and a modelled writer never commits
beyond its quota (it defers instead of overshooting), so MySQL's `extra` is 0
and one FlowControl gives every member's quota (the same figure the daemons'
replay computes). Members send stats whatever their scripted state.

Determinism with bounded work: runs start at an *anchor* hour, the last hour
of the same UTC week (from Monday 00:00) whose start has every unthrottled
applier queue empty and whose previous hour needs no flow control, else the
week's first hour; there the throttled group is taken to equal the
unthrottled one. Anchors are fixed points (not a window sliding with the
query), so every hour of a week shares its run, and a run is at most a week
long even when a slow member's queue never empties. A run is simulated a
whole hour at a time and cached, so results do not depend on the order or
time of queries.

Invariants: backlogs >= 0 (committed <= offered, per writer, cumulatively);
conflicts committed <= proposals committed in every second; throttled counters
are cumulative and never decrease within a run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from grstats.core.flowcontrol import FlowControl, FlowEntry
from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.workload import HOUR, Hour, Workload

__all__ = ["FlowModel", "ThrottledQueues", "ThrottledWorkload"]

_WEEK_HOURS = 168
_MONDAY_HOUR = 96  # 1970-01-05T00:00Z, a Monday: weeks start at hours 96 + k * 168
_RUNS_CACHED = 64  # a quiet hour is a run of its own: keep a few days of them
_HOURS_CACHED = 8

# (member, first second of the hour) -> that hour's certifier queue (IN_QUEUE)
WaitingCertification = Callable[[int, int], I64]


@dataclass(slots=True)
class _Episode:
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


@dataclass(slots=True)
class _Run:
    anchor: int  # hour
    next_hour: int  # first hour not yet simulated
    episode: _Episode | None = None
    # hour -> (deficit of proposals, deficit of conflicts, queues), each (members, 3600)
    hours: dict[int, tuple[I64, I64, I64]] = field(default_factory=dict)
    episodes: list[list[int]] = field(default_factory=list)  # [start, end or -1]


@dataclass(frozen=True, slots=True)
class _RawHour:
    """The unthrottled group in hour h, per member and second: cumulative proposals and
    conflicts, applier queues, certifier queues (each (members, 3600))."""

    h: int
    a: I64
    c: I64
    q: I64
    iq: I64


@dataclass(frozen=True, slots=True)
class _Forwarded:
    """A fast-forwarded stretch: seconds [k0, stop) of the hour, whether the episode
    ended, and the applier queues of those seconds (members x seconds)."""

    stop: int
    ended: bool
    queues: I64


class FlowModel:
    """The throttled group's deviations from the unthrottled model; cached, not thread-safe.

    Args:
        raw: the unthrottled workload.
        queues: the unthrottled applier queues.
        waiting_certification: the members' certifier queues (unthrottled).
    """

    def __init__(
        self, raw: Workload, queues: ApplierQueues, waiting_certification: WaitingCertification
    ) -> None:
        self._w, self._q, self._iq = raw, queues, waiting_certification
        self.settings = raw.settings.flow_control
        self.record = False  # keep every tick's messages and quota in `trace` (tests)
        self.fast_forward = True  # skip the per-second loop where the quota cannot bind
        self.trace: list[tuple[int, int, tuple[FlowEntry, ...]]] = []  # (tick, quota, msgs)
        self._runs: OrderedDict[int, _Run] = OrderedDict()
        self._holds: dict[int, bool] = {}
        self._anchors: dict[int, int] = {}

    # ---- where runs start ----

    def _hold_hour(self, h: int) -> bool:
        """Whether some unthrottled message of hour h could need flow control."""
        got = self._holds.get(h)
        if got is None:
            s, n = self.settings, self._w.n
            got = False
            for m in range(n):
                q = self._q.queue(m, h)
                if s.applier_threshold > 0 and int(q.max()) > s.applier_threshold:
                    got = True
                    break
                iq = self._iq(m, h * HOUR)
                if s.certifier_threshold > 0 and int(iq.max()) > s.certifier_threshold:
                    got = True
                    break
            self._holds[h] = got
        return got

    def anchor(self, h: int) -> int:
        """The hour the run covering hour h starts at."""
        got = self._anchors.get(h)
        if got is not None:
            return got
        w = self._w
        lo = max(w.h0, h - (h - _MONDAY_HOUR) % _WEEK_HOURS)
        got = lo
        for x in range(h, lo, -1):
            if all(self._q.carry(m, x) == 0 for m in range(w.n)) and not self._hold_hour(x - 1):
                got = x
                break
        self._anchors[h] = got
        return got

    # ---- runs ----

    def _run(self, h: int) -> _Run:
        a = self.anchor(h)
        run = self._runs.get(a)
        if run is None:
            run = self._runs[a] = _Run(a, a)
            if len(self._runs) > _RUNS_CACHED:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(a)
        while run.next_hour <= h:
            self._simulate_hour(run, run.next_hour)
            run.next_hour += 1
        return run

    def hour_arrays(self, h: int) -> tuple[I64, I64, I64] | None:
        """(proposal deficits, conflict deficits, queues) of hour h, None if unthrottled."""
        if self.settings.mode != "QUOTA" or h < self._w.h0:
            return None
        return self._run(h).hours.get(h)

    def deficit_before(self, h: int) -> tuple[I64, I64] | None:
        """Deficits (proposals, conflicts) per member at the end of hour h - 1, as the
        run covering hour h sees it (None: none)."""
        if self.settings.mode != "QUOTA" or h <= self._w.h0:
            return None
        run = self._run(h)
        if run.anchor == h:
            return None
        got = run.hours.get(h - 1)
        if got is None:
            return None
        return got[0][:, -1], got[1][:, -1]

    def episodes(self, h: int) -> list[list[int]]:
        """The episodes [start, end) (end -1: still running) of the run covering hour h."""
        return self._run(h).episodes if self.settings.mode == "QUOTA" else []

    def _raw_state(self, h: int) -> _RawHour:
        """Unthrottled cumulative proposals, conflicts, queues and certifier queues of hour h."""
        w = self._w
        hour = w.hour(h)
        pa, pc = w.base(h)
        q = np.stack([self._q.queue(m, h) for m in range(w.n)])
        iq = np.stack([self._iq(m, h * HOUR) for m in range(w.n)])
        return _RawHour(h, pa[:, None] + hour.a, pc[:, None] + hour.c, q, iq)

    def _first_hold(self, raw: _RawHour, q_prev: I64, iq_prev: I64, k0: int) -> int:
        """First second k >= k0 of the hour that is an acting tick whose messages (the
        state of the second before) need flow control; HOUR if none."""
        s = self.settings
        prev_q = np.concatenate([q_prev[:, None], raw.q[:, :-1]], axis=1)
        prev_iq = np.concatenate([iq_prev[:, None], raw.iq[:, :-1]], axis=1)
        over = np.zeros(HOUR, dtype=bool)
        if s.applier_threshold > 0:
            over |= (prev_q > s.applier_threshold).any(axis=0)
        if s.certifier_threshold > 0:
            over |= (prev_iq > s.certifier_threshold).any(axis=0)
        over[:k0] = False
        over &= (raw.h * HOUR + np.arange(HOUR)) % s.period == 0
        hits = np.flatnonzero(over)
        return int(hits[0]) if len(hits) else HOUR

    def _start(self, raw: _RawHour, k: int) -> _Episode:
        """An episode starting at second k of the hour from the unthrottled state before it."""
        w, h = self._w, raw.h
        s = h * HOUR + k
        if k > 0:
            a_prev, c_prev = raw.a[:, k - 1], raw.c[:, k - 1]
            q_prev, iq_prev = raw.q[:, k - 1], raw.iq[:, k - 1]
        else:
            a_prev, c_prev = w.base(h)
            q_prev = np.array([self._q.queue_at(m, s - 1) for m in range(w.n)], dtype=np.int64)
            iq_prev = np.array([int(self._iq(m, (h - 1) * HOUR)[-1]) for m in range(w.n)])
        # deltas of the first message: since the tick one period earlier (unthrottled)
        p = self.settings.period
        before = s - 1 - p
        ok_b = w.ok_at(before) if before >= w.h0 * HOUR else np.zeros(w.n, dtype=np.int64)
        ok_now = a_prev - c_prev
        hb, kb = divmod(before, HOUR)
        a_b = w.base(hb)[0] + w.hour(hb).a[:, kb] if hb >= w.h0 else np.zeros(w.n, np.int64)
        tot_b = int(a_b.sum())
        q_b = [self._q.queue_at(m, before) if hb >= w.h0 else 0 for m in range(w.n)]
        tot_ok_now, tot_ok_b = int(ok_now.sum()), int(ok_b.sum())
        applied_b = [
            tot_ok_now - int(ok_now[m]) - int(q_prev[m]) - (tot_ok_b - int(ok_b[m]) - q_b[m])
            for m in range(w.n)
        ]
        n = w.n
        return _Episode(
            fc=FlowControl(self.settings, step_number=s // p),
            a=[int(x) for x in a_prev],
            backlog_a=[0] * n,
            backlog_c=[0] * n,
            queue=[int(x) for x in q_prev],
            applied=[0] * n,
            iq=[int(x) for x in iq_prev],
            # so that the first deltas are those of the unthrottled period before
            sent=[(tot_b, -applied_b[m], int(a_b[m])) for m in range(n)],
            used=[0] * n,
        )

    def _simulate_hour(self, run: _Run, h: int) -> None:
        w, n = self._w, self._w.n
        raw = self._raw_state(h)
        if h == run.anchor:
            q_prev = np.zeros(n, dtype=np.int64)
            iq_prev = np.zeros(n, dtype=np.int64)
            if h > w.h0:
                q_prev = np.array([self._q.queue_at(m, h * HOUR - 1) for m in range(n)])
                iq_prev = np.array([int(self._iq(m, (h - 1) * HOUR)[-1]) for m in range(n)])
        else:
            if h - 1 in run.hours:
                q_prev = run.hours[h - 1][2][:, -1]
            else:
                q_prev = np.array([self._q.queue_at(m, h * HOUR - 1) for m in range(n)])
            iq_prev = np.array([int(self._iq(m, (h - 1) * HOUR)[-1]) for m in range(n)])
        k = 0
        out: tuple[I64, I64, I64] | None = None
        while k < HOUR:
            episode = run.episode
            if episode is None:
                k = self._first_hold(raw, q_prev, iq_prev, k)
                if k >= HOUR:
                    break
                episode = run.episode = self._start(raw, k)
                run.episodes.append([h * HOUR + k, -1])
            forwarded = None
            if self.fast_forward and not self.record:
                forwarded = self._fast_forward(episode, raw, k)
            if (
                forwarded is not None
                and out is None
                and (forwarded.queues == raw.q[:, k : forwarded.stop]).all()
            ):
                k, ended = forwarded.stop, forwarded.ended  # the unthrottled hour, nothing stored
            else:
                if out is None:
                    zeros = np.zeros((n, HOUR), dtype=np.int64)
                    out = (zeros, zeros.copy(), raw.q.copy())
                if forwarded is not None:
                    out[2][:, k : forwarded.stop] = forwarded.queues
                    k, ended = forwarded.stop, forwarded.ended
                else:
                    k, ended = self._episode_seconds(episode, raw, k, out)
            if ended:
                run.episode = None
                run.episodes[-1][1] = h * HOUR + k
        if out is not None:
            run.hours[h] = out

    def _episode_seconds(
        self, ep: _Episode, raw: _RawHour, k0: int, out: tuple[I64, I64, I64]
    ) -> tuple[int, bool]:
        """Simulate from second k0 of the hour until the episode ends or the hour does,
        writing (deficits of proposals, of conflicts, queues) into `out`; returns the
        first second not simulated and whether the episode ended.

        A hot loop over Python ints (n members, one pass per second): everything it
        reads is hoisted into locals first.
        """
        w, n, p = self._w, self._w.n, self.settings.period
        h = raw.h
        writers = w.writers.tolist()
        pa, pc = w.base(h)
        inc_a = np.diff(np.concatenate([pa[:, None], raw.a], axis=1), axis=1).tolist()
        inc_c = np.diff(np.concatenate([pc[:, None], raw.c], axis=1), axis=1).tolist()
        cap = [self._q._cap_hour(m, h).tolist() for m in range(n)]
        iq_l, q_raw = raw.iq.tolist(), raw.q.tolist()
        fc, record, trace = ep.fc, self.record, self.trace
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
                if record:
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

    def quota_floor(self) -> int:
        """The smallest positive quota per writer that §9 can give this group.

        Capacity is at least the floor (5 % of the smaller threshold, else
        min_recovery_quota or min_quota); the quota is truncate(capacity x
        HOLD_FACTOR), capped at max_quota, split among at most all members, at
        least 1, and a release only raises it.
        """
        s = self.settings
        floor = int(0.05 * min(s.certifier_threshold, s.applier_threshold))
        if s.min_recovery_quota > 0:
            floor = min(floor, s.min_recovery_quota)
        if s.min_quota > 0:
            floor = s.min_quota
        quota = int(floor * (1 - s.hold_percent / 100))
        if s.max_quota > 0:
            quota = min(quota, s.max_quota)
        if self._w.n > 1:
            if s.member_quota_percent == 0:
                quota //= self._w.n
            else:
                quota = int(quota * (s.member_quota_percent / 100))
        return max(quota, 1)

    def _fast_forward(self, ep: _Episode, raw: _RawHour, k0: int) -> _Forwarded | None:
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
        w, s, n, p = self._w, self.settings, self._w.n, self.settings.period
        if any(ep.backlog_a) or any(ep.backlog_c) or k0 >= HOUR:
            return None
        floor = self.quota_floor()
        if 0 < ep.quota < floor:
            return None
        h, base_s = raw.h, raw.h * HOUR
        pa, pc = w.base(h)
        a0, c0 = (raw.a[:, k0 - 1], raw.c[:, k0 - 1]) if k0 > 0 else (pa, pc)
        if ep.a != a0.tolist():
            return None
        a = raw.a[:, k0:]
        inc = np.diff(a, axis=1, prepend=a0[:, None])
        period_of = (base_s + np.arange(k0, HOUR)) // p
        starts = np.flatnonzero(np.diff(period_of, prepend=period_of[0] - 1))
        offered = np.add.reduceat(inc, starts, axis=1)
        if (base_s + k0) % p:  # the period in progress goes on (at a tick, used restarts)
            offered[:, 0] += np.array(ep.used, dtype=np.int64)
        if int(offered[w.writers].max()) > floor:
            return None
        # the state at the end of each second k0 - 1 .. HOUR - 1 (column i: second k0 - 1 + i)
        ok = np.concatenate([(a0 - c0)[:, None], a - raw.c[:, k0:]], axis=1)
        arrivals = np.diff(ok.sum(axis=0)[None, :] - ok, axis=1)
        cap = np.stack([self._q._cap_hour(m, h)[k0:] for m in range(n)])
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
            return _Forwarded(stop, True, written)
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
        return _Forwarded(HOUR, False, written)


class ThrottledWorkload(Workload):
    """The workload as committed under flow control (same interface as Workload)."""

    def __init__(self, raw: Workload, flow: FlowModel) -> None:
        super().__init__(raw.settings)
        self._raw, self._flow = raw, flow
        self._thr_hours: OrderedDict[int, Hour] = OrderedDict()

    def hour(self, h: int) -> Hour:
        arrays = self._flow.hour_arrays(h)
        if arrays is None:  # no deficit anywhere in the hour (nor at its start)
            return self._raw.hour(h)
        got = self._thr_hours.get(h)
        if got is not None:
            self._thr_hours.move_to_end(h)
            return got
        raw = self._raw.hour(h)
        a, c = raw.a - arrays[0], raw.c - arrays[1]
        before = self._flow.deficit_before(h)
        if before is not None:
            a, c = a + before[0][:, None], c + before[1][:, None]
        got = self._thr_hours[h] = Hour(a, c, raw.in_queue)
        if len(self._thr_hours) > _HOURS_CACHED:
            self._thr_hours.popitem(last=False)
        return got

    def base(self, h: int) -> tuple[I64, I64]:
        pa, pc = self._raw.base(h)
        before = self._flow.deficit_before(h)
        if before is None:
            return pa, pc
        return pa - before[0], pc - before[1]

    def ok_before(self, h_lo: int, h_hi: int) -> I64:
        rows = [self.base(h) for h in range(h_lo, h_hi + 1)]
        return np.stack([pa - pc for pa, pc in rows])

    def first_exceeding(self, v: I64, target: int, upper: int) -> int:
        h = upper // HOUR
        while h > self.h0:
            pa, pc = self.base(h)
            if int(v @ (pa - pc)) <= target:
                break
            h -= 1
        pa, pc = self.base(h)
        base = int(v @ (pa - pc))
        cum = v @ self.hour(h).ok
        return h * HOUR + int(np.searchsorted(cum, target - base, side="right"))


class ThrottledQueues(ApplierQueues):
    """Applier queues of the throttled group (same interface as ApplierQueues)."""

    def __init__(self, workload: ThrottledWorkload, raw: ApplierQueues, flow: FlowModel) -> None:
        super().__init__(workload)
        self._raw, self._flow = raw, flow

    def queue(self, m: int, h: int) -> I64:
        arrays = self._flow.hour_arrays(h)
        if arrays is None:
            return self._raw.queue(m, h)
        got: I64 = arrays[2][m]
        return got

    def carry(self, m: int, h: int) -> int:
        return 0 if h <= self._w.h0 else self.queue_at(m, h * HOUR - 1)
