"""The group's workload: who proposes how many transactions, and which conflict.

Strategy: each writing member proposes N transactions per UTC hour, N from a
counter-based hash (hashing.py) of (member, hour) times hot-hour, weekend and
per-day factors; of those, C conflict (approximately Binomial(N,
conflict_probability)). Within the hour the N are spread over the seconds by
hashed integer weights and the C over the N by exact integer arithmetic, so a
second never has more conflicts than proposals. Hour totals are closed-form,
so cumulative counters at any time are a cached per-hour prefix sum plus a
cached per-second array of the hour. Scripted commits and conflicts are added
on top; the background workload runs from `epoch_s` to `stop_at_s` and not at
all in scripted mode.

Invariants: every count is a pure function of (settings, second); counts are
cumulative and never decrease; conflicts <= proposals in every second;
nothing is proposed before `epoch_s` (nor before the first script event).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from grstats.sources.simulated.hashing import I64, key, rand, uniform
from grstats.sources.simulated.settings import SimulationSettings

__all__ = ["BUSIEST_HOUR", "HOUR", "Hour", "Workload", "event_second"]

HOUR = 3600
# the most an hour's rate can exceed its nominal one: the largest day factor (1.15)
# times the largest per-writer jitter (1.25), as `_hour_params` draws them
BUSIEST_HOUR = 1.15 * 1.25
_HOURS_CACHED = 4
_EXTEND_HOURS = 24 * 31  # prefix sums grow by at least a month at a time


def event_second(at_s: float) -> int:
    """The whole second at which an event at `at_s` takes effect (the next one if fractional)."""
    return int(-(-at_s // 1))


def _mask_cum(cum: I64, lo: int, hi: int) -> I64:
    """Keep only the increments of seconds [lo, hi) of per-second cumulative rows."""
    inc = np.diff(cum, axis=1, prepend=0)
    inc[:, :lo] = 0
    inc[:, hi:] = 0
    return np.cumsum(inc, axis=1)


class Hour:
    """Per-second cumulative counts of one hour (relative to the hour's start)."""

    __slots__ = ("a", "a_tot", "c", "c_tot", "in_queue", "ok", "ok_tot")

    def __init__(self, a: I64, c: I64, in_queue: I64) -> None:
        self.a = a  # (members, 3600) proposals, inclusive of the second
        self.c = c  # conflicts (negatively certified), same shape
        self.ok = a - c
        self.a_tot: I64 = a.sum(axis=0)
        self.c_tot: I64 = c.sum(axis=0)
        self.ok_tot: I64 = self.ok.sum(axis=0)
        self.in_queue = in_queue  # background certifier queue (not cumulative)


class Workload:
    """Proposals and conflicts per member and second; cached, not thread-safe."""

    def __init__(self, settings: SimulationSettings) -> None:
        """Prepare the workload (cheap; hours are built on first use).

        Args:
            settings: the group's knobs.
        """
        s = settings
        self.settings = s
        self.n = n = len(s.members)
        single = s.mode == "single-primary"
        self.writers: I64 = np.array([0] if single else list(range(n)), dtype=np.int64)
        self.slot = [-1] * n  # member -> writer slot (-1: never writes)
        for slot, m in enumerate(self.writers.tolist()):
            self.slot[m] = slot
        self._p = 0.0 if single else s.conflict_probability
        self._keys = {p: key(s.seed, s.group, p) for p in ("rate", "day", "cf", "off", "sec", "iq")}
        self._stop = None if s.stop_at_s is None else event_second(s.stop_at_s)  # first idle
        index = {m: i for i, m in enumerate(s.members)}
        self._script_hours: dict[int, list[tuple[int, int, int, bool]]] = {}
        for ev in s.script:
            if ev.action in ("commit", "conflict"):
                h, k = divmod(event_second(ev.at_s), HOUR)
                entry = (k, index[ev.member.lower()], ev.count, ev.action == "conflict")
                self._script_hours.setdefault(h, []).append(entry)
        first = [event_second(ev.at_s) for ev in s.script] + [s.epoch_s]
        self.h0 = min(first) // HOUR  # nothing happens before this hour
        self._pa: I64 = np.zeros((1, n), dtype=np.int64)  # row j: proposals before hour h0 + j
        self._pc: I64 = np.zeros((1, n), dtype=np.int64)
        self._hours: OrderedDict[int, Hour] = OrderedDict()
        # hours kept (~1 MB each for 9 members): a daemon needs this hour and the last;
        # a bulk reader of a whole day per member (grstats simulate) keeps the day
        self.hours_cached = _HOURS_CACHED

    # ---- hour parameters and arrays ----

    def _active(self, start: int) -> tuple[int, int]:
        """Background seconds [lo, hi) of the hour starting at `start` (lo == hi: none)."""
        if self.settings.scripted:
            return 0, 0
        lo = min(HOUR, max(0, self.settings.epoch_s - start))
        hi = HOUR if self._stop is None else min(HOUR, max(0, self._stop - start))
        return lo, max(lo, hi)

    def _hour_params(self, hs: I64) -> tuple[I64, I64, I64]:
        """Background proposals N, conflicts C and spread offset per (hour, member)."""
        s, n, w = self.settings, self.n, self.writers
        shape = (len(hs), n)
        big_n = np.zeros(shape, dtype=np.int64)
        big_c = np.zeros(shape, dtype=np.int64)
        off = np.zeros(shape, dtype=np.int64)
        if s.write_rate <= 0 or len(hs) == 0:
            return big_n, big_c, off
        day = hs // 24
        hot = np.where(np.isin(hs % 24, s.hot_hours), s.hot_factor, 1.0)
        weekend = np.where((day + 3) % 7 >= 5, s.weekend_factor, 1.0)
        dayf = 0.85 + 0.3 * uniform(rand(self._keys["day"], day))  # at most 1.15: BUSIEST_HOUR
        jit = 0.75 + 0.5 * uniform(rand(self._keys["rate"], w[None, :], hs[:, None]))
        mean = (s.write_rate * 3600.0 * hot * weekend * dayf)[:, None] * jit
        nw = np.floor(mean + 0.5).astype(np.int64)
        big_n[:, w] = nw
        if self._p > 0:
            mu = nw * self._p
            sd = np.sqrt(mu * (1.0 - self._p))
            u = uniform(rand(self._keys["cf"], w[None, :, None], hs[:, None, None], np.arange(4)))
            # Irwin-Hall(4) ~ N(0, 1); summed explicitly so the order never depends on shape
            z = (u[..., 0] + u[..., 1] + u[..., 2] + u[..., 3] - 2.0) * 1.7320508075688772
            big_c[:, w] = np.clip(np.floor(mu + sd * z + 0.5), 0, nw).astype(np.int64)
        r = rand(self._keys["off"], w[None, :], hs[:, None])
        off[:, w] = (r % np.maximum(nw, 1).astype(np.uint64)).astype(np.int64)
        return big_n, big_c, off

    def _build_hour(self, h: int) -> Hour:
        n, start = self.n, h * HOUR
        a = np.zeros((n, HOUR), dtype=np.int64)
        c = np.zeros((n, HOUR), dtype=np.int64)
        iq = np.zeros((n, HOUR), dtype=np.int64)
        lo, hi = self._active(start)
        if hi > lo:
            big_n, big_c, off = self._hour_params(np.array([h], dtype=np.int64))
            w, k = self.writers, np.arange(HOUR, dtype=np.int64)
            weights = (rand(self._keys["sec"], w[:, None], h, k[None, :]) >> np.uint64(54)).astype(
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
            r = rand(self._keys["iq"], np.arange(n)[:, None], h, k[None, :]) >> np.uint64(58)
            iq = inc[None, :] * r.astype(np.int64) // 256
        for k0, m, count, conflict in self._script_hours.get(h, ()):
            a[m, k0:] += count
            if conflict:
                c[m, k0:] += count
        return Hour(a, c, iq)

    def hour(self, h: int) -> Hour:
        """The per-second arrays of hour h (an LRU of a few hours)."""
        got = self._hours.get(h)
        if got is None:
            got = self._hours[h] = self._build_hour(h)
            if len(self._hours) > self.hours_cached:
                self._hours.popitem(last=False)
        else:
            self._hours.move_to_end(h)
        return got

    # ---- prefix sums over hours ----

    def _extend(self, rows: int) -> None:
        """Grow the hour prefix sums to at least `rows` rows."""
        have = len(self._pa)
        rows = max(rows, have + _EXTEND_HOURS)
        hs = np.arange(self.h0 + have - 1, self.h0 + rows - 1, dtype=np.int64)
        big_n, big_c, _ = self._hour_params(hs)
        for j, h in enumerate(hs.tolist()):
            lo, hi = self._active(h * HOUR)
            if (lo, hi) == (0, HOUR) and h not in self._script_hours:
                continue
            if hi > lo or h in self._script_hours:
                hour = self.hour(h)
                big_n[j], big_c[j] = hour.a[:, -1], hour.c[:, -1]
            else:
                big_n[j] = big_c[j] = 0
        self._pa = np.concatenate([self._pa, self._pa[-1] + np.cumsum(big_n, axis=0)])
        self._pc = np.concatenate([self._pc, self._pc[-1] + np.cumsum(big_c, axis=0)])

    def base(self, h: int) -> tuple[I64, I64]:
        """Cumulative (proposals, conflicts) per member before hour h (h >= h0)."""
        j = h - self.h0
        if j >= len(self._pa):
            self._extend(j + 1)
        return self._pa[j], self._pc[j]

    def ok_before(self, h_lo: int, h_hi: int) -> I64:
        """Positively certified per member before each hour h_lo .. h_hi (rows), h0 <= h_lo."""
        self.base(h_hi)
        lo, hi = h_lo - self.h0, h_hi - self.h0 + 1
        return self._pa[lo:hi] - self._pc[lo:hi]

    def ok_at(self, s: int) -> I64:
        """Positively certified transactions per member, cumulative through second s."""
        h, k = divmod(s, HOUR)
        if h < self.h0:
            return np.zeros(self.n, dtype=np.int64)
        pa, pc = self.base(h)
        return pa - pc + self.hour(h).ok[:, k]

    def first_exceeding(self, v: I64, target: int, upper: int) -> int:
        """Smallest second k <= upper with sum(v * ok(k)) > target (it must exist)."""
        h = upper // HOUR
        pa, pc = self.base(h)
        if int(v @ (pa - pc)) > target:
            rows = (self._pa[: h - self.h0 + 1] - self._pc[: h - self.h0 + 1]) @ v
            h = self.h0 + int(np.searchsorted(rows, target, side="right")) - 1
            pa, pc = self.base(h)
        base = int(v @ (pa - pc))
        cum = v @ self.hour(h).ok
        return h * HOUR + int(np.searchsorted(cum, target - base, side="right"))
