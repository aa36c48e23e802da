"""Replay defence: the seq and incarnation rules on plain values (expected values by hand)."""

from __future__ import annotations

from grstats.core.admission import Ignored
from grstats.core.replay_defence import ReplayDefence, Stale, retired_incarnations
from protocol import Envelope, MemberInfo

PERIOD_US = 1_000_000
UNREACHABLE_US = 5_000_000
T0 = 1_700_000_000_000_000
MEMBER = MemberInfo("m1", "h1", 3306, "ONLINE", "SECONDARY", "8.4.0", "g1")


def env(incarnation: int, seq: int) -> Envelope:
    return Envelope("g", MEMBER, "1:1", incarnation, seq, T0, b"")


def judge(last: Envelope, new: Envelope, elapsed_us: int, *, retained: bool = False) -> object:
    return ReplayDefence(PERIOD_US, UNREACHABLE_US).judge(
        last, T0, retired_incarnations(), new, T0 + elapsed_us, retained=retained
    )


def test_a_growing_seq_is_news() -> None:
    assert judge(env(7, 10), env(7, 11), 1_000_000) is None


def test_an_old_seq_is_stale_and_a_retained_copy_of_it_ignored() -> None:
    assert judge(env(7, 10), env(7, 10), 1_000_000) == Stale("seq 10 <= 10")
    assert judge(env(7, 10), env(7, 9), 1_000_000, retained=True) == Ignored("retained_seen")


def test_a_seq_may_jump_two_per_period_elapsed_plus_64() -> None:
    # 3 s since the last: 2 * 3 + 64 = 70 ahead at most
    assert judge(env(7, 10), env(7, 80), 3_000_000) is None
    assert judge(env(7, 10), env(7, 81), 3_000_000) == Stale("seq jumps 71 > 70")


def test_a_new_incarnation_is_a_restart() -> None:
    assert judge(env(7, 10), env(8, 1), 1_000_000) is None


def test_a_retired_incarnation_is_stale_while_its_successor_speaks() -> None:
    retired = retired_incarnations()
    retired.append((7, 10))
    got = ReplayDefence(PERIOD_US, UNREACHABLE_US).judge(
        env(8, 3), T0, retired, env(7, 11), T0 + UNREACHABLE_US, retained=False
    )
    assert got == Stale("retired incarnation")
    assert list(retired) == [(7, 10)]


def test_a_retired_incarnation_takes_back_a_successor_silent_past_the_window() -> None:
    retired = retired_incarnations()
    retired.append((7, 10))
    defence = ReplayDefence(PERIOD_US, UNREACHABLE_US)
    # its own old seq stays stale even then
    old = defence.judge(env(8, 3), T0, retired, env(7, 10), T0 + UNREACHABLE_US + 1, retained=False)
    assert old == Stale("retired incarnation")
    got = defence.judge(env(8, 3), T0, retired, env(7, 11), T0 + UNREACHABLE_US + 1, retained=False)
    assert got is None
    assert list(retired) == []  # the forged one does not get to retire it again


def test_eight_retired_incarnations_are_remembered() -> None:
    retired = retired_incarnations()
    for inc in range(1, 10):
        retired.append((inc, 1))
    assert [inc for inc, _ in retired] == list(range(2, 10))
