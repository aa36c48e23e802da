"""Where the table commands read from: the daemon's API, or the broker with --bus.

Strategy: `read_options` declares the options every table-reading command
shares (`stats`, `members`, `status`, `watch`) and hands the command one
`TableReader` built from them. Defaults come from the daemon's config file
(`--config`, else /etc/grstats/grstats.toml when present) through
`grstats.config.load_client_settings` -- the same reader and checks the daemon
uses -- and the options override them.

Broker credentials and TLS take the same keys as the config's [bus] section
(`--bus-user` = username, `--bus-password-env` / `--bus-password-file`,
`--bus-tls`, `--bus-ca-file`, `--bus-cert-file`, `--bus-key-file`) and go
through the same validation. There is deliberately no `--bus-password`: a
password on the command line is visible to every local user (`ps`) and lands
in shell history; name an environment variable or a file instead.

Invariants: a mistake in the options or the config is one line and exit 2
(naming the option, or the file and key); a read that fails is one line and
exit 1.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from grstats.cli.apiread import api_url, fetch_table, normalize_api_url
from grstats.cli.errors import BadArgument, ReadError, user_error
from grstats.config import DEFAULT_CONFIG_PATH, BusSettings, ConfigError, load_client_settings
from grstats.core import columns as col
from grstats.core.snapshot import MEMBER_STATUS_TABLE, DaemonCounters, Row

__all__ = ["TableReader", "read_options"]

DEFAULT_BUS_PORT = 1883

# --bus-* option (its click parameter name) -> [bus] key it overrides
_BUS_FLAGS = {
    "bus_user": "username",
    "bus_password_env": "password_env",
    "bus_password_file": "password_file",
    "bus_tls": "tls",
    "bus_ca_file": "ca_file",
    "bus_cert_file": "cert_file",
    "bus_key_file": "key_file",
}
_FLAG_OF_KEY = {key: "--" + name.replace("_", "-") for name, key in _BUS_FLAGS.items()}
_FLAG_OF_KEY.update(host="--bus", port="--bus")
# The parameters of `read_options`, handed to TableReader as they are.
_READ_OPTION_NAMES = ("api", "config", "bus", "prefix", "group", "timeout", *_BUS_FLAGS)


def _parse_bus(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = value, str(DEFAULT_BUS_PORT)
    host = host.strip("[]")
    if not host:
        raise BadArgument(f"bad --bus {value!r}: expected HOST:PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise BadArgument(f"bad --bus {value!r}: port must be an integer 1-65535") from None
    if not 1 <= port <= 65535:
        raise BadArgument(f"bad --bus {value!r}: port must be an integer 1-65535")
    return host, port


class TableReader:
    """Reads tables from the daemon's API, or from the broker with --bus.

    Args:
        api: --api value or None (then the config's `[api] listen`, else the default).
        config: --config path or None (then /etc/grstats/grstats.toml if present).
        bus: --bus HOST:PORT or None.
        prefix: --prefix or None (then the config's `[bus] prefix`, else grstats/v1).
        group: --group or None (then every group on the broker).
        timeout: seconds for one read.
        **bus_flags: the --bus-* options (None: not given), see `_BUS_FLAGS`.

    Raises:
        BadArgument: bad URL, bad --bus or --bus-* option, or a bad config file
            (exit status 2).
    """

    def __init__(
        self,
        *,
        api: str | None,
        config: Path | None,
        bus: str | None,
        prefix: str | None,
        group: str | None,
        timeout: float,
        **bus_flags: Any,
    ) -> None:
        overrides = {_BUS_FLAGS[k]: v for k, v in bus_flags.items() if v is not None}
        if bus is None and overrides:
            given = ", ".join(sorted(_FLAG_OF_KEY[k] for k in overrides))
            raise BadArgument(f"{given}: only with --bus HOST:PORT")
        if bus is not None:
            overrides["host"], overrides["port"] = _parse_bus(bus)
        if config is None and DEFAULT_CONFIG_PATH.is_file():
            config = DEFAULT_CONFIG_PATH
        try:
            settings = load_client_settings(config, bus=bus is not None, bus_overrides=overrides)
        except ConfigError as exc:
            key = exc.key.removeprefix("bus.")
            # Name the option when it holds the value, or when there is no file at all.
            if exc.key.startswith("bus.") and (key in overrides or not exc.file):
                raise BadArgument(f"{_FLAG_OF_KEY[key]}: {exc.problem}") from None
            raise BadArgument(str(exc)) from None
        # With --bus the API is not used: a daemon config listening on port 0
        # (any free port) must still serve as the client's config.
        self.api = ""
        if bus is None or api is not None:
            try:
                self.api = normalize_api_url(api or api_url(settings.api))
            except ReadError as exc:
                raise user_error(str(exc), exc.exit_code) from None
        # Never the daemon's client id: the broker would disconnect the daemon.
        self.bus: BusSettings | None = (
            dataclasses.replace(settings.bus, client_id="") if bus is not None else None
        )
        self.prefix = (prefix or settings.bus.prefix).strip("/")
        self.group = group
        self.timeout = timeout
        self.flow_control = settings.flow_control

    @property
    def where(self) -> str:
        """Where the rows come from, for titles."""
        if self.bus is not None:
            scheme = "mqtts" if self.bus.tls else "mqtt"
            return f"{scheme}://{self.bus.host}:{self.bus.port}/{self.prefix}"
        return self.api

    def read(self, tables: Sequence[str]) -> dict[str, list[Row]]:
        """Read the named tables (one consistent broker read, or one GET each).

        Args:
            tables: declared table names (`columns.table_names()`).

        Returns:
            Rows per table name.

        Raises:
            UserError: the daemon or broker could not be read (exit status 1).
        """
        try:
            if self.bus is not None:
                # Imported here: aiomqtt is loaded only with --bus.
                from grstats.cli.busread import read_snapshot  # noqa: PLC0415

                snapshot = read_snapshot(
                    self.bus, prefix=self.prefix, group=self.group, deadline_s=self.timeout
                )
                _say_not_shown(snapshot.counters)
                return {name: list(snapshot.table(name)) for name in tables}
            out = {name: fetch_table(self.api, name, timeout=self.timeout) for name in tables}
            if self.group is not None:
                # Only grstats_member_status names the group; it selects the members.
                status = out.get(MEMBER_STATUS_TABLE)
                if status is None:
                    status = fetch_table(self.api, MEMBER_STATUS_TABLE, timeout=self.timeout)
                ids = {r.get(col.MEMBER_ID) for r in status if r.get(col.GROUP_NAME) == self.group}
                out = {
                    name: [r for r in rows if r.get(col.MEMBER_ID) in ids]
                    for name, rows in out.items()
                }
            return out
        except ReadError as exc:
            raise user_error(str(exc), exc.exit_code) from None

    def replay_flow(self, seconds: float, progress: Callable[[str], None] | None) -> list[Row]:
        """grstats_flow_control replayed over `seconds` of the broker's traffic (--bus only).

        Args:
            seconds: how long to listen.
            progress: called with a progress line after each flow-control step.

        Returns:
            The rows (SERVER_* NULL: the bus does not carry them).

        Raises:
            UserError: the broker could not be read (exit status 1).
        """
        assert self.bus is not None, "replay_flow needs --bus"
        # Imported here: aiomqtt is loaded only with --bus.
        from grstats.cli.busflow import replay_flow  # noqa: PLC0415

        fc = self.flow_control
        try:
            return replay_flow(
                self.bus,
                prefix=self.prefix,
                group=self.group,
                seconds=seconds,
                settings=fc.core(),
                catch_up_limit_s=fc.failover_catch_up_limit,
                deadline_s=self.timeout,
                progress=progress,
            )
        except ReadError as exc:
            raise user_error(str(exc), exc.exit_code) from None


def _say_not_shown(counters: DaemonCounters) -> None:
    """One line on stderr when messages read from the bus were refused (never silent):
    how many, of how many, by reason (a member cap, malformed or spoofed messages)."""
    refused = {reason: n for reason, n in sorted(counters.rejected.items()) if n}
    if not refused:
        return
    total = counters.envelopes_accepted + sum(refused.values())
    reasons = ", ".join(f"{reason} {n}" for reason, n in refused.items())
    click.echo(
        f"grstats: {sum(refused.values())} of {total} messages on the bus not shown "
        f"(refused: {reasons})",
        err=True,
    )


_FILE = click.Path(dir_okay=False)


def output_options(func: Callable[..., None]) -> Callable[..., None]:
    """`--format table|json|csv` (as `fmt`) and `--vertical/-E`, shared by the table commands.

    Args:
        func: the command function.

    Returns:
        The command function with both options attached.
    """
    func = click.option(
        "--vertical",
        "-E",
        "vertical",
        is_flag=True,
        help="One column per line, like the mysql client's \\G.",
    )(func)
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json", "csv"]),
        default="table",
        show_default=True,
        help="Output format.",
    )(func)


def read_options(func: Callable[..., None]) -> Callable[..., None]:
    """The options every table-reading command shares (--api, --config, --bus, ...).

    Args:
        func: the command function; it takes a keyword argument ``reader``, the
            `TableReader` built from these options, instead of the options themselves.

    Returns:
        The command function with the options attached.

    Raises:
        UserError: (from the command) bad --api, --bus or config file.
    """

    @functools.wraps(func)
    def with_reader(**kwargs: Any) -> None:
        reader = TableReader(**{name: kwargs.pop(name) for name in _READ_OPTION_NAMES})
        func(reader=reader, **kwargs)

    options = [
        click.option(
            "--api",
            metavar="URL",
            envvar="GRSTATS_API",
            help="The daemon's HTTP API [default: the config's [api] listen, "
            "else http://127.0.0.1:8437].",
        ),
        click.option(
            "--config",
            "config",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Daemon config to take [api] and [bus] settings from "
            f"[default: {DEFAULT_CONFIG_PATH} if present].",
        ),
        click.option(
            "--bus",
            metavar="HOST:PORT",
            help="Read the retained topics straight from this MQTT broker instead of a daemon "
            "(user, password and TLS: the config's [bus], or the --bus-* options).",
        ),
        click.option(
            "--prefix",
            metavar="PREFIX",
            help="Topic prefix with --bus [default: the config's, else grstats/v1].",
        ),
        click.option("--group", metavar="UUID", help="Only this group (default: every group)."),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=5.0,
            show_default=True,
            help="Seconds to wait for the daemon or the broker.",
        ),
        click.option("--bus-user", metavar="NAME", help="MQTT user name ([bus] username)."),
        click.option(
            "--bus-password-env",
            metavar="VAR",
            help="Take the MQTT password from this environment variable (there is no "
            "--bus-password: command lines are visible to every local user).",
        ),
        click.option(
            "--bus-password-file",
            metavar="PATH",
            type=_FILE,
            help="Take the MQTT password from the first line of this file.",
        ),
        click.option(
            "--bus-tls/--bus-no-tls",
            default=None,
            help="Connect to the broker with TLS [default: the config's [bus] tls, else off].",
        ),
        click.option(
            "--bus-ca-file", metavar="PATH", type=_FILE, help="CA bundle to verify the broker."
        ),
        click.option(
            "--bus-cert-file", metavar="PATH", type=_FILE, help="Client certificate (TLS)."
        ),
        click.option("--bus-key-file", metavar="PATH", type=_FILE, help="Client key (TLS)."),
    ]
    command: Callable[..., None] = with_reader
    for option in reversed(options):
        command = option(command)
    return command
