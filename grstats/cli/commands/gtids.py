"""`grstats gtids`: each member's GTID state, its errant and missing GTIDs, how it would rejoin.

Strategy: like the other table commands (`grstats.cli.commands.tables`): the
grstats_member_gtids table from the local daemon's API or the broker
(`--bus`), as a table, `--vertical`, json or csv. `--explain` says, per
member (host:port), what is errant and since when, what it lacks, whether it
could rejoin by incremental recovery (and from which donors) or needs clone --
and what an operator can do (the text: `grstats.core.explain`, shared with
the live page).

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero -- never a traceback.
"""

from __future__ import annotations

import click

from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core.explain import gtids_text
from grstats.core.labels import member_labels
from grstats.core.snapshot import MEMBER_GTIDS_TABLE, MEMBERS_TABLE

__all__ = ["gtids_command"]


@click.command(
    name="gtids",
    help="Show grstats_member_gtids for every member: @@gtid_executed, @@gtid_purged, "
    "errant transactions (executed there and on no other ONLINE member beyond the grace "
    "window), missing ones, and whether it could rejoin by INCREMENTAL recovery (from "
    "which donors) or needs CLONE.\n\n"
    "\b\nExamples:\n"
    "  grstats gtids --vertical                # one member per block\n"
    "  grstats gtids --explain                 # what is errant, since when, what to do\n"
    "  grstats gtids --bus 127.0.0.1:1883 --format json",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@click.option(
    "--explain",
    "explain_",
    is_flag=True,
    help="Per member: errant GTIDs and since when, the SQL to inject them as empty "
    "transactions or how to rebuild it, missing GTIDs and the recovery method.",
)
@wide_option
def gtids_command(
    *, reader: TableReader, fmt: str, vertical: bool, explain_: bool, wide: bool
) -> None:
    if explain_:
        both = reader.read([MEMBER_GTIDS_TABLE, MEMBERS_TABLE])
        labels = member_labels(both[MEMBERS_TABLE])
        click.echo(gtids_text(both[MEMBER_GTIDS_TABLE], labels), nl=False)
        return
    rows = reader.read([MEMBER_GTIDS_TABLE])[MEMBER_GTIDS_TABLE]
    show_table(reader, MEMBER_GTIDS_TABLE, fmt=fmt, vertical=vertical, wide=wide, rows=rows)
