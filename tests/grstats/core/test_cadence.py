"""A section's cadence at the receiver (core/cadence.py): a burst, then one per gap.

Worked by hand with a gap of 15 s and a burst of 4 (BURST).
"""

from __future__ import annotations

from grstats.core.cadence import BURST, Due, Heard, heard, judge

S = 1_000_000
GAP = 15 * S


def _take(last: Heard | None, seq: int, at_s: float) -> tuple[Due, Heard | None]:
    due = judge(last, 7, seq, int(at_s * S), GAP)
    return due, heard(last, 7, seq, int(at_s * S), GAP) if due is Due.YES else last


def test_a_member_sending_once_per_interval_is_always_due() -> None:
    last = None
    for k in range(10):
        due, last = _take(last, k + 1, 30.0 * k)
        assert due is Due.YES


def test_a_burst_of_four_then_one_per_gap() -> None:
    assert BURST == 4
    last = None
    dues = []
    for k in range(8):  # 8 copies in 0.7 s
        due, last = _take(last, k + 1, 0.1 * k)
        dues.append(due)
    assert dues == [Due.YES] * 4 + [Due.EARLY] * 4
    assert _take(last, 9, 14.0)[0] is Due.EARLY  # the bucket holds 0.93 of a copy
    assert _take(last, 9, 15.5)[0] is Due.YES  # one copy refilled


def test_the_same_or_an_older_seq_is_a_repeat_not_an_extra() -> None:
    _, last = _take(None, 5, 0.0)
    assert judge(last, 7, 5, 1 * S, GAP) is Due.REPEAT  # the gtids topic's copy
    assert judge(last, 7, 4, 1 * S, GAP) is Due.REPEAT  # an older retained copy


def test_a_new_incarnation_is_due_at_once() -> None:
    last = None
    for k in range(6):
        _, last = _take(last, k + 1, 0.0)
    assert judge(last, 7, 7, 0, GAP) is Due.EARLY
    assert judge(last, 8, 1, 0, GAP) is Due.YES  # the member restarted
