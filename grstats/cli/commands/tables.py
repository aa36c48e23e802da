"""`grstats stats|members|status|lag|flow|table`: the tables, as the mysql client shows them.

Strategy: each command reads one table, either from the local daemon's HTTP
API (default) or straight from the broker's retained topics (`--bus`), and
prints it with `grstats.cli.render`. The options and the choice of reader are
shared with `grstats watch` through `grstats.cli.readers`.

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero (1: could not read; 2: bad arguments or config) — never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence

import click

from grstats.cli import narrow, render
from grstats.cli.errors import BadArgument
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns
from grstats.core.labels import member_labels
from grstats.core.snapshot import (
    FLOW_CONTROL_TABLE,
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
)

__all__ = [
    "flow_command",
    "lag_command",
    "members_command",
    "show_table",
    "stats_command",
    "status_command",
    "table_command",
]


def wide_option(func: Callable[..., None]) -> Callable[..., None]:
    """`--wide`: every column under MySQL's names instead of the view that fits the terminal."""
    return click.option(
        "--wide",
        is_flag=True,
        help="Every column under MySQL's names, members by UUID (default: what fits the "
        "terminal's width -- COLUMNS, else 80 -- members as host:port).",
    )(func)


def show_table(
    reader: TableReader,
    table: str,
    *,
    fmt: str,
    vertical: bool,
    wide: bool,
    rows: Sequence[Mapping[str, object]] | None = None,
) -> None:
    """Print one declared table as the table commands do (the one CLI path of a table).

    Args:
        reader: where the rows come from (daemon API or broker).
        table: a declared table's name.
        fmt, vertical, wide: the output options.
        rows: the rows when the caller has them (`flow --bus`); read otherwise.
    """
    if fmt == "table" and not vertical and not wide:
        wanted = [table] if rows is None else []
        both = reader.read(list(dict.fromkeys([*wanted, MEMBERS_TABLE])))
        labels = member_labels(both[MEMBERS_TABLE])
        shown = both[table] if rows is None else rows
        click.echo(narrow.narrow_table(table, shown, labels), nl=False)
        return
    if rows is None:
        rows = reader.read([table])[table]
    if vertical and fmt == "table":
        fmt = "vertical"
    click.echo(render.render(fmt, rows, columns.table(table).names), nl=False)


def _make_command(name: str, table: str, summary: str, example: str) -> click.Command:
    @click.command(
        name=name,
        help=f"{summary}\n\n\b\nExamples:\n{example}",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @read_options
    @output_options
    @wide_option
    def command(*, reader: TableReader, fmt: str, vertical: bool, wide: bool) -> None:
        show_table(reader, table, fmt=fmt, vertical=vertical, wide=wide)

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
lag_command = _make_command(
    "lag",
    MEMBER_LAG_TABLE,
    "Show replication_group_member_lag: per member and channel, the last queued, "
    "processed and applied transactions with their timestamps (UTC), the one being "
    "applied, and the lags: REPLICATION_LAG as MySQL Shell's cluster.status() "
    "computes it, queue and apply lag, apply time, and each member's clock offset.",
    "  grstats lag --vertical                  # one member and channel per block\n"
    "  grstats lag --format json | jq '.[] | {MEMBER_ID, REPLICATION_LAG}'\n"
    "  grstats lag --bus 127.0.0.1:1883        # straight from the broker, no daemon",
)
FLOW_PERIODS = 5  # `flow --bus` listens this many flow-control periods by default


@click.command(
    name="flow",
    help="Show grstats_flow_control: this daemon's replay of MySQL's QUOTA flow control "
    "over every member's stats — which member holds the group back (BOTTLENECK, "
    "EXCESS_OVER_THRESHOLD, since when), the quota the group computes (0 = unlimited), "
    "throttled seconds, and each member's applier catch-up ETA and failover readiness; "
    "the local server's own Gr_flow_control_throttle_* figures where it has them."
    "\n\nWith --bus there is no daemon: the command listens to the broker for --seconds "
    "and replays flow control itself over the stats it hears, with the [flow_control] "
    "thresholds of --config (MySQL's defaults otherwise; they must be the group's). "
    "The server's own figures are not on the bus (SERVER_* NULL)."
    "\n\n\b\nExamples:\n"
    "  grstats flow                            # who is slowing the group down\n"
    "  grstats flow --format json | jq '.[] | select(.BOTTLENECK != \"\")'\n"
    "  grstats flow --bus 127.0.0.1:1883 --seconds 10 --config /etc/grstats/grstats.toml",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@wide_option
@click.option(
    "--seconds",
    type=click.FloatRange(min=0.1, max=3600),
    default=None,
    help=f"With --bus: how long to listen [default: {FLOW_PERIODS} flow-control periods].",
)
def flow_command(
    *, reader: TableReader, fmt: str, vertical: bool, wide: bool, seconds: float | None
) -> None:
    if reader.bus is None:
        if seconds is not None:
            raise BadArgument("--seconds: only with --bus HOST:PORT")
        rows = reader.read([FLOW_CONTROL_TABLE])[FLOW_CONTROL_TABLE]
    else:
        if seconds is None:
            seconds = float(FLOW_PERIODS * reader.flow_control.period)
        tty = sys.stderr.isatty()

        def progress(line: str) -> None:
            click.echo(("\r" if tty else "") + line, err=True, nl=not tty)

        rows = reader.replay_flow(seconds, progress)
        if tty:
            click.echo("", err=True)
    show_table(reader, FLOW_CONTROL_TABLE, fmt=fmt, vertical=vertical, wide=wide, rows=rows)


@click.command(
    name="table",
    help="Show any table the daemon declares, by name, as the table commands show theirs "
    "(`grstats table` alone lists the names)."
    "\n\n\b\nExamples:\n"
    "  grstats table                           # the table names\n"
    "  grstats table grstats_member_commit_path --vertical\n"
    "  grstats table replication_group_members --bus 127.0.0.1:1883",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("name", required=False)
@read_options
@output_options
@wide_option
def table_command(
    *, name: str | None, reader: TableReader, fmt: str, vertical: bool, wide: bool
) -> None:
    names = columns.table_names()
    if name is None:
        click.echo("\n".join(names))
        return
    if name not in names:
        raise BadArgument(f"{name}: not a table (one of: {', '.join(names)})")
    show_table(reader, name, fmt=fmt, vertical=vertical, wide=wide)
