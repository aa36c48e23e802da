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
            if result.errors:  # stats applied, a section refused
                for counter, error in result.errors.items():
                    self._log_reject(topic, f"{counter}_malformed", error)
        elif isinstance(result, Rejected):
            self._log_reject(topic, result.reason, result.detail)

    def _history_row(self, result: Accepted, received_us: int) -> HistoryRow:
        """The remote member's row (`MemberTables.history_row`), sampled when it was sent,
        or when we received it if its clock is ahead of ours."""
        env = result.envelope
        sampled_at = min(env.sent_us, received_us)
        return self.tables.history_row(env, result.stats, sampled_at, local=False)

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
