"""The certifier's rounds computed an hour at a time equal the rule applied round by round.

`Certification.stable_at` fills its cache with a whole hour of rounds in bulk
(`_hour_rounds`); `round_at` is the rule as the module states it, member by
member. On fresh models (no shared cache) every round of three hours must be
the same: a plain group, single-primary, a member leaving and rejoining the
view, and an applier stopped for 90 minutes -- whose queue reaches back past
the hour, so that a stable point falls in an earlier hour than its round.
"""

from __future__ import annotations

import pytest

from grstats.sources.simulated import GroupModel, ScriptEvent, SimulationSettings
from grstats.sources.simulated.certifier import GC_PERIOD_S
from tests.fixtures.simulated_group import HOURS, T0, B, C, multi_primary, single_primary

HOUR = 3600
SCENARIOS = {
    "multi-primary": multi_primary,
    "single-primary": single_primary,
    "member out of the view": lambda: multi_primary(
        script=(ScriptEvent(T0 + 1800, C, "set_state", state="OFFLINE", duration_s=3600),)
    ),
    "applier stopped 90 min": lambda: multi_primary(
        script=(ScriptEvent(T0 + 600, B, "applier_stop", duration_s=5400),)
    ),
}


def _rounds(settings: SimulationSettings, bulk: bool) -> list[tuple[int, int, str]]:
    cert = GroupModel(settings)._cert  # the model's certifier: the rounds' only owner
    minutes = range(T0, T0 + HOURS * HOUR, GC_PERIOD_S)
    return [cert.stable_at(x) if bulk else cert.round_at(x) for x in minutes]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_rounds_of_an_hour_at_once_equal_the_rule_round_by_round(scenario: str) -> None:
    settings = SCENARIOS[scenario]()
    bulk, one_by_one = _rounds(settings, True), _rounds(settings, False)
    assert bulk == one_by_one
    assert len({text for _, _, text in bulk}) > 1  # the stable set moves
    if scenario == "applier stopped 90 min":  # held back past its round's hour
        minutes = range(T0, T0 + HOURS * HOUR, GC_PERIOD_S)
        assert any(x - 1 - point > HOUR for x, (point, _, _) in zip(minutes, bulk, strict=True))
