"""`grstats init`: this node's config, from what the local MySQL says about itself.

Reads @@server_uuid, the group name, MEMBER_HOST/PORT and the version from the
server (grstats.sources.mysql.preflight), asks only for what the server
cannot know (the broker and the credentials' sources; flags for scripts) and
prints or writes a commented TOML. Passwords are read from an environment
variable or a file, never from the command line, and never written into the
file: the file names the variable or file the daemon reads them from.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click

from grstats.cli.initconfig import NodeAnswers, render_member_config
from grstats.cli.shipped import SHIPPED, shipped_text
from grstats.config import LocalInputError, read_local_file
from grstats.sources.mysql.preflight import PreflightError, inspect_server
from grstats.sources.mysql.settings import MySQLSettings, parse_dsn

__all__ = ["command"]

_DEFAULT_DSN = "mysql://grstats@127.0.0.1:3306"
_DEFAULT_BUS = "127.0.0.1:8883"


def _secret(env: str | None, file: str | None, what: str) -> str | None:
    if env:
        if env not in os.environ:
            raise click.UsageError(f"{what}: environment variable {env} is not set")
        return os.environ[env]
    if file:
        try:  # bounded like the daemon's own read of it: a device or FIFO is refused
            return read_local_file(file, 64 << 10).decode("utf-8").splitlines()[0]
        except (LocalInputError, UnicodeDecodeError, IndexError) as exc:
            raise click.UsageError(f"{what}: cannot read {file}: {exc}") from None
    return None


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.UsageError(f"bad --bus {value!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def _print_shipped(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    click.echo(shipped_text(value), nl=False)
    ctx.exit(0)


@click.command("init")
@click.option(
    "--mysql",
    "dsn",
    default=_DEFAULT_DSN,
    show_default=True,
    metavar="DSN",
    help="The local server: mysql://USER@HOST:PORT or ?unix_socket=PATH.",
)
@click.option(
    "--mysql-password-env",
    metavar="VAR",
    help="Take the MySQL password from this environment variable "
    "(there is no --mysql-password: command lines are visible to every local user).",
)
@click.option(
    "--mysql-password-file",
    metavar="PATH",
    help="Take the MySQL password from the first line of this file.",
)
@click.option(
    "--bus",
    "bus",
    metavar="HOST:PORT",
    default=None,
    help=f"The MQTT broker [asked; without a terminal: {_DEFAULT_BUS}].",
)
@click.option(
    "--bus-tls/--bus-no-tls",
    default=True,
    show_default=True,
    help="TLS to the broker (the shipped Mosquitto config listens on TLS 8883 only).",
)
@click.option("--bus-ca-file", metavar="PATH", default=None, help="The broker's CA certificate.")
@click.option(
    "--bus-user",
    metavar="NAME",
    default=None,
    help="MQTT user [default: this server's UUID, as the shipped ACL expects].",
)
@click.option(
    "--bus-password-env",
    metavar="VAR",
    default=None,
    help="The daemon reads the MQTT password from this variable [default: GRSTATS_BUS_PASSWORD].",
)
@click.option(
    "--bus-password-file",
    metavar="PATH",
    default=None,
    help="... or from the first line of this file.",
)
@click.option(
    "--history-dir",
    default="/var/lib/grstats/history",
    show_default=True,
    help="[history] dir (empty: no history).",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the file here (mode 0640) instead of printing it.",
)
@click.option("--force", is_flag=True, help="Replace an existing --out file.")
@click.option("--no-input", is_flag=True, help="Never ask; take the defaults for what is missing.")
@click.option(
    "--print",
    "print_file",
    type=click.Choice(sorted(SHIPPED)),
    default=None,
    expose_value=False,
    is_eager=True,
    callback=_print_shipped,
    help="Print a file shipped with grstats (example config, systemd units, "
    "Mosquitto config and ACL, Prometheus rules, Grafana dashboard) and exit.",
)
def command(
    *,
    dsn: str, mysql_password_env: str | None, mysql_password_file: str | None,
    bus: str | None, bus_tls: bool, bus_ca_file: str | None, bus_user: str | None,
    bus_password_env: str | None, bus_password_file: str | None, history_dir: str,
    out: str | None, force: bool, no_input: bool,
) -> None:  # fmt: skip
    """Write this node's grstats.toml from what the local MySQL server says.

    \b
    Examples:
      GRSTATS_MYSQL_PASSWORD=... grstats init --mysql-password-env GRSTATS_MYSQL_PASSWORD \\
          --bus mqtt.example:8883 --bus-ca-file /etc/grstats/ca.crt --out /etc/grstats/grstats.toml
      grstats init --print grstats.service > /etc/systemd/system/grstats.service
      grstats init --print grstats.toml      # the example config: every key, commented
    """
    interactive = not no_input and sys.stdin.isatty()
    try:
        parse_dsn(dsn)
    except ValueError as exc:
        raise click.UsageError(f"--mysql: {exc}") from None
    password = _secret(mysql_password_env, mysql_password_file, "--mysql-password-env/-file")
    if password is None and interactive:
        password = click.prompt("MySQL password", hide_input=True, default="", err=True)
    settings = MySQLSettings(dsn=dsn, password=password or "", connect_timeout=5.0)
    try:
        facts, _tables = asyncio.run(inspect_server(settings))
    except PreflightError as exc:
        click.echo(f"grstats init: cannot read the local server: {exc}", err=True)
        raise SystemExit(1) from None
    if facts.group_name is None:
        click.echo(
            "grstats init: Group Replication is not installed on this server "
            "(no @@group_replication_group_name); [member] group is left empty",
            err=True,
        )
    elif not facts.group_name:
        click.echo("grstats init: Group Replication has no group name yet", err=True)
    if bus is None:
        bus = (
            click.prompt("MQTT broker HOST:PORT", default=_DEFAULT_BUS, err=True)
            if (interactive)
            else _DEFAULT_BUS
        )
    bus_host, bus_port = _host_port(bus)
    if bus_tls and bus_ca_file is None and interactive:
        bus_ca_file = (
            click.prompt("Broker CA file (empty: the system CAs)", default="", err=True) or None
        )
    answers = NodeAnswers(
        mysql_dsn=dsn,
        mysql_password_env=mysql_password_env,
        mysql_password_file=mysql_password_file,
        bus_host=bus_host,
        bus_port=bus_port,
        bus_tls=bus_tls,
        bus_ca_file=bus_ca_file,
        bus_username=bus_user or facts.server_uuid,
        bus_password_env=bus_password_env,
        bus_password_file=bus_password_file,
        history_dir=history_dir,
    )
    _user, host, port, params = parse_dsn(dsn)
    text = render_member_config(facts, answers, params.get("unix_socket") or f"{host}:{port}")
    if out is None:
        click.echo(text, nl=False)
        return
    path = Path(out)
    if path.exists() and not force:
        click.echo(f"grstats init: {out} exists (--force to replace it)", err=True)
        raise SystemExit(1)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        click.echo(f"grstats init: cannot write {out}: {exc.strerror}", err=True)
        raise SystemExit(1) from None
    click.echo(f"grstats init: wrote {out}; check it with: grstats check --config {out}", err=True)
