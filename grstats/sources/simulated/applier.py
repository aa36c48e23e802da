"""Applier queues: remote transactions each member has certified but not yet applied.

Strategy: an exact per-second Lindley recursion Q = max(0, Q + arrivals -
capacity), where arrivals are the other members' positively certified
transactions of that second and capacity is the member's applier rate (0
while a scripted applier_stop holds). Within an hour it is solved in closed
form as a reflected random walk W from the queue carried in at the hour's
start: Q_k = W_k - min(min_{j<=k} W_j, -q0). The queue carries over every hour
boundary (a real applier does not empty at :00).

The carry into hour h is, by composing the hours' maps q -> max(q + a_j, b_j)
(a_j = the hour's arrivals minus capacity, b_j = its end queue when started
empty), max over earlier hours j of b_j + (a_{j+1} + ... + a_{h-1}). It is
found looking back from h - 1: a_j comes from the hour prefix sums without
building the hour, and b_j <= arrivals_j bounds the hours not looked at, so
the scan stops as soon as no earlier hour can matter (usually after one hour;
for a slow member, at the last time its queue was empty). The look-back is
capped at LOOKBACK_HOURS: a queue never empty for that long is computed as if
it had been empty then.

Invariants: queues are >= 0, a pure function of (settings, member, second),
and equal whatever order seconds are evaluated in; caches are bounded LRUs.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.workload import BUSIEST_HOUR, HOUR, Workload, event_second

__all__ = ["LOOKBACK_HOURS", "ApplierQueues"]

LOOKBACK_HOURS = 24 * 14
_SCRIPTED_CAPACITY = 1_000_000_000.0  # scripted mode: the applier keeps up at once
_QUEUES_CACHED = 256  # (member, hour) per-second queues
_SUMMARIES_CACHED = LOOKBACK_HOURS + 48  # hours' (a, b) for every member
_CARRIES_CACHED = 4096


class ApplierQueues:
    """Per-member applier queues; cached, not thread-safe."""

    def __init__(self, workload: Workload) -> None:
        """Derive each member's applier capacity and scripted stops.

        Args:
            workload: the group's workload (arrivals).
        """
        self._w = w = workload
        s, n = w.settings, w.n
        k = np.arange(HOUR + 1, dtype=np.float64)
        caps = []
        for m in range(n):
            remote = max(1, len(w.writers) - (1 if w.slot[m] >= 0 else 0))
            if s.slow_member == s.members[m]:
                rate = s.slow_capacity or max(1.0, 1.5 * s.write_rate * remote)
            elif s.applier_capacity is not None:
                rate = s.applier_capacity
            elif s.scripted:
                rate = _SCRIPTED_CAPACITY
            else:  # 1.25x the busiest hour the workload can draw: a normal member keeps up
                busiest = BUSIEST_HOUR * max(1.0, s.hot_factor) * max(1.0, s.weekend_factor)
                rate = max(1.0, 1.25 * busiest * s.write_rate * remote)
            caps.append(np.diff(np.floor(k * rate)).astype(np.int64))
        self._cap: I64 = np.stack(caps)  # (members, 3600) applier capacity per second
        self._cap_cum: I64 = np.concatenate(
            [np.zeros((n, 1), dtype=np.int64), np.cumsum(self._cap, axis=1)], axis=1
        )
        index = {m: i for i, m in enumerate(s.members)}
        self._stops: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for ev in s.script:
            a, b = event_second(ev.at_s), event_second(ev.at_s + ev.duration_s)
            if ev.action == "applier_stop" and b > a:
                self._stops[index[ev.member.lower()]].append((a, b))
        self._queues: OrderedDict[tuple[int, int], I64] = OrderedDict()
        self._summaries: OrderedDict[int, tuple[I64, I64]] = OrderedDict()
        self._carries: OrderedDict[tuple[int, int], int] = OrderedDict()

    def capacity(self, m: int, h: int) -> I64:
        """Member m's applier capacity per second of hour h (0 while stopped).

        The throttled group's queues (`flow`) follow the same recursion on it.
        """
        cap: I64 = self._cap[m]
        copied = False
        for a, b in self._stops[m]:
            if a < (h + 1) * HOUR and b > h * HOUR:
                if not copied:
                    cap, copied = cap.copy(), True
                cap[max(0, a - h * HOUR) : min(HOUR, b - h * HOUR)] = 0
        return cap

    def _walks(self, h: int, members: list[int]) -> I64:
        """Cumulative arrivals minus capacity per second of hour h, one row per member."""
        hour = self._w.hour(h)
        arrivals = np.diff(hour.ok_tot[None, :] - hour.ok[members], axis=1, prepend=0)
        cap = np.stack([self.capacity(m, h) for m in members])
        walks: I64 = np.cumsum(arrivals - cap, axis=1)
        return walks

    def _summary(self, h: int) -> tuple[I64, I64]:
        """(a, b) per member of hour h: net change, and end queue when started empty."""
        got = self._summaries.get(h)
        if got is None:
            walks = self._walks(h, list(range(self._w.n)))
            a = walks[:, -1].copy()
            got = (a, a - np.minimum(walks.min(axis=1), 0))
            self._summaries[h] = got
            if len(self._summaries) > _SUMMARIES_CACHED:
                self._summaries.popitem(last=False)
        else:
            self._summaries.move_to_end(h)
        return got

    def _cap_totals(self, m: int, lo: int, hi: int) -> I64:
        """Member m's applier capacity within each hour lo .. hi - 1."""
        totals = np.full(hi - lo, int(self._cap_cum[m, -1]), dtype=np.int64)
        cum = self._cap_cum[m]
        for a, b in self._stops[m]:
            for h in range(max(lo, a // HOUR), min(hi, -(-b // HOUR))):
                x, y = max(0, a - h * HOUR), min(HOUR, b - h * HOUR)
                totals[h - lo] -= int(cum[y] - cum[x])
        return totals

    def carry(self, m: int, h: int) -> int:
        """Transactions in member m's applier queue when hour h begins."""
        w = self._w
        if h <= w.h0:
            return 0
        got = self._carries.get((m, h))
        if got is not None:
            return got
        lo = max(w.h0, h - LOOKBACK_HOURS)
        ok_hours = np.diff(w.ok_before(lo, h), axis=0)  # certified within hours lo .. h-1
        arrivals = ok_hours.sum(axis=1) - ok_hours[:, m]
        a = arrivals - self._cap_totals(m, lo, h)
        after = np.cumsum(a[::-1])[::-1] - a  # a_{j+1} + ... + a_{h-1}
        bound = np.maximum.accumulate(arrivals + after)  # >= b_i + after_i for every i <= j
        best = 0
        for j in range(h - 1 - lo, -1, -1):
            if bound[j] <= best:
                break
            best = max(best, int(self._summary(lo + j)[1][m]) + int(after[j]))
        self._carries[(m, h)] = best
        if len(self._carries) > _CARRIES_CACHED:
            self._carries.popitem(last=False)
        return best

    def queue(self, m: int, h: int) -> I64:
        """Remote transactions waiting in member m's applier, per second of hour h."""
        got = self._queues.get((m, h))
        if got is None:
            if h < self._w.h0:
                return np.zeros(HOUR, dtype=np.int64)
            q0 = self.carry(m, h)
            walk = self._walks(h, [m])[0]
            got = walk - np.minimum(np.minimum.accumulate(walk), -q0)
            self._queues[(m, h)] = got
            if len(self._queues) > _QUEUES_CACHED:
                self._queues.popitem(last=False)
        else:
            self._queues.move_to_end((m, h))
        return got

    def peak_capacity(self, m: int) -> int:
        """Member m's largest applier capacity in one second (transactions)."""
        return int(self._cap[m].max())

    def running(self, m: int, s: int) -> bool:
        """Whether member m's applier runs at second s (no scripted applier_stop holds)."""
        return not any(a <= s < b for a, b in self._stops[m])

    def queue_at(self, m: int, s: int) -> int:
        """Member m's applier queue at second s."""
        h, k = divmod(s, HOUR)
        return 0 if h < self._w.h0 else int(self.queue(m, h)[k])
