"""The simulated members' commit-path history columns in bulk (`grstats simulate`).

Without a window they equal, second by second, what a daemon records from the
live model (`commit_path_history(commit_path_at(...))`); with a slow-link window
the figures are worked out by hand from the links.
"""

from __future__ import annotations

import numpy as np
import pytest

from grstats.core.rows import commit_path_history
from grstats.sources.simulated.commithistory import commit_path_columns, kept_rows
from grstats.sources.simulated.commitpath import commit_path_at
from grstats.sources.simulated.settings import SimulationSettings

SETTINGS = SimulationSettings(
    slow_link_member="33333333-3333-3333-3333-333333333333", link_latency_ms=0.5, slow_link_ms=25
)
SLOW, FAST = SETTINGS.members[2], SETTINGS.members[0]
E = SETTINGS.epoch_s


def _proposed(secs: np.ndarray) -> np.ndarray:
    return 2 * (secs - E)  # two local proposals a second since the epoch


@pytest.mark.parametrize("member", [SLOW, FAST])
def test_bulk_columns_equal_the_live_model_second_by_second(member: str) -> None:
    secs = np.array([E - 5, E, E + 1, E + 59, E + 60, E + 61, E + 3_601], dtype=np.int64)
    local = np.maximum(_proposed(secs), 0) + np.array([0, 0, 1, 1, 4, 4, 9])
    bulk = commit_path_columns(SETTINGS, member, secs, local)
    for i, s in enumerate(secs.tolist()):
        live = commit_path_history(commit_path_at(SETTINGS, member, s, int(local[i])))
        assert {k: int(v[i]) for k, v in bulk.items()} == live, s


def test_a_slow_link_window_slows_only_the_rounds_inside_it() -> None:
    secs = np.arange(E + 100, E + 110, dtype=np.int64)

    def local_at(s: int) -> int:
        return 2 * (s - E)

    figures = commit_path_columns(
        SETTINGS,
        SLOW,
        secs,
        _proposed(secs),
        windows=((E + 103, E + 106),),
        local_at=local_at,
    )
    # rounds(s) = 2 (s - E) proposals + (s - E) control rounds = 3 (s - E).
    # A round: 2 x (0.5 + 0.5) ms = 2 000 µs on the normal links; with the slow link
    # the member's nearest peer is 2 x (25 + 0.5) ms = 51 000 µs away.
    # Before the window: 2 000 x rounds; inside it 51 000 per round; after it the
    # window's 9 slow rounds stay in the total at 51 000 each.
    expected = [
        2_000 * 300,
        2_000 * 303,
        2_000 * 306,  # E + 102
        2_000 * 306 + 51_000 * 3,  # E + 103: the first slow second
        2_000 * 306 + 51_000 * 6,
        2_000 * 306 + 51_000 * 9,  # E + 105: the last one
        2_000 * 309 + 51_000 * 9,  # E + 106: normal again (318 rounds, 9 of them slow)
        2_000 * 312 + 51_000 * 9,
        2_000 * 315 + 51_000 * 9,
        2_000 * 318 + 51_000 * 9,
    ]
    assert figures["cp_consensus_us"].tolist() == expected
    assert figures["cp_consensus_count"].tolist() == [3 * k for k in range(100, 110)]
    assert figures["cp_round_trip_us"].tolist() == expected


def test_a_window_does_not_slow_a_member_with_a_normal_link() -> None:
    secs = np.arange(E + 100, E + 110, dtype=np.int64)
    figures = commit_path_columns(
        SETTINGS,
        FAST,
        secs,
        _proposed(secs),
        windows=((E + 103, E + 106),),
        local_at=lambda s: 2 * (s - E),
    )
    # its nearest peer is the other normal member: 2 000 µs a round, window or not
    assert figures["cp_consensus_us"].tolist() == [2_000 * 3 * k for k in range(100, 110)]


def test_simulated_rows_keep_the_counters_on_the_first_second_of_each_ten() -> None:
    secs = np.arange(E + 5, E + 25, dtype=np.int64)
    assert np.flatnonzero(kept_rows(secs)).tolist() == [5, 15]  # E + 10, E + 20
