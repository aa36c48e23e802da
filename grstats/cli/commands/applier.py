"""`grstats applier`: WL#15620's applier metrics of every member, and why an applier is slow.

Strategy: like the other table commands (`grstats.cli.commands.tables`):
replication_applier_metrics by default, replication_applier_progress_by_worker
with `--workers`, from the local daemon's API or the broker (`--bus`), as a
table, `--vertical`, json or csv. `--explain` turns each member's wait
breakdown into a verdict with the shares behind it and what an operator
would change (the text: `grstats.core.explain`, shared with the live page).

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero -- never a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from grstats.cli import narrow
from grstats.cli.applierwindow import earlier_readings, parse_since
from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.errors import BadArgument
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns as col
from grstats.core.explain import applier_text, applier_verdicts
from grstats.core.labels import member_labels
from grstats.core.snapshot import APPLIER_METRICS_TABLE, APPLIER_WORKERS_TABLE, MEMBERS_TABLE

__all__ = ["applier_command", "reader_rows"]


@click.command(
    name="applier",
    help="Show replication_applier_metrics (WL#15620) for every member and channel: "
    "active time, transactions committed / ongoing / pending, sizes, events, and "
    "each wait's count and time (ns, as MySQL reports them).\n\n"
    "\b\nExamples:\n"
    "  grstats applier                         # what fits the terminal, members as host:port\n"
    "  grstats applier --wide                  # every column under MySQL's names\n"
    "  grstats applier --vertical              # one member and channel per block\n"
    "  grstats applier --workers               # replication_applier_progress_by_worker\n"
    "  grstats applier --explain               # why each member's applier is slow\n"
    "  grstats applier --explain --history /var/lib/grstats/history   # over the last hour\n"
    "  grstats applier --explain --history DIR --since 30m\n"
    "  grstats applier --bus 127.0.0.1:1883 --format csv",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@click.option("--workers", is_flag=True, help="Show replication_applier_progress_by_worker.")
@click.option(
    "--explain",
    "explain_",
    is_flag=True,
    help="A verdict per member from the wait breakdown: starved, commit_order, "
    "dependencies, queue_memory, too_few_workers, relay_log_read or busy.",
)
@click.option(
    "--since",
    default="1h",
    show_default=True,
    metavar="DURATION",
    help="With --explain and --history: judge the increase over this recent window "
    "(30m, 1h, 2d), or `start` for the totals since the applier started.",
)
@click.option(
    "--history",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="GRSTATS_HISTORY",
    help="The history directory ([history] dir) holding the earlier reading for "
    "--since; without it, --explain judges since the applier started.",
)
@wide_option
def applier_command(
    *,
    reader: TableReader,
    fmt: str,
    vertical: bool,
    wide: bool,
    workers: bool,
    explain_: bool,
    since: str,
    history: Path | None,
) -> None:
    table = APPLIER_WORKERS_TABLE if workers else APPLIER_METRICS_TABLE
    try:
        window = parse_since(since)
    except ValueError as exc:
        raise BadArgument(f"--since: {exc}") from None
    if fmt == "table" and not vertical and not wide and not explain_:
        both = reader.read([table, MEMBERS_TABLE])
        labels = member_labels(both[MEMBERS_TABLE])
        click.echo(narrow.narrow_table(table, reader_rows(both[table]), labels), nl=False)
        return
    if explain_:
        both = reader.read([table, MEMBERS_TABLE])
        labels = member_labels(both[MEMBERS_TABLE])
        earlier, at = None, None
        if history is not None and window is not None:
            at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=window)
            earlier = earlier_readings(history, at)
        if fmt == "json":
            click.echo(json.dumps(applier_verdicts(both[table], labels, earlier), indent=2))
        else:
            click.echo(applier_text(both[table], labels, earlier, at), nl=False)
        return
    rows = reader.read([table])[table]
    show_table(reader, table, fmt=fmt, vertical=vertical, wide=wide, rows=rows)


def reader_rows(rows: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """Rows in member, channel order."""
    return sorted(rows, key=lambda r: (str(r.get(col.MEMBER_ID)), str(r.get(col.CHANNEL_NAME))))
