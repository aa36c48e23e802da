"""GroupModel: the façade evaluating the whole simulated group at any second.

Strategy: every number is a pure function of (settings, absolute time), so the
daemons of one group, started at different times in different processes,
compute the same group. Time is whole seconds since the Unix epoch (a sample at
`t_us` sees the state at second `t_us // 10**6`, events of that second
included; a script event at a fractional time takes effect at the next whole
second). The parts, each in its own module, wired together in parts.py:

- workload.py: proposals and conflicts per member and second;
- counts.py: the eight counts of replication_group_member_stats;
- texts.py: identity, state and GTID texts (live, and history columns in bulk);
- applier.py: the members' applier queues (continuous across hours);
- flow.py: MySQL's flow control (QUOTA) throttling the writers; the workload
  and queues the other parts see are the throttled ones;
- gtids.py: the GTID ledger (block assignment, GTID-set texts);
- certifier.py: certifier queue, stable set, garbage collection, ROWS_VALIDATING;
- membership.py: states, roles, hosts, VIEW_ID and view-change transactions;
- lag.py: replication lag by stage (live samples, and history rows in bulk);
- workers.py: the multi-threaded applier's WL#15620 metrics (live samples only).

Invariants (tested): those of counts.py, and REMOTE_APPLIED +
REMOTE_IN_APPLIER_QUEUE = positively certified transactions of the other
members + view-change transactions applied. A model is not thread-safe
(caches).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.applierrows import CHANNEL_COLUMNS
from grstats.core.lag import ChannelLag
from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.core.sample import LocalMember
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.parts import GroupParts
from protocol import FLOW_CONTROL_QUOTA, GtidState, MirroredTables, PipelineStats

__all__ = ["GroupModel"]

# (ApplierChannel field, history column) of the applier counters history rows keep
_APPLIER_HISTORY = tuple(
    (field, str(col.APPLIER_METRICS.column(name).history))
    for field, name in CHANNEL_COLUMNS
    if col.APPLIER_METRICS.column(name).history in APPLIER_HISTORY_COLUMNS
)


class GroupModel(GroupParts):
    """The simulated group; every method is a pure function of (settings, time).

    Its parts are wired by `GroupParts` (parts.py), whose constructor it keeps.
    """

    def certification_rounds(self, start_s: int, n_seconds: int) -> dict[int, Any]:
        """The certifier's rounds (stable set, garbage collection) that seconds [start_s,
        start_s + n_seconds) see, by minute: what a model of equal settings in another
        process may `remember_certification_rounds` instead of computing them again."""
        return dict(self._cert.rounds(start_s, start_s + n_seconds))

    def remember_certification_rounds(self, rounds: dict[int, Any]) -> None:
        """Take rounds from `certification_rounds` of a model of equal settings."""
        self._cert.remember(rounds)

    def gtid_state_at(self, member_id: str, t_us: int) -> GtidState:
        """The member's @@gtid_executed and @@gtid_purged at time t (gtidstate.py).

        Raises:
            ValueError: member_id is not a member.
        """
        return self._gtid_states.state(self._member(member_id), t_us)

    def channels_at(self, member_id: str, t_us: int) -> MirroredTables | None:
        """The member's rows of the six WL#3656 channel tables at time t (channels.py).

        Raises:
            ValueError: member_id is not a member.
        """
        m = self._member(member_id)
        return self._channels.at(m, t_us, self.lag_at(member_id, t_us))

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
        iq, checked, conflicts, rows, queue, applied, local, rollback = self._counts.at(m, s)
        return PipelineStats(
            transactions_waiting_certification=iq,
            transactions_waiting_apply=queue,
            transactions_certified=checked,
            transactions_applied=applied,
            transactions_local=local,
            transactions_negative_certified=conflicts,
            transactions_rows_validating=rows,
            transaction_gtids_present=False,
            transactions_committed_all_members=self._texts.committed(m, s).encode(),
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

    def view_at(self, member_id: str, t_us: int) -> frozenset[str]:
        """The MEMBER_IDs the member's replication_group_members lists at time t.

        The group's view while the member is in it; only itself while it is out
        (OFFLINE, ERROR), as a server outside the group shows only its own row.

        Raises:
            ValueError: member_id is not a member.
        """
        m = self._member(member_id)
        s = t_us // 1_000_000
        ms = self._membership
        if not ms.in_view(m, s):
            return frozenset({self.settings.members[m]})
        return frozenset(other for i, other in enumerate(self.settings.members) if ms.in_view(i, s))

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
        _, _, _, _, queue, applied, _, _ = self._counts.at(m, s)
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
        committed = self._counts.remote_applied_seconds(m, start_s, n_seconds)
        secs = np.arange(start_s, start_s + n_seconds, dtype=np.int64)
        counters = self._appliers.counters(m, secs, committed)
        return {history: counters[field] for field, history in _APPLIER_HISTORY}

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
        cols = self._counts.columns(m, start_s, n_seconds)
        cols["sampled_at"] = np.arange(start_s, start_s + n_seconds, dtype=np.int64) * 1_000_000
        cols["flow_control_mode"] = np.full(n_seconds, FLOW_CONTROL_QUOTA, dtype=np.int64)
        return cols

    def text_columns(self, member_id: str, start_s: int, n_seconds: int) -> dict[str, list[Any]]:
        """The other columns of `history_columns` (identity, state, GTID texts), as lists."""
        m = self._member(member_id)
        if n_seconds < 0:
            raise ValueError("n_seconds: must be >= 0")
        return self._texts.columns(m, start_s, n_seconds)

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
