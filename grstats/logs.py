"""structlog configuration, done once by a command's main, never at import.

JSON lines when stderr is not a terminal (systemd, tests, pipes), the console
renderer on a terminal; `format` forces one or the other. The standard
library's logging (aiomqtt/paho) goes to the same stream, rendered the same
way, at WARNING and above.
"""

from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
_LEVELS["error"] = logging.ERROR


def configure_logging(level: str = "info", fmt: str = "auto") -> None:
    """Configure structlog and stdlib logging for the process.

    Args:
        level: "debug", "info", "warning" or "error".
        fmt: "auto" (console on a terminal, else JSON), "json" or "console".
    """
    numeric = _LEVELS.get(level, logging.INFO)
    console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    # Third-party stdlib records (aiomqtt/paho) get the same renderer: one format per stream.
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=renderer,
            foreign_pre_chain=[
                structlog.stdlib.add_logger_name,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(numeric, logging.WARNING))
