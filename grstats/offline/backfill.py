"""Backfill: days of simulated group history, written offline (`grstats simulate`).

Strategy: `simulate_history` plans the run (`offline.dayplan`: ids, incarnations
and segment names from the seed) and hands its days to `offline.daypool`, in
this process or in workers; each day goes through the day pipeline
(`offline.dayfill`: the model's columns in bulk, the flow-control replay a
collector would make, what only a daemon knows) and each member-day to
`grstats.history.writer.write_segments` -- the very function the daemon's
history writer uses -- so the output has exactly the daemon's format and layout.

Invariants: the output is a function of (group, members, seed, start, days,
slow member, slow-link hours, version), so re-running into the same directory
replaces the files instead of duplicating rows. Days are whole UTC days; the
default start makes the run end with the last full UTC week. This module stays
light (no numpy, no pyarrow): the CLI imports it for `grstats --help`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grstats.core.flowcontrol import FlowControlSettings
from grstats.offline.dayplan import (
    SECONDS_PER_DAY,
    SimulatePlan,
    default_group,
    incarnation_of,
    member_ids,
    model_group,
)

__all__ = [
    "SECONDS_PER_DAY",
    "SimulatePlan",
    "SimulateResult",
    "default_group",
    "default_start",
    "incarnation_of",
    "member_ids",
    "model_group",
    "simulate_history",
]


@dataclass(frozen=True, slots=True)
class SimulateResult:
    """What a run wrote."""

    rows: int
    files: int
    bytes_on_disk: int
    seconds: float

    @property
    def bytes_per_sample(self) -> float:
        return self.bytes_on_disk / self.rows if self.rows else 0.0

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def simulate_history(
    out: Path,
    *,
    group: str,
    members: list[str],
    days: int,
    seed: int,
    start: dt.date,
    slow_member: bool = False,
    on_chunk: Callable[[int], None] | None = None,
    flow_control: FlowControlSettings | None = None,
    slow_link_hours: tuple[int, int] | None = None,
    version: str | None = None,
    workers: int | None = None,
    epoch_s: int | None = None,
) -> SimulateResult:
    """Write `days` whole UTC days of every member's 1 Hz history under `out`.

    Args:
        out: history root (created if missing).
        group: group name.
        members: member UUIDs.
        days: number of days.
        seed: model seed.
        start: first UTC day.
        slow_member: make the last member the slow one (applier capacity).
        on_chunk: called with the number of rows after each member-day (with
            workers: when its day is done).
        flow_control: the group's flow-control variables: the model throttles its
            writers by them, and the replay that fills the fc_* columns
            (`offline.flowfill`) uses them; None: MySQL's defaults.
        slow_link_hours: (first, end) UTC hours, 0..24: every day the last member's
            link is slow from `first`:00 to `end`:00 (its consensus rounds and
            message round trips take longer; the cp_* columns); None: never.
        version: the members' MySQL version (before 8.1.0 the cp_* columns are
            NULL, as such servers show no Gr_* counters); None: the model's default.
        workers: worker processes for the days' second passes (daypool.py); 1: all
            in this process; None: `daypool.default_workers` (1 for a small run or a
            busy machine). The files are the same whatever the number.
        epoch_s: the group's start, Unix seconds (`[simulated] epoch` of the live
            daemons that continue this history): the counters and GTIDs count from
            it; None: the model's default (2026-01-01).

    Returns:
        Rows and files written, their size on disk and the elapsed time.

    Raises:
        daypool.WorkerFailed: a worker process failed (its error, one line).
    """
    # deferred: the pipeline's numpy/pyarrow would slow every `grstats --help` (no cycle)
    from grstats.offline import daypool  # noqa: PLC0415

    began = time.monotonic()
    plan = SimulatePlan(
        group=group,
        members=tuple(members),
        seed=seed,
        start=start,
        days=days,
        slow_member=slow_member,
        flow_control=flow_control or FlowControlSettings(),
        slow_link_hours=slow_link_hours,
        version=version,
        epoch_s=epoch_s,
    )
    from grstats.history.modes import make_dirs  # noqa: PLC0415 - stdlib only, but history

    make_dirs(out)  # 0750 like a daemon's history
    if workers is None:
        workers = daypool.default_workers(len(members) * days)
    jobs = min(days, max(1, workers))
    run = daypool.run_serial if jobs <= 1 else daypool.run_parallel
    paths, rows = run(plan, out, jobs, on_chunk)
    size = sum(p.stat().st_size for p in set(paths))
    return SimulateResult(rows, len(set(paths)), size, time.monotonic() - began)


def default_start(days: int, today: dt.date | None = None) -> dt.date:
    """The first day of a `days`-day run: the Monday of the last whole ISO week(s).

    A week's report (`spark_rollups report --week`) then covers whole days of
    one ISO week: 7 days are exactly last week, Monday to Sunday; more days
    start as many whole weeks earlier, so the run still ends by last Sunday.

    Args:
        days: the run's length in days.
        today: the current UTC date (default: now).

    Returns:
        The first UTC day.
    """
    today = dt.datetime.now(dt.UTC).date() if today is None else today
    this_monday = today - dt.timedelta(days=today.weekday())
    return this_monday - dt.timedelta(weeks=-(-days // 7))
