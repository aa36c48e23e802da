"""The simulated group's lag history in bulk (GroupModel.lag_history).

The bulk arrays must hold, second by second, what a daemon records: the
figures `core.rows.lag_history` derives from `GroupModel.lag_at` sampled at
the whole second, clock offset 0 (the local member). That per-second path
is tested on its own (test_simulated_report.py, core/test_lagrows.py); here it
is the reference for a consistency check, plus cases worked out by hand from
lag.py's sub-second rule (commit k + p * 10 ms / N, queued 1 ms + 50 µs
later, a backlog's i-th of n applied at j + i * 10 ms / n, 400 µs apply).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from grstats.core.lag import MemberLag
from grstats.core.records import LAG_HISTORY_COLUMNS
from grstats.core.rows import lag_history
from grstats.sources.simulated import GroupModel, ScriptEvent, SimulationSettings

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"
C = "33333333-3333-3333-3333-333333333333"
US = 1_000_000
T0 = 1_795_424_400  # 2026-11-23 09:00:00 UTC (a Monday); hot hours 10, 11, 14, 15


def _per_second(model: GroupModel, member: str, s: int) -> list[float | None]:
    channels = model.lag_at(member, s * US)
    figures = lag_history(MemberLag(s * US, channels) if channels else None, 0.0)
    return [figures[name] for name in LAG_HISTORY_COLUMNS]


def _bulk(model: GroupModel, member: str, start: int, n: int) -> list[list[float | None]]:
    columns = model.lag_history(member, start, n)
    assert set(columns) == set(LAG_HISTORY_COLUMNS)
    return [
        [None if math.isnan(v) else float(v) for v in row]
        for row in zip(*(columns[name].tolist() for name in LAG_HISTORY_COLUMNS), strict=True)
    ]


def _assert_same_as_per_second(model: GroupModel, member: str, start: int, n: int) -> None:
    bulk = _bulk(model, member, start, n)
    for i, row in enumerate(bulk):
        assert row == _per_second(model, member, start + i), (member, start + i)


SPANS = (
    T0 - 6 * 3600 + 1700,  # 03:28, an idle night hour
    T0 + 3600 - 150,  # across the 10:00 boundary into a hot hour
    T0 + 3 * 3600 - 100,  # end of the hot 11:00 hour, the slow member's queue at its longest
    T0 + 5 * 3600 + 1800,  # 14:30, hot again
)


@pytest.mark.parametrize("start", SPANS)
def test_bulk_equals_the_per_second_path_with_a_slow_member(start: int) -> None:
    settings = SimulationSettings(group=GROUP, members=(A, B, C), seed=7, slow_member=C)
    model = GroupModel(settings)
    for member in (A, C):
        _assert_same_as_per_second(model, member, start, 250)


def test_bulk_equals_the_per_second_path_in_a_single_primary_group() -> None:
    settings = SimulationSettings(group=GROUP, members=(A, B, C), seed=3, mode="single-primary")
    model = GroupModel(settings)
    for member in (A, B):
        for start in SPANS[:2]:
            _assert_same_as_per_second(model, member, start, 200)


def test_bulk_equals_the_per_second_path_through_stops_and_leaving_the_view() -> None:
    model = _scripted(
        ScriptEvent(T0 + 5, A, "applier_stop", duration_s=20),
        ScriptEvent(T0 + 10, B, "commit", count=10),
        ScriptEvent(T0 + 40, A, "set_state", state="OFFLINE", duration_s=30),
        ScriptEvent(T0 + 50, B, "commit", count=7),
        ScriptEvent(T0 + 90, A, "commit", count=3),
        applier_capacity=2.0,
    )
    for member in (A, B):
        _assert_same_as_per_second(model, member, T0 - 5, 130)


def _scripted(*events: ScriptEvent, **kw: Any) -> GroupModel:
    return GroupModel(
        SimulationSettings(group=GROUP, members=(A, B), scripted=True, script=events, **kw)
    )


def test_backlogged_applier_by_hand() -> None:
    # B commits 10 at T0 + 10 (the p-th at +p ms); A applies 2 a second from then
    model = _scripted(ScriptEvent(T0 + 10, B, "commit", count=10), applier_capacity=2.0)
    rows = _bulk(model, A, T0 + 9, 6)
    queue_lag, apply_time = 1_050 / 1e6, 400 / 1e6
    # (replication, queue, apply lag, apply time, clock offset)
    assert rows[0] == [0.0, None, None, None, 0.0]  # nothing ever queued
    # T0 + 10: 2nd applied (commit +1 ms, starts 1 ms + 50 µs + 100 µs later), 3rd (+2 ms) applying
    assert rows[1] == [-2_000 / 1e6, queue_lag, 1_550 / 1e6, apply_time, 0.0]
    # T0 + 12: the 6th (+5 ms) started at +5 ms, 2nd of the second's 2; the 7th (+6 ms) applying
    assert rows[3] == [(2 * US - 6_000) / 1e6, queue_lag, (2 * US + 400) / 1e6, apply_time, 0.0]
    # T0 + 14: the 10th (+9 ms) applied at +5 ms: the queue is empty
    assert rows[5] == [0.0, queue_lag, (4 * US + 5_000 + 400 - 9_000) / 1e6, apply_time, 0.0]


def test_stopped_applier_and_offline_member_by_hand() -> None:
    model = _scripted(
        ScriptEvent(T0 + 5, A, "applier_stop", duration_s=20),
        ScriptEvent(T0 + 10, B, "commit", count=10),
        ScriptEvent(T0 + 30, A, "set_state", state="OFFLINE", duration_s=10),
    )
    stopped, resumed, offline = (_bulk(model, A, T0 + s, 1)[0] for s in (15, 25, 35))
    assert stopped == [None, 1_050 / 1e6, None, None, 0.0]  # applier off: no replication lag
    tenth = 9_000  # µs after T0 + 10; all ten applied in T0 + 25, the 10th at +9 ms
    assert resumed == [0.0, 1_050 / 1e6, (15 * US + 9_000 + 400 - tenth) / 1e6, 400 / 1e6, 0.0]
    assert offline == [None] * 5


def test_empty_span_and_bad_arguments() -> None:
    model = _scripted()
    assert all(len(v) == 0 for v in model.lag_history(A, T0, 0).values())
    with pytest.raises(ValueError, match="n_seconds"):
        model.lag_history(A, T0, -1)
    with pytest.raises(ValueError, match="member_id"):
        model.lag_history(C, T0, 1)


def test_null_figures_are_nan() -> None:
    model = _scripted(ScriptEvent(T0 + 10, B, "commit", count=1))
    columns = model.lag_history(B, T0, 20)  # B's own commit never enters its stream
    assert math.isnan(columns["queue_lag_seconds"][15])
    assert columns["replication_lag_seconds"][15] == 0.0
