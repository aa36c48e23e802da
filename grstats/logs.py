"""Logging through one sink, configured once by a process's main, never at import.

Strategy: structlog events and the standard library's records (aiomqtt, paho,
asyncmy log through `logging`) reach the same single `logging.StreamHandler`
on stderr, whose `structlog.stdlib.ProcessorFormatter` renders both the same
way: JSON lines when the stream is not a terminal (systemd, tests, pipes), the
console renderer on a terminal; `format` forces one or the other. One handler
writes each record with one call under its lock, so lines never interleave.

Levels: structlog events (they all go through the stdlib logger
"grstats.events") at the configured level; every other stdlib record (paho's
debug chatter included) at WARNING and above, or the configured level when it
is higher.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

__all__ = ["configure_logging"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
# The stdlib logger every structlog event goes through.
_EVENTS_LOGGER = "grstats.events"


def _events_logger(*args: object) -> logging.Logger:
    return logging.getLogger(_EVENTS_LOGGER)


def configure_logging(
    level: str = "info", fmt: str = "auto", *, stream: TextIO | None = None
) -> None:
    """Configure structlog and stdlib logging for the process: one handler, one format.

    Args:
        level: "debug", "info", "warning" or "error".
        fmt: "auto" (console on a terminal, else JSON lines), "json" or "console".
        stream: where the lines go (default: sys.stderr at the time of the call).
    """
    out = stream if stream is not None else sys.stderr
    numeric = _LEVELS.get(level, logging.INFO)
    console = fmt == "console" or (fmt == "auto" and out.isatty())
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer()
    )
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            timestamper,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_events_logger,
        cache_logger_on_first_use=False,  # reconfigurable (tests, CLI); logging is rare
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            # records from the stdlib (third-party libraries) get the same fields first
            foreign_pre_chain=[
                structlog.stdlib.add_logger_name,
                structlog.processors.add_log_level,
                timestamper,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in root.handlers:
        old.close()
    root.handlers[:] = [handler]
    root.setLevel(max(numeric, logging.WARNING))
    events = logging.getLogger(_EVENTS_LOGGER)
    events.handlers.clear()
    events.propagate = True
    events.setLevel(numeric)
