"""The simulated members' commit-path counters: by hand from the modelled links."""

from __future__ import annotations

import pytest

from grstats.sources.simulated.commitpath import commit_path_at, communication_of, round_us
from grstats.sources.simulated.settings import SimulationSettings

M1, M2, M3 = (f"{d * 8}-{d * 4}-{d * 4}-{d * 4}-{d * 12}" for d in "123")
SLOW = SimulationSettings(members=(M1, M2, M3), slow_link_member=M3, slow_link_ms=25.0)


def test_a_round_waits_for_the_majoritys_slowest_round_trip() -> None:
    # M1: to M2 2 x (0.5 + 0.5) = 2 ms, to M3 2 x (0.5 + 25) = 51 ms; one peer is a majority
    assert round_us(SLOW, M1) == 2000
    assert round_us(SLOW, M2) == 2000
    # M3: both peers 51 ms away
    assert round_us(SLOW, M3) == 51_000


def test_the_counters_follow_the_proposals_and_the_seconds() -> None:
    s = SLOW.epoch_s + 120  # two minutes after GR started
    got = commit_path_at(SLOW, M3, s, local_proposals=1000)
    assert got.consensus_proposals == 1120  # 1000 transactions + 120 control messages
    assert got.consensus_time_us == 1120 * 51_000
    assert (got.data_messages, got.data_rtt_us) == (1000, 51_000_000)
    assert (got.control_messages, got.control_rtt_us) == (120, 6_120_000)
    assert (got.gc_runs, got.gc_time_us) == (2, 40_000)
    assert (got.before_begin, got.after_termination, got.after_sync) == (0, 0, 0)
    assert got.last_consensus_end_us == s * 1_000_000


def test_a_slow_link_must_be_a_member() -> None:
    with pytest.raises(ValueError, match="slow_link_member"):
        SimulationSettings(members=(M1, M2), slow_link_member=M3)


def test_every_member_leads_the_consensus_rounds_by_default() -> None:
    got = communication_of(SLOW)
    assert got.leaders_actual == got.leaders_preferred == (M1, M2, M3)
    assert (got.write_concurrency, got.protocol_version, got.single_leader_capable) == (
        10,
        "8.0.27",
        False,
    )
