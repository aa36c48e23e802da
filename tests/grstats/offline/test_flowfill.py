"""`grstats simulate`'s group quota column equals a replay that steps every second; the
failover window's maximum equals each sliding window's.

`FlowFill.day` hands the members' messages to MySQL's algorithm only on the
seconds whose step counts holds, and skips the quiet stretches in one jump
(their steps only advance the step number). The reference here is the
daemon's continuous replay written plainly: every second, every member's
previous message received, then one `FlowControl.step`. Three members over two
days: throttling episodes of the applier and the certifier queues, one across
the day boundary (the first day's last messages carried), quiet hours between.
"""

from __future__ import annotations

import numpy as np
import pytest

from grstats.core.flowcontrol import FlowControl, FlowControlSettings, FlowEntry
from grstats.offline.flowfill import (
    APPLIED,
    APPLY,
    AT,
    CERT,
    CERTIFIED,
    LOCAL,
    MODE,
    FlowFill,
    window_max,
)

N = 1500  # seconds a day
T = 1_795_424_400
MEMBERS = ("a", "b", "c")


def _columns() -> dict[str, dict[str, np.ndarray]]:
    """Both days' rows of every member, one row per second (2 N)."""
    i = np.arange(2 * N, dtype=np.int64)
    apply_b = np.zeros(2 * N, dtype=np.int64)
    apply_b[200:260] = 500
    apply_b[1400:1700] = 500  # across the day boundary
    cert_c = np.zeros(2 * N, dtype=np.int64)
    cert_c[900:905] = 300
    local = {"a": 5, "b": 3, "c": 0}
    return {
        m: {
            CERT: cert_c if m == "c" else np.zeros(2 * N, dtype=np.int64),
            APPLY: apply_b if m == "b" else np.zeros(2 * N, dtype=np.int64),
            CERTIFIED: 10 * (i + 1),
            APPLIED: 9 * (i + 1),
            LOCAL: local[m] * (i + 1),
            MODE: np.ones(2 * N, dtype=np.int64),
            AT: (T + i) * 1_000_000,
        }
        for m in MEMBERS
    }


def _continuous(
    settings: FlowControlSettings, cols: dict[str, dict[str, np.ndarray]]
) -> tuple[list[int], int]:
    """(the quota after each second's step, the step number at the end)."""
    fc = FlowControl(settings)
    quota = []
    for t in range(2 * N):
        if t > 0:
            for m in MEMBERS:
                c, r = cols[m], t - 1
                prev = {k: int(c[k][r - 1]) if r > 0 else 0 for k in (CERTIFIED, APPLIED, LOCAL)}
                fc.receive(
                    m,
                    FlowEntry(
                        waiting_certification=int(c[CERT][r]),
                        waiting_apply=int(c[APPLY][r]),
                        delta_certified=int(c[CERTIFIED][r]) - prev[CERTIFIED],
                        delta_applied=int(c[APPLIED][r]) - prev[APPLIED],
                        delta_local=int(c[LOCAL][r]) - prev[LOCAL],
                        mode=int(c[MODE][r]),
                    ),
                )
        fc.step(0)
        quota.append(fc.quota)
    return quota, fc.step_number


@pytest.mark.parametrize("max_quota", [0, 40])
def test_the_group_quota_equals_a_replay_stepping_every_second(max_quota: int) -> None:
    settings = FlowControlSettings(
        certifier_threshold=100, applier_threshold=100, max_quota=max_quota
    )
    cols = _columns()
    fill = FlowFill(settings)
    got: list[int] = []
    for day in range(2):
        inputs = {m: {k: v[day * N : (day + 1) * N] for k, v in c.items()} for m, c in cols.items()}
        got += fill.day(inputs)["a"]["fc_group_quota"].to_pylist()
    expected, steps = _continuous(settings, cols)
    assert got == expected
    assert fill._fc.step_number == steps  # MySQL's m_stamp: what entries expire by
    throttled = [t for t, q in enumerate(expected) if q > 0]
    assert throttled and throttled[-1] > N  # episodes on both days
    if not max_quota:
        assert expected.count(0) > N  # long quiet stretches: the steps skipped at once


@pytest.mark.parametrize(
    ("n", "width"), [(1, 1), (7, 3), (59, 60), (60, 60), (61, 60), (86_459, 60)]
)
def test_window_max_equals_the_maximum_of_each_sliding_window(n: int, width: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.normal(size=n)
    values[rng.random(n) < 0.3] = -1.0  # the failover's stand-in for a missing rate
    expected = (
        np.lib.stride_tricks.sliding_window_view(values, width).max(axis=1)
        if n >= width
        else np.empty(0)
    )
    assert np.array_equal(window_max(values, width), expected)
