"""core.commitjudge: a cost dominates only when abnormal, never on a tie or an idle member.

Costs are seconds per transaction, by hand.
"""

from __future__ import annotations

from grstats.core.commitjudge import BASELINE_STEP_US, Baselines, dominant

MS = 0.001
HEALTHY = {"consensus": 2.0 * MS, "before_begin": 0.0, "flow_control": 0.0}


def test_a_healthy_group_names_no_cost() -> None:
    # 2.0 ms rounds everywhere: consensus is all of every member's overhead, and normal
    assert dominant(HEALTHY, [HEALTHY, HEALTHY], {}) == ""
    assert dominant(HEALTHY, [HEALTHY, HEALTHY], {"consensus": 2.0 * MS}) == ""


def test_a_slow_link_is_abnormal_against_the_others() -> None:
    # 51 ms a round against the others' median of 2 ms: over 2 x 2 ms and 49 ms above it
    slow = {**HEALTHY, "consensus": 51 * MS}
    assert dominant(slow, [HEALTHY, HEALTHY], {"consensus": 51 * MS}) == "consensus"
    # the others stay normal: the slow member is not in their median (2 of 3 are 2 ms)
    assert dominant(HEALTHY, [HEALTHY, slow], {}) == ""


def test_a_new_wait_is_abnormal_against_the_others_zero() -> None:
    # BEFORE waits of 40 ms a transaction where the others wait 0: abnormal
    waits = {**HEALTHY, "consensus": 20 * MS, "before_begin": 40 * MS}
    others = [{**HEALTHY, "consensus": 20 * MS}] * 2
    assert dominant(waits, others, {}) == "before_begin"


def test_a_small_excess_is_noise() -> None:
    # 0.9 ms against 0.3 ms: three times, but 0.6 ms above it (under the 1 ms floor)
    mine = {**HEALTHY, "flow_control": 0.9 * MS}
    assert dominant(mine, [{**HEALTHY, "flow_control": 0.3 * MS}], {}) == ""


def test_a_tie_names_nobody() -> None:
    # both waits abnormal, 40 and 39 ms (within 5 %): no single cost dominates
    mine = {"consensus": 2 * MS, "before_begin": 40 * MS, "after_termination": 39 * MS}
    theirs = {"consensus": 2 * MS, "before_begin": 0.0, "after_termination": 0.0}
    assert dominant(mine, [theirs], {}) == ""
    mine["after_termination"] = 30 * MS  # 30 < 0.95 x 40: before_begin dominates
    assert dominant(mine, [theirs], {}) == "before_begin"


def test_an_idle_member_and_a_lone_one_without_history_name_nothing() -> None:
    assert dominant(None, [HEALTHY], {}) == ""
    assert dominant({"consensus": 51 * MS}, [], {}) == ""


def test_the_own_baseline_is_the_median_of_a_period_a_minute() -> None:
    b = Baselines()
    b.take("m", {"consensus": 2 * MS}, 0)
    b.take("m", {"consensus": 50 * MS}, BASELINE_STEP_US - 1)  # under a minute: not taken
    b.take("m", {"consensus": 3 * MS}, BASELINE_STEP_US)
    assert b.of("m") == {"consensus": 2.5 * MS}
    # against its own hour, a round that grew to 10 ms is abnormal, alone in the group
    assert dominant({"consensus": 10 * MS}, [], b.of("m")) == "consensus"
    b.keep(set())
    assert b.of("m") == {}
