"""Replication lag by stage in the simulated group: what WL#7374's tables would show.

Strategy: a member's group_replication_applier channel carries its *remote
stream*: the other members' positively certified transactions in
certification order (second by second; within a second by member index, then
in each member's own order). Its own transactions never enter it (DESIGN.md
§5), so the primary of a single-primary group has an empty stream. Position
r of the stream is located from the workload's prefix sums (arrival second by
`first_exceeding`, then the members' counts of that second: remotestream.py)
and named by the GTID ledger, so nothing is listed and every daemon finds the
same transaction.

The timeline of one transaction, in µs (the sub-second rule):

- original commit: the second it was certified on its origin plus its
  position among the N transactions the group certified in that second,
  spread over the first ORIGIN_SPREAD_US: ``k * 10**6 + p * ORIGIN_SPREAD_US // N``;
- immediate commit = original: on the group_replication_applier channel the
  immediate source of a remote transaction is its originating member;
- queued (relay log of the applier channel) DELIVERY_US after the original
  commit, for QUEUE_US;
- applied in the first second j in which the member's applied count A (remote
  certified minus its applier queue, applier.py) passes r. Of the n_j
  transactions applied in second j, those carried in from earlier seconds
  (the backlog) start at ``j * 10**6 + i * ORIGIN_SPREAD_US // n_j`` (i = r -
  A(j - 1)); one certified in second j itself starts DISPATCH_US after it was
  queued, but not before the backlog's share of the window is over. Each
  takes APPLY_US; the coordinator buffers each one for BUFFER_US just before
  its apply starts.

So apply lag (end of apply - original commit) is a few hundred µs for a
member whose applier keeps up, grows with the queue of a slow member (queue /
capacity seconds) and with the length of a scripted applier_stop, and a stream
that has gone quiet shows its last applied transaction and nothing applying.

Invariants: a pure function of (settings, member, second); the
stages of one transaction are ordered (original <= queued <= buffered <=
applied); `last_queued` is never older than `last_applied`; the transaction
`applying` is the one right after `last_applied` and only while the queue is
not empty and the applier runs. A member outside the view shows no channel
(its daemon would read rows of a stopped channel; the model does not keep
them), and the recovery channel of a RECOVERING member is not modelled.

History in bulk (`StageLag.history`, for `grstats simulate`): the same rule
with numpy over a span of seconds. The stream positions a span needs (the
last applied and the one applying at each second) are non-decreasing, so one
window of the remote/applied counts reaching back to the oldest one's arrival
locates them all with `searchsorted`; the figures then are those
`core.lagrows` derives from `lag_at` at each whole second (tested equal).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from grstats.core import columns as col
from grstats.core.lag import APPLIER_CHANNEL, ChannelLag, StageTrx
from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.gtids import GtidLedger
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.remotestream import RemoteStream
from grstats.sources.simulated.settings import SimulationSettings
from grstats.sources.simulated.workload import HOUR, Workload

__all__ = [
    "APPLY_US",
    "BUFFER_US",
    "DELIVERY_US",
    "DISPATCH_US",
    "F64",
    "ORIGIN_SPREAD_US",
    "QUEUE_US",
    "WORKERS",
    "StageLag",
]

F64 = npt.NDArray[np.float64]

US = 1_000_000
ORIGIN_SPREAD_US = 10_000  # a second's commits fall in its first 10 ms
DELIVERY_US = 1_000  # original commit -> queued remotely (xcom round + certification)
QUEUE_US = 50  # writing it to the applier channel's relay log
DISPATCH_US = 100  # queued -> apply start, at the earliest
BUFFER_US = 20  # the coordinator hands it to a worker just before the apply
APPLY_US = 400  # one transaction on a worker
WORKERS = 4  # replica_parallel_workers' default since 8.0.27


class _Trx(NamedTuple):
    gtid: str
    original_us: int
    queued_us: int  # end of the queue stage


class StageLag:
    """Each member's applier channel stages at any second; cached via its parts."""

    def __init__(
        self,
        workload: Workload,
        queues: ApplierQueues,
        ledger: GtidLedger,
        membership: Membership,
    ) -> None:
        """Bind the stage model to the group's parts.

        Args:
            workload: certified transactions per member and second.
            queues: the members' applier queues and stops.
            ledger: GTIDs of the transactions.
            membership: who is in the view.
        """
        self._w, self._q, self._ledger, self._members = workload, queues, ledger, membership
        self._group = workload.settings.group
        self._stream = RemoteStream(workload, queues)

    def _trx(self, m: int, r: int, k: int) -> _Trx:
        """Position r of member m's stream, certified in second k."""
        w = self._w
        before, now = w.ok_at(k - 1), w.ok_at(k)
        d = (now - before).tolist()
        q = r - (int(before.sum()) - int(before[m]))  # its rank among second k's remote ones
        p = 0  # its rank among all of second k's transactions (for the commit time)
        for x, dx in enumerate(d):
            if x != m and q < dx:
                gtid = f"{self._group}:{self._ledger.gno(x, int(before[x]) + q, k)}"
                original = k * US + (p + q) * ORIGIN_SPREAD_US // sum(d)
                return _Trx(gtid, original, original + DELIVERY_US + QUEUE_US)
            if x != m:
                q -= dx
            p += dx
        raise AssertionError("position beyond the second's transactions")  # pragma: no cover

    def _start_apply(self, m: int, r: int, k: int, upper: int, trx: _Trx) -> int:
        """When member m's worker started position r (certified in k, applied by upper)."""
        j = self._stream.first_above("applied", m, r, k, upper)
        a0 = self._stream.count("applied", m, j - 1)
        n = self._stream.count("applied", m, j) - a0  # >= 1: r is applied in second j
        if k < j:  # carried in: the second's backlog is spread over its first 10 ms
            return j * US + (r - a0) * ORIGIN_SPREAD_US // n
        backlog = min(n, self._stream.count("remote", m, j - 1) - a0)
        return max(trx.queued_us + DISPATCH_US, j * US + backlog * ORIGIN_SPREAD_US // n)

    # ---- the channel ----

    def lag_at(self, m: int, s: int) -> tuple[ChannelLag, ...]:
        """Member m's group_replication_applier channel at second s (() outside the view).

        Args:
            m: member index.
            s: Unix second.

        Returns:
            One ChannelLag, or () while the member is OFFLINE or in ERROR.
        """
        if not self._members.in_view(m, s):
            return ()
        stream = self._stream
        running = self._q.running(m, s)
        remote = stream.count("remote", m, s)
        if remote == 0:
            return (ChannelLag(receiver_on=True, applier_on=running, workers=WORKERS),)
        queue = self._q.queue_at(m, s)
        applied = remote - queue
        k = s if stream.count("remote", m, s - 1) < remote else stream.arrival(m, remote - 1, s)
        queued = self._trx(m, remote - 1, k)
        last_queued = _stage(queued, queued.queued_us - QUEUE_US, queued.queued_us)
        last_applied = StageTrx()
        last_end: int | None = None
        if applied > 0:
            r = applied - 1
            k = k if r == remote - 1 else stream.arrival(m, r, s)
            trx = queued if r == remote - 1 else self._trx(m, r, k)
            start = self._start_apply(m, r, k, s, trx)
            last_end = start + APPLY_US
            last_applied = _stage(trx, start, last_end)
        last_processed, applying, busy = last_applied, StageTrx(), 0
        if running and queue > 0:
            k = stream.arrival(m, applied, s)
            trx = self._trx(m, applied, k)
            start = trx.queued_us + DISPATCH_US
            if last_end is not None:
                start = max(start, last_end)
            applying = _stage(trx, start, None)
            busy = min(WORKERS, queue)
            last_processed = applying
        if last_processed.start_us is not None:
            start = last_processed.start_us
            last_processed = StageTrx(
                last_processed.gtid,
                last_processed.original_commit_us,
                last_processed.immediate_commit_us,
                start - BUFFER_US,
                start,
            )
        return (
            ChannelLag(
                channel=APPLIER_CHANNEL,
                receiver_on=True,
                applier_on=running,
                last_queued=last_queued,
                last_processed=last_processed,
                last_applied=last_applied,
                applying=applying,
                workers=WORKERS,
                busy_workers=busy,
            ),
        )

    # ---- history in bulk ----

    def history(self, m: int, start: int, n: int) -> dict[str, F64]:
        """Member m's history lag columns for seconds [start, start + n), in bulk.

        Each second's values are what `core.rows.lag_history` derives from
        `lag_at(m, s)` sampled at the whole second s, with clock offset 0
        (the local member): NaN where that gives None.

        Args:
            m: member index.
            start: first Unix second.
            n: number of seconds (>= 0).

        Returns:
            History column name (records.LAG_HISTORY_COLUMNS) -> n float64 values.
        """
        secs = np.arange(start, start + n, dtype=np.int64)
        out = {name: np.full(n, np.nan) for name in _LAG_NAMES}
        if n == 0:
            return out
        members, queues = self._members, self._q
        if members.scripted(m):
            in_view = np.fromiter((members.in_view(m, s) for s in secs.tolist()), bool, n)
        else:
            in_view = np.ones(n, dtype=bool)
        if _stops(self._w.settings, m):
            running = np.fromiter((queues.running(m, s) for s in secs.tolist()), bool, n)
        else:
            running = np.ones(n, dtype=bool)
        # one window of counts reaching back to the arrival of the oldest position a
        # second can need (positions never go below the one last applied at start)
        end, lo = start + n, start - 1
        r0 = max(0, self._stream.count("applied", m, start) - 1)
        if self._stream.count("remote", m, end - 1) > r0:
            lo = min(lo, self._stream.arrival(m, r0, end - 1) - 1)
        remote_w, applied_w, certified = self._window(m, lo, end)
        remote, applied = remote_w[start - lo :], applied_w[start - lo :]
        queue = remote - applied
        has = in_view & (remote > 0)
        # stream positions: the last applied at each second, and the one applying
        last = has & (applied > 0)
        busy = has & running & (queue > 0)
        positions = np.concatenate([applied[last] - 1, applied[busy]])
        n_last = int(last.sum())
        originals = np.empty(0, dtype=np.int64)  # the applied positions', then the applying
        starts = np.empty(0, dtype=np.int64)
        if len(positions):
            k = lo + np.searchsorted(remote_w, positions, side="right")
            originals = _originals(m, positions, k, lo=lo, remote=remote_w, certified=certified)
            starts = _apply_starts(
                positions[:n_last],
                k[:n_last],
                originals[:n_last],
                lo=lo,
                remote=remote_w,
                applied=applied_w,
            )
        out[_QUEUE][has] = (DELIVERY_US + QUEUE_US) / 1e6
        out[_APPLY][last] = (starts + APPLY_US - originals[:n_last]) / 1e6
        out[_APPLY_TIME][last] = APPLY_US / 1e6
        on = in_view & running
        out[_REPLICATION][on] = 0.0
        out[_REPLICATION][busy] = (secs[busy] * US - originals[n_last:]) / 1e6
        out[_OFFSET][in_view] = 0.0
        return out

    def _window(self, m: int, lo: int, end: int) -> tuple[I64, I64, _Certified]:
        """Member m's remote and applied counts, and the positively certified counts of
        the members before m, of m and of all (`_Certified`), through each second of
        [lo, end); one pass over the hours, so that each hour is built once (the
        workload keeps only a few)."""
        w = self._w
        remote: list[I64] = []
        applied: list[I64] = []
        before: list[I64] = []
        own: list[I64] = []
        every: list[I64] = []
        for h in range(lo // HOUR, (end - 1) // HOUR + 1):
            a, b = max(lo, h * HOUR) - h * HOUR, min(end, (h + 1) * HOUR) - h * HOUR
            if h < w.h0:
                for part in (remote, applied, before, own, every):
                    part.append(np.zeros(b - a, dtype=np.int64))
            else:
                remote.append(self._stream.hour_array("remote", m, h)[a:b])
                applied.append(self._stream.hour_array("applied", m, h)[a:b])
                pa, pc = w.base(h)
                base, hour = pa - pc, w.hour(h)
                before.append(int(base[:m].sum()) + hour.ok[:m, a:b].sum(axis=0))
                own.append(int(base[m]) + hour.ok[m, a:b])
                every.append(int(base.sum()) + hour.ok_tot[a:b])
        certified = _Certified(np.concatenate(before), np.concatenate(own), np.concatenate(every))
        return np.concatenate(remote), np.concatenate(applied), certified


_HISTORY = {c.name: str(c.history) for c in col.MEMBER_LAG.columns if c.history is not None}
_LAG_NAMES = tuple(_HISTORY.values())
_REPLICATION = _HISTORY[col.REPLICATION_LAG_SECONDS]
_QUEUE = _HISTORY[col.QUEUE_LAG_SECONDS]
_APPLY = _HISTORY[col.APPLY_LAG_SECONDS]
_APPLY_TIME = _HISTORY[col.APPLY_TIME_SECONDS]
_OFFSET = _HISTORY[col.CLOCK_OFFSET_SECONDS]


def _stops(settings: SimulationSettings, m: int) -> bool:
    """Whether a scripted applier_stop ever holds member m's applier."""
    member = settings.members[m]
    return any(
        ev.action == "applier_stop" and ev.member.lower() == member for ev in settings.script
    )


class _Certified(NamedTuple):
    """Positively certified transactions through each second of a window: those of the
    members before member m (in member order), of m, and of every member."""

    before: I64
    own: I64
    every: I64


def _originals(m: int, r: I64, k: I64, *, lo: int, remote: I64, certified: _Certified) -> I64:
    """Original commit (µs) of stream positions r of member m, certified in seconds k
    (`_trx`'s rule: rank among second k's transactions in member order).

    Position r is the q-th of second k's remote transactions; in member order, the
    members before m come before m's own ones, so its rank among all of second k's
    is q, plus m's own count when q reaches past the members before m.
    """
    before, own, every = certified
    i, j = k - lo, k - 1 - lo
    q = r - remote[j]  # rank among second k's remote transactions
    rank = q + np.where(q >= before[i] - before[j], own[i] - own[j], 0)
    result: I64 = k * US + rank * ORIGIN_SPREAD_US // (every[i] - every[j])
    return result


def _apply_starts(r: I64, k: I64, original: I64, *, lo: int, remote: I64, applied: I64) -> I64:
    """When the worker started applied stream positions r, certified in seconds k
    (`_start_apply`'s rule: a carried-in backlog is spread over the first 10 ms)."""
    j = lo + np.searchsorted(applied, r, side="right")  # the second each was applied in
    a0 = applied[j - 1 - lo]
    nj = applied[j - lo] - a0
    carried = j * US + (r - a0) * ORIGIN_SPREAD_US // nj
    backlog = np.minimum(nj, remote[j - 1 - lo] - a0)
    fresh = np.maximum(
        original + DELIVERY_US + QUEUE_US + DISPATCH_US,
        j * US + backlog * ORIGIN_SPREAD_US // nj,
    )
    result: I64 = np.where(k < j, carried, fresh)
    return result


def _stage(trx: _Trx, start_us: int, end_us: int | None) -> StageTrx:
    return StageTrx(trx.gtid, trx.original_us, trx.original_us, start_us, end_us)
