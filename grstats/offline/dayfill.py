"""The day pipeline of `grstats simulate`: one day of every member's history as tables.

Strategy: per day, a first pass in day order reads every member's integer
columns and replays flow control over all of them as a collector would
(`day_inputs`, `offline.flowfill`: the replay carries its state from one day
to the next); a second pass, a pure function of the plan, the day and the
first pass, builds each member's table with the history schema
(`member_day_tables`): the model's columns in bulk (the lag figures a daemon
records from `lag_at`, NaN as NULL; the applier counters from `applier_at`,
thinned as a daemon's cadence keeps them; the commit path's counters), the
replay's fc_* figures and what only a daemon knows (incarnation, seq). Either
pass runs in the parent or in a worker (`offline.daypool`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.history.cadence import dropped
from grstats.history.parquet import history_schema
from grstats.offline.dayplan import (
    DAY_HOURS,
    SECONDS_PER_DAY,
    SimulatePlan,
    incarnation_of,
    model_group,
)
from grstats.sources.simulated import GroupModel, SimulationSettings
from grstats.sources.simulated.commithistory import commit_path_columns, kept_rows
from grstats.sources.simulated.texts import GTID_EVERY_S

__all__ = ["day_inputs", "member_day_tables", "plan_model"]

_DAY_S = SECONDS_PER_DAY
_CHUNK_S = 3_600  # the model's hour


def plan_model(plan: SimulatePlan) -> GroupModel:
    """The plan's group model, keeping a day of workload hours (see GroupModel)."""
    return _build_model(
        plan.group,
        list(plan.members),
        plan.seed,
        plan.slow_member,
        plan.flow_control,
        slow_link=plan.slow_link_hours is not None,
        version=plan.version,
        hours_cached=DAY_HOURS,
        epoch_s=plan.epoch_s,
    )


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
) -> GroupModel:

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

    texts: list[dict[str, list[Any]]] = []
    lags: list[dict[str, Any]] = []
    appliers: list[dict[str, Any]] = []
    for s in _chunks(start_s, n):
        size = min(_CHUNK_S, start_s + n - s)
        texts.append(model.text_columns(member, s, size))
        lags.append(model.lag_history(member, s, size))
        appliers.append(model.applier_history(member, s, size))

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
