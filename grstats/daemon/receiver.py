"""The receive path: every bus message into the tables, remote history, a quiet reject log.

Strategy: messages are applied synchronously inside the bus's callback
(`MemberTables.receive` is pure and fast), so nothing slow may run here. A
rejected message is counted by the tables; the log line about it is
rate-limited (one per `REJECT_LOG_INTERVAL_S`, with the number suppressed
since), because a hostile or broken publisher can send thousands a second.
"""

from __future__ import annotations

import time

import structlog

from grstats.core.ratelimit import RateLimit
from grstats.core.records import HistoryRow
from grstats.core.rows import (
    applier_history,
    commit_path_due,
    commit_path_history,
    flow_history,
    history_row,
    lag_history,
)
from grstats.core.tables import Accepted, MemberTables, Rejected
from grstats.core.topics import STATS_KIND
from grstats.daemon.health import HistorySink, now_us

log = structlog.get_logger("grstats.daemon")

REJECT_LOG_INTERVAL_S = 10.0


class Receiver:
    """Applies bus messages to the tables.

    Args:
        tables: the daemon's tables.
        history: where remote members' rows go (collector, or scope "all"), or None.
    """

    def __init__(self, tables: MemberTables, history: HistorySink | None) -> None:
        self.tables = tables
        self.history = history
        self._reject_log = RateLimit(REJECT_LOG_INTERVAL_S)

    def on_message(self, topic: str, payload: bytes, retained: bool) -> None:
        """The bus handler: apply one message (never raises for bad input)."""
        received = now_us()
        result = self.tables.receive(topic, payload, received, retained=retained)
        if isinstance(result, Accepted):
            if self.history is not None and result.kind == STATS_KIND:
                self.history.record(self._history_row(result, received))
            if result.lag_error:  # stats applied; only the lag section was refused
                self._log_reject(topic, "lag_malformed", result.lag_error)
            if result.applier_error:  # stats applied; only the applier section was refused
                self._log_reject(topic, "applier_malformed", result.applier_error)
            if result.commit_path_error:  # stats applied; only that section was refused
                self._log_reject(topic, "commit_path_malformed", result.commit_path_error)
        elif isinstance(result, Rejected):
            self._log_reject(topic, result.reason, result.detail)

    def _history_row(self, result: Accepted, received_us: int) -> HistoryRow:
        """The remote member's row: this very envelope's lag and applier metrics, the replay's
        flow-control figures, the GTID divergence verdict."""
        env = result.envelope
        remote = self.tables.registry.get((env.group, env.member.id))
        figures = None
        if remote is not None and remote.lag is not None:
            offset_us = remote.clock_offset_us()
            figures = lag_history(remote.lag, None if offset_us is None else offset_us / 1e6)
        # no ext.applier: its columns NULL, as HistoryRow's defaults (no dict of Nones to build)
        applier = (
            applier_history(remote.applier)
            if remote is not None and remote.applier is not None
            else None
        )
        # the replay of its group has just taken this message (MemberTables.receive)
        flow = flow_history(self.tables.replay(env.group), env.member.id)
        sampled_at = min(env.sent_us, received_us)
        # its ext.commit_path is the newest of its window (none in this envelope: no
        # window), kept once per bucket of the sender's clock (commit_path_due)
        reports = remote.commit_path if remote is not None else ()
        commit = None
        if reports and commit_path_due(
            reports[-2].at_us if len(reports) > 1 else None, reports[-1].at_us
        ):
            commit = commit_path_history(reports[-1].counters)
        # the GTID verdict of the member as our snapshot would show it then
        gtids = self.tables.gtid_history(env.member.id)
        return history_row(
            env,
            result.stats,
            sampled_at,
            lag=figures,
            applier=applier,
            flow=flow,
            gtids=gtids,
            commit_path=commit,
        )

    def _log_reject(self, topic: str, reason: str, detail: str) -> None:
        suppressed = self._reject_log.admit(time.monotonic())
        if suppressed is not None:
            log.warning(
                "envelope.rejected",
                reason=reason,
                topic=topic[:200],
                detail=detail[:200],
                suppressed=suppressed,
            )
