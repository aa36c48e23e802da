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
loop would leave it (`flowforward.fast_forward`; the loop is `flowloop.episode_seconds`).

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
from typing import Any

import numpy as np

from grstats.core.flowcontrol import FlowControl, FlowEntry
from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.flowforward import Forwarded, fast_forward, quota_floor
from grstats.sources.simulated.flowloop import Episode, RawHour, episode_seconds
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.workload import HOUR, Hour, Workload

__all__ = ["FlowModel", "ThrottledQueues", "ThrottledWorkload"]

_WEEK_HOURS = 168
_MONDAY_HOUR = 96  # 1970-01-05T00:00Z, a Monday: weeks start at hours 96 + k * 168
_RUNS_CACHED = 64  # a quiet hour is a run of its own: keep a few days of them
_HOURS_CACHED = 8
_ANSWERS_KEPT = 48  # hours whose hour_arrays / deficit_before answers are kept (two days)

# (member, first second of the hour) -> that hour's certifier queue (IN_QUEUE)
WaitingCertification = Callable[[int, int], I64]


@dataclass(slots=True)
class _Run:
    anchor: int  # hour
    next_hour: int  # first hour not yet simulated
    episode: Episode | None = None
    # hour -> (deficit of proposals, deficit of conflicts, queues), each (members, 3600)
    hours: dict[int, tuple[I64, I64, I64]] = field(default_factory=dict)
    episodes: list[list[int]] = field(default_factory=list)  # [start, end or -1]


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
        # hour -> what hour_arrays / deficit_before answered: read ~10^5 times a simulated
        # week, each a run lookup; an hour's answer never changes once simulated
        self._arrays: dict[int, tuple[I64, I64, I64] | None] = {}
        self._before: dict[int, tuple[I64, I64] | None] = {}

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
        if h in self._arrays:
            return self._arrays[h]
        got = None
        if self.settings.mode == "QUOTA" and h >= self._w.h0:
            got = self._run(h).hours.get(h)
        _remember(self._arrays, h, got)
        return got

    def deficit_before(self, h: int) -> tuple[I64, I64] | None:
        """Deficits (proposals, conflicts) per member at the end of hour h - 1, as the
        run covering hour h sees it (None: none)."""
        if h in self._before:
            return self._before[h]
        got = None
        if self.settings.mode == "QUOTA" and h > self._w.h0:
            run = self._run(h)
            last = run.hours.get(h - 1) if run.anchor != h else None
            if last is not None:
                got = last[0][:, -1], last[1][:, -1]
        _remember(self._before, h, got)
        return got

    def episodes(self, h: int) -> list[list[int]]:
        """The episodes [start, end) (end -1: still running) of the run covering hour h."""
        return self._run(h).episodes if self.settings.mode == "QUOTA" else []

    def _raw_state(self, h: int) -> RawHour:
        """Unthrottled cumulative proposals, conflicts, queues and certifier queues of hour h."""
        w = self._w
        hour = w.hour(h)
        pa, pc = w.base(h)
        q = np.stack([self._q.queue(m, h) for m in range(w.n)])
        iq = np.stack([self._iq(m, h * HOUR) for m in range(w.n)])
        cap = np.stack([self._q.capacity(m, h) for m in range(w.n)])
        a, c = pa[:, None] + hour.a, pc[:, None] + hour.c
        return RawHour(h, a, c, q, iq, pa, pc, cap, w.writers)

    def _first_hold(self, raw: RawHour, q_prev: I64, iq_prev: I64, k0: int) -> int:
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

    def _start(self, raw: RawHour, k: int) -> Episode:
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
        return Episode(
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
        self, ep: Episode, raw: RawHour, k0: int, out: tuple[I64, I64, I64]
    ) -> tuple[int, bool]:
        return episode_seconds(ep, raw, k0, out, self.trace if self.record else None)

    def quota_floor(self) -> int:
        """The smallest positive quota per writer that §9 can give this group."""
        return quota_floor(self.settings, self._w.n)

    def _fast_forward(self, ep: Episode, raw: RawHour, k0: int) -> Forwarded | None:
        return fast_forward(ep, raw, k0)


def _remember(memo: dict[int, Any], h: int, value: Any) -> None:
    """Keep hour h's answer, the oldest forgotten past _ANSWERS_KEPT hours."""
    memo[h] = value
    if len(memo) > _ANSWERS_KEPT:
        del memo[next(iter(memo))]


class ThrottledWorkload(Workload):
    """The workload as committed under flow control (same interface as Workload)."""

    def __init__(self, raw: Workload, flow: FlowModel) -> None:
        super().__init__(raw.settings)
        self._raw, self._flow = raw, flow
        self._thr_hours: OrderedDict[int, Hour] = OrderedDict()
        self.hours_cached = _HOURS_CACHED

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
        if len(self._thr_hours) > self.hours_cached:
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
