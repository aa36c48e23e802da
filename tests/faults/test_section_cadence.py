"""Issue 39 row 1: a member's ext.gtids is accepted at most at its cadence.

8 members each send 5 legal stats envelopes a second for 3 s, every one
carrying a 24 KiB ext.gtids set of 5,014 single-GTID intervals (the cost of a
set is in its intervals: parsed, then judged against every member). A member
sends its GTID state once per `gtid_interval` (30 s here); a receiver takes
a burst of 4 copies of a member (a reconnect, a publish retried under load),
then one per half interval (15 s), and drops the others before decoding
them. So, worked by hand: of each member's 15 in 3 s, 4 are taken (3 s
refill a fifth of a copy) and 11 are extras: 8 x 11 = 88 counted, on
/metrics and /healthz, while the stats of all 120 envelopes are applied.
The CPU and publishing-gap figures of the same attack are
benchmarks/bench_section_cadence.py's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiomqtt
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import GROUP, M1, DaemonProc, daemon_config, daemons, http_get, wait_for
from tests.fixtures.gtid_flood import LARGE, PREFIX, attacker, flood_envelope

pytestmark = pytest.mark.faults

MEMBERS, PER_SECOND, SECONDS = 8, 5, 3
SENT = PER_SECOND * SECONDS  # per member
EXTRAS = MEMBERS * (SENT - 4)  # 88: each member's first 4 are its burst


async def _attack(broker: Broker) -> None:
    payloads = [
        [flood_envelope(GROUP, attacker(m), seq, LARGE) for m in range(MEMBERS)]
        for seq in range(1, SENT + 1)
    ]
    async with aiomqtt.Client(broker.host, broker.port, max_queued_outgoing_messages=0) as client:
        for round_ in payloads:  # the attack's own rate: 5 a second per member
            for m, payload in enumerate(round_):
                await client.publish(f"{PREFIX}/{GROUP}/{attacker(m)}/stats", payload, qos=1)
            await asyncio.sleep(1 / PER_SECOND)


def _over_cadence(d: DaemonProc) -> float | None:
    status, body = http_get(d.api_port, "/metrics")
    assert status == 200
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            if s.name == "grstats_ext_sections_over_cadence_total" and s.labels == {
                "section": "gtids"
            }:
                return s.value
    return None


def test_gtids_sections_past_their_cadence_are_dropped_and_counted(
    broker: Broker, tmp_path: Path
) -> None:
    config = daemon_config(broker.port, M1, [M1], gtid_interval=30)
    with daemons(tmp_path, [config]) as (d,):
        before = d.counters()["envelopes_accepted"]
        asyncio.run(_attack(broker))
        wait_for(
            lambda: d.counters()["envelopes_accepted"] - before >= MEMBERS * SENT,
            30,
            "every attacker's stats applied",
        )
        counted = wait_for(
            lambda: _over_cadence(d) == EXTRAS or None, 10, f"{EXTRAS} extras counted"
        )
        assert counted
        _, health = d.get("/healthz")
        assert d.counters()["ext_gtids_over_cadence"] == EXTRAS
        assert "sections_over_cadence" in health["reasons"]
        # each attacker named, by host:port, in the reason's details
        details = [t for t in health["details"] if "ext.gtids" in t]
        assert len(details) == MEMBERS
        assert any("10.9.9.9:3306" in t for t in details)
