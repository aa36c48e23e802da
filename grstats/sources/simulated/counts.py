"""The eight counts of replication_group_member_stats, per member and second.

Strategy: a count at second s is the workload's cumulative figure before s's
hour (`Workload.base`) plus the hour's per-second cumulative row up to s, so
a span of seconds inside one hour is one slice of the hour's arrays and a
day is 24 slices concatenated (`columns`): no Python object per value. The
parts each count comes from: the workload (CHECKED, CONFLICTS_DETECTED,
LOCAL_PROPOSED, LOCAL_ROLLBACK), the certifier (IN_QUEUE, ROWS_VALIDATING),
the applier queues (REMOTE_IN_APPLIER_QUEUE) and, for REMOTE_APPLIED, the
other members' positively certified transactions not still queued plus the
view-change transactions applied (membership).

Invariants (tested in test_simulated): CHECKED and CONFLICTS_DETECTED are
equal on every member; sum of LOCAL_PROPOSED = CHECKED; sum of
LOCAL_ROLLBACK = CONFLICTS_DETECTED; counters never decrease. Before the
workload's first hour every count is 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.certifier import Certification
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.workload import HOUR, Workload

__all__ = ["COUNT_COLUMNS", "PipelineCounts", "hour_spans"]

#: the history columns of the eight counts, in the order `PipelineCounts.span` returns them
COUNT_COLUMNS = (
    "count_transactions_in_queue",
    "count_transactions_checked",
    "count_conflicts_detected",
    "count_transactions_rows_validating",
    "count_transactions_remote_in_applier_queue",
    "count_transactions_remote_applied",
    "count_transactions_local_proposed",
    "count_transactions_local_rollback",
)


def hour_spans(start_s: int, end_s: int) -> Iterator[tuple[int, int]]:
    """[start_s, end_s) cut at the hour boundaries: (start, stop) of each piece."""
    s = start_s
    while s < end_s:
        stop = min(end_s, (s // HOUR + 1) * HOUR)
        yield s, stop
        s = stop


def _concat(parts: list[I64]) -> I64:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class PipelineCounts:
    """The eight counts of every member; cached by the parts, not thread-safe.

    Args:
        workload: proposals and conflicts (throttled under flow control).
        queues: the members' applier queues.
        cert: the certifier (IN_QUEUE, ROWS_VALIDATING).
        membership: the view changes each member applies.
    """

    def __init__(
        self,
        workload: Workload,
        queues: ApplierQueues,
        cert: Certification,
        membership: Membership,
    ) -> None:
        self._w, self._q, self._cert, self._members = workload, queues, cert, membership

    def span(self, m: int, start: int, stop: int) -> list[I64]:
        """The eight counts of member m for seconds [start, stop) inside one hour, in
        COUNT_COLUMNS order."""
        w = self._w
        h, k0 = divmod(start, HOUR)
        k1 = k0 + stop - start
        if h < w.h0:
            return [np.zeros(stop - start, dtype=np.int64)] * 8
        pa, pc = w.base(h)
        hour = w.hour(h)
        ok_base = pa - pc
        checked = int(pa.sum()) + hour.a_tot[k0:k1]
        ok_tot = int(ok_base.sum()) + hour.ok_tot[k0:k1]
        return [
            self._cert.in_queue(m, start, hour.in_queue[m, k0:k1]),
            checked,
            int(pc.sum()) + hour.c_tot[k0:k1],
            self._cert.rows_validating(ok_tot, start, stop),
            self._q.queue(m, h)[k0:k1],
            self.remote_applied(m, start, stop),
            int(pa[m]) + hour.a[m, k0:k1],
            int(pc[m]) + hour.c[m, k0:k1],
        ]

    def at(self, m: int, s: int) -> tuple[int, ...]:
        """The eight counts of member m at second s, in COUNT_COLUMNS order."""
        return tuple(int(x[0]) for x in self.span(m, s, s + 1))

    def remote_applied(self, m: int, start: int, stop: int) -> I64:
        """Member m's COUNT_TRANSACTIONS_REMOTE_APPLIED for [start, stop) inside one hour
        (`span`'s sixth count, alone for the applier's history)."""
        w = self._w
        h, k0 = divmod(start, HOUR)
        k1 = k0 + stop - start
        if h < w.h0:
            return np.zeros(stop - start, dtype=np.int64)
        pa, pc = w.base(h)
        hour = w.hour(h)
        ok_base = pa - pc
        ok_tot = int(ok_base.sum()) + hour.ok_tot[k0:k1]
        own_ok = int(ok_base[m]) + hour.ok[m, k0:k1]
        queue = self._q.queue(m, h)[k0:k1]
        applied: I64 = ok_tot - own_ok - queue + self._members.view_changes_applied(m, start, stop)
        return applied

    def remote_applied_seconds(self, m: int, start_s: int, n_seconds: int) -> I64:
        """`remote_applied` for seconds [start_s, start_s + n_seconds), across hours."""
        spans = hour_spans(start_s, start_s + n_seconds)
        return _concat([self.remote_applied(m, s, stop) for s, stop in spans])

    def columns(self, m: int, start_s: int, n_seconds: int) -> dict[str, I64]:
        """The eight counts for seconds [start_s, start_s + n_seconds), across hours.

        Returns:
            COUNT_COLUMNS name -> int64 array of n_seconds values.
        """
        parts: list[list[I64]] = [[] for _ in COUNT_COLUMNS]
        for s, stop in hour_spans(start_s, start_s + n_seconds):
            for part, arr in zip(parts, self.span(m, s, stop), strict=True):
                part.append(arr)
        return {name: _concat(part) for name, part in zip(COUNT_COLUMNS, parts, strict=True)}
