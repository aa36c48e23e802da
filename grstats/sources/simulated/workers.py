"""The multi-threaded applier behind each member's queue: WL#15620's figures.

Strategy: closed form from what the rest of the model already knows, so a
sample costs O(1) at any second and every daemon computes the same figures:

- TRANSACTIONS_COMMITTED_COUNT of group_replication_applier *is* the member's
  COUNT_TRANSACTIONS_REMOTE_APPLIED (both count what the applier committed;
  the model has no server restart, so no reset), TRANSACTIONS_PENDING_COUNT
  its applier queue (COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE, applier.py),
  TRANSACTIONS_ONGOING_COUNT min(pending, workers);
- the worker pool (`WORKERS` workers) needs 1/peak s per transaction, peak
  being the member's applier capacity (applier.py): busy = committed / peak
  seconds, at most the active time. TOTAL_ACTIVE_TIME_DURATION is the time
  since the model's first hour minus scripted applier stops;
- of the busy time the coordinator spends the share `blocked` waiting on a
  bottleneck, split by the member's profile; the rest of the active time,
  less reading the relay log, it waits for work from the source. A normal
  member (capacity 1.25x the busiest hour's load) is mostly idle; the slow member
  (capacity below the hot-hour load: its queue builds) is profiled as one
  whose workers wait for the commit order and for dependencies -- long
  transactions on slow storage. Dependency waits scale with the workload's
  conflict probability: overlapping writesets are what the writeset
  dependency tracker serialises;
- sizes: `TRX_BYTES` and `EVENTS_PER_TRX` per transaction, a worker busy with
  one transaction has applied half of it.

Invariants (tested): every counter is non-decreasing; committed and pending
are the stats' REMOTE_APPLIED and REMOTE_IN_APPLIER_QUEUE; the time shares
add up to at most the active time; waits for work dominate on a normal
member, commit order and dependency waits on the slow one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from grstats.core.applier import NATIVE, ApplierChannel, ApplierWorker, MemberApplier
from grstats.core.lag import APPLIER_CHANNEL
from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.settings import SimulationSettings
from grstats.sources.simulated.workload import HOUR, Workload, event_second

__all__ = ["EVENTS_PER_TRX", "TRX_BYTES", "WORKERS", "AppliersModel"]

WORKERS: Final = 4  # replica_parallel_workers' default since 8.0.27
TRX_BYTES: Final = 1200
EVENTS_PER_TRX: Final = 5  # GTID, Query(BEGIN), Table_map, Rows, Xid
_NS: Final = 1_000_000_000
_WAIT_CYCLE_NS: Final = 100_000_000  # one coordinator wait-for-work cycle
_READ_SHARE_MAX: Final = 0.05  # relay log reading, at most this share of busy time
_READ_NS_PER_EVENT: Final = 2_000
_THREAD_ID_BASE: Final = 50


@dataclass(frozen=True, slots=True)
class _Profile:
    """Where a member's coordinator waits when it is not waiting for work.

    blocked: share of the pool's busy time the coordinator is blocked.
    shares: of the blocked time: dependency, commit order, worker, memory, full.
    per_trx: waits per committed transaction, same order.
    """

    blocked: float
    shares: tuple[float, float, float, float, float]
    per_trx: tuple[float, float, float, float, float]


def _profiles(conflict_probability: float) -> tuple[_Profile, _Profile]:
    dep = min(0.5, 0.02 + 5.0 * conflict_probability)  # share of trx bounded by a dependency
    normal = _Profile(0.08, (0.3, 0.2, 0.5, 0.0, 0.0), (dep, 0.1, 0.05, 0.0, 0.0))
    slow = _Profile(0.85, (0.3, 0.6, 0.1, 0.0, 0.0), (min(1.0, 2 * dep), 0.6, 0.02, 0.0, 0.0))
    return normal, slow


def _times(values: I64, share: float) -> I64:
    """int(v * share) for each v: float64 product, truncated, as Python's int() does."""
    out: I64 = (values * share).astype(np.int64)
    return out


class AppliersModel:
    """WL#15620 figures of every member; pure functions of (settings, member, second)."""

    def __init__(self, settings: SimulationSettings, workload: Workload, queues: ApplierQueues):
        """Derive each member's profile, peak capacity and scripted applier stops."""
        self._start_s = workload.h0 * HOUR
        normal, slow = _profiles(settings.conflict_probability)
        self._profile = [slow if m == settings.slow_member else normal for m in settings.members]
        self._peak = [max(1, queues.peak_capacity(m)) for m in range(len(settings.members))]
        index = {m: i for i, m in enumerate(settings.members)}
        self._stops: list[list[tuple[int, int]]] = [[] for _ in settings.members]
        for ev in settings.script:
            a, b = event_second(ev.at_s), event_second(ev.at_s + ev.duration_s)
            if ev.action == "applier_stop" and b > a:
                self._stops[index[ev.member.lower()]].append((a, b))

    def _active_s(self, m: int, secs: I64) -> I64:
        """Active seconds of member m's applier up to the end of each second in `secs`."""
        end = secs + 1
        active: I64 = np.maximum(end - self._start_s, 0)
        for a, b in self._stops[m]:
            lo = max(a, self._start_s)
            active -= np.clip(np.minimum(b, end) - lo, 0, None)
        return active

    def _started_s(self, m: int, s: int) -> int:
        """The second member m's applier last started, as of second s."""
        return max([self._start_s, *(b for _, b in self._stops[m] if b <= s)])

    def counters(self, m: int, secs: I64, committed: I64) -> dict[str, I64]:
        """Member m's counters at each second of `secs`, vectorised (one rule for all).

        Args:
            m: member index.
            secs: the seconds (Unix seconds).
            committed: the member's COUNT_TRANSACTIONS_REMOTE_APPLIED at each.

        Returns:
            `ApplierChannel` field -> int64 array, for the counter fields
            (active time, committed, bytes, events, waits, relay log reading).
        """
        p = self._profile[m]
        peak = self._peak[m]
        active = self._active_s(m, secs) * _NS
        # committed * _NS // peak without the product (it would pass int64 after ~9e9)
        whole, part = np.divmod(committed, peak)
        busy = np.minimum(whole * _NS + part * _NS // peak, active)
        blocked = _times(busy, p.blocked)
        events = committed * EVENTS_PER_TRX
        read_per_event = min(
            _READ_NS_PER_EVENT, int(_READ_SHARE_MAX * _NS) // (peak * EVENTS_PER_TRX)
        )
        read = np.minimum(events * read_per_event, _times(busy, _READ_SHARE_MAX))
        idle = np.maximum(active - blocked - read, 0)
        dep, co, wkr, mem, full = (_times(blocked, x) for x in p.shares)
        n_dep, n_co, n_wkr, n_mem, n_full = (_times(committed, x) for x in p.per_trx)
        return {
            "active_ns": active,
            "committed": committed,
            "committed_bytes": committed * TRX_BYTES,
            "events_committed": events,
            "waits_for_work_count": idle // _WAIT_CYCLE_NS,
            "waits_for_work_ns": idle,
            "waits_for_worker_count": n_wkr,
            "waits_for_worker_ns": wkr,
            "waits_dependency_count": n_dep,
            "waits_dependency_ns": dep,
            "waits_queue_memory_count": n_mem,
            "waits_queue_memory_ns": mem,
            "waits_queues_full_count": n_full,
            "waits_queues_full_ns": full,
            "waits_commit_order_count": n_co,
            "waits_commit_order_ns": co,
            "read_relay_log_ns": read,
        }

    def applier_at(
        self, m: int, s: int, at_us: int, *, committed: int, pending: int
    ) -> MemberApplier:
        """Member m's applier metrics at second s.

        Args:
            m: member index; s: the second; at_us: the reading's time.
            committed: the member's COUNT_TRANSACTIONS_REMOTE_APPLIED at s.
            pending: its COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE at s.
        """
        one = np.array([s], dtype=np.int64)
        counts = {
            k: int(v[0])
            for k, v in self.counters(m, one, np.array([committed], dtype=np.int64)).items()
        }
        active_s = counts["active_ns"] // _NS
        ongoing = min(pending, WORKERS)
        running = not any(a <= s < b for a, b in self._stops[m])
        channel = ApplierChannel(
            channel=APPLIER_CHANNEL,
            last_start_us=self._started_s(m, s) * 1_000_000 if running and active_s else None,
            ongoing=ongoing,
            pending=pending,
            ongoing_full_bytes=ongoing * TRX_BYTES,
            ongoing_progress_bytes=ongoing * TRX_BYTES // 2,
            pending_bytes=pending * TRX_BYTES,
            **counts,
        )
        workers = tuple(
            ApplierWorker(
                channel=APPLIER_CHANNEL,
                worker_id=i,
                thread_id=_THREAD_ID_BASE + i,
                transaction_type="DML" if i <= ongoing else "UNASSIGNED",
                full_bytes=TRX_BYTES if i <= ongoing else 0,
                applied_bytes=TRX_BYTES // 2 if i <= ongoing else 0,
            )
            for i in range(1, WORKERS + 1)
        )
        return MemberApplier(at_us=at_us, source=NATIVE, channels=(channel,), workers=workers)
