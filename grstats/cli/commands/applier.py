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

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from grstats.cli import narrow
from grstats.cli.applierwindow import WINDOW_CHANNEL, earlier_readings, parse_since
from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.errors import BadArgument
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns as col
from grstats.core.applier_verdict import explain
from grstats.core.labels import member_labels
from grstats.core.snapshot import APPLIER_METRICS_TABLE, APPLIER_WORKERS_TABLE, MEMBERS_TABLE

__all__ = ["applier_command", "explain_text"]


def explain_text(
    rows: Sequence[Mapping[str, object]],
    earlier: Mapping[str, Mapping[str, object]] | None = None,
    window_start: dt.datetime | None = None,
) -> str:
    """The verdict of every member and channel, with its numbers and advice.

    Args:
        rows: replication_applier_metrics rows.
        earlier: member id -> an earlier reading of its group_replication_applier
            channel (applierwindow.earlier_readings); None or absent: judged on
            the totals since the applier started.
        window_start: the start of the --since window asked for, named where a
            member has no reading that old.

    Returns:
        The text, one block per row.
    """
    out: list[str] = []
    for row in rows:
        previous = _earlier(row, earlier)
        verdict = explain(row, previous)
        out.append(f"{row.get(col.MEMBER_ID)} {row.get(col.CHANNEL_NAME)}: {verdict.kind}")
        if previous is not None:
            since = previous["sampled_at"]
            shown = since.strftime("%Y-%m-%d %H:%M:%S") if isinstance(since, dt.datetime) else since
            out.append(f"  window: since {shown} UTC (the history's reading)")
        elif earlier is not None:
            asked = "" if window_start is None else f" at or before {_utc(window_start)} UTC"
            out.append(
                f"  window: since the applier started (the history holds no reading of "
                f"this member{asked})"
            )
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


def _earlier(
    row: Mapping[str, object], earlier: Mapping[str, Mapping[str, object]] | None
) -> Mapping[str, object] | None:
    if earlier is None or row.get(col.CHANNEL_NAME) != WINDOW_CHANNEL:
        return None
    return earlier.get(str(row.get(col.MEMBER_ID)))


def _utc(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _shown(value: object) -> str:
    return "NULL" if value is None else str(value)


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
    rows = reader.read([table])[table]
    if explain_:
        earlier, at = None, None
        if history is not None and window is not None:
            at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=window)
            earlier = earlier_readings(history, at)
        if fmt == "json":
            verdicts = [
                {
                    col.MEMBER_ID: r.get(col.MEMBER_ID),
                    col.CHANNEL_NAME: r.get(col.CHANNEL_NAME),
                    "verdict": (v := explain(r, _earlier(r, earlier))).kind,
                    "shares": dict(v.shares),
                    "active_seconds": v.active_s,
                    "advice": v.advice,
                }
                for r in reader_rows(rows)
            ]
            click.echo(json.dumps(verdicts, indent=2))
        else:
            click.echo(explain_text(reader_rows(rows), earlier, at), nl=False)
        return
    show_table(reader, table, fmt=fmt, vertical=vertical, wide=wide, rows=rows)


def reader_rows(rows: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """Rows in member, channel order."""
    return sorted(rows, key=lambda r: (str(r.get(col.MEMBER_ID)), str(r.get(col.CHANNEL_NAME))))
