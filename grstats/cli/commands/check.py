"""`grstats check --config FILE`: the preflight to run before `systemctl enable grstats`."""

from __future__ import annotations

import json

import click

from grstats.cli.preflight import FAIL, run_checks
from grstats.cli.render import visible
from grstats.config import DEFAULT_CONFIG_PATH

__all__ = ["command"]


@click.command("check")
@click.option(
    "--config",
    "config_path",
    default=str(DEFAULT_CONFIG_PATH),
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The grstats.toml to check.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="One line per check, or a JSON list.",
)
def command(config_path: str, fmt: str) -> None:  # fmt: skip
    """Check a node before starting the daemon: one line per check, OK / WARN / FAIL.

    \b
    Checks: the config is valid; MySQL answers and the account may SELECT every
    performance_schema table the source reads (each missing grant named); the
    broker accepts our login and our own test message comes back (the ACL);
    our clock against the other members'; the history directory is writable
    with free space; the [api] and [sql] ports are free.
    Exit status 0 when nothing FAILs, else 1.

    \b
    Example:
      grstats check --config /etc/grstats/grstats.toml
    """
    checks = run_checks(config_path)
    if fmt == "json":
        rows = [{"check": c.name, "status": c.status, "detail": c.detail} for c in checks]
        click.echo(json.dumps(rows, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            click.echo(f"{c.status:<4}  {c.name:<{width}}  {visible(c.detail)}")
    raise SystemExit(1 if any(c.status == FAIL for c in checks) else 0)
