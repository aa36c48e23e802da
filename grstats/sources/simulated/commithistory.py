"""The history's commit-path columns of a simulated member, in bulk (`grstats simulate`).

Strategy / invariants
---------------------
`commitpath.commit_path_at` gives one member's Gr_* counters at one second;
a day of 1 Hz history calls for them column-wise. The counters follow from
two running totals -- the member's consensus rounds (its local proposals
plus one control round per second since the epoch) and the seconds since
the epoch -- so they are computed with numpy from those, by the rules of
commitpath.py: every round takes `round_us` of the member's links, data and
control messages take their round's time, certification GC runs every
`GC_EVERY_S` seconds for `GC_RUN_US`, no consistency waits or flow-control
holds. A test holds the result equal, second by second, to
`core.rows.commit_path_history(commit_path_at(...))`.

A slow link for a time only (`windows`): the settings' `slow_link_member`
has its slow link in those [start, end) Unix seconds and the normal one
otherwise; a round takes the time of the link of the second it ends in, and
the counters stay cumulative (the slow rounds' extra time stays in them
after the window). Without windows the link is as the settings say, always.

Rows keep the figures as a daemon does: on the first second of each
`COMMIT_PATH_HISTORY_EVERY_S`-second bucket (`core.rows.commit_path_due`),
masked (NULL) on the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from grstats.core.columns import COMMIT_PATH_HISTORY_EVERY_S
from grstats.sources.simulated.commitpath import (
    GC_EVERY_S,
    GC_RUN_US,
    round_us,
    shows_commit_path,
)
from grstats.sources.simulated.settings import SimulationSettings

__all__ = ["commit_path_columns", "kept_rows"]

I64 = npt.NDArray[np.int64]


def kept_rows(secs: I64) -> npt.NDArray[np.bool_]:
    """Which of 1 Hz rows at Unix seconds `secs` keep the commit path (the others: NULL)."""
    kept: npt.NDArray[np.bool_] = secs % COMMIT_PATH_HISTORY_EVERY_S == 0
    return kept


def commit_path_columns(
    settings: SimulationSettings,
    member: str,
    secs: I64,
    local_proposed: I64,
    *,
    windows: tuple[tuple[int, int], ...] | None = None,
    local_at: Callable[[int], int] | None = None,
) -> dict[str, I64]:
    """The member's cp_* history columns (records.COMMIT_PATH_HISTORY_COLUMNS).

    Args:
        settings: the group's settings.
        member: the member's UUID (lower case).
        secs: the rows' Unix seconds, ascending.
        local_proposed: its COUNT_TRANSACTIONS_LOCAL_PROPOSED at each of them.
        windows: [start, end) Unix seconds of the settings' slow link; None: the
            link as the settings say, all the time.
        local_at: its LOCAL_PROPOSED at any second (a window's edges may lie
            outside `secs`); required with windows.

    Returns:
        History column name -> int64 array, one value per second; no columns
        (they stay NULL) when the members' version shows no Gr_* counters
        (before 8.1.0, commitpath.shows_commit_path).

    Raises:
        ValueError: windows without local_at, or arrays of different lengths.
    """
    if len(secs) != len(local_proposed):
        raise ValueError("secs and local_proposed: different lengths")
    if not shows_commit_path(settings):
        return {}
    elapsed = np.maximum(secs - settings.epoch_s, 0)
    rounds = local_proposed + elapsed
    gc_runs = elapsed // GC_EVERY_S
    if windows is None:
        time_us = rounds * round_us(settings, member)
    else:
        if local_at is None:
            raise ValueError("local_at: required with windows")
        normal = dataclasses.replace(settings, slow_link_member=None)
        fast = round_us(normal, member)
        extra = round_us(settings, member) - fast
        time_us = rounds * fast
        proposed_at = local_at

        def rounds_at(s: int) -> int:
            return proposed_at(s) + max(0, s - settings.epoch_s)

        for start, end in windows:
            inside = np.where(secs < end, rounds, rounds_at(end - 1)) - rounds_at(start - 1)
            time_us = time_us + extra * np.where(secs >= start, inside, 0)
    zeros = np.zeros(len(secs), dtype=np.int64)
    return {
        "cp_consensus_count": rounds,
        "cp_consensus_us": time_us,
        "cp_round_trip_count": rounds,  # a data message per proposal, a control one a second
        "cp_round_trip_us": time_us,  # each message's round trip is its round's time
        "cp_certification_gc_count": gc_runs,
        "cp_certification_gc_us": gc_runs * GC_RUN_US,
        "cp_before_begin_count": zeros,
        "cp_before_begin_us": zeros,
        "cp_after_termination_count": zeros,
        "cp_after_termination_us": zeros,
        "cp_after_sync_count": zeros,
        "cp_after_sync_us": zeros,
        "cp_flow_control_count": zeros,
        "cp_flow_control_us": zeros,
    }
