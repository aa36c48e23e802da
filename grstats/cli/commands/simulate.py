"""`grstats simulate`: days of simulated group history, written offline.

The work is `grstats.offline.backfill.simulate_history` (the daemon's own Parquet
format and layout); this command chooses the inputs and reports the result.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from grstats.core.flowcontrol import MAXTPS, FlowControlSettings
from grstats.offline.backfill import (
    SECONDS_PER_DAY,
    SimulateResult,
    default_group,
    default_start,
    member_ids,
    simulate_history,
)
from protocol.humanize import duration

__all__ = ["command"]


@click.command("simulate")
@click.option(
    "--group", default=None, help="Group name (any text). Default: a UUID derived from the seed."
)
@click.option(
    "--members", type=click.IntRange(1, 64), default=3, show_default=True, help="Number of members."
)
@click.option(
    "--days",
    type=click.IntRange(1, 3660),
    default=7,
    show_default=True,
    help="Whole UTC days to write (7: one ISO week).",
)
@click.option(
    "--seed", type=int, default=1, show_default=True, help="Model seed (members, workload)."
)
@click.option(
    "--start",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    help="First UTC day. Default: the Monday of the last whole ISO week (of the last "
    "whole weeks holding DAYS days), so the default run is exactly last week.",
)
@click.option(
    "--epoch",
    type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
    default=None,
    help="The group's start (UTC; [simulated] epoch of the live daemons that continue "
    "this history): counters and GTIDs count from it. Default: the model's, 2026-01-01.",
)
@click.option("--slow-member", is_flag=True, help="Give the last member a slow applier.")
@click.option(
    "--slow-link",
    "slow_link",
    default=None,
    metavar="FROM-TO",
    help="UTC hours (e.g. 10-13: 10:00 to 13:00) in which the last member's network "
    "link is slow every day: its consensus rounds take longer (the cp_* columns, the "
    "report's 'Where commit time went').",
)
@click.option(
    "--certifier-threshold",
    type=click.IntRange(0, MAXTPS),
    default=FlowControlSettings().certifier_threshold,
    show_default=True,
    help="group_replication_flow_control_certifier_threshold: the simulated group "
    "throttles its writers by it (QUOTA mode), and the replay that fills the fc_* "
    "columns uses it.",
)
@click.option(
    "--applier-threshold",
    type=click.IntRange(0, MAXTPS),
    default=FlowControlSettings().applier_threshold,
    show_default=True,
    help="group_replication_flow_control_applier_threshold (as --certifier-threshold).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Worker processes for the days (the files are the same whatever the number; "
    "1: all in this process, a model thread and two writer threads). Default: one less "
    "than the idle CPUs (usable ones less the load average), at most 4, when three "
    "or more are idle; else 1; 1 below 16 member-days.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="History directory to write.",
)
def command(
    *,
    group: str | None,
    members: int,
    days: int,
    seed: int,
    start: dt.datetime | None,
    epoch: dt.datetime | None,
    slow_member: bool,
    slow_link: str | None,
    certifier_threshold: int,
    applier_threshold: int,
    workers: int | None,
    out: Path,
) -> None:
    """Write simulated 1 Hz history of a whole group, in the daemon's Parquet format.

    \b
    Example:
      grstats simulate --members 9 --days 7 --out /tmp/sim-week
    """
    group_name = default_group(seed) if group is None else group
    ids = member_ids(seed, members)
    first_day = default_start(days) if start is None else start.date()
    total = members * days * SECONDS_PER_DAY
    slow_link_hours = None if slow_link is None else _hours(slow_link)
    flow_control = FlowControlSettings(
        certifier_threshold=certifier_threshold, applier_threshold=applier_threshold
    )

    def run(on_chunk: Callable[[int], None]) -> SimulateResult:
        return simulate_history(
            out,
            group=group_name,
            members=ids,
            days=days,
            seed=seed,
            start=first_day,
            slow_member=slow_member,
            on_chunk=on_chunk,
            flow_control=flow_control,
            slow_link_hours=slow_link_hours,
            workers=workers,
            epoch_s=None if epoch is None else int(epoch.replace(tzinfo=dt.UTC).timestamp()),
        )

    from grstats.offline.daypool import WorkerFailed  # noqa: PLC0415

    try:
        result = run_with_progress(total, run)
    except OSError as exc:  # the user's --out: say which path and why, no traceback
        raise click.ClickException(f"{exc.filename or out}: {exc.strerror or exc}") from exc
    except WorkerFailed as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:  # the days done are written whole; the rest is not
        click.echo("simulate: interrupted", err=True)
        sys.exit(130)
    click.echo(
        f"wrote {result.rows} rows ({members} members x {days} days from {first_day.isoformat()}, "
        f"group {group_name}) to {out}: {result.files} files, {result.bytes_on_disk} bytes, "
        f"{result.bytes_per_sample:.2f} bytes/sample, {duration(result.seconds)}, "
        f"{result.rows_per_second:,.0f} rows/s"
    )


def run_with_progress(
    total_rows: int, run: Callable[[Callable[[int], None]], SimulateResult]
) -> SimulateResult:
    """Call `run(on_chunk)` showing progress on stderr: a bar on a terminal, else lines.

    Args:
        total_rows: rows the run will write.
        run: the work; it calls `on_chunk(rows)` after each member-day.

    Returns:
        What `run` returned.
    """
    if _maybe_terminal():
        from rich.console import Console  # noqa: PLC0415

        console = Console(stderr=True)
        if console.is_terminal:
            return _run_with_bar(console, total_rows, run)
    began, done = time.monotonic(), 0

    def report(n: int) -> None:
        nonlocal done
        done += n
        elapsed = time.monotonic() - began
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total_rows - done) / rate if rate > 0 else 0.0
        print(
            f"simulate progress rows={done}/{total_rows} rows_per_s={rate:.0f} eta_s={eta:.0f}",
            file=sys.stderr,
            flush=True,
        )

    return run(report)


def _maybe_terminal() -> bool:
    """Whether rich may call stderr a terminal (`Console.is_terminal`): not when it is
    no TTY and no TTY_COMPATIBLE or FORCE_COLOR says otherwise -- then rich (~0.2 s of
    imports before the first day) is not loaded."""
    return sys.stderr.isatty() or "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ


def _run_with_bar(
    console: Any, total_rows: int, run: Callable[[Callable[[int], None]], SimulateResult]
) -> SimulateResult:
    """`run_with_progress` on a terminal: a rich progress bar on `console`."""
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("simulate"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("rows"),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("rows", total=total_rows, rate="")

        def advance(n: int) -> None:
            progress.advance(task, n)
            speed = progress.tasks[task].speed or 0.0
            progress.update(task, rate=f"{speed:,.0f} rows/s")

        return run(advance)


def _hours(text: str) -> tuple[int, int]:
    """`--slow-link FROM-TO` as (from, to) hours, 0 <= from < to <= 24."""
    first, sep, end = text.partition("-")
    if sep and first.strip().isdigit() and end.strip().isdigit():
        hours = int(first), int(end)
        if 0 <= hours[0] < hours[1] <= 24:
            return hours
    raise click.BadParameter(
        f"expected UTC hours FROM-TO with 0 <= FROM < TO <= 24, got {text!r}",
        param_hint="'--slow-link'",
    )
