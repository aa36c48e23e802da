"""`grstats run`: the member daemon.

A configuration mistake prints one line (file, key, problem) and exits 2;
no traceback reaches the user for it.
"""

from __future__ import annotations

import click

from grstats.config import DEFAULT_CONFIG_PATH
from grstats.daemon import run_process


@click.command("run")
@click.option(
    "--config",
    "config_path",
    default=str(DEFAULT_CONFIG_PATH),
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The grstats.toml to run with.",
)
@click.option(
    "--log-format",
    type=click.Choice(["auto", "json", "console"]),
    default=None,
    help="Override [log] format (auto: console on a terminal, JSON lines otherwise).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default=None,
    help="Override [log] level.",
)
def command(config_path: str, log_format: str | None, log_level: str | None) -> None:
    """Run the member daemon: publish the local member's stats, keep every member's.

    \b
    Example:
      grstats run --config /etc/grstats/grstats.toml
    """
    raise SystemExit(
        run_process(config_path, collector=False, log_format=log_format, log_level=log_level)
    )
