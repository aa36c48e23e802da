"""One step of the history writer's thread, run with a fault state and a backoff.

Strategy: a failing disk is a state, not a crash.  The writer thread runs
each of its steps (appending to the WAL, writing segments) through a
`Phase`: an exception becomes the phase's fault (read by /healthz from any
thread), moves the error counter, is logged at most once per interval
(`RateLimitedLog`), and pushes the next attempt back by a capped exponential
backoff.  The first success after a fault logs `history.recovered` with the
number of lines held back, and clears it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from grstats.history.stats import Counters, RateLimitedLog

__all__ = ["Phase"]

log = structlog.get_logger("grstats.history")


class Phase:
    """The fault and the backoff of one step of the writer thread.

    Args:
        name: the step ("wal" or "segments"), in /healthz and logs.
        event: the log event of its failures.
        first_s: the first delay after a failure (doubled up to `max_s`).
        max_s: the cap of the delay.
        counters: the writer's counters (a failure is an error).
        limiter: rate-limited logging of the repeating failure.
        directory: the history root (in the log lines).
    """

    def __init__(
        self,
        name: str,
        event: str,
        *,
        first_s: float,
        max_s: float,
        counters: Counters,
        limiter: RateLimitedLog,
        directory: str,
    ) -> None:
        self.name = name
        self.event = event
        self._first_s, self._max_s = first_s, max_s
        self._counters = counters
        self._limiter = limiter
        self._directory = directory
        self.delay_s = 0.0
        self.retry_at = 0.0
        self.fault: str | None = None  # read by the writer's health() from any thread

    def attempt(self, step: Callable[[], None], waiting: Callable[[], int]) -> Exception | None:
        """Run `step`; a failure becomes this phase's fault (logged, counted, backed off).

        Args:
            step: the work (raises on failure).
            waiting: the rows buffered now (told in the fault).

        Returns:
            None when it succeeded, else what it raised (for the writer's waiters).
        """
        try:
            step()
        except Exception as exc:  # thread boundary: a state, handed to the waiters
            self.fail(exc, f" ({waiting()} rows buffered)")
            return exc
        if self.fault is not None:
            self.fault, self.delay_s, self.retry_at = None, 0.0, 0.0
            suppressed = self._limiter.reset(self.event)
            log.info("history.recovered", phase=self.name, suppressed=suppressed)
        return None

    def fail(self, exc: BaseException, detail: str = "") -> None:
        """Note a failure of this step: fault, error counted, logged, retry pushed back.

        Args:
            exc: what the step raised.
            detail: appended to the fault text.
        """
        self._counters.error()
        self.fault = f"{exc}{detail}"
        self.delay_s = min(max(2 * self.delay_s, self._first_s), self._max_s)
        self.retry_at = time.monotonic() + self.delay_s
        self._limiter.emit("error", self.event, error=str(exc), directory=self._directory)
