"""How the daemon is asked to stop: signals set one event, a second SIGINT exits at once.

Strategy (uvicorn's server.py): SIGTERM and SIGINT never interrupt a phase;
they only set `event`, which the serve phase waits on before it drains. A
user who presses Ctrl-C twice does not want to wait for the drain: the
second SIGINT ends the process at once (status 130, as a shell reports it).
"""

from __future__ import annotations

import asyncio
import os
import signal

import structlog

log = structlog.get_logger("grstats.daemon")


class StopRequest:
    """The daemon's stop event and the signals that set it."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self._sigints = 0

    def request(self, signum: int | None = None) -> None:
        """Ask the daemon to drain and stop; a second SIGINT exits immediately."""
        if signum == signal.SIGINT:
            self._sigints += 1
            if self._sigints > 1:
                log.warning("daemon.forced_exit")
                os._exit(130)
        log.info("daemon.stopping", signal=signal.Signals(signum).name if signum else None)
        self.event.set()

    def install(self) -> None:
        """Route SIGTERM/SIGINT to `request` (the running loop's own handlers)."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request, signum)
