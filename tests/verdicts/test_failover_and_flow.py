"""Failover readiness and flow control on the ground-truth scenarios (verdict_scenarios).

Worked out by hand from each scenario's settings, on every member's daemon:

- A writer proposes 20 tx/s x 3 in the hot hours 10 and 11 (x 0.85-1.15 a
  day, x 0.75-1.25 an hour): a member receives at most 2 x 60 x 1.44 = 172 tx/s
  from its two peers. Members apply up to 400 tx/s (the healthy groups: the
  model's 1.25 x the most its writing peers send in the busiest hour, 1.25 x
  172 = 216 tx/s in multi-primary, 1.25 x 86 = 108 in single-primary, the
  seconds' uneven arrivals keep a few tens of transactions in flight; the
  lying member's group 150, a few hundred in flight -- seconds at most to
  apply, though under the load a steady queue may "never" shrink), the slow
  one (db3) 60 tx/s: every normal member is FAILOVER_READY. The primary of a
  single-primary group applies nothing (its queue is 0: 0 s).
- The slow member receives 2 x 60 x 0.64 >= 76 tx/s in a hot hour, more than
  its 60: after the hot hours 10 and 11 its queue holds two hours' excess, 16
  tx/s x 7,200 s at least -- over MySQL's default applier threshold of 25,000
  (a bottleneck) -- and it applies flat out, its capacity 60 tx/s exactly (the
  best rate of its minute), so FAILOVER_SECONDS = queue / 60, more than the
  60 s limit: not ready. Under the load it never catches up ("never at this
  rate": 76 in, 60 out) -- no alarm by itself.
- At the default thresholds a hold grants at least int(int(0.05 x 25,000) x 0.9)
  = 1,125 a period, / 3 writers = 375 per writer; each writer commits at most
  60 x 1.44 = 86 a second: the quota is active (THROTTLING 1), no writer ever
  reaches it (WRITERS_HELD 0) and no second is charged as held.
- At an applier threshold of 1,000 the floor is int(int(0.05 x 1,000) x 0.9) = 45,
  / 3 = 15 per writer, under what each writer commits: writers are held while
  db3's queue is over 1,000, released when it drops under; db3 is charged held
  seconds, nobody else; its queue stays near the threshold, so applying it
  takes about 1,000 / 60 = 17 s: failover-ready.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from grstats.core.explain import commit_path_text
from tests.fixtures.verdict_scenarios import (
    HEALTHY,
    LOW_THRESHOLD,
    M1,
    M2,
    M3,
    MEMBERS,
    SCENARIOS,
    SLOW_CAPACITY,
    run,
)

FLOW = "grstats_flow_control"
LIMIT_S = 60.0  # failover_catch_up_limit


def _flow(name: str, viewer: str) -> dict[str, dict[str, Any]]:
    return run(name).table(viewer, FLOW)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("viewer", MEMBERS)
def test_every_normal_member_is_failover_ready(name: str, viewer: str) -> None:
    # a member that keeps up: a few transactions queued at 400 tx/s, well under 60 s; the
    # slow member, the one whose applier is stopped, and the one away are the exceptions
    exceptions = {
        "slow_applier_default_thresholds": {M3},
        "purged_binary_logs": {M3},  # applier stopped: it applies nothing at all
    }.get(name, set())
    for member, row in _flow(name, viewer).items():
        if member in exceptions or member not in MEMBERS:
            continue
        assert row["FAILOVER_READY"] == 1, (member, row)
        assert row["FAILOVER_SECONDS"] is not None and row["FAILOVER_SECONDS"] < LIMIT_S


@pytest.mark.parametrize("name", HEALTHY)
@pytest.mark.parametrize("viewer", MEMBERS)
def test_a_healthy_group_has_no_bottleneck_no_quota_and_no_held_writer(
    name: str, viewer: str
) -> None:
    for member, row in _flow(name, viewer).items():
        assert row["BOTTLENECK"] == "", member
        assert row["THROTTLING"] == 0 and row["WRITERS_HELD"] == 0
        assert row["THROTTLED_SECONDS"] == 0.0


@pytest.mark.parametrize("viewer", MEMBERS)
def test_slow_applier_at_default_thresholds_is_not_ready_and_holds_nobody(viewer: str) -> None:
    rows = _flow("slow_applier_default_thresholds", viewer)
    slow = rows[M3]
    assert slow["BOTTLENECK"] == "applier"
    assert slow["APPLIER_QUEUE"] > 16 * 7200  # two hot hours' excess at least
    assert slow["APPLY_CAPACITY"] == SLOW_CAPACITY
    assert slow["FAILOVER_SECONDS"] == slow["APPLIER_QUEUE"] / SLOW_CAPACITY
    assert slow["FAILOVER_READY"] == 0
    assert slow["CATCH_UP"] == "never at this rate"
    assert math.isinf(slow["CATCH_UP_ETA_SECONDS"])
    for member in MEMBERS:
        row = rows[member]
        # the quota is active for everyone; nobody's commits reach it
        assert row["THROTTLING"] == 1 and row["WRITERS_HELD"] == 0
        assert row["THROTTLED_SECONDS"] == 0.0
        assert row["GROUP_QUOTA"] >= 375
    assert rows[M1]["FAILOVER_READY"] == rows[M2]["FAILOVER_READY"] == 1


@pytest.mark.parametrize("viewer", MEMBERS)
def test_slow_applier_at_low_thresholds_holds_the_writers_and_stays_ready(viewer: str) -> None:
    rows = _flow("slow_applier_low_thresholds", viewer)
    slow = rows[M3]
    assert slow["THROTTLED_SECONDS"] > 0  # writers held because of it, for some seconds
    assert rows[M1]["THROTTLED_SECONDS"] == rows[M2]["THROTTLED_SECONDS"] == 0.0
    assert slow["APPLIER_QUEUE"] < 2 * LOW_THRESHOLD  # contained near the threshold
    assert slow["FAILOVER_SECONDS"] == slow["APPLIER_QUEUE"] / SLOW_CAPACITY
    assert slow["FAILOVER_READY"] == 1


def test_the_replay_agrees_on_every_daemon() -> None:
    # one replay of the same messages: the same judgment everywhere (timing aside)
    for name in ("slow_applier_default_thresholds", "slow_applier_low_thresholds"):
        seen = {v: _flow(name, v)[M3] for v in MEMBERS}
        assert {r["BOTTLENECK"] for r in seen.values()} == {"applier"}
        assert {r["FAILOVER_READY"] for r in seen.values()} == ({0} if "default" in name else {1})


@pytest.mark.parametrize("name", HEALTHY)
def test_explain_names_no_cost_on_a_healthy_group(name: str) -> None:
    group = run(name)
    rows = list(group.table(M1, "grstats_member_commit_path").values())
    text = commit_path_text(rows, group.labels(M1))
    assert "check the network" not in text and "check:" in text
    assert text.count("nothing to check") == 3
