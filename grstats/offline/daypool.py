"""The days of `grstats simulate`: all in this process, or in a bounded pool of workers.

Strategy / invariants
---------------------
A member-day's rows are a pure function of the plan, its day and the day's
first pass (`backfill.day_inputs`: every member's integer columns and the flow-
control replay's fc_* figures, the certifier's rounds). The replay carries its
state from one day to the next, so first passes run here, in day order. The
second pass of a day (texts, lag, applier and commit-path columns: most of the
model's work) and its Parquet writes (zstd) run in a worker process, each
worker with its own model built from the plan: the model is a pure function of
(settings, time), as the daemons of one group already rely on. So the files,
names and bytes, are those of the serial run (a test holds the tables equal).

Bounds: `jobs` workers (`default_workers`: one less than the idle CPUs, at most
MAX_WORKERS; none for a small run or fewer than three idle CPUs) and at most
`jobs` + 1 days in flight: a day's first pass (~70 MB for 9 members) is pickled
to its worker; a serial run queues at most SERIAL_WRITES_QUEUED member-days
(~51 MB each) for its SERIAL_WRITERS writer threads: the encoding (the bulk of
the CPU) takes what the model's thread leaves, both CPUs when the model waits
for it or is done. (Writers at a lower priority than the model lost the CPUs to
any other busy process: 9 x 7 took 16-33 s where equal ones took 12 s.) Progress:
each member-day's rows are reported when its day is done. Workers ignore
SIGINT: Ctrl-C reaches this process, which cancels the days not started, waits
for the running ones (a file is written whole, by rename, or not at all) and
re-raises. A worker's error does the same and is raised here: an OSError as it
is (the CLI names the path), anything else, a worker's death included, as
`WorkerFailed`.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from pathlib import Path
from typing import Any

from grstats.offline.dayfill import day_inputs, member_day_tables, plan_model
from grstats.offline.dayplan import SimulatePlan

__all__ = ["MAX_WORKERS", "WorkerFailed", "default_workers", "run_parallel", "run_serial"]

MAX_WORKERS = 4  # beyond this, the first passes (one process, in day order) bound the run
MIN_PARALLEL_MEMBER_DAYS = 16  # smaller runs stay in this process by default
# member-day tables (~51 MB each in Arrow) waiting for, or in, the serial run's writers
SERIAL_WRITES_QUEUED = 4
SERIAL_CPUS = 2  # the CPUs a serial run keeps busy: its model's thread and its writers'
# writer threads of a serial run: the encoding (the bulk of a 9 x 7 run's CPU) runs beside
# the model, and on both CPUs when the model waits for it and at the end
SERIAL_WRITERS = 2

# member-days written: (paths, rows) of each, in member order
_Written = list[tuple[list[Path], int]]


class WorkerFailed(Exception):
    """A worker process failed a day; the message is one line naming the day."""


def default_workers(member_days: int) -> int:
    """One less than the idle CPUs (usable ones less the 1-minute load), at most
    MAX_WORKERS, when at least SERIAL_CPUS + 1 are idle; else 1 (all in this process),
    and 1 for a small run.

    Workers cost ~30 % more CPU in all (their starts: imports, ~0.5 s each; a
    day's first pass pickled to them; each model's own warm-up; measured 9 x 7:
    2 workers 27-29 s of CPU, one process 20-22 s), and one process already keeps
    SERIAL_CPUS busy: the model's thread and its writers' (9 x 7: ~7 s and ~9 s
    of CPU). So workers pay only with a third CPU free: the parent's first passes
    take one, the workers the others. Below MIN_PARALLEL_MEMBER_DAYS (~0.3 s of
    CPU each) they never pay. The output is the same whatever the number.
    """
    if member_days < MIN_PARALLEL_MEMBER_DAYS:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        cpus = os.cpu_count() or 1
    try:
        idle = cpus - int(os.getloadavg()[0] + 0.5)
    except OSError:  # no load average here: take every CPU as free
        idle = cpus
    if idle <= SERIAL_CPUS:
        return 1
    return min(idle - 1, MAX_WORKERS)


def run_serial(
    plan: SimulatePlan, out: Path, jobs: int, on_chunk: Callable[[int], None] | None
) -> tuple[list[Path], int]:
    """Every day in this process; returns (paths written, rows). `jobs` is unused."""
    from grstats.history.writer import write_segments  # noqa: PLC0415
    from grstats.offline.flowfill import FlowFill  # noqa: PLC0415

    model, flow = plan_model(plan), FlowFill(plan.flow_control)
    paths: list[Path] = []
    rows = 0
    # Member-days are encoded and written (zstd in C++, without the GIL) while the model
    # computes the next ones: up to SERIAL_WRITES_QUEUED queued, so the writers keep
    # busy through a day's first pass (~0.4 s for 9 members, when no table comes).
    pending: collections.deque[tuple[Future[list[Path]], int]] = collections.deque()

    def finish(write: tuple[Future[list[Path]], int]) -> None:
        nonlocal rows
        paths.extend(write[0].result())
        rows += write[1]
        if on_chunk is not None:
            on_chunk(write[1])

    with ThreadPoolExecutor(
        max_workers=SERIAL_WRITERS, thread_name_prefix="simulate-write"
    ) as pool:
        for day_index in range(plan.days):
            first_pass = day_inputs(model, plan, day_index, flow)
            for segment, table in member_day_tables(model, plan, day_index, first_pass):
                while len(pending) >= SERIAL_WRITES_QUEUED:
                    finish(pending.popleft())
                pending.append(
                    (pool.submit(write_segments, out, table, segment_id=segment), len(table))
                )
                del table
        while pending:
            finish(pending.popleft())
    return paths, rows


def run_parallel(
    plan: SimulatePlan, out: Path, jobs: int, on_chunk: Callable[[int], None] | None
) -> tuple[list[Path], int]:
    """First passes here, second passes and writes in `jobs` worker processes.

    Returns:
        (paths written, rows).

    Raises:
        OSError: a worker could not write (as raised there).
        WorkerFailed: any other error of a worker, or its death.
    """
    from grstats.offline.flowfill import FlowFill  # noqa: PLC0415

    model, flow = plan_model(plan), FlowFill(plan.flow_control)
    paths: list[Path] = []
    rows = 0
    in_flight: dict[Future[_Written], int] = {}

    def collect(done: set[Future[_Written]]) -> None:
        nonlocal rows
        for future in sorted(done, key=in_flight.__getitem__):
            day_index = in_flight.pop(future)
            try:
                written = future.result()
            except OSError:
                raise
            except Exception as exc:  # a worker's error, pickled back, or BrokenProcessPool
                day = plan.start.toordinal() + day_index
                name = type(exc).__name__
                raise WorkerFailed(
                    f"simulate: day {_iso(day)} failed in a worker: {name}: {exc}".splitlines()[0]
                ) from exc
            for member_paths, member_rows in written:
                paths.extend(member_paths)
                rows += member_rows
                if on_chunk is not None:
                    on_chunk(member_rows)

    # spawn: the parent may hold threads (the progress bar's, Arrow's pools) a fork would copy
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_init_worker, initargs=(plan, out)
    )
    try:
        # the workers start (imports, model) while this process computes day 0's first pass
        for _ in range(jobs):
            pool.submit(_ready)
        for day_index in range(plan.days):
            while len(in_flight) > jobs:
                collect(wait(in_flight, return_when=FIRST_COMPLETED).done)
            first_pass = day_inputs(model, plan, day_index, flow)
            in_flight[pool.submit(_second_pass, day_index, first_pass)] = day_index
            del first_pass
        while in_flight:
            collect(wait(in_flight, return_when=FIRST_COMPLETED).done)
    finally:
        # on an error or Ctrl-C: the days not started are dropped, running ones finish
        pool.shutdown(wait=True, cancel_futures=True)
    return paths, rows


def _iso(ordinal: int) -> str:
    import datetime as dt  # noqa: PLC0415

    return dt.date.fromordinal(ordinal).isoformat()


_worker: tuple[Any, SimulatePlan, Path] | None = None  # a worker's model, plan and root


def _init_worker(plan: SimulatePlan, out: Path) -> None:
    """Worker start: Ctrl-C is the parent's to handle; the model is built once."""
    global _worker  # noqa: PLW0603 - one model per worker process, reused for its days
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker = (plan_model(plan), plan, out)


def _ready() -> None:
    """A no-op: submitting it makes the pool start its workers."""


def _second_pass(day_index: int, first_pass: Any) -> _Written:
    """In a worker: the day's member tables, each written; (paths, rows) per member."""
    from grstats.history.writer import write_segments  # noqa: PLC0415

    if _worker is None:  # pragma: no cover - the initializer always ran
        raise RuntimeError("worker not initialised")
    model, plan, out = _worker
    return [
        (write_segments(out, table, segment_id=segment), len(table))
        for segment, table in member_day_tables(model, plan, day_index, first_pass)
    ]
