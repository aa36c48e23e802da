"""core.flowcontrol's predicates and quota formula, written once for every caller.

Expected values by hand from PROTOCOL.md section 9: the floor is 5 % of the
smaller threshold (min_recovery_quota when no member is over the applier
threshold, min_quota over both), the quota is the capacity less hold_percent,
capped at max_quota, split among the writers (or member_quota_percent of it).
"""

from __future__ import annotations

import numpy as np
import pytest

from grstats.core.flowcontrol import (
    FlowControl,
    FlowControlSettings,
    FlowEntry,
    certifier_bound,
    holds,
    smallest_quota,
)


def test_holds_is_elementwise_over_columns_as_over_one_message() -> None:
    s = FlowControlSettings(certifier_threshold=10, applier_threshold=100)
    mode = np.array([1, 1, 1, 0])
    wc = np.array([11, 10, 0, 50])
    wa = np.array([0, 100, 101, 500])
    assert holds(mode, wc, wa, s).tolist() == [True, False, True, False]
    assert holds(1, 11, 0, s) and not holds(0, 11, 0, s)


def test_the_certifier_is_the_bottleneck_only_when_it_is_over_by_at_least_as_much() -> None:
    cert = np.array([5, 5, 0, -3])
    apply_ = np.array([5, 6, 9, -1])
    assert certifier_bound(cert, apply_).tolist() == [True, False, False, False]


@pytest.mark.parametrize(
    ("settings", "members", "expected"),
    [
        (FlowControlSettings(), 3, 375),  # floor 1 250, x 0.9 = 1 125, / 3
        (FlowControlSettings(), 1, 1125),
        (FlowControlSettings(min_recovery_quota=100), 3, 30),  # min(1 250, 100) x 0.9 / 3
        (FlowControlSettings(min_quota=600, min_recovery_quota=100), 3, 180),  # 540 / 3
        (FlowControlSettings(max_quota=50), 3, 16),  # capped at 50, / 3
        (FlowControlSettings(member_quota_percent=50), 3, 562),  # 1 125 x 0.5
        (FlowControlSettings(certifier_threshold=10, applier_threshold=10), 3, 1),  # at least 1
    ],
)
def test_smallest_quota_by_hand(settings: FlowControlSettings, members: int, expected: int) -> None:
    assert smallest_quota(settings, members) == expected


def test_the_smallest_quota_is_what_a_hold_on_slow_writers_gives() -> None:
    fc = FlowControl(FlowControlSettings(), step_number=20)  # past the first steps (trap 17)
    for m in ("a", "b", "c"):  # every member a writer, over the applier threshold, barely applying
        fc.receive(m, FlowEntry(0, 30_000, 1, 1, 5))
    assert fc.step().quota == smallest_quota(FlowControlSettings(), 3)
