"""The simulated members' commit-path counters: by hand from the modelled links."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from grstats.core.explain import commit_path_verdicts
from grstats.sources.simulated import GroupModel, SimulatedSource
from grstats.sources.simulated.commitpath import (
    commit_path_at,
    communication_of,
    farthest_us,
    round_us,
)
from grstats.sources.simulated.settings import ScriptEvent, SimulationSettings
from tests.fixtures.member_tables import make_tables

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


# -- a scripted consistency level ----------------------------------------------


def _consistent(member: str, level: str) -> SimulationSettings:
    window = ScriptEvent(SLOW.epoch_s + 60, member, "consistency", duration_s=30.0, level=level)
    return dataclasses.replace(SLOW, script=(window,))


def _ten_a_second(settings: SimulationSettings) -> Callable[[int], int]:
    return lambda s: 10 * (s - settings.epoch_s)


def test_before_and_after_waits_follow_the_windows_transactions() -> None:
    settings = _consistent(M3, "BEFORE_AND_AFTER")
    s = settings.epoch_s + 120
    got = commit_path_at(settings, M3, s, 1200, _ten_a_second(settings))
    # 10 tx/s for the 30 s window: 300 waits of each kind
    assert (got.before_begin, got.after_termination) == (300, 300)
    # BEFORE: two of M3's 51 ms rounds; AFTER: two round trips to its farthest peer, 51 ms
    assert got.before_begin_us == 300 * 2 * 51_000
    assert got.after_termination_us == 300 * 2 * 51_000
    assert (got.after_sync, got.after_sync_us) == (0, 0)


def test_after_waits_for_the_farthest_peer_not_a_majority() -> None:
    settings = _consistent(M1, "AFTER")
    mid = settings.epoch_s + 75  # half-way through the window
    got = commit_path_at(settings, M1, mid, 750, _ten_a_second(settings))
    assert (got.before_begin, got.after_termination) == (0, 150)
    # M1's rounds take 2 ms (M2 is a majority with it) but every member must prepare: M3
    assert farthest_us(settings, M1) == 51_000
    assert got.after_termination_us == 150 * 2 * 51_000
    # other members' sessions are not scripted
    other = commit_path_at(settings, M2, mid, 750, _ten_a_second(settings))
    assert (other.before_begin, other.after_termination) == (0, 0)


def test_a_consistency_level_must_be_one_of_mysqls() -> None:
    with pytest.raises(ValueError, match="level 'EVENTUALLY'"):
        _consistent(M1, "EVENTUALLY")


async def test_the_simulated_source_and_core_name_the_consistency_wait_and_level() -> None:
    settings = dataclasses.replace(_consistent(M1, "BEFORE"), link_latency_ms=5.0)
    model = GroupModel(settings)
    source = SimulatedSource(model, M1)
    tables = make_tables()
    try:
        for second in (70, 80):  # inside the window
            now_us = (settings.epoch_s + second) * 1_000_000
            tables.set_local(await source.sample(now_us), incarnation=1, seq=second)
    finally:
        await source.close()
    (row,) = tables.snapshot(now_us).table("grstats_member_commit_path")
    # the member's own transactions over those 10 s, from the model
    at = [
        model.stats_at(M1, (settings.epoch_s + x) * 1_000_000).transactions_local for x in (70, 80)
    ]
    assert row["BEFORE_BEGIN_PER_SECOND"] == pytest.approx((at[1] - at[0]) / 10)
    # each BEFORE wait: two of M1's rounds, 2 x (5 + 5) ms x 2 = 40 ms
    assert row["BEFORE_BEGIN_MEAN_SECONDS"] == pytest.approx(0.040)
    # alone, with no baseline yet: nothing to call it abnormal against (the corpus of
    # tests/verdicts judges it in a group); the advice for it names the level
    assert row["DOMINANT"] == ""
    (verdict,) = commit_path_verdicts([{**row, "DOMINANT": "before_begin"}])
    assert verdict["dominant"] == "before_begin"
    assert str(verdict["check"]).endswith("group_replication_consistency = BEFORE")


async def test_the_source_takes_the_links_again_when_its_models_settings_change() -> None:
    model = GroupModel(SLOW)
    source = SimulatedSource(model, M1)
    now_us = (SLOW.epoch_s + 120) * 1_000_000
    try:
        first = (await source.sample(now_us)).commit_path
        # by hand: M1's round is 2 x (0.5 + 0.5) ms with M2 a majority; then 2 x (4 + 4) ms
        model.settings = dataclasses.replace(SLOW, link_latency_ms=4.0)
        second = (await source.sample(now_us)).commit_path
    finally:
        await source.close()
    assert first is not None and second is not None
    assert first.consensus_proposals == second.consensus_proposals
    assert first.consensus_time_us == first.consensus_proposals * 2_000
    assert second.consensus_time_us == second.consensus_proposals * 16_000
