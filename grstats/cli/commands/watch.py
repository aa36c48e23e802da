"""`grstats watch`: the member-stats table, refreshed live, with rates per second.

Strategy: every `--interval` seconds read the four tables it joins (daemon API, or the
broker with `--bus`), build the view (`grstats.cli.watchview`: rates since the
previous refresh, changed cells) and show it: on a terminal redrawn in place
with rich's `Live`; off a terminal each refresh is printed as a plain
mysql-client table, so logs stay readable.

Invariants: Ctrl-C ends the loop and exits 0; `--count` and `--duration` bound
a non-interactive run; a read failure after the first successful one is shown
in the title and retried, the first one exits 1.
"""

from __future__ import annotations

import time

import click
from rich.console import Console
from rich.live import Live

from grstats.cli.commands.tables import wide_option
from grstats.cli.errors import UserError
from grstats.cli.readers import TableReader, read_options
from grstats.cli.watchview import ViewState, build_view, live_table, plain_table, title_line
from grstats.core.snapshot import (
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
)

__all__ = ["command"]


@click.command(
    name="watch",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@click.option(
    "--interval",
    type=click.FloatRange(min=0.2),
    default=2.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many refreshes.")
@click.option("--duration", type=click.FloatRange(min=0), help="Stop after this many seconds.")
@wide_option
def command(
    *,
    reader: TableReader,
    interval: float,
    count: int | None,
    duration: float | None,
    wide: bool,
) -> None:
    """Watch replication_group_member_stats live, with rates per second.

    Checked/s, conflicts/s and applied/s are computed since the previous
    refresh; changed cells are highlighted and UNREACHABLE members shown in
    red. By default what fits the terminal (members as host:port, short
    headers); --wide shows every column and the member UUIDs. Ctrl-C quits.

    \b
    Examples:
      grstats watch                          # the local daemon, every 2 s
      grstats watch --interval 1 --api http://10.0.0.5:8437
      grstats watch --bus 127.0.0.1:1883     # straight from the broker
      grstats watch --count 3 --interval 1   # three refreshes, then exit
      grstats watch --wide                   # every column, member UUIDs
    """
    console = Console(highlight=False)
    names = [MEMBER_STATS_TABLE, MEMBERS_TABLE, MEMBER_STATUS_TABLE, MEMBER_LAG_TABLE]
    started = time.monotonic()
    deadline = started + duration if duration is not None else None
    state: ViewState | None = None
    refreshes = 0
    live: Live | None = None
    try:
        while True:
            error: str | None = None
            try:
                tables = reader.read(names)
            except UserError as exc:
                if state is None:
                    raise
                error, tables = exc.message, {}
            if not error:
                rows, changed, state = build_view(tables, time.monotonic(), state)
            else:
                rows, changed = [dict(r) for r in (state.shown.values() if state else ())], set()
            title = title_line(reader.where, interval, error)
            if console.is_terminal:
                view = live_table(rows, changed, title, console.width, wide=wide)
                if live is None:
                    live = Live(view, console=console, auto_refresh=False, transient=False)
                    live.start()
                else:
                    live.update(view, refresh=True)
            else:
                click.echo(plain_table(rows, title, wide=wide))
            refreshes += 1
            if count is not None and refreshes >= count:
                break
            wake = time.monotonic() + interval
            if deadline is not None and wake > deadline:
                time.sleep(max(0.0, deadline - time.monotonic()))
                break
            time.sleep(max(0.0, wake - time.monotonic()))
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.stop()
