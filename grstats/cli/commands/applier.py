"""`grstats applier`: WL#15620's applier metrics of every member, and why an applier is slow.

Strategy: like the other table commands (`grstats.cli.commands.tables`):
replication_applier_metrics by default, replication_applier_progress_by_worker
with `--workers`, from the local daemon's API or the broker (`--bus`), as a
table, `--vertical`, json or csv. `--explain` turns each member's wait
breakdown into a verdict (`grstats.core.applier_verdict`) with the shares
behind it and what an operator would change.

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero -- never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import click

from grstats.cli import render
from grstats.cli.commands.tables import COLUMNS
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns as col
from grstats.core.applier_verdict import explain
from grstats.core.snapshot import APPLIER_METRICS_TABLE, APPLIER_WORKERS_TABLE

__all__ = ["applier_command", "explain_text"]


def explain_text(rows: Sequence[Mapping[str, object]]) -> str:
    """The verdict of every member and channel, with its numbers and advice."""
    out: list[str] = []
    for row in rows:
        verdict = explain(row)
        out.append(f"{row.get(col.MEMBER_ID)} {row.get(col.CHANNEL_NAME)}: {verdict.kind}")
        if verdict.active_s is not None:
            out.append(f"  active {verdict.active_s:.0f} s; share of active time:")
        for name, share in verdict.shares.items():
            out.append(f"    {name:<18} {100 * share:6.1f} %")
        pending = row.get(col.TRANSACTIONS_PENDING_COUNT)
        ongoing = row.get(col.TRANSACTIONS_ONGOING_COUNT)
        out.append(f"  transactions pending {_shown(pending)}, ongoing {_shown(ongoing)}")
        out.append(f"  advice: {verdict.advice}")
    if not out:
        out.append("no applier metrics from any member")
    return "\n".join(out) + "\n"


def _shown(value: object) -> str:
    return "NULL" if value is None else str(value)


@click.command(
    name="applier",
    help="Show replication_applier_metrics (WL#15620) for every member and channel: "
    "active time, transactions committed / ongoing / pending, sizes, events, and "
    "each wait's count and time (ns, as MySQL reports them).\n\n"
    "\b\nExamples:\n"
    "  grstats applier --vertical              # one member and channel per block\n"
    "  grstats applier --workers               # replication_applier_progress_by_worker\n"
    "  grstats applier --explain               # why each member's applier is slow\n"
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
def applier_command(
    *, reader: TableReader, fmt: str, vertical: bool, workers: bool, explain_: bool
) -> None:
    table = APPLIER_WORKERS_TABLE if workers else APPLIER_METRICS_TABLE
    rows = reader.read([table])[table]
    if explain_:
        if fmt == "json":
            verdicts = [
                {
                    col.MEMBER_ID: r.get(col.MEMBER_ID),
                    col.CHANNEL_NAME: r.get(col.CHANNEL_NAME),
                    "verdict": (v := explain(r)).kind,
                    "shares": dict(v.shares),
                    "active_seconds": v.active_s,
                    "advice": v.advice,
                }
                for r in reader_rows(rows)
            ]
            click.echo(json.dumps(verdicts, indent=2))
        else:
            click.echo(explain_text(reader_rows(rows)), nl=False)
        return
    if vertical and fmt == "table":
        fmt = "vertical"
    click.echo(render.render(fmt, rows, COLUMNS[table]), nl=False)


def reader_rows(rows: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """Rows in member, channel order."""
    return sorted(rows, key=lambda r: (str(r.get(col.MEMBER_ID)), str(r.get(col.CHANNEL_NAME))))
