"""Flow control of a simulated group, end to end: three `grstats run` daemons on a real
Mosquitto, one slow member, MySQL's QUOTA throttling the simulated writers.

The group is scripted so that every figure is known by hand: from second S0 on,
each of the three members commits R = 100 transactions per second (no
conflicts); the slow member applies C = 60 per second; thresholds T = 1000,
period 1, the other flow-control variables at MySQL's defaults.

Hand calculation (PROTOCOL.md section 9):
- unthrottled, the slow member's queue grows by 2R - C = 140 per second (the
  two other writers' transactions arrive), 140 * (j + 1) at second S0 + j: it
  first exceeds T at second S0 + 7 (1120), and would reach 140 * 60 = 8400 by
  the end of the script;
- the message showing 1120 is received at the next tick and counted as a hold;
  the step at the tick after throttles, so the writers commit unthrottled
  during S0 + 8 too: the queue peaks at 1260, then falls;
- throttled quota: capacity = the slow member's delta applied (60), limited by
  the safe capacity (the smallest positive delta) and floored at 5 % of T
  (50); quota = capacity * 0.9 // 3 writers: 18 after the first hold (safe =
  60), then 15 (safe = the other members' delta applied 2 * 18 = 36 < floor
  50, so 50 * 0.9 // 3); the queue then falls by 60 - 2 * 15 = 30 per second;
- below T the quota is released by 1.5x per step (15, 22, 33, 49, 73, 109:
  the queue changes by 2q - 60 = -30, -16, +6, +38, +86, +158 per second),
  crosses T again at q = 73 from at most T - 60 + 28 and peaks at about
  T + 54 + 158 = 1212 before the next hold bites: every later peak is below
  the first one, so the queue stays <= 1260 (26 % over T) for good;
- so the writers average about C / 2 = 30 proposals per second (the slow
  member applies what the two others commit), far below the unthrottled R.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from grstats.core.lagrows import parse_timestamp
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    M1,
    M2,
    M3,
    STATS,
    DaemonProc,
    daemon_config,
    daemons,
    wait_for,
)

pytestmark = pytest.mark.slow

FLOW = "grstats_flow_control"
PERIOD = 1.0  # publish period = flow-control period: the replay steps once per second
R, C, T = 100, 60, 1000
SCRIPT_S = 60
CROSSING = 7  # second S0 + 7: the queue is 1120 > T (hand calculation above)
PEAK = 1260  # the queue at S0 + 8, the last unthrottled second
THROTTLED_QUOTAS = {15, 18}  # int(50 * 0.9) // 3 and int(60 * 0.9) // 3
QUEUE = "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"
PROPOSED = "COUNT_TRANSACTIONS_LOCAL_PROPOSED"
# A daemon samples once per period at its own phase and steps its replay then, so it
# names the bottleneck at most 2 periods after the crossing second starts (the first
# sample showing it, then the step after the message); this much more is a late tick
# on a loaded machine.
SCHEDULING_S = 0.5


def _configs(broker_port: int, s0: int) -> list[dict[str, Any]]:
    members = [M1, M2, M3]
    script = [
        {"at": s0 + i, "member": m, "action": "commit", "count": R}
        for i in range(SCRIPT_S)
        for m in members
    ]
    simulated = {
        "scripted": True,
        "script": script,
        "epoch": s0,
        "slow_member": M3,
        "slow_capacity": float(C),
    }
    configs = []
    for m in members:
        config = daemon_config(broker_port, m, members, period=PERIOD, simulated=simulated)
        config["flow_control"] = {"certifier_threshold": T, "applier_threshold": T, "period": 1}
        configs.append(config)
    return configs


def _observe(ds: list[DaemonProc], seen: dict[str, Any]) -> None:
    """One poll of every daemon: the slow member's queue, quotas, bottleneck times."""
    for d in ds:
        stats = d.rows_by_member(STATS)
        if M3 in stats:
            seen["queue_max"] = max(seen["queue_max"], int(stats[M3][QUEUE]))
        for row in d.table(FLOW):
            if row["THROTTLING"] == 1 and row["GROUP_QUOTA"] > 0:
                seen["quotas"][d.member_id].add(row["GROUP_QUOTA"])
            if row["MEMBER_ID"] == M3 and row["BOTTLENECK"] == "applier":
                # BOTTLENECK_SINCE is set at the replay's next step (NULL until then)
                since = parse_timestamp(row["BOTTLENECK_SINCE"])
                first = seen["named"].get(d.member_id)
                if since is not None:
                    seen["named"][d.member_id] = since if first is None else min(first, since)
            if row["MEMBER_ID"] in (M1, M2):
                assert row["BOTTLENECK"] == "", row  # only the slow member holds the group


def _proposed(d: DaemonProc) -> dict[str, int]:
    return {m: int(row[PROPOSED]) for m, row in d.rows_by_member(STATS).items()}


def test_slow_member_is_throttled_to_near_the_threshold(broker: Broker, tmp_path: Path) -> None:
    s0 = int(time.time()) + 10  # the daemons start (and warm the model) before the load
    with daemons(tmp_path, _configs(broker.port, s0)) as ds:
        for d in ds:
            wait_for(lambda d=d: len(d.table(STATS)) == 3 or None, 15.0, "3 stats rows")
        assert time.time() < s0 + 1, "the daemons started too late for the scripted load"
        seen: dict[str, Any] = {
            "queue_max": 0,
            "quotas": {d.member_id: set() for d in ds},
            "named": {},
        }
        window: list[tuple[float, dict[str, int]]] = []
        end = s0 + 40  # 2 throttling cycles after the first hold (about 16 s each)
        for _ in range(int((end - time.time()) / 0.2) + 1):  # bounded in count and time
            now = time.time()
            if now > end:
                break
            _observe(ds, seen)
            if s0 + 12 <= now and (not window or now - window[-1][0] >= 1.0):
                window.append((now, _proposed(ds[0])))
            time.sleep(0.2)

    print(f"slow member's max applier queue seen: {seen['queue_max']} (threshold {T})")
    # (a) bounded near the threshold; unthrottled it would be 140 * 33 = 4620 by now
    assert T < seen["queue_max"] <= PEAK
    # (b) every daemon's replay throttles with the hand-computed quotas ...
    for member, quotas in seen["quotas"].items():
        assert quotas & THROTTLED_QUOTAS, (member, quotas)
    # ... and the writers propose far less than the unthrottled R per second
    (t1, first), (t2, last) = window[0], window[-1]
    assert t2 - t1 >= 20.0
    for m in (M1, M2, M3):
        rate = (last[m] - first[m]) / (t2 - t1 - 2.0)  # +-1 s: which second a poll saw
        print(f"{m[:8]}: {rate:.1f} proposals/s (unthrottled {R})")
        assert rate < 0.8 * R
    # (c) every daemon names the slow member within two periods of the crossing
    crossing_us = (s0 + CROSSING) * 1_000_000
    assert set(seen["named"]) == {M1, M2, M3}
    for member, since in seen["named"].items():
        delay = (since - crossing_us) / 1e6
        print(f"{member[:8]} names the slow member {delay:.2f} s after its queue crossed T")
        assert 0 <= delay <= 2 * PERIOD + SCHEDULING_S
