"""`grstats collect`: the collector — every member of every group on the bus, no publishing."""

from __future__ import annotations

import click

from grstats.cli.commands._common import daemon_options
from grstats.daemon.process import run_process


@click.command("collect")
@daemon_options("The grstats.toml to read [bus], [api], [history] and [publish] from.")
def command(config_path: str, log_format: str | None, log_level: str | None) -> None:
    """Collect every member of every group seen on the bus (history scope "all").

    \b
    Subscribes to <prefix>/+/+/stats|status|gtids, publishes nothing.
    Example:
      grstats collect --config /etc/grstats/collector.toml
    """
    raise SystemExit(
        run_process(config_path, collector=True, log_format=log_format, log_level=log_level)
    )
