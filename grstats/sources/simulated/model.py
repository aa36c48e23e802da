"""GroupModel: the façade evaluating the whole simulated group at any second.

Strategy: every number is a pure function of (settings, absolute time), so the
daemons of one group, started at different times in different processes,
compute the same group. Time is whole seconds since the Unix epoch (a sample at
`t_us` sees the state at second `t_us // 10**6`, events of that second
included; a script event at a fractional time takes effect at the next whole
second). The parts, each in its own module:

- workload.py: proposals and conflicts per member and second;
- applier.py: the members' applier queues (continuous across hours);
- flow.py: MySQL's flow control (QUOTA) throttling the writers; the workload
  and queues the other parts see are the throttled ones;
- gtids.py: the GTID ledger (block assignment, GTID-set texts);
- certifier.py: certifier queue, stable set, garbage collection, ROWS_VALIDATING;
- membership.py: states, roles, hosts, VIEW_ID and view-change transactions;
- lag.py: replication lag by stage (live samples, and history rows in bulk);
- workers.py: the multi-threaded applier's WL#15620 metrics (live samples only).

Invariants (tested): CHECKED and CONFLICTS_DETECTED are equal on every member;
sum of LOCAL_PROPOSED = CHECKED; sum of LOCAL_ROLLBACK = CONFLICTS_DETECTED;
REMOTE_APPLIED + REMOTE_IN_APPLIER_QUEUE = positively certified transactions of
the other members + view-change transactions applied; counters never
decrease. A model is not thread-safe (caches).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.applierrows import CHANNEL_COLUMNS
from grstats.core.lag import ChannelLag
from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.core.sample import LocalMember
from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.certifier import Certification
from grstats.sources.simulated.flow import FlowModel, ThrottledQueues, ThrottledWorkload
from grstats.sources.simulated.gtids import GtidLedger
from grstats.sources.simulated.gtidstate import GtidStates
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.lag import StageLag
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.settings import (
    SimulationSettings,
)
from grstats.sources.simulated.workers import AppliersModel
from grstats.sources.simulated.workload import HOUR, Workload
from protocol import FLOW_CONTROL_QUOTA, GtidState, PipelineStats

__all__ = ["GroupModel"]

GTID_EVERY_S = 30  # history rows carry GTID texts on seconds divisible by this
_TEXTS_CACHED = 2 * 86_400 // GTID_EVERY_S  # two days of GTID texts (a few hundred KB)
_COUNT_COLUMNS = (
    "count_transactions_in_queue",
    "count_transactions_checked",
    "count_conflicts_detected",
    "count_transactions_rows_validating",
    "count_transactions_remote_in_applier_queue",
    "count_transactions_remote_applied",
    "count_transactions_local_proposed",
    "count_transactions_local_rollback",
)
# (ApplierChannel field, history column) of the applier counters history rows keep
_APPLIER_HISTORY = tuple(
    (field, str(col.APPLIER_METRICS.column(name).history))
    for field, name in CHANNEL_COLUMNS
    if col.APPLIER_METRICS.column(name).history in APPLIER_HISTORY_COLUMNS
)


def _hour_spans(start_s: int, end_s: int) -> Iterator[tuple[int, int]]:
    """[start_s, end_s) cut at the hour boundaries: (start, stop) of each piece."""
    s = start_s
    while s < end_s:
        stop = min(end_s, (s // HOUR + 1) * HOUR)
        yield s, stop
        s = stop


class GroupModel:
    """The simulated group; every method is a pure function of (settings, time)."""

    def __init__(self, settings: SimulationSettings) -> None:
        """Prepare the model (cheap; work happens lazily on first evaluation).

        Args:
            settings: the knobs, identical on every member of the group.
        """
        self.settings = settings
        self._index = {m: i for i, m in enumerate(settings.members)}
        self._membership = Membership(settings)
        self._workload = Workload(settings)
        self._queues = ApplierQueues(self._workload)
        self._flow: FlowModel | None = None
        if settings.flow_control.mode == "QUOTA":
            raw_cert = Certification(
                self._workload, self._queues, GtidLedger(self._workload), self._membership
            )
            self._flow = FlowModel(
                self._workload,
                self._queues,
                lambda m, start: raw_cert.in_queue(m, start, self._raw_iq(m, start)),
            )
            raw_queues = self._queues
            self._workload = ThrottledWorkload(self._workload, self._flow)
            self._queues = ThrottledQueues(self._workload, raw_queues, self._flow)
        self._ledger = GtidLedger(self._workload)
        self._texts: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._cert = Certification(self._workload, self._queues, self._ledger, self._membership)
        self._lag = StageLag(self._workload, self._queues, self._ledger, self._membership)
        self._appliers = AppliersModel(settings, self._workload, self._queues)
        self._gtid_states = GtidStates(
            settings, self._workload, self._ledger, self._queues.queue_at
        )

    def gtid_state_at(self, member_id: str, t_us: int) -> GtidState:
        """The member's @@gtid_executed and @@gtid_purged at time t (gtidstate.py).

        Raises:
            ValueError: member_id is not a member.
        """
        return self._gtid_states.state(self._member(member_id), t_us)

    def _raw_iq(self, m: int, start: int) -> I64:
        w = self._flow._w if self._flow is not None else self._workload
        h = start // HOUR
        if h < w.h0:
            return np.zeros(HOUR, dtype=np.int64)
        got: I64 = w.hour(h).in_queue[m]
        return got

    def _member(self, member_id: str) -> int:
        try:
            return self._index[member_id.lower()]
        except KeyError:
            raise ValueError(f"member_id: {member_id!r} is not a member of the model") from None

    def _numbers(self, m: int, start: int, stop: int) -> list[I64]:
        """The eight counts of member m for seconds [start, stop) inside one hour, in
        _COUNT_COLUMNS order."""
        w = self._workload
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
            self._queues.queue(m, h)[k0:k1],
            self._remote_applied(m, start, stop),
            int(pa[m]) + hour.a[m, k0:k1],
            int(pc[m]) + hour.c[m, k0:k1],
        ]

    def _gtid_texts(self, s: int) -> tuple[str, str]:
        """(the group's committed GTID text, last conflict-free GTID) at second s: the
        same for every member, so a bulk read of each member's day builds them once."""
        got = self._texts.get(s)
        if got is None:
            got = self._texts[s] = (
                self._cert.committed_text(s),
                self._ledger.last_conflict_free(s),
            )
            if len(self._texts) > _TEXTS_CACHED:
                self._texts.popitem(last=False)
        return got

    def _committed_text(self, m: int, s: int) -> str:
        if self._membership.state(m, s) == "RECOVERING":
            return ""
        return self._cert.committed_text(s)

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
            transaction_last_conflict_free=self._ledger.last_conflict_free(s).encode(),
            transactions_local_rollback=rollback,
            flow_control_mode=FLOW_CONTROL_QUOTA,
            sent_timestamp=None,
        )

    def member_at(self, member_id: str, t_us: int) -> LocalMember:
        """The member's identity and state at time t, as replication_group_members shows it.

        Args:
            member_id: one of settings.members (any case).
            t_us: microseconds since the Unix epoch.

        Returns:
            LocalMember (state ONLINE unless scripted, role per mode, VIEW_ID of
            the group's current view or "" while the member is outside it).

        Raises:
            ValueError: member_id is not a member.
        """
        m = self._member(member_id)
        s = t_us // 1_000_000
        ms = self._membership
        state = ms.state(m, s)
        host, port = ms.host(m)
        return LocalMember(
            group_name=self.settings.group,
            member_id=self.settings.members[m],
            host=host,
            port=port,
            state=state,
            role=ms.role(m, state),
            version=self.settings.version,
            view_id=ms.view_id(m, s),
        )

    def lag_at(self, member_id: str, t_us: int) -> tuple[ChannelLag, ...]:
        """The member's replication lag by stage at time t (lag.py; `lag_history` in bulk).

        Raises:
            ValueError: member_id is not a member.
        """
        return self._lag.lag_at(self._member(member_id), t_us // 1_000_000)

    def lag_history(self, member_id: str, start_s: int, n_seconds: int) -> dict[str, Any]:
        """The history's lag columns for seconds [start_s, start_s + n_seconds), in bulk.

        Equal, second by second, to what a daemon records from `lag_at` sampled at
        the whole second (`core.rows.lag_history`, clock offset 0: the local member).

        Args:
            member_id: one of settings.members (any case).
            start_s: first second (Unix seconds).
            n_seconds: number of rows (>= 0).

        Returns:
            records.LAG_HISTORY_COLUMNS name -> float64 array, NaN where the figure is NULL.

        Raises:
            ValueError: member_id is not a member or n_seconds < 0.
        """
        m = self._member(member_id)
        if n_seconds < 0:
            raise ValueError("n_seconds: must be >= 0")
        return dict(self._lag.history(m, start_s, n_seconds))

    def applier_at(self, member_id: str, t_us: int) -> MemberApplier:
        """The member's applier metrics (WL#15620) at time t (workers.py; `applier_history`
        in bulk).

        TRANSACTIONS_COMMITTED_COUNT and TRANSACTIONS_PENDING_COUNT of
        group_replication_applier are `stats_at`'s REMOTE_APPLIED and
        REMOTE_IN_APPLIER_QUEUE at the same second.

        Raises:
            ValueError: member_id is not a member.
        """
        m = self._member(member_id)
        s = t_us // 1_000_000
        _, _, _, _, queue, applied, _, _ = (int(x[0]) for x in self._numbers(m, s, s + 1))
        return self._appliers.applier_at(m, s, t_us, committed=applied, pending=queue)

    def applier_history(self, member_id: str, start_s: int, n_seconds: int) -> dict[str, I64]:
        """The history's applier columns for seconds [start_s, start_s + n_seconds), in bulk.

        Equal, second by second, to what a daemon records from `applier_at`
        sampled at the whole second (`core.rows.applier_history`).

        Args:
            member_id: one of settings.members (any case).
            start_s: first second (Unix seconds).
            n_seconds: number of rows (>= 0).

        Returns:
            records.APPLIER_HISTORY_COLUMNS name -> int64 array.

        Raises:
            ValueError: member_id is not a member or n_seconds < 0.
        """
        m = self._member(member_id)
        if n_seconds < 0:
            raise ValueError("n_seconds: must be >= 0")
        end = start_s + n_seconds
        applied = [self._remote_applied(m, s, stop) for s, stop in _hour_spans(start_s, end)]
        committed = np.concatenate(applied) if applied else np.zeros(0, dtype=np.int64)
        secs = np.arange(start_s, end, dtype=np.int64)
        counters = self._appliers.counters(m, secs, committed)
        return {history: counters[field] for field, history in _APPLIER_HISTORY}

    def _remote_applied(self, m: int, start: int, stop: int) -> I64:
        """Member m's COUNT_TRANSACTIONS_REMOTE_APPLIED for [start, stop) inside one hour
        (`_numbers`' sixth count, alone for `applier_history`)."""
        w = self._workload
        h, k0 = divmod(start, HOUR)
        k1 = k0 + stop - start
        if h < w.h0:
            return np.zeros(stop - start, dtype=np.int64)
        pa, pc = w.base(h)
        hour = w.hour(h)
        ok_base = pa - pc
        ok_tot = int(ok_base.sum()) + hour.ok_tot[k0:k1]
        own_ok = int(ok_base[m]) + hour.ok[m, k0:k1]
        queue = self._queues.queue(m, h)[k0:k1]
        applied: I64 = (
            ok_tot - own_ok - queue + self._membership.view_changes_applied(m, start, stop)
        )
        return applied

    def number_columns(self, member_id: str, start_s: int, n_seconds: int) -> dict[str, I64]:
        """The integer columns of `history_columns`, as numpy arrays.

        The eight counts, sampled_at (microseconds) and flow_control_mode: what a
        bulk writer converts without a Python object per value.

        Args:
            member_id: one of settings.members (any case).
            start_s: first second (Unix seconds).
            n_seconds: number of rows (>= 0).

        Returns:
            Column name -> integer array of n_seconds values.

        Raises:
            ValueError: member_id is not a member or n_seconds < 0.
        """
        m = self._member(member_id)
        if n_seconds < 0:
            raise ValueError("n_seconds: must be >= 0")
        end = start_s + n_seconds
        parts: list[list[I64]] = [[] for _ in range(8)]
        for s, stop in _hour_spans(start_s, end):
            for part, arr in zip(parts, self._numbers(m, s, stop), strict=True):
                part.append(arr)
        cols = {
            name: np.concatenate(part) if part else np.zeros(0, dtype=np.int64)
            for name, part in zip(_COUNT_COLUMNS, parts, strict=True)
        }
        cols["sampled_at"] = np.arange(start_s, end, dtype=np.int64) * 1_000_000
        cols["flow_control_mode"] = np.full(n_seconds, FLOW_CONTROL_QUOTA, dtype=np.int64)
        return cols

    def text_columns(self, member_id: str, start_s: int, n_seconds: int) -> dict[str, list[Any]]:
        """The other columns of `history_columns` (identity, state, GTID texts), as lists."""
        m = self._member(member_id)
        if n_seconds < 0:
            raise ValueError("n_seconds: must be >= 0")
        secs = range(start_s, start_s + n_seconds)
        ms = self._membership
        host, port = ms.host(m)
        if ms.scripted(m):
            states = [ms.state(m, x) for x in secs]
            roles = [ms.role(m, st) for st in states]
        else:
            states, roles = ["ONLINE"] * n_seconds, [ms.role(m, "ONLINE")] * n_seconds
        if ms.views_changed():
            views = [ms.view_id(m, x) for x in secs]
        else:
            views = [ms.view_id(m, start_s)] * n_seconds
        committed: list[str | None] = [None] * n_seconds
        last_free: list[str | None] = [None] * n_seconds
        for i in range((-start_s) % GTID_EVERY_S, n_seconds, GTID_EVERY_S):
            group_text, last_free[i] = self._gtid_texts(start_s + i)
            recovering = ms.state(m, start_s + i) == "RECOVERING"
            committed[i] = "" if recovering else group_text
        return {
            "group_name": [self.settings.group] * n_seconds,
            "member_id": [self.settings.members[m]] * n_seconds,
            "member_host": [host] * n_seconds,
            "member_port": [port] * n_seconds,
            "member_state": states,
            "member_role": roles,
            "member_version": [self.settings.version] * n_seconds,
            "view_id": views,
            "transactions_committed_all_members": committed,
            "last_conflict_free_transaction": last_free,
        }

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
        numbers = self.number_columns(member_id, start_s, n_seconds)
        cols = self.text_columns(member_id, start_s, n_seconds)
        cols.update((name, values.tolist()) for name, values in numbers.items())
        return cols
