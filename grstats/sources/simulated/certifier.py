"""Certification: the certifier queue, the stable set and certification garbage collection.

Strategy: MySQL's broadcast thread sends each member's gtid_executed to the
group every BROADCAST_GTID_EXECUTED_PERIOD (60 s); once every member's set
has arrived, the certifier intersects them into the stable set and garbage
collects (certifier.cc: broadcast_gtid_executed, stable_set_handle,
garbage_collect). The model runs a round on every 60 s boundary M with the
sets as of the end of second M - 1 (transactions certified during second M
are still in the appliers when the sets are read): the stable point is the
latest second whose certified transactions every member in the view has
applied (queues are FIFO), and TRANSACTIONS_COMMITTED_ALL_MEMBERS is the GTIDs
certified up to it. Members outside the view (OFFLINE, ERROR) send nothing
and do not hold the stable set back.

garbage_collect erases a write-set only if its snapshot version is a strict
subset of the stable set (is_subset_not_equals): the last transaction of the
stable set, whose snapshot version is the stable set itself, keeps its
write-set. With one write-set per transaction, ROWS_VALIDATING is the
positively certified transactions after the stable point, plus one once the
stable set is not empty.

COUNT_TRANSACTIONS_IN_QUEUE is the workload's background queue, overridden by
scripted certifier_queue events (count for duration seconds, or from then on
if duration is 0; the latest-starting event wins).

Invariants: a round's result depends only on (settings, M); the stable set
only grows while membership is unchanged; ROWS_VALIDATING >= 0.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.gtids import GtidLedger
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.workload import HOUR, Workload, event_second

__all__ = ["GC_PERIOD_S", "Certification"]

GC_PERIOD_S = 60  # Certifier_broadcast_thread::BROADCAST_GTID_EXECUTED_PERIOD
_STABLE_CACHED = 4096  # rounds: a simulated day of every member reuses them
_SPANS_CACHED = 2  # spans of `_collected`: the hour every member reads in turn, and one more


class Certification:
    """Stable set, ROWS_VALIDATING and IN_QUEUE; cached, not thread-safe."""

    def __init__(
        self,
        workload: Workload,
        queues: ApplierQueues,
        ledger: GtidLedger,
        membership: Membership,
    ) -> None:
        """Bind the certifier's view of the group.

        Args:
            workload: certified transactions.
            queues: the members' applier queues.
            ledger: GTIDs of the transactions.
            membership: who is in the view.
        """
        self._w, self._q, self._ledger, self._members = workload, queues, ledger, membership
        self._stable: OrderedDict[int, tuple[int, int, str]] = OrderedDict()
        self._spans: OrderedDict[tuple[int, int], I64] = OrderedDict()
        s = workload.settings
        index = {m: i for i, m in enumerate(s.members)}
        self._in_queue: list[list[tuple[int, int | None, int]]] = [[] for _ in s.members]
        for ev in sorted(s.script, key=lambda e: e.at_s):  # stable: ties keep script order
            if ev.action == "certifier_queue":
                start = event_second(ev.at_s)
                end = event_second(ev.at_s + ev.duration_s) if ev.duration_s > 0 else None
                self._in_queue[index[ev.member.lower()]].append((start, end, ev.count))

    def stable_at(self, minute: int) -> tuple[int, int, str]:
        """(stable point, positively certified through it, GTID text) of the round at `minute`."""
        got = self._stable.get(minute)
        if got is None:
            self._hour_rounds(minute)
            return self._stable[minute]
        self._stable.move_to_end(minute)
        return got

    def round_at(self, minute: int) -> tuple[int, int, str]:
        """`stable_at` of one round by the rule, member by member (`_hour_rounds` computes
        an hour of them at once, equal to this)."""
        w = self._w
        sent = minute - 1  # the members' gtid_executed as the round reads them
        if sent < w.h0 * HOUR:
            return (sent, 0, "")
        point = sent
        ok = w.ok_at(sent)
        total = int(ok.sum())
        for m in range(w.n):
            if not self._members.in_view(m, sent):
                continue
            q = self._q.queue_at(m, sent)
            if q > 0:
                v = np.ones(w.n, dtype=np.int64)
                v[m] = 0
                applied = total - int(ok[m]) - q
                point = min(point, w.first_exceeding(v, applied, sent) - 1)
        ok_p = w.ok_at(point)
        return (point, int(ok_p.sum()), self._ledger.set_text(ok_p, point))

    def _hour_rounds(self, minute: int) -> None:
        """Cache the rounds of every minute whose sent second is in the hour of `minute`'s.

        `round_at`'s rule for the hour's 60 rounds at once: the members' certified
        counts, queues and views as arrays over the rounds; a member with a queue is
        applied through the last second whose certified transactions of the other
        members do not exceed what it applied, found by one searchsorted over the
        hour's cumulative counts (`first_exceeding` with every member but it), and
        `first_exceeding` itself when that second is in an earlier hour.
        """
        w, members = self._w, self._members
        h = (minute - 1) // HOUR
        sents = np.arange(h * HOUR + GC_PERIOD_S - 1, (h + 1) * HOUR, GC_PERIOD_S, dtype=np.int64)
        rounds: list[tuple[int, tuple[int, int, str]]] = []
        if h < w.h0:
            rounds = [(int(x) + 1, (int(x), 0, "")) for x in sents]
        else:
            ks = sents - h * HOUR
            pa, pc = w.base(h)
            base, hour = pa - pc, w.hour(h)
            ok = base[:, None] + hour.ok[:, ks]  # (members, rounds)
            total = ok.sum(axis=0)
            base_tot = int(base.sum())
            points = sents.copy()
            for m in range(w.n):
                q = self._q.queue(m, h)[ks]
                need = q > 0
                if members.scripted(m):
                    need &= np.array([members.in_view(m, int(x)) for x in sents], dtype=bool)
                if not need.any():
                    continue
                applied = total - ok[m] - q
                others_before = base_tot - int(base[m])  # every member but m, before hour h
                others = others_before + hour.ok_tot - hour.ok[m]
                first = h * HOUR + np.searchsorted(others, applied, side="right")
                earlier = np.flatnonzero(need & (others_before > applied))
                if len(earlier):
                    v = np.ones(w.n, dtype=np.int64)
                    v[m] = 0
                    for r in earlier.tolist():
                        first[r] = w.first_exceeding(v, int(applied[r]), int(sents[r]))
                points = np.where(need, np.minimum(points, first - 1), points)
            for x, point in zip(sents.tolist(), points.tolist(), strict=True):
                ok_p = w.ok_at(point)
                rounds.append((x + 1, (point, int(ok_p.sum()), self._ledger.set_text(ok_p, point))))
        for m_, got in rounds:
            self._stable[m_] = got
            self._stable.move_to_end(m_)
        while len(self._stable) > _STABLE_CACHED:
            self._stable.popitem(last=False)

    def rounds(self, start: int, stop: int) -> dict[int, tuple[int, int, str]]:
        """The rounds (`stable_at`) of seconds [start, stop), by minute; computed if not cached."""
        return {x: self.stable_at(x) for x in range(start - start % GC_PERIOD_S, stop, GC_PERIOD_S)}

    def remember(self, rounds: Mapping[int, tuple[int, int, str]]) -> None:
        """Cache rounds an equal model computed (another process's: a round is a pure
        function of the settings and its minute), as if computed here."""
        for minute, got in rounds.items():
            self._stable[minute] = got
            self._stable.move_to_end(minute)
        while len(self._stable) > _STABLE_CACHED:
            self._stable.popitem(last=False)

    def rows_validating(self, ok_total: I64, start: int, stop: int) -> I64:
        """ROWS_VALIDATING for seconds [start, stop), given the group's certified totals there."""
        rows: I64 = ok_total - self._collected(start, stop)
        return rows

    def _collected(self, start: int, stop: int) -> I64:
        """Per second of [start, stop): the write-sets garbage collected by then (the
        stable transactions less the last one's); the same for every member, so cached
        for the span (a day is read member after member, an hour at a time)."""
        got = self._spans.get((start, stop))
        if got is not None:
            return got
        first = start // GC_PERIOD_S
        rounds = range(first * GC_PERIOD_S, stop, GC_PERIOD_S)
        stable = np.array([self.stable_at(x)[1] for x in rounds], dtype=np.int64)
        stable -= stable > 0  # the last stable transaction keeps its write-set
        got = stable[np.arange(start, stop) // GC_PERIOD_S - first]
        self._spans[(start, stop)] = got
        if len(self._spans) > _SPANS_CACHED:
            self._spans.popitem(last=False)
        return got

    def committed_text(self, s: int) -> str:
        """TRANSACTIONS_COMMITTED_ALL_MEMBERS at second s: the latest round's stable set."""
        return self.stable_at(s - s % GC_PERIOD_S)[2]

    def in_queue(self, m: int, start: int, background: I64) -> I64:
        """IN_QUEUE of member m for seconds start .. start + len(background) - 1."""
        events = self._in_queue[m]
        if not events:
            return background
        out = background.copy()
        stop = start + len(out)
        for a, b, count in events:  # in start order: a later event overrides an earlier one
            lo, hi = max(a, start), stop if b is None else min(b, stop)
            if hi > lo:
                out[lo - start : hi - start] = count
        return out
