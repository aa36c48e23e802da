"""How the daemon is asked to stop (grstats.daemon.stopping), signals sent for real.

The documented rule (uvicorn's): SIGTERM or a first SIGINT only set the stop
event and the process goes on to drain; a second SIGINT ends it at once with
status 130.
"""

from __future__ import annotations

import signal
import subprocess
import sys

_CHILD = """
import asyncio, os, signal, sys
from grstats.daemon.stopping import StopRequest

async def main() -> None:
    stop = StopRequest()
    stop.install()
    for signum in map(int, sys.argv[1:]):
        os.kill(os.getpid(), signum)
        await asyncio.wait_for(stop.event.wait(), 10)
        print("set", flush=True)
    print("drained", flush=True)

asyncio.run(main())
"""


def _run(*signals: int) -> tuple[int, list[str]]:
    """The child's exit status and its progress lines (its log lines left out)."""
    argv = [sys.executable, "-c", _CHILD, *(str(int(s)) for s in signals)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, [s for s in result.stdout.splitlines() if s in ("set", "drained")]


def test_sigterm_or_one_sigint_sets_the_stop_event_and_the_daemon_drains() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        assert _run(signum) == (0, ["set", "drained"])


def test_a_second_sigint_exits_at_once_with_status_130() -> None:
    assert _run(signal.SIGINT, signal.SIGINT) == (130, ["set"])
