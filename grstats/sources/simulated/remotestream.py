"""A member's remote stream counted second by second: where lag.py finds a position.

Strategy: member m's group_replication_applier channel carries its remote
stream, the other members' positively certified transactions in
certification order (lag.py). Two counts locate any position r of it: the
remote certified count (how many arrived) and the applied count (remote
certified minus the member's applier queue, applier.py), both
non-decreasing, per second of an hour from the workload's prefix sums. A
position's arrival second is found in this hour or the last (the counts'
arrays, cached), further back by the workload's hour prefix sums
(`Workload.first_exceeding`), so nothing is listed.

Invariants: a pure function of (settings, member, second); at most
`_ARRAYS_CACHED` hour arrays are kept, the least recently used dropped first.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.workload import HOUR, Workload

__all__ = ["RemoteStream"]

_ARRAYS_CACHED = 16  # (kind, member, hour) count arrays: a daemon's member, this hour and the last


class RemoteStream:
    """Each member's remote certified and applied counts, and its positions' arrivals.

    Args:
        workload: certified transactions per member and second.
        queues: the members' applier queues.
    """

    def __init__(self, workload: Workload, queues: ApplierQueues) -> None:
        self._w, self._q = workload, queues
        self._arrays: OrderedDict[tuple[str, int, int], I64] = OrderedDict()

    def hour_array(self, kind: str, m: int, h: int) -> I64:
        """Member m's remote certified ("remote") or applied ("applied") count through
        each second of hour h; both are non-decreasing."""
        got = self._arrays.get((kind, m, h))
        if got is not None:
            self._arrays.move_to_end((kind, m, h))
            return got
        w = self._w
        pa, pc = w.base(h)
        hour = w.hour(h)
        counts: I64 = int(pa.sum() - pc.sum()) - int(pa[m] - pc[m]) + hour.ok_tot - hour.ok[m]
        if kind == "applied":
            counts = counts - self._q.queue(m, h)
        self._arrays[(kind, m, h)] = got = counts
        if len(self._arrays) > _ARRAYS_CACHED:
            self._arrays.popitem(last=False)
        return got

    def count(self, kind: str, m: int, s: int) -> int:
        """Member m's remote or applied count through second s (0 before the workload)."""
        h, k = divmod(s, HOUR)
        return 0 if h < self._w.h0 else int(self.hour_array(kind, m, h)[k])

    def first_above(self, kind: str, m: int, r: int, lo: int, hi: int) -> int:
        """First second j in [lo, hi] whose count exceeds r (the count at hi does)."""
        for h in range(max(lo // HOUR, self._w.h0), hi // HOUR + 1):
            start = max(lo, h * HOUR) - h * HOUR
            counts = self.hour_array(kind, m, h)[start:]
            i = int(np.searchsorted(counts, r, side="right"))
            if i < len(counts):
                return h * HOUR + start + i
        return hi  # pragma: no cover - the count at hi exceeds r

    def arrival(self, m: int, r: int, upper: int) -> int:
        """Second in which position r of member m's stream was certified (<= upper)."""
        h = upper // HOUR
        if h > self._w.h0 and self.count("remote", m, h * HOUR - 1) > r:
            h -= 1  # usually the previous hour; further back, the hour prefix sums find it
            if h > self._w.h0 and self.count("remote", m, h * HOUR - 1) > r:
                v = np.ones(self._w.n, dtype=np.int64)
                v[m] = 0
                return self._w.first_exceeding(v, r, upper)
        return self.first_above("remote", m, r, h * HOUR, upper)
