"""Deterministic model of a whole Group Replication group, evaluated at any second.

Strategy: every number is a pure function of (settings, absolute time), so the
daemons of one group, started at different times in different processes,
compute the same group workload. Time is whole seconds since the Unix epoch
(a sample at `t_us` sees the state at second `t_us // 10**6`, events of that
second included; a script event at a fractional time takes effect at the
next whole second).

- Workload: each writing member proposes N transactions per UTC hour, N from a
  counter-based hash (splitmix64 keyed by blake2b(seed, group)) of (member,
  hour) times hot-hour, weekend and per-day factors; of those, C conflict
  (approximately Binomial(N, conflict_probability)). Within the hour the N are
  spread over the seconds by hashed integer weights and the C over the N by
  exact integer arithmetic, so a second never has more conflicts than
  proposals. Hour totals are closed-form, so cumulative counters at any time
  are a cached per-hour prefix sum plus a cached per-second array of the hour.
- Applier queues: an exact per-second Lindley recursion Q = max(0, Q +
  arrivals - capacity), solved in closed form per hour (reflected random walk),
  restarted empty at each hour boundary (the remainder is applied at the
  boundary) unless the member's applier is stopped at that moment.
- GC / stable set: on every 60 s boundary M the stable point is the latest
  second whose certified transactions every member has applied (queues are
  FIFO); TRANSACTIONS_COMMITTED_ALL_MEMBERS is the GTIDs certified up to it and
  ROWS_VALIDATING counts positively certified transactions after it.
- GTIDs: blocks of 1000000 (GR's assignment block size). Writer slot w (member
  index in multi-primary, 0 for the primary in single-primary) starts in block
  w (GNOs w*10**6 + 1 ..); a writer that uses up its block gets the next block
  after all blocks handed out so far (GR's lowest free block), so every block
  but the writers' current ones is full and the stable set stays compact.

Invariants (tested): CHECKED and CONFLICTS_DETECTED are equal on every member;
sum of LOCAL_PROPOSED = CHECKED; sum of LOCAL_ROLLBACK = CONFLICTS_DETECTED;
REMOTE_APPLIED + REMOTE_IN_APPLIER_QUEUE = positively certified transactions of
the other members; counters never decrease. A model is not thread-safe (caches).
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import numpy.typing as npt

from grstats.core.sample import LocalMember, LocalSample
from grstats.sources.simulated.settings import (
    ACTIONS,
    DEFAULT_EPOCH_S,
    MODES,
    ScriptEvent,
    SimulationSettings,
)
from protocol import FLOW_CONTROL_QUOTA, PipelineStats

__all__ = [
    "ACTIONS",
    "DEFAULT_EPOCH_S",
    "GTID_BLOCK_SIZE",
    "MODES",
    "GroupModel",
    "ScriptEvent",
    "SimulatedSource",
    "SimulationSettings",
]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]

HOUR = 3600
GTID_BLOCK_SIZE = 1_000_000
GTID_EVERY_S = 30  # history rows carry GTID texts on seconds divisible by this
_SCRIPTED_CAPACITY = 1_000_000_000.0  # scripted mode: the applier keeps up at once
_HOURS_CACHED = 4
_STABLE_CACHED = 4096  # minutes: a simulated day of every member reuses them
_MASK64 = (1 << 64) - 1


def _key(*parts: object) -> int:
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _mix(x: U64) -> U64:
    """splitmix64 finaliser, vectorised (uint64 arithmetic wraps)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _mix_py(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _rand(key: int, *coords: Any) -> U64:
    """Hash of (key, coords...) broadcast over the coordinate arrays."""
    x: U64 = np.asarray(np.uint64(key), dtype=np.uint64)
    for c in coords:
        x = _mix(x ^ np.asarray(c, dtype=np.int64).astype(np.uint64))
    return x


def _uniform(r: U64) -> npt.NDArray[np.float64]:
    return (r >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _mask_cum(cum: I64, lo: int, hi: int) -> I64:
    """Keep only the increments of seconds [lo, hi) of per-second cumulative rows."""
    inc = np.diff(cum, axis=1, prepend=0)
    inc[:, :lo] = 0
    inc[:, hi:] = 0
    return np.cumsum(inc, axis=1)


class _Hour:
    """Per-second cumulative counts of one hour (relative to the hour's start)."""

    __slots__ = ("a", "a_tot", "c", "c_tot", "in_queue", "ok", "ok_tot", "queues")

    def __init__(self, a: I64, c: I64, in_queue: I64) -> None:
        self.a = a  # (members, 3600) proposals, inclusive of the second
        self.c = c  # conflicts (negatively certified), same shape
        self.ok = a - c
        self.a_tot: I64 = a.sum(axis=0)
        self.c_tot: I64 = c.sum(axis=0)
        self.ok_tot: I64 = self.ok.sum(axis=0)
        self.in_queue = in_queue
        self.queues: dict[int, I64] = {}


class GroupModel:
    """The group's workload; every method is a pure function of (settings, time)."""

    def __init__(self, settings: SimulationSettings) -> None:
        """Prepare the model (cheap; work happens lazily on first evaluation).

        Args:
            settings: the knobs, identical on every member of the group.
        """
        s = settings
        self.settings = s
        self._n = n = len(s.members)
        self._index = {m: i for i, m in enumerate(s.members)}
        single = s.mode == "single-primary"
        self._writers = np.array([0] if single else list(range(n)), dtype=np.int64)
        self._slot = [-1] * n
        for slot, m in enumerate(self._writers.tolist()):
            self._slot[m] = slot
        self._p = 0.0 if single else s.conflict_probability
        self._keys = {
            p: _key(s.seed, s.group, p) for p in ("rate", "day", "cf", "off", "sec", "iq")
        }
        self._pick_key = _key(s.seed, s.group, "pick")
        self._stop = None if s.stop_at_s is None else self._ev_sec(s.stop_at_s)  # first idle
        self._view_id = f"{s.epoch_s}:{n}"
        self._init_script()
        self._init_capacity()
        first = [self._ev_sec(ev.at_s) for ev in s.script] + [s.epoch_s]
        self._h0 = min(first) // HOUR
        self._pa: I64 = np.zeros((1, n), dtype=np.int64)  # row j: proposals before hour h0 + j
        self._pc: I64 = np.zeros((1, n), dtype=np.int64)
        self._hours: OrderedDict[int, _Hour] = OrderedDict()
        self._blocks: dict[tuple[int, int], int] = {}  # (member, j) -> block number
        self._carry: dict[tuple[int, int], int] = {}  # (member, hour) -> queue at its end
        self._stable: OrderedDict[int, tuple[int, int, str]] = OrderedDict()

    @staticmethod
    def _ev_sec(at_s: float) -> int:
        return int(-(-at_s // 1))

    def _init_script(self) -> None:
        self._script_hours: dict[int, list[tuple[int, int, int, bool]]] = {}
        self._stops: list[list[tuple[int, int]]] = [[] for _ in range(self._n)]
        states: list[list[tuple[int, int, str]]] = [[] for _ in range(self._n)]
        for order, ev in enumerate(self.settings.script):
            m = self._index[ev.member.lower()]
            sec = self._ev_sec(ev.at_s)
            end = self._ev_sec(ev.at_s + ev.duration_s)
            if ev.action in ("commit", "conflict"):
                h, k = divmod(sec, HOUR)
                entry = (k, m, ev.count, ev.action == "conflict")
                self._script_hours.setdefault(h, []).append(entry)
            elif ev.action == "applier_stop" and end > sec:
                self._stops[m].append((sec, end))
            elif ev.action == "set_state":
                states[m].append((sec, order, ev.state))
                if ev.duration_s > 0:
                    states[m].append((end, order, "ONLINE"))
        self._state_secs = [[sec for sec, _, _ in sorted(st)] for st in states]
        self._state_vals = [[v for _, _, v in sorted(st)] for st in states]

    def _init_capacity(self) -> None:
        s = self.settings
        k = np.arange(HOUR + 1, dtype=np.float64)
        self._cap: list[I64] = []
        for m in range(self._n):
            remote = max(1, len(self._writers) - (1 if self._slot[m] >= 0 else 0))
            if s.slow_member == s.members[m]:
                rate = s.slow_capacity or max(1.0, 1.5 * s.write_rate * remote)
            elif s.applier_capacity is not None:
                rate = s.applier_capacity
            elif s.scripted:
                rate = _SCRIPTED_CAPACITY
            else:
                rate = max(1.0, 1.25 * s.hot_factor * s.write_rate * remote)
            self._cap.append(np.diff(np.floor(k * rate)).astype(np.int64))

    # ---- workload: hour parameters, hour arrays, prefix sums ----

    def _active(self, start: int) -> tuple[int, int]:
        """Background seconds [lo, hi) of the hour starting at `start` (lo == hi: none)."""
        if self.settings.scripted:
            return 0, 0
        lo = min(HOUR, max(0, self.settings.epoch_s - start))
        hi = HOUR if self._stop is None else min(HOUR, max(0, self._stop - start))
        return lo, max(lo, hi)

    def _hour_params(self, hs: I64) -> tuple[I64, I64, I64]:
        """Background proposals N, conflicts C and spread offset per (hour, member)."""
        s, n, w = self.settings, self._n, self._writers
        shape = (len(hs), n)
        big_n = np.zeros(shape, dtype=np.int64)
        big_c = np.zeros(shape, dtype=np.int64)
        off = np.zeros(shape, dtype=np.int64)
        if s.write_rate <= 0 or len(hs) == 0:
            return big_n, big_c, off
        day = hs // 24
        hot = np.where(np.isin(hs % 24, s.hot_hours), s.hot_factor, 1.0)
        weekend = np.where((day + 3) % 7 >= 5, s.weekend_factor, 1.0)
        dayf = 0.85 + 0.3 * _uniform(_rand(self._keys["day"], day))
        jit = 0.75 + 0.5 * _uniform(_rand(self._keys["rate"], w[None, :], hs[:, None]))
        mean = (s.write_rate * 3600.0 * hot * weekend * dayf)[:, None] * jit
        nw = np.floor(mean + 0.5).astype(np.int64)
        big_n[:, w] = nw
        if self._p > 0:
            mu = nw * self._p
            sd = np.sqrt(mu * (1.0 - self._p))
            u = _uniform(_rand(self._keys["cf"], w[None, :, None], hs[:, None, None], np.arange(4)))
            # Irwin-Hall(4) ~ N(0, 1); summed explicitly so the order never depends on shape
            z = (u[..., 0] + u[..., 1] + u[..., 2] + u[..., 3] - 2.0) * 1.7320508075688772
            big_c[:, w] = np.clip(np.floor(mu + sd * z + 0.5), 0, nw).astype(np.int64)
        r = _rand(self._keys["off"], w[None, :], hs[:, None])
        off[:, w] = (r % np.maximum(nw, 1).astype(np.uint64)).astype(np.int64)
        return big_n, big_c, off

    def _build_hour(self, h: int) -> _Hour:
        n, start = self._n, h * HOUR
        a = np.zeros((n, HOUR), dtype=np.int64)
        c = np.zeros((n, HOUR), dtype=np.int64)
        iq = np.zeros((n, HOUR), dtype=np.int64)
        lo, hi = self._active(start)
        if hi > lo:
            big_n, big_c, off = self._hour_params(np.array([h], dtype=np.int64))
            w, k = self._writers, np.arange(HOUR, dtype=np.int64)
            weights = (_rand(self._keys["sec"], w[:, None], h, k[None, :]) >> np.uint64(54)).astype(
                np.int64
            ) + 1
            cw = np.cumsum(weights, axis=1)
            nw = big_n[0, w][:, None]
            acum = nw * cw // cw[:, -1:]
            ccum = (big_c[0, w][:, None] * acum + off[0, w][:, None]) // np.maximum(nw, 1)
            if (lo, hi) != (0, HOUR):
                acum, ccum = _mask_cum(acum, lo, hi), _mask_cum(ccum, lo, hi)
            a[w], c[w] = acum, ccum
            inc = np.diff(a.sum(axis=0), prepend=0)
            r = _rand(self._keys["iq"], np.arange(n)[:, None], h, k[None, :]) >> np.uint64(58)
            iq = inc[None, :] * r.astype(np.int64) // 256
        for k0, m, count, conflict in self._script_hours.get(h, ()):
            a[m, k0:] += count
            if conflict:
                c[m, k0:] += count
        return _Hour(a, c, iq)

    def _hour(self, h: int) -> _Hour:
        hour = self._hours.get(h)
        if hour is None:
            hour = self._hours[h] = self._build_hour(h)
            if len(self._hours) > _HOURS_CACHED:
                self._hours.popitem(last=False)
        else:
            self._hours.move_to_end(h)
        return hour

    def _extend(self, rows: int) -> None:
        """Grow the hour prefix sums to at least `rows` rows."""
        have = len(self._pa)
        rows = max(rows, have + 24 * 31)
        hs = np.arange(self._h0 + have - 1, self._h0 + rows - 1, dtype=np.int64)
        big_n, big_c, _ = self._hour_params(hs)
        for j, h in enumerate(hs.tolist()):
            lo, hi = self._active(h * HOUR)
            if (lo, hi) == (0, HOUR) and h not in self._script_hours:
                continue
            if hi > lo or h in self._script_hours:
                hour = self._hour(h)
                big_n[j], big_c[j] = hour.a[:, -1], hour.c[:, -1]
            else:
                big_n[j] = big_c[j] = 0
        self._pa = np.concatenate([self._pa, self._pa[-1] + np.cumsum(big_n, axis=0)])
        self._pc = np.concatenate([self._pc, self._pc[-1] + np.cumsum(big_c, axis=0)])

    def _base(self, h: int) -> tuple[I64, I64]:
        """Cumulative (proposals, conflicts) per member before hour h (h >= h0)."""
        j = h - self._h0
        if j >= len(self._pa):
            self._extend(j + 1)
        return self._pa[j], self._pc[j]

    def _ok_at(self, s: int) -> I64:
        """Positively certified transactions per member, cumulative through second s."""
        h, k = divmod(s, HOUR)
        if h < self._h0:
            return np.zeros(self._n, dtype=np.int64)
        pa, pc = self._base(h)
        hour = self._hour(h)
        return pa - pc + hour.ok[:, k]

    def _first_exceeding(self, v: I64, target: int, upper: int) -> int:
        """Smallest second k <= upper with sum(v * ok(k)) > target (it must exist)."""
        h = upper // HOUR
        pa, pc = self._base(h)
        if int(v @ (pa - pc)) > target:
            rows = (self._pa[: h - self._h0 + 1] - self._pc[: h - self._h0 + 1]) @ v
            h = self._h0 + int(np.searchsorted(rows, target, side="right")) - 1
            pa, pc = self._base(h)
        base = int(v @ (pa - pc))
        cum = v @ self._hour(h).ok
        return h * HOUR + int(np.searchsorted(cum, target - base, side="right"))

    # ---- applier queues and the stable set ----

    def _stopped(self, m: int, s: int) -> bool:
        return any(a <= s < b for a, b in self._stops[m])

    def _queue(self, m: int, h: int) -> I64:
        """Remote transactions waiting in member m's applier, per second of hour h."""
        # the queue restarts empty at an hour boundary unless the applier is stopped
        # there; then it carries over (end values of such hours are kept in _carry)
        hb, q0 = h, 0
        while hb > self._h0 and self._stopped(m, hb * HOUR):
            if (m, hb - 1) in self._carry:
                q0 = self._carry[(m, hb - 1)]
                break
            hb -= 1
        q: I64 = np.zeros(HOUR, dtype=np.int64)
        for hh in range(max(hb, self._h0), h + 1):
            hour = self._hour(hh)
            cached = hour.queues.get(m)
            if cached is None:
                arrivals = np.diff(hour.ok_tot - hour.ok[m], prepend=0)
                cap = self._cap[m]
                for a, b in self._stops[m]:
                    if a < (hh + 1) * HOUR and b > hh * HOUR:
                        cap = cap.copy() if cap is self._cap[m] else cap
                        cap[max(0, a - hh * HOUR) : min(HOUR, b - hh * HOUR)] = 0
                walk = np.cumsum(arrivals - cap)
                start_q = q0 if self._stopped(m, hh * HOUR) else 0
                cached = walk - np.minimum(np.minimum.accumulate(walk), -start_q)
                hour.queues[m] = cached
            q = cached
            q0 = int(q[-1])
            if self._stopped(m, (hh + 1) * HOUR):
                self._carry[(m, hh)] = q0
        return q

    def _queue_at(self, m: int, s: int) -> int:
        h, k = divmod(s, HOUR)
        return 0 if h < self._h0 else int(self._queue(m, h)[k])

    def _stable_at(self, minute: int) -> tuple[int, int, str]:
        """(stable point, positively certified through it, GTID text) at boundary `minute`."""
        got = self._stable.get(minute)
        if got is not None:
            return got
        if minute < self._h0 * HOUR:
            return (minute, 0, "")
        point = minute
        ok = self._ok_at(minute)
        total = int(ok.sum())
        for m in range(self._n):
            q = self._queue_at(m, minute)
            if q > 0:
                v = np.ones(self._n, dtype=np.int64)
                v[m] = 0
                applied = total - int(ok[m]) - q
                point = min(point, self._first_exceeding(v, applied, minute) - 1)
        ok_p = self._ok_at(point)
        got = (point, int(ok_p.sum()), self._set_text(ok_p, point))
        self._stable[minute] = got
        if len(self._stable) > _STABLE_CACHED:
            self._stable.popitem(last=False)
        return got

    @staticmethod
    def _started(count: int) -> int:
        """Blocks after its first that a writer with `count` GTIDs has begun."""
        return max(0, (count - 1) // GTID_BLOCK_SIZE)

    def _block(self, m: int, j: int, upper: int) -> int:
        """Block number of member m's j-th block, begun by second `upper` at the latest.

        GR hands a member whose block is used up the lowest free block, which is
        the one after every block handed out so far: blocks beyond the first are
        numbered in the order members begin them (within a second, by writer slot).
        """
        if j == 0:
            return self._slot[m]
        got = self._blocks.get((m, j))
        if got is None:
            unit = np.zeros(self._n, dtype=np.int64)
            unit[m] = 1
            t = self._first_exceeding(unit, j * GTID_BLOCK_SIZE, upper)
            before, now = self._ok_at(t - 1), self._ok_at(t)
            rank = 0
            for w in self._writers.tolist():
                rank += self._started(int(before[w]))
                if self._slot[w] < self._slot[m]:
                    rank += self._started(int(now[w])) - self._started(int(before[w]))
            got = self._blocks[(m, j)] = len(self._writers) + rank
        return got

    def _gno(self, m: int, i: int, upper: int) -> int:
        """GNO of member m's i-th (0-based) positively certified transaction, done by `upper`."""
        j, rest = divmod(i, GTID_BLOCK_SIZE)
        return self._block(m, j, upper) * GTID_BLOCK_SIZE + rest + 1

    def _set_text(self, ok: I64, upper: int) -> str:
        """Canonical text of every GTID certified by `upper`, where `ok` = ok(upper).

        Every block handed out is full except each writer's current one, so the
        set is [1, end of the last block] minus the unused tails: <= writers + 1 intervals.
        """
        b = GTID_BLOCK_SIZE
        writers = self._writers.tolist()
        end = (len(writers) + sum(self._started(int(ok[w])) for w in writers)) * b
        holes = []
        for w in writers:
            j = self._started(int(ok[w]))
            used = int(ok[w]) - j * b
            if used < b:
                block = self._block(w, j, upper)
                holes.append((block * b + used + 1, (block + 1) * b))
        ivs: list[tuple[int, int]] = []
        pos = 1
        for lo, hi in sorted(holes):
            if lo > pos:
                ivs.append((pos, lo - 1))
            pos = hi + 1
        if pos <= end:
            ivs.append((pos, end))
        return (
            "".join([self.settings.group] + [f":{a}" if a == z else f":{a}-{z}" for a, z in ivs])
            if ivs
            else ""
        )

    def _last_conflict_free(self, s: int) -> str:
        """GTID of the last positively certified transaction through second s ("" if none)."""
        h, k = divmod(s, HOUR)
        if h < self._h0:
            return ""
        hour = self._hour(h)
        if k > 0 and hour.ok_tot[k] > hour.ok_tot[k - 1]:  # fast path: certified this second
            ok_h = hour.ok[:, k]
            cands = np.flatnonzero(ok_h > hour.ok[:, k - 1]).tolist()
            pa, pc = self._base(h)
            ok = pa - pc + ok_h
            last = s
        else:
            ok = self._ok_at(s)
            total = int(ok.sum())
            if total == 0:
                return ""
            last = self._first_exceeding(np.ones_like(ok), total - 1, s)
            ok = self._ok_at(last)
            cands = np.flatnonzero(ok > self._ok_at(last - 1)).tolist()
        # several members may certify in the same second: which one was last is hashed
        m = cands[_mix_py(self._pick_key ^ last) % len(cands)]
        return f"{self.settings.group}:{self._gno(m, int(ok[m]) - 1, last)}"

    # ---- public evaluation ----

    def _member(self, member_id: str) -> int:
        try:
            return self._index[member_id.lower()]
        except KeyError:
            raise ValueError(f"member_id: {member_id!r} is not a member of the model") from None

    def _state(self, m: int, s: int) -> str:
        i = bisect.bisect_right(self._state_secs[m], s)
        return self._state_vals[m][i - 1] if i else "ONLINE"

    def _role(self, m: int, state: str) -> str:
        if state not in ("ONLINE", "RECOVERING"):
            return ""
        if self.settings.mode == "multi-primary" or m == 0:
            return "PRIMARY"
        return "SECONDARY"

    def _numbers(self, m: int, start: int, stop: int) -> list[I64]:
        """The eight counts of member m for seconds [start, stop) inside one hour.

        Order: in_queue, checked, conflicts, rows_validating, remote_in_applier_queue,
        remote_applied, local_proposed, local_rollback.
        """
        h, k0 = divmod(start, HOUR)
        k1 = k0 + stop - start
        if h < self._h0:
            return [np.zeros(stop - start, dtype=np.int64)] * 8
        pa, pc = self._base(h)
        hour = self._hour(h)
        ok_base = pa - pc
        checked = int(pa.sum()) + hour.a_tot[k0:k1]
        ok_tot = int(ok_base.sum()) + hour.ok_tot[k0:k1]
        own_ok = int(ok_base[m]) + hour.ok[m, k0:k1]
        queue = self._queue(m, h)[k0:k1]
        first_min = start // 60
        mins = range(first_min * 60, stop, 60)
        stable = np.array([self._stable_at(x)[1] for x in mins], dtype=np.int64)
        rows = ok_tot - stable[np.arange(start, stop) // 60 - first_min]
        return [
            hour.in_queue[m, k0:k1],
            checked,
            int(pc.sum()) + hour.c_tot[k0:k1],
            rows,
            queue,
            ok_tot - own_ok - queue,
            int(pa[m]) + hour.a[m, k0:k1],
            int(pc[m]) + hour.c[m, k0:k1],
        ]

    def _committed_text(self, m: int, s: int) -> str:
        if self._state(m, s) == "RECOVERING":
            return ""
        return self._stable_at(s - s % 60)[2]

    def stats_at(self, member_id: str, t_us: int) -> PipelineStats:
        """The member's live pipeline stats at time t (current GTID texts, flag False).

        Args:
            member_id: one of settings.members (any case).
            t_us: microseconds since the Unix epoch; any order of calls is fine.

        Returns:
            PipelineStats with sent_timestamp None.

        Raises:
            ValueError: member_id is not a member.
        """
        m = self._member(member_id)
        s = t_us // 1_000_000
        iq, checked, conflicts, rows, queue, applied, local, rollback = (
            int(x[0]) for x in self._numbers(m, s, s + 1)
        )
        return PipelineStats(
            transactions_waiting_certification=iq,
            transactions_waiting_apply=queue,
            transactions_certified=checked,
            transactions_applied=applied,
            transactions_local=local,
            transactions_negative_certified=conflicts,
            transactions_rows_validating=rows,
            transaction_gtids_present=False,
            transactions_committed_all_members=self._committed_text(m, s).encode(),
            transaction_last_conflict_free=self._last_conflict_free(s).encode(),
            transactions_local_rollback=rollback,
            flow_control_mode=FLOW_CONTROL_QUOTA,
            sent_timestamp=None,
        )

    def _host(self, m: int) -> tuple[str, int]:
        member = self.settings.members[m]
        for key, value in self.settings.hosts.items():
            if key.lower() == member:
                return value[0], int(value[1])
        return "127.0.0.1", 3306 + m

    def member_at(self, member_id: str, t_us: int) -> LocalMember:
        """The member's identity and state at time t, as replication_group_members shows it.

        Args:
            member_id: one of settings.members (any case).
            t_us: microseconds since the Unix epoch.

        Returns:
            LocalMember (state ONLINE unless scripted, role per mode).

        Raises:
            ValueError: member_id is not a member.
        """
        m = self._member(member_id)
        state = self._state(m, t_us // 1_000_000)
        host, port = self._host(m)
        return LocalMember(
            group_name=self.settings.group,
            member_id=self.settings.members[m],
            host=host,
            port=port,
            state=state,
            role=self._role(m, state),
            version=self.settings.version,
            view_id=self._view_id,
        )

    def history_columns(self, member_id: str, start_s: int, n_seconds: int) -> dict[str, list[Any]]:
        """One history row per second [start_s, start_s + n_seconds), column-wise.

        Columns are those of grstats.core.records.HISTORY_COLUMNS except incarnation
        and seq; sampled_at is in microseconds; the GTID columns hold the
        current texts on seconds divisible by 30 (as if flag '1'), else None.

        Args:
            member_id: one of settings.members (any case).
            start_s: first second (Unix seconds).
            n_seconds: number of rows (>= 0).

        Returns:
            Column name -> list of n_seconds values.

        Raises:
            ValueError: member_id is not a member or n_seconds < 0.
        """
        m = self._member(member_id)
        if n_seconds < 0:
            raise ValueError("n_seconds: must be >= 0")
        end = start_s + n_seconds
        parts: list[list[I64]] = [[] for _ in range(8)]
        s = start_s
        while s < end:
            stop = min(end, (s // HOUR + 1) * HOUR)
            for part, arr in zip(parts, self._numbers(m, s, stop), strict=True):
                part.append(arr)
            s = stop
        names = (
            "count_transactions_in_queue",
            "count_transactions_checked",
            "count_conflicts_detected",
            "count_transactions_rows_validating",
            "count_transactions_remote_in_applier_queue",
            "count_transactions_remote_applied",
            "count_transactions_local_proposed",
            "count_transactions_local_rollback",
        )
        empty = np.zeros(0, dtype=np.int64)
        secs = np.arange(start_s, end, dtype=np.int64)
        host, port = self._host(m)
        if self._state_secs[m]:
            states = [self._state(m, x) for x in secs.tolist()]
            roles = [self._role(m, st) for st in states]
        else:
            states, roles = ["ONLINE"] * n_seconds, [self._role(m, "ONLINE")] * n_seconds
        committed: list[str | None] = [None] * n_seconds
        last_free: list[str | None] = [None] * n_seconds
        for i in range((-start_s) % GTID_EVERY_S, n_seconds, GTID_EVERY_S):
            committed[i] = self._committed_text(m, start_s + i)
            last_free[i] = self._last_conflict_free(start_s + i)
        cols: dict[str, list[Any]] = {
            "group_name": [self.settings.group] * n_seconds,
            "member_id": [self.settings.members[m]] * n_seconds,
            "member_host": [host] * n_seconds,
            "member_port": [port] * n_seconds,
            "member_state": states,
            "member_role": roles,
            "member_version": [self.settings.version] * n_seconds,
            "view_id": [self._view_id] * n_seconds,
            "sampled_at": (secs * 1_000_000).tolist(),
        }
        for name, part in zip(names, parts, strict=True):
            cols[name] = np.concatenate(part).tolist() if part else empty.tolist()
        cols["transactions_committed_all_members"] = committed
        cols["last_conflict_free_transaction"] = last_free
        cols["flow_control_mode"] = [FLOW_CONTROL_QUOTA] * n_seconds
        return cols


class SimulatedSource:
    """The `Source` of one member of a simulated group."""

    def __init__(self, model: GroupModel, member_id: str) -> None:
        """Bind the model to the local member.

        Args:
            model: the group model (shared settings).
            member_id: the local member's UUID.

        Raises:
            ValueError: member_id is not a member of the model.
        """
        self._model = model
        self._member_id = model.member_at(member_id, 0).member_id

    async def start(self) -> None:
        """Warm the model's caches for the current hour off the event loop."""
        now_us = time.time_ns() // 1000
        await asyncio.to_thread(self._model.stats_at, self._member_id, now_us)

    async def sample(self, now_us: int) -> LocalSample:
        """The local member at `now_us` (cheap: cached per hour, O(1) per tick)."""
        return LocalSample(
            member=self._model.member_at(self._member_id, now_us),
            stats=self._model.stats_at(self._member_id, now_us),
            sampled_at_us=now_us,
        )

    async def close(self) -> None:
        """Nothing to release."""
