"""`grstats collect`: the collector — every member of every group on the bus, no publishing."""

from __future__ import annotations

import click

from grstats.config import DEFAULT_CONFIG_PATH
from grstats.daemon import run_process


@click.command("collect")
@click.option(
    "--config",
    "config_path",
    default=str(DEFAULT_CONFIG_PATH),
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The grstats.toml to read [bus], [api], [history] and [publish] from.",
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
    """Collect every member of every group seen on the bus (history scope "all").

    \b
    Subscribes to <prefix>/+/+/stats|status|gtids, publishes nothing.
    Example:
      grstats collect --config /etc/grstats/collector.toml
    """
    raise SystemExit(
        run_process(config_path, collector=True, log_format=log_format, log_level=log_level)
    )
