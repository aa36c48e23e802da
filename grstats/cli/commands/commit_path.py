"""`grstats commit-path`: where every member's commit time went, and what to check.

Strategy: like the other table commands (`grstats.cli.commands.tables`):
grstats_member_commit_path from the local daemon's API or the broker
(`--bus`), as a table, `--vertical`, json or csv. `--explain` names each
member's dominant cost and what an operator would check for it (the text:
`grstats.core.explain`, shared with the live page).

Invariants: reads only the rows; a failure the user can cause prints one line
on stderr and exits non-zero -- never a traceback.
"""

from __future__ import annotations

import json

import click

from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core.explain import commit_path_text, commit_path_verdicts
from grstats.core.labels import member_labels
from grstats.core.snapshot import COMMIT_PATH_TABLE, MEMBERS_TABLE

__all__ = ["commit_path_command"]


@click.command(
    name="commit-path",
    help="Show grstats_member_commit_path: where every member's commit time went over its "
    "last period (consensus rounds, message round trips, certification GC, consistency "
    "waits, flow control): per second, mean seconds, share and running totals, from "
    "MySQL's Gr_* status variables (8.1.0+).\n\n"
    "\b\nExamples:\n"
    "  grstats commit-path --vertical\n"
    "  grstats commit-path --explain      # each member's dominant cost and what to check\n"
    "  grstats commit-path --bus 127.0.0.1:1883 --format json",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@click.option(
    "--explain",
    "explain_",
    is_flag=True,
    help="Name each member's dominant cost and what to check for it.",
)
@wide_option
def commit_path_command(
    *, reader: TableReader, fmt: str, vertical: bool, explain_: bool, wide: bool
) -> None:
    if explain_:
        both = reader.read([COMMIT_PATH_TABLE, MEMBERS_TABLE])
        labels = member_labels(both[MEMBERS_TABLE])
        rows = both[COMMIT_PATH_TABLE]
        if fmt == "json":
            click.echo(json.dumps(commit_path_verdicts(rows, labels), indent=2))
        else:
            click.echo(commit_path_text(rows, labels), nl=False)
        return
    rows = reader.read([COMMIT_PATH_TABLE])[COMMIT_PATH_TABLE]
    show_table(reader, COMMIT_PATH_TABLE, fmt=fmt, vertical=vertical, wide=wide, rows=rows)
