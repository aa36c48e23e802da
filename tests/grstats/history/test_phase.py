"""A step of the history writer's thread: fault, capped backoff, logged once, recovery."""

from __future__ import annotations

from structlog.testing import capture_logs

from grstats.history.phase import Phase
from grstats.history.stats import Counters, RateLimitedLog
from tests.grstats.history.rows import Recorder


def _failing() -> None:
    raise OSError("ENOSPC")


def test_failures_back_off_doubling_to_the_cap_and_a_success_clears_the_fault() -> None:
    counters = Counters()
    out = Recorder()
    phase = Phase(
        "wal",
        "history.write_failed",
        first_s=1.0,
        max_s=3.0,
        counters=counters,
        limiter=RateLimitedLog(out, 60.0, clock=lambda: 0.0),
        directory="h",
    )
    delays = []
    for _ in range(4):
        assert isinstance(phase.attempt(_failing, lambda: 7), OSError)
        delays.append(phase.delay_s)
    assert delays == [1.0, 2.0, 3.0, 3.0]
    fault = phase.fault
    assert fault == "ENOSPC (7 rows buffered)"
    assert counters.errors == 4
    assert out.lines == [  # once, then held back
        ("history.write_failed", {"suppressed": 0, "error": "ENOSPC", "directory": "h"})
    ]
    with capture_logs() as events:
        assert phase.attempt(lambda: None, lambda: 0) is None
    assert (phase.fault, phase.delay_s, phase.retry_at) == (None, 0.0, 0.0)
    assert [(e["event"], e["phase"], e["suppressed"]) for e in events] == [
        ("history.recovered", "wal", 3)
    ]
