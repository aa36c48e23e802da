"""`grstats run`: the member daemon.

A configuration mistake prints one line (file, key, problem) and exits 2;
no traceback reaches the user for it.
"""

from __future__ import annotations

import click

from grstats.cli.commands._common import daemon_options
from grstats.daemon.process import run_process


@click.command("run")
@daemon_options("The grstats.toml to run with.")
def command(config_path: str, log_format: str | None, log_level: str | None) -> None:
    """Run the member daemon: publish the local member's stats, keep every member's.

    \b
    Example:
      grstats run --config /etc/grstats/grstats.toml
    """
    raise SystemExit(
        run_process(config_path, collector=False, log_format=log_format, log_level=log_level)
    )
