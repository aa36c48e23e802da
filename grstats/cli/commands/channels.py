"""`grstats channels`: every member's replication channels, and `--explain`: why one fails.

Strategy: `grstats_channels` (one row per member and channel: member
host:port, channel, the receiver's and the applier's SERVICE_STATE, the
newest open error number, its age and tries; core.channel_explain), read from
the local daemon's API or the broker (`--bus`), shown as every table command
shows its table (`tables.show_table`: the terminal's width, `--wide`, `-E`,
`--format`); `--explain` prints core.channel_explain's sentences over the six
WL#3656 tables and the error episodes, the live page's text too.

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero; every text from a row goes through `render.visible`.
"""

from __future__ import annotations

import time

import click

from grstats.cli import render
from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns as col
from grstats.core.channel_explain import explain_channels
from grstats.core.labels import member_labels

__all__ = ["channels_command"]

_READ = (
    col.MEMBERS.name,
    col.CONNECTION_CONFIGURATION.name,
    col.CONNECTION_STATUS.name,
    col.APPLIER_STATUS.name,
    col.CHANNEL_ERRORS.name,
)


@click.command(
    name="channels",
    help="Show every member's replication channels (group_replication_applier, "
    "group_replication_recovery while recovering, asynchronous channels): the receiver's "
    "(IO) and applier's (SQL) state, the last error number, its age and tries, from the "
    "six WL#3656 performance_schema tables of every member.\n\n"
    "\b\nExamples:\n"
    "  grstats channels                        # one line per member and channel\n"
    "  grstats channels --explain              # why a member is not ONLINE, what to check\n"
    "  grstats channels --format json",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@wide_option
@click.option(
    "--explain",
    "explain_",
    is_flag=True,
    help="One sentence per member that is not ONLINE or has a channel error: the source "
    "(host:port), MySQL's error number and text, since when, how many tries, what to check.",
)
def channels_command(
    *, reader: TableReader, fmt: str, vertical: bool, wide: bool, explain_: bool
) -> None:
    if not explain_:
        show_table(reader, col.CHANNELS_OVERVIEW.name, fmt=fmt, vertical=vertical, wide=wide)
        return
    tables = reader.read(list(_READ))
    labels = member_labels(tables[col.MEMBERS.name])
    lines = explain_channels(tables, labels, time.time_ns() // 1000)
    text = "\n".join(render.visible(line) for line in lines)
    click.echo(text if lines else "every member is ONLINE and no channel shows an error")
