"""Options shared by the daemon commands (`grstats run`, `grstats collect`).

Both commands take the same --config / --log-format / --log-level options and
hand them to `grstats.daemon.lifecycle.run_process`; one decorator declares them so the
choices and defaults cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from grstats.config import DEFAULT_CONFIG_PATH

F = TypeVar("F", bound=Callable[..., object])


def daemon_options(config_help: str) -> Callable[[F], F]:
    """Add the --config, --log-format and --log-level options to a command.

    Args:
        config_help: the help text for --config (what the file is read for).

    Returns:
        A decorator adding the three options; the command receives
        ``config_path``, ``log_format`` and ``log_level``.
    """

    def decorate(func: F) -> F:
        func = click.option(
            "--log-level",
            type=click.Choice(["debug", "info", "warning", "error"]),
            default=None,
            help="Override [log] level.",
        )(func)
        func = click.option(
            "--log-format",
            type=click.Choice(["auto", "json", "console"]),
            default=None,
            help="Override [log] format (auto: console on a terminal, JSON lines otherwise).",
        )(func)
        return click.option(
            "--config",
            "config_path",
            default=str(DEFAULT_CONFIG_PATH),
            show_default=True,
            type=click.Path(dir_okay=False),
            help=config_help,
        )(func)

    return decorate
