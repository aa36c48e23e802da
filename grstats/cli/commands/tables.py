"""`grstats stats`, `grstats members`, `grstats status`: the tables, as the mysql client shows them.

Strategy: each command reads one table, either from the local daemon's HTTP
API (default) or straight from the broker's retained topics (`--bus`), and
prints it with `grstats.cli.render`. The options and the choice of reader are
shared with `grstats watch` through `read_options` and `TableReader`.

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero (1: could not read; 2: bad arguments or config) — never a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from grstats.cli import render
from grstats.cli.reader import (
    DEFAULT_API,
    ReadError,
    config_defaults,
    fetch_table,
    normalize_api_url,
)
from grstats.core.snapshot import (
    MEMBER_STATS_COLUMNS,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_COLUMNS,
    MEMBER_STATUS_TABLE,
    MEMBERS_COLUMNS,
    MEMBERS_TABLE,
    Row,
)

__all__ = [
    "COLUMNS",
    "BadArgument",
    "TableReader",
    "UserError",
    "members_command",
    "read_options",
    "stats_command",
    "status_command",
    "user_error",
]

COLUMNS: Mapping[str, Sequence[str]] = {
    MEMBER_STATS_TABLE: MEMBER_STATS_COLUMNS,
    MEMBERS_TABLE: MEMBERS_COLUMNS,
    MEMBER_STATUS_TABLE: MEMBER_STATUS_COLUMNS,
}

DEFAULT_PREFIX = "grstats/v1"
# The parameters of `read_options`, handed to TableReader as they are.
_READ_OPTION_NAMES = ("api", "config", "bus", "prefix", "group", "timeout")
DEFAULT_BUS_PORT = 1883


class UserError(click.ClickException):
    """Could not read: one line on stderr (`Error: ...`), exit status 1."""

    exit_code = 1


class BadArgument(UserError):
    """A mistake in the arguments or the config file: one line, exit status 2."""

    exit_code = 2


def user_error(message: str, exit_code: int = 1) -> UserError:
    """The exception for a user-caused failure with this exit status (1 or 2)."""
    return BadArgument(message) if exit_code == 2 else UserError(message)


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

    Raises:
        UserError: bad URL, bad --bus, or a bad config file (exit status 2).
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
    ) -> None:
        try:
            defaults = config_defaults(config)
            self.api = normalize_api_url(api or defaults.api or DEFAULT_API)
        except ReadError as exc:
            raise user_error(str(exc), exc.exit_code) from None
        self.bus = _parse_bus(bus) if bus else None
        self.prefix = (prefix or defaults.prefix or DEFAULT_PREFIX).rstrip("/")
        self.group = group
        self.timeout = timeout

    @property
    def where(self) -> str:
        """Where the rows come from, for titles."""
        if self.bus is not None:
            return f"mqtt://{self.bus[0]}:{self.bus[1]}/{self.prefix}"
        return self.api

    def read(self, tables: Sequence[str]) -> dict[str, list[Row]]:
        """Read the named tables (one consistent broker read, or one GET each).

        Args:
            tables: names from grstats.core.snapshot.TABLE_NAMES.

        Returns:
            Rows per table name.

        Raises:
            UserError: the daemon or broker could not be read (exit status 1).
        """
        try:
            if self.bus is not None:
                # Imported here: aiomqtt is loaded only with --bus.
                from grstats.cli.busread import read_snapshot  # noqa: PLC0415
                from grstats.logs import configure_logging  # noqa: PLC0415

                # The bus logs each failed connect attempt; the CLI reports one line itself.
                configure_logging(level="error")

                snapshot = read_snapshot(
                    self.bus[0],
                    self.bus[1],
                    prefix=self.prefix,
                    group=self.group,
                    deadline_s=self.timeout,
                )
                return {name: list(snapshot.table(name)) for name in tables}
            out = {name: fetch_table(self.api, name, timeout=self.timeout) for name in tables}
            if self.group is not None:
                # Only grstats_member_status names the group; it selects the members.
                status = out.get(MEMBER_STATUS_TABLE)
                if status is None:
                    status = fetch_table(self.api, MEMBER_STATUS_TABLE, timeout=self.timeout)
                ids = {r.get("MEMBER_ID") for r in status if r.get("GROUP_NAME") == self.group}
                out = {
                    name: [r for r in rows if r.get("MEMBER_ID") in ids]
                    for name, rows in out.items()
                }
            return out
        except ReadError as exc:
            raise user_error(str(exc), exc.exit_code) from None


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
            help=f"The daemon's HTTP API [default: the config's [api] listen, else {DEFAULT_API}].",
        ),
        click.option(
            "--config",
            "config",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Daemon config to take [api] listen and [bus] prefix from "
            "[default: /etc/grstats/grstats.toml if present].",
        ),
        click.option(
            "--bus",
            metavar="HOST:PORT",
            help="Read the retained topics straight from this MQTT broker instead of a daemon.",
        ),
        click.option(
            "--prefix",
            metavar="PREFIX",
            help=f"Topic prefix with --bus [default: the config's, else {DEFAULT_PREFIX}].",
        ),
        click.option("--group", metavar="UUID", help="Only this group (default: every group)."),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=5.0,
            show_default=True,
            help="Seconds to wait for the daemon or the broker.",
        ),
    ]
    command: Callable[..., None] = with_reader
    for option in reversed(options):
        command = option(command)
    return command


def _make_command(name: str, table: str, summary: str, example: str) -> click.Command:
    @click.command(
        name=name,
        help=f"{summary}\n\n\b\nExamples:\n{example}",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @read_options
    @click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json", "csv"]),
        default="table",
        show_default=True,
        help="Output format.",
    )
    @click.option(
        "--vertical",
        "-E",
        "vertical",
        is_flag=True,
        help="One column per line, like the mysql client's \\G.",
    )
    def command(*, reader: TableReader, fmt: str, vertical: bool) -> None:
        rows = reader.read([table])[table]
        if vertical and fmt == "table":
            fmt = "vertical"
        click.echo(render.render(fmt, rows, COLUMNS[table]), nl=False)

    return command


stats_command = _make_command(
    "stats",
    MEMBER_STATS_TABLE,
    "Show replication_group_member_stats for every member of the group.",
    "  grstats stats                           # from the local daemon\n"
    "  grstats stats --vertical                # like the mysql client's \\G\n"
    "  grstats stats --format csv > stats.csv\n"
    "  grstats stats --bus mqtt.example:1883   # straight from the broker, no daemon",
)
members_command = _make_command(
    "members",
    MEMBERS_TABLE,
    "Show replication_group_members (state, role, version) for every member.",
    "  grstats members\n"
    "  grstats members --api http://10.0.0.5:8437 --format json\n"
    "  grstats members --bus 127.0.0.1:1883 --group aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
)
status_command = _make_command(
    "status",
    MEMBER_STATUS_TABLE,
    "Show grstats_member_status: last seen, seq, incarnation, accepted/rejected per member.",
    "  grstats status\n"
    "  grstats status --vertical\n"
    "  grstats status --config /etc/grstats/grstats.toml",
)
