"""Backfill: days of simulated group history, written offline (`grstats simulate`).

Strategy: the simulated group model (`grstats.sources.simulated.model`) yields one
member's HistoryRow columns for a span of seconds in bulk (`history_columns`, the
lag figures a daemon records from `lag_at`, `lag_history`, NaN is NULL, and the
applier counters it records from `applier_at`, `applier_history`);
`simulate_history` walks the requested days; per day it first reads every
member's flow-control inputs (queues and counters) and replays flow control
over all of them as a collector would (`offline.flowfill`), then builds each
member's day, adds those figures and what only a daemon knows (incarnation: one per
member, derived from the seed; seq: 1..n per member across the whole run),
and hands each member-day to
`grstats.history.writer.write_segments` -- the very function the daemon's history
writer uses -- so the output has exactly the daemon's format and layout.

Invariants: the output is a function of (group, members, seed, start, days,
slow member, slow-link hours, version): member UUIDs and incarnations derive from the seed, and each
member-day's segment name derives from those inputs, so re-running into the
same directory replaces the files instead of duplicating rows.  Days are whole
UTC days; the default start makes the run end with the last full UTC day
(yesterday): `--days 7` run on a Sunday covers the previous Sunday to Saturday.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grstats.core.flowcontrol import FlowControlSettings

__all__ = [
    "SECONDS_PER_DAY",
    "SimulatePlan",
    "SimulateResult",
    "day_inputs",
    "default_group",
    "default_start",
    "incarnation_of",
    "member_day_tables",
    "member_ids",
    "model_group",
    "simulate_history",
]

_NAMESPACE = uuid.UUID("0f6d8f3a-2c51-5c1e-b7a4-9e2a61d0c3b7")
SECONDS_PER_DAY = 86_400
_DAY_S = SECONDS_PER_DAY
_CHUNK_S = 3_600  # the model's hour
_DAY_HOURS = 26  # workload hours a model keeps: a day, the hour before it, one spare


def member_ids(seed: int, count: int) -> list[str]:
    """The deterministic server UUIDs of a simulated group.

    Args:
        seed: the simulation seed.
        count: number of members.

    Returns:
        `count` UUID texts, the same for the same seed.
    """
    return [str(uuid.uuid5(_NAMESPACE, f"{seed}/member/{i}")) for i in range(1, count + 1)]


def default_group(seed: int) -> str:
    """The group name (a UUID) used when --group is not given."""
    return str(uuid.uuid5(_NAMESPACE, f"{seed}/group"))


def model_group(group: str) -> str:
    """The group UUID the model uses for GTIDs: `group` itself when it is a UUID.

    GR group names are UUIDs; for any other text a UUID is derived from it, so
    the GTID columns stay valid while `group_name` keeps the text given.
    """
    try:
        return str(uuid.UUID(group))
    except ValueError:
        return str(uuid.uuid5(_NAMESPACE, f"group/{group}"))


def incarnation_of(seed: int, member_id: str) -> int:
    """One daemon incarnation (u64) per simulated member, derived from the seed."""
    digest = hashlib.sha256(f"{seed}/incarnation/{member_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


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


def _build_model(
    group: str,
    members: list[str],
    seed: int,
    slow_member: bool,
    flow_control: FlowControlSettings,
    *,
    slow_link: bool = False,
    version: str | None = None,
    hours_cached: int | None = None,
    epoch_s: int | None = None,
) -> Any:
    from grstats.sources.simulated import GroupModel, SimulationSettings  # noqa: PLC0415

    settings = SimulationSettings(
        group=model_group(group),
        members=tuple(members),
        seed=seed,
        slow_member=members[-1] if slow_member else None,
        slow_link_member=members[-1] if slow_link else None,
        # the group throttles its writers with the very settings the replay uses
        flow_control=flow_control,
    )
    if version is not None:
        settings = dataclasses.replace(settings, version=version)
    if epoch_s is not None:
        settings = dataclasses.replace(settings, epoch_s=epoch_s)
    return GroupModel(settings, hours_cached=hours_cached)


def _number_columns(model: Any, members: list[str], start_s: int, n: int) -> dict[str, Any]:
    """The model's integer columns (counts, sampled_at, mode) of every member for n
    seconds: member -> column -> array.

    Hour-major: every member reads the same hours of the workload, which the model
    caches only a few of, so each hour is built once, not once per member.
    """
    import numpy as np  # noqa: PLC0415

    parts: dict[str, list[dict[str, Any]]] = {m: [] for m in members}
    for s in _chunks(start_s, n):
        for m in members:
            parts[m].append(model.number_columns(m, s, min(_CHUNK_S, start_s + n - s)))
    return {
        m: {name: np.concatenate([p[name] for p in chunks]) for name in chunks[0]}
        for m, chunks in parts.items()
    }


def _chunks(start_s: int, n: int) -> range:
    return range(start_s, start_s + n, _CHUNK_S)


def _model_columns(
    model: Any, member: str, start_s: int, n: int, repeated: dict[tuple[type, Any, Any], Any]
) -> dict[str, Any]:
    """The model's other columns of `member` for n seconds: texts, lag figures (NaN:
    NULL) and the applier counters, as Arrow arrays (`repeated`: `_text_array`'s).

    An hour at a time, texts then lag then applier: all read the same hours of the
    workload, which the model caches only a few of (a day of one, then a day of
    the next, would build every hour twice).
    """
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    texts: list[dict[str, list[Any]]] = []
    lags: list[dict[str, Any]] = []
    appliers: list[dict[str, Any]] = []
    for s in _chunks(start_s, n):
        size = min(_CHUNK_S, start_s + n - s)
        texts.append(model.text_columns(member, s, size))
        lags.append(model.lag_history(member, s, size))
        appliers.append(model.applier_history(member, s, size))
    from grstats.sources.simulated.texts import GTID_EVERY_S  # noqa: PLC0415

    types = _schema_types()
    columns: dict[str, Any] = {
        name: _text_array([c[name] for c in texts], types[name], start_s, GTID_EVERY_S, repeated)
        for name in texts[0]
        if name != "group_name"  # the plan's group text (member_day_tables), not the model's
    }
    for name in lags[0]:
        figures = np.concatenate([lag[name] for lag in lags])
        columns[name] = pa.array(figures, pa.float64(), from_pandas=True)
    for name in appliers[0]:
        columns[name] = np.concatenate([a[name] for a in appliers])  # Arrow in _thinned
    return columns


def _schema_types() -> dict[str, Any]:
    from grstats.history.parquet import history_schema  # noqa: PLC0415

    return {f.name: f.type for f in history_schema()}


def _text_array(
    parts: list[list[Any]],
    type_: Any,
    start_s: int,
    every: int,
    repeated: dict[tuple[type, Any, Any], Any],
) -> Any:
    """One column of the model's hourly lists as an Arrow array of `type_`.

    Most are one value repeated (a member's host, state, version): built from
    that value without converting each item (a day of ten such columns took
    40 ms of a member-day's 260), once for the day's members that share it
    (`repeated`: (its Python type, value, type) -> array; arrays are immutable). The
    GTID texts are NULL but on the seconds divisible by `every` (`_sparse_array`).
    """
    import pyarrow as pa  # noqa: PLC0415

    size = sum(map(len, parts))
    first = next((part[0] for part in parts if part), None)
    # each hour's list alone, against its own first item (list.count in C, by identity:
    # an hour repeats one object, the next hour's equal value may be another): no
    # day-long list
    if size and all(
        part[0] == first and part.count(part[0]) == len(part) for part in parts if part
    ):
        key = (type(first), first, type_)
        got = repeated.get(key)
        if got is None or len(got) != size:
            got = repeated[key] = pa.repeat(pa.scalar(first, type_), size)
        return got
    sparse = _sparse_array(parts, type_, start_s, every)
    if sparse is not None:
        return sparse
    return pa.array(list(itertools.chain.from_iterable(parts)), type_)


def _sparse_array(parts: list[list[Any]], type_: Any, start_s: int, every: int) -> Any:
    """The hourly lists of seconds start_s.. as an Arrow string array when only the
    seconds divisible by `every` hold a text (each other one is None, counted in C by
    identity): built from those texts' bytes; else None.
    """
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    values: list[Any] = []
    rows: list[Any] = []
    at = 0  # the part's first row
    for part in parts:
        first = -(start_s + at) % every
        kept = part[first::every]
        if part.count(None) != len(part) - len(kept) + kept.count(None):
            return None
        values.extend(kept)
        rows.append(np.arange(at + first, at + len(part), every))
        at += len(part)
    if type_ != pa.string() or None in values:
        return None
    # the texts' bytes once, each row's offsets (a NULL row adds none): no per-row object
    where = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    data = [value.encode() for value in values]
    lengths = np.zeros(at, dtype=np.int32)
    lengths[where] = np.fromiter(map(len, data), np.int32, len(data))
    if sum(map(len, data)) >= 1 << 31:  # beyond a string array's 32-bit offsets
        return None
    offsets = np.zeros(at + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    valid = np.zeros(at, dtype=bool)
    valid[where] = True
    buffers = [pa.array(valid).buffers()[1], pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    return pa.Array.from_buffers(pa.string(), at, buffers, at - len(where))


def _commit_columns(
    model: Any,
    member: str,
    start_s: int,
    columns: dict[str, Any],
    slow_link: tuple[tuple[int, int], ...] | None,
) -> dict[str, Any]:
    """The commit path's cp_* columns of the member's rows (the model's Gr_* counters)."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    from grstats.sources.simulated.commithistory import (  # noqa: PLC0415
        commit_path_columns,
        kept_rows,
    )

    local = np.asarray(columns["count_transactions_local_proposed"], dtype=np.int64)
    secs = np.arange(start_s, start_s + len(local), dtype=np.int64)

    def local_at(s: int) -> int:
        return int(model.stats_at(member, s * 1_000_000).transactions_local)

    figures = commit_path_columns(
        model.settings, member, secs, local, windows=slow_link, local_at=local_at
    )
    kept = kept_rows(secs)  # as a daemon records them: once per bucket
    if not len(kept):
        return {name: pa.array(values, pa.int64()) for name, values in figures.items()}
    # one validity bitmap shared by the columns, over their own data: nothing copied
    validity, nulls = pa.array(kept).buffers()[1], len(kept) - int(kept.sum())
    return {
        name: pa.Array.from_buffers(
            pa.int64(),
            len(kept),
            [validity, pa.py_buffer(np.ascontiguousarray(values, dtype=np.int64))],
            nulls,
        )
        for name, values in figures.items()
    }


def _thinned(columns: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """A member-day's counters `names` (numpy int64, every row known) as Arrow arrays,
    NULL where the history keeps no sample: the writer's own rule (`history.cadence`)
    on the one member's rows.

    The writer applies its rule again and finds nothing to drop: it then compares
    the kept tenth of the rows and copies no column. The files are the same.
    """
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    from grstats.history.cadence import dropped  # noqa: PLC0415

    n = len(columns["sampled_at"])
    rows = pa.table(
        {
            "member_id": pa.repeat(pa.scalar(0, pa.int8()), n),  # one member, one incarnation
            "incarnation": pa.repeat(pa.scalar(0, pa.int8()), n),
            "sampled_at": pa.array(columns["sampled_at"], pa.int64()),
            **{name: pa.array(columns[name], pa.int64()) for name in names},
        }
    )
    mask = dropped(rows, names)
    if mask is None:
        return {name: rows[name].chunk(0) for name in names}
    # one validity bitmap shared by the counters, over their numpy data: nothing copied
    keep = pc.invert(mask)
    validity, nulls = keep.buffers()[1], mask.true_count
    return {
        name: pa.Array.from_buffers(
            pa.int64(), n, [validity, rows[name].chunk(0).buffers()[1]], nulls
        )
        for name in names
    }


@dataclass(frozen=True, slots=True)
class SimulatePlan:
    """The inputs of a run: every member-day is a function of these and its day (picklable:
    a worker process gets the plan and rebuilds the model from it)."""

    group: str
    members: tuple[str, ...]
    seed: int
    start: dt.date
    days: int
    slow_member: bool
    flow_control: FlowControlSettings
    slow_link_hours: tuple[int, int] | None
    version: str | None
    epoch_s: int | None = None  # the group's start ([simulated] epoch); None: the model's

    def model(self) -> Any:
        """The group model, keeping a day of workload hours (see GroupModel)."""
        return _build_model(
            self.group,
            list(self.members),
            self.seed,
            self.slow_member,
            self.flow_control,
            slow_link=self.slow_link_hours is not None,
            version=self.version,
            hours_cached=_DAY_HOURS,
            epoch_s=self.epoch_s,
        )

    def day_start_s(self, day_index: int) -> int:
        """Unix second at which day `day_index` of the run begins."""
        day = self.start + dt.timedelta(days=day_index)
        return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())

    def slow_link(self) -> tuple[tuple[int, int], ...] | None:
        """[start, end) Unix seconds of the last member's slow link, every day; None: never."""
        if self.slow_link_hours is None:
            return None
        first, end = self.slow_link_hours
        return tuple(
            (self.day_start_s(d) + 3600 * first, self.day_start_s(d) + 3600 * end)
            for d in range(self.days)
        )

    def segment(self, member: str, day_index: int) -> str:
        """The member-day's segment id (its file name derives from it)."""
        day = self.start + dt.timedelta(days=day_index)
        segment = f"simulate|{self.seed}|{self.group}|{member}|{day.isoformat()}"
        segment += f"|{int(self.slow_member)}"
        if self.slow_link_hours is not None:  # names of runs without it stay as they were
            segment += f"|slow-link={self.slow_link_hours[0]}-{self.slow_link_hours[1]}"
        if self.version is not None:
            segment += f"|version={self.version}"
        if self.epoch_s is not None:
            segment += f"|epoch={self.epoch_s}"
        return segment


def day_inputs(
    model: Any, plan: SimulatePlan, day_index: int, flow: Any
) -> tuple[Any, Any, dict[int, Any]]:
    """The day's first pass, in day order (the flow-control replay carries its state from
    one day to the next): every member's integer columns (10 int64 arrays, 7 MB a
    member-day) and the replay's fc_* figures, member -> column -> array; and the
    certifier's rounds of the day (the counts needed them; the texts need them again).
    """
    start_s = plan.day_start_s(day_index)
    numbers = _number_columns(model, list(plan.members), start_s, _DAY_S)
    return numbers, flow.day(numbers), model.certification_rounds(start_s, _DAY_S)


def member_day_tables(
    model: Any,
    plan: SimulatePlan,
    day_index: int,
    first_pass: tuple[Any, Any, dict[int, Any]],
) -> Iterator[tuple[str, Any]]:
    """The day's second pass: each member's rows as a history table, one member at a
    time (a pure function of the plan, the day and `day_inputs`' first pass, which
    it consumes).

    Yields:
        (segment id, table with the history schema) per member, in member order.
    """
    import numpy as np  # noqa: PLC0415  (keeps `grstats --help` fast)
    import pyarrow as pa  # noqa: PLC0415

    from grstats.core.records import APPLIER_HISTORY_COLUMNS  # noqa: PLC0415
    from grstats.history.writer import history_schema  # noqa: PLC0415

    schema = history_schema()
    start_s = plan.day_start_s(day_index)
    slow_link = plan.slow_link()
    # texts every member of the day shows alike (group, state, version): one array each
    group_names = pa.repeat(pa.scalar(plan.group, pa.string()), _DAY_S)
    repeated: dict[tuple[type, Any, Any], Any] = {}
    numbers, figures, rounds = first_pass
    model.remember_certification_rounds(rounds)  # a worker's model has not computed them
    for member in plan.members:
        columns = _model_columns(model, member, start_s, _DAY_S, repeated)
        columns.update(numbers.pop(member))
        columns.update(figures.pop(member))
        columns.update(_thinned(columns, APPLIER_HISTORY_COLUMNS))
        # the commit path's counters from the local proposals (slow link in `slow_link`)
        columns.update(_commit_columns(model, member, start_s, columns, slow_link))
        first_seq = day_index * _DAY_S + 1
        columns["group_name"] = group_names
        columns["incarnation"] = np.full(_DAY_S, incarnation_of(plan.seed, member), dtype=np.uint64)
        columns["seq"] = np.arange(first_seq, first_seq + _DAY_S, dtype=np.int64)
        # any column the model leaves out is NULL, as a daemon without it writes it
        for f in schema:
            if f.name not in columns:
                columns[f.name] = pa.nulls(_DAY_S, f.type)
        table = pa.table({f.name: columns[f.name] for f in schema}, schema=schema)
        yield plan.segment(member, day_index), table


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
