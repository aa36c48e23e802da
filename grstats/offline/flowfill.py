"""The flow-control history columns of `grstats simulate`: a collector's replay, in bulk.

Strategy: `grstats simulate` writes every member's rows offline; the fc_*
columns must be what a daemon's replay (`core.flowreplay.FlowReplay`) records
for those rows if it received every member's row as one stats message per
second.  The replay's per-member figures (bottleneck, excess, catch-up ETA,
failover readiness from the backlog over the apply capacity of the last
minute) depend only on the member's own consecutive messages, so they are
computed column-wise with numpy by the replay's rules; the group quota is
sequential, so it runs MySQL's algorithm itself
(`core.flowcontrol.FlowControl`) second by second.  A second whose step can
only yield quota 0 (no hold counted, quota already 0, no max_quota) just
advances the step number -- exactly what `FlowControl.step` does then -- and
the messages are handed to `FlowControl.receive` only for the seconds that
count holds: a step with holds reads every entry, and they are all refreshed
right before it, as the continuous replay would have them.

Invariants (as in the replay): the step of second t counts the messages of
second t-1 (a daemon steps on its own sample, before the others' messages of
that second arrive); row t shows the quota after that step and the member's
figures from its message at t; writers are held at step t when a member's
delta local at row t-1 reached the larger of the quotas after steps t-2 and
t-1, both limited; the first message of a member has no rates (ETA and
failover time NULL unless its queue is empty).  State carries over from one
day to the next (the last messages, two quotas, a minute of apply rates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from grstats.core.flowcontrol import (
    FlowControl,
    FlowControlSettings,
    FlowEntry,
    certifier_bound,
    holds,
    needs_flow_control,
)
from grstats.core.flowreplay import CAPACITY_WINDOW_US, DEFAULT_CATCH_UP_LIMIT_S

__all__ = ["FLOW_INPUTS", "FlowFill"]

# history column -> what the replay reads of the member's message
CERT = "count_transactions_in_queue"
APPLY = "count_transactions_remote_in_applier_queue"
CERTIFIED = "count_transactions_checked"
APPLIED = "count_transactions_remote_applied"
LOCAL = "count_transactions_local_proposed"
MODE = "flow_control_mode"
AT = "sampled_at"
FLOW_INPUTS = (CERT, APPLY, CERTIFIED, APPLIED, LOCAL, MODE, AT)

_I64 = np.int64
# apply rates a row's capacity is the highest of: its own and those of the minute before
# (rows are a second apart; the replay keeps spans ending less than the window ago)
_CAPACITY_ROWS = CAPACITY_WINDOW_US // 1_000_000
_BOTTLENECKS = pa.array(["", "certifier", "applier"], pa.string())  # fc_bottleneck's texts


def window_max(values: Any, width: int) -> Any:
    """The maximum of each run of `width` consecutive values, in order (len - width + 1).

    As `sliding_window_view(values, width).max(axis=1)`, in O(len) instead of
    O(len x width) (van Herk / Gil-Werman): within blocks of `width`, the
    maximum so far from each block's start and to each block's end; a window
    spans at most two blocks.
    """
    n = len(values)
    if n < width:
        return np.empty(0, dtype=np.float64)
    blocks = -(-n // width)
    padded = np.full(blocks * width, -np.inf)
    padded[:n] = values
    rows = padded.reshape(blocks, width)
    ahead = np.maximum.accumulate(rows, axis=1).ravel()  # block start .. here
    behind = np.maximum.accumulate(rows[:, ::-1], axis=1)[:, ::-1].ravel()  # here .. block end
    starts = np.arange(n - width + 1)
    return np.maximum(behind[starts], ahead[starts + width - 1])


@dataclass(slots=True)
class _Last:
    """A member's last message of the previous day."""

    values: dict[str, int]
    entry: FlowEntry
    rates: Any  # the apply rates of its last _CAPACITY_ROWS - 1 rows (NaN: none)


@dataclass(slots=True)
class FlowFill:
    """The replay's fc_* columns for whole days of every member, day after day.

    Args:
        settings: the flow-control variables the replaying daemon uses.
        catch_up_limit_s: FAILOVER_READY's limit (as `FlowReplay`).
    """

    settings: FlowControlSettings = field(default_factory=FlowControlSettings)
    catch_up_limit_s: float = DEFAULT_CATCH_UP_LIMIT_S
    _fc: FlowControl = field(init=False)
    _last: dict[str, _Last] = field(default_factory=dict, init=False)
    _quotas_before: tuple[int, int] = field(default=(0, 0), init=False)  # after steps -2, -1

    def __post_init__(self) -> None:
        self._fc = FlowControl(self.settings)

    def day(self, inputs: dict[str, dict[str, Any]]) -> dict[str, dict[str, pa.Array]]:
        """The fc_* columns of one day.

        Args:
            inputs: member id -> its FLOW_INPUTS columns (array-likes of equal
                length, one row per second, in time order); every member the
                same seconds.

        Returns:
            Member id -> history column name -> Arrow array.
        """
        members = sorted(inputs)
        cols = {m: {k: np.asarray(inputs[m][k], dtype=_I64) for k in FLOW_INPUTS} for m in members}
        n = len(cols[members[0]][AT]) if members else 0
        s = self.settings
        needs = {m: self._needs(cols[m]) for m in members}
        quota = self._quotas(members, cols, needs, n)
        throttling = (quota > 0).astype(np.int8)
        held = self._held(members, cols, quota, n).astype(np.int8)
        out: dict[str, dict[str, pa.Array]] = {}
        rates: dict[str, Any] = {}
        for m in members:
            c = cols[m]
            cert_ex = c[CERT] - s.certifier_threshold
            apply_ex = c[APPLY] - s.applier_threshold
            # _BOTTLENECKS' index per row: no Python text per row
            kind = np.where(needs[m], np.where(certifier_bound(cert_ex, apply_ex), 1, 2), 0)
            eta, rates[m] = self._eta(m, c, n)
            failover = self._failover(m, c[APPLY], rates[m])
            known = ~np.isnan(failover)
            ready = pa.array(
                (failover <= self.catch_up_limit_s).astype(np.int8), pa.int8(), mask=~known
            )
            out[m] = {
                "fc_bottleneck": _BOTTLENECKS.take(pa.array(kind.astype(np.int8))),
                "fc_excess_over_threshold": pa.array(
                    np.maximum(np.maximum(cert_ex, apply_ex), 0), pa.int64()
                ),
                "fc_group_quota": pa.array(quota, pa.int64()),
                "fc_throttling": pa.array(throttling, pa.int8()),
                "fc_catch_up_eta_seconds": pa.array(eta, pa.float64(), mask=np.isnan(eta)),
                "fc_failover_ready": ready,
                "fc_writers_held": pa.array(held, pa.int8()),
            }
        for m in members:  # after every member's figures: _held reads their last rows
            c = cols[m]
            if n:
                last = {k: int(v[-1]) for k, v in c.items()}
                tail = self._rates_before(m)
                kept = np.concatenate([tail, rates[m]])[-(_CAPACITY_ROWS - 1) :]
                self._last[m] = _Last(last, self._entry(m, c, n - 1), kept)
        if n:
            before = self._quotas_before
            self._quotas_before = (
                (before[1], int(quota[0])) if n == 1 else (int(quota[-2]), int(quota[-1]))
            )
        return out

    def _held(self, members: list[str], cols: dict[str, dict[str, Any]], quota: Any, n: int) -> Any:
        """Whether writers were held at each row's step (see the module)."""
        q2 = np.concatenate([np.array(self._quotas_before, dtype=_I64), quota])  # q[t-2], q[t-1]
        before, last = q2[:n], q2[1 : n + 1]
        limit = np.where((before > 0) & (last > 0), np.maximum(before, last), 0)
        held = np.zeros(n, dtype=bool)
        for m in members:
            local = cols[m][LOCAL] - self._previous(m, cols[m], LOCAL)  # delta local per row
            # the message of row t-1 (the previous day's last for row 0, none for a newcomer)
            carried = self._last.get(m)
            first = -1 if carried is None else carried.entry.delta_local
            read = np.concatenate([np.array([first], dtype=_I64), local[:-1]])
            held |= (limit > 0) & (read >= limit)
        return held

    def _rates_before(self, m: str) -> Any:
        last = self._last.get(m)
        return np.full(0, np.nan) if last is None else last.rates

    def _failover(self, m: str, queue: Any, rates: Any) -> Any:
        """FAILOVER_SECONDS per row (NaN: unknown): queue / highest rate of the window."""
        before = self._rates_before(m)
        padded = np.concatenate([np.full(_CAPACITY_ROWS - 1 - len(before), np.nan), before, rates])
        missing = np.isnan(padded)
        # each row's window: its rate and the _CAPACITY_ROWS - 1 before it
        known = window_max((~missing).astype(np.float64), _CAPACITY_ROWS) > 0
        highest = window_max(np.where(missing, -1.0, padded), _CAPACITY_ROWS)
        capacity = np.where(known, highest, 0)
        q = queue.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            failover = np.where(capacity > 0, q / np.where(capacity > 0, capacity, 1.0), np.inf)
        failover = np.where(known, failover, np.nan)
        return np.where(q <= 0, 0.0, failover)

    def _needs(self, c: dict[str, Any]) -> Any:
        return holds(c[MODE], c[CERT], c[APPLY], self.settings)

    def _previous(self, m: str, c: dict[str, Any], name: str) -> Any:
        """The previous message's value of `name` per row (the zero state before the first)."""
        last = self._last.get(m)
        first = 0 if last is None else last.values[name]
        return np.concatenate([np.array([first], dtype=_I64), c[name][:-1]])

    def _entry(self, m: str, c: dict[str, Any], i: int) -> FlowEntry:
        """The FlowEntry of the member's message at row i (deltas against row i-1)."""
        if i > 0:
            prev = {k: int(c[k][i - 1]) for k in (CERTIFIED, APPLIED, LOCAL)}
        else:
            last = self._last.get(m)
            prev = dict.fromkeys((CERTIFIED, APPLIED, LOCAL), 0) if last is None else last.values
        return FlowEntry(
            waiting_certification=int(c[CERT][i]),
            waiting_apply=int(c[APPLY][i]),
            delta_certified=int(c[CERTIFIED][i]) - prev[CERTIFIED],
            delta_applied=int(c[APPLIED][i]) - prev[APPLIED],
            delta_local=int(c[LOCAL][i]) - prev[LOCAL],
            mode=int(c[MODE][i]),
        )

    def _quotas(
        self, members: list[str], cols: dict[str, dict[str, Any]], needs: dict[str, Any], n: int
    ) -> Any:
        """The quota after each second's step (MySQL's algorithm, `FlowControl`)."""
        fc, s = self._fc, self.settings
        quota = np.zeros(n, dtype=_I64)
        held = np.zeros(n, dtype=bool)  # row t-1 of some member counts a hold at step t
        for m in members:
            held[1:] |= needs[m][:-1]
        carried = [m for m in members if m in self._last]
        if n and any(needs_flow_control(self._last[m].entry, s) for m in carried):
            held[0] = True
        # each member's FlowEntry fields on the rows a step reads (row t - 1 of each held
        # step t), as plain ints: built once, column-wise, for those rows only
        read = np.flatnonzero(held[1:])  # t - 1
        fields = {m: self._entry_fields(m, cols[m], read) for m in members}
        steps = np.flatnonzero(held).tolist()  # the seconds whose step reads messages
        steps.append(n)
        is_held = held.tolist()
        i = j = 0  # the next of `steps`, of `read`
        t = 0
        while t < n:
            if not is_held[t] and fc.quota == 0 and not s.max_quota:
                # up to the next held second every step yields quota 0 and only advances
                # the step number (what step() does with no hold and no quota): all at once
                while steps[i] < t:
                    i += 1
                fc.step_number += steps[i] - t
                t = steps[i]
                continue
            if is_held[t] and t > 0:
                for m in members:
                    wc, wa, dc, da, dl, mode = fields[m]
                    fc.receive(m, FlowEntry(wc[j], wa[j], dc[j], da[j], dl[j], mode[j]))
                j += 1
            elif is_held[t]:  # the day's first step reads the previous day's last messages
                for m in members:
                    if m in self._last:
                        fc.receive(m, self._last[m].entry)
            fc.step(0)
            quota[t] = fc.quota
            t += 1
        return quota

    def _entry_fields(self, m: str, c: dict[str, Any], rows: Any) -> list[list[int]]:
        """FlowEntry's fields on `rows` (deltas against the previous message), as lists."""
        return [
            c[CERT][rows].tolist(),
            c[APPLY][rows].tolist(),
            (c[CERTIFIED] - self._previous(m, c, CERTIFIED))[rows].tolist(),
            (c[APPLIED] - self._previous(m, c, APPLIED))[rows].tolist(),
            (c[LOCAL] - self._previous(m, c, LOCAL))[rows].tolist(),
            c[MODE][rows].tolist(),
        ]

    def _eta(self, m: str, c: dict[str, Any], n: int) -> tuple[Any, Any]:
        """CATCH_UP_ETA_SECONDS per row (NaN: unknown), by `FlowReplay`'s rules, and the
        apply rate per row (NaN: none yet)."""
        queue = c[APPLY].astype(np.float64)
        prev_queue = self._previous(m, c, APPLY).astype(np.float64)
        prev_at = self._previous(m, c, AT)
        dt = (c[AT] - prev_at) / 1e6
        has_rate = np.ones(n, dtype=bool)
        if m not in self._last and n:
            has_rate[0] = False  # the member's first message: no rates yet
        has_rate &= dt > 0
        safe_dt = np.where(dt > 0, dt, 1.0)
        applied = c[APPLIED] - self._previous(m, c, APPLIED)
        apply_rate = np.maximum(0.0, applied / safe_dt)
        incoming = np.maximum(0.0, apply_rate + (queue - prev_queue) / safe_dt)
        net = apply_rate - incoming
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = np.where(net > 0, queue / np.where(net > 0, net, 1.0), np.inf)
        eta = np.where(has_rate, eta, np.nan)
        return np.where(queue <= 0, 0.0, eta), np.where(has_rate, apply_rate, np.nan)
