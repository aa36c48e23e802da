"""A hostile bus against a real member daemon: floods of fake members, forged sequence
numbers and incarnations, clocks from the future, invalid ids.

Each attack is published on a real Mosquitto by a plain MQTT client; the daemon
under attack is a real `grstats run` process. Expected values are the attack's
own figures (how many fakes, the configured caps), never the daemon's.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import aiomqtt
import pytest

from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    MEMBERS,
    STATUS,
    DaemonProc,
    daemon_config,
    daemons,
    wait_for,
)

pytestmark = pytest.mark.faults

PREFIX = "grstats/v1"
PERIOD = 0.25
FAKES = 20_000


def _envelope(member: str, *, seq: int = 1, incarnation: int = 1, sent_us: int = 0) -> bytes:
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(
                id=member,
                host="10.9.9.9",
                port=3306,
                state="ONLINE",
                role="SECONDARY",
                version="8.4.3",
                gcs_id="10.9.9.9:33061",
            ),
            view_id="1:1",
            incarnation=incarnation,
            seq=seq,
            sent_us=sent_us or time.time_ns() // 1000,
            stats=encode_pipeline_stats(PipelineStats(transactions_certified=1)),
        )
    )


async def _publish(broker: Broker, messages: list[tuple[str, bytes]]) -> None:
    async with aiomqtt.Client(broker.host, broker.port, max_queued_outgoing_messages=0) as client:
        for topic, payload in messages:
            await client.publish(topic, payload, qos=0)
        await client.publish(f"{PREFIX}/fence", b"", qos=1)  # all above handed over


def _rss_kb(d: DaemonProc) -> int:
    for line in Path(f"/proc/{d.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _rejected(d: DaemonProc, reason: str) -> int:
    return int(d.counters()[f"envelopes_rejected_{reason}"])


@pytest.mark.slow
def test_a_flood_of_fake_members_stops_at_the_cap_with_bounded_memory(
    broker: Broker, tmp_path: Path
) -> None:
    config = daemon_config(broker.port, M1, [M1, M2], period=PERIOD)
    with daemons(tmp_path, [config]) as (d1,):
        wait_for(lambda: len(d1.table(MEMBERS)) >= 1, 10, "the daemon's own row")
        rss_before = _rss_kb(d1)
        fakes = [str(uuid.UUID(int=(7 << 64) + i)) for i in range(FAKES)]
        messages = [(f"{PREFIX}/{GROUP}/{m}/stats", _envelope(m)) for m in fakes]
        asyncio.run(_publish(broker, messages))
        # the default cap is 64 members a group, the local one included (GR allows 9)
        wait_for(lambda: _rejected(d1, "over_limit") >= FAKES - 63, 60, "every fake past the cap")
        members = d1.table(MEMBERS)
        assert len(members) <= 64
        growth_mb = (_rss_kb(d1) - rss_before) / 1024
        print(f"RSS growth after {FAKES} fake members: {growth_mb:.1f} MB")
        assert growth_mb < 60, growth_mb  # a memory bound, not a timing one
        assert d1.alive()


def test_forged_seq_and_incarnation_do_not_hide_a_real_member(
    broker: Broker, tmp_path: Path
) -> None:
    configs = [daemon_config(broker.port, m, [M1, M2], period=PERIOD) for m in (M1, M2)]
    with daemons(tmp_path, configs) as (d1, _d2):
        status = wait_for(lambda: d1.rows_by_member(STATUS).get(M2), 10, "M2 on M1")
        incarnation = int(status["INCARNATION"])
        forged = [
            # the replay window must not trust an attacker's seq
            (f"{PREFIX}/{GROUP}/{M2}/stats", _envelope(M2, seq=2**64 - 1, incarnation=incarnation)),
            (f"{PREFIX}/{GROUP}/{M2}/stats", _envelope(M2, seq=2**62, incarnation=incarnation)),
            # a clock an hour ahead
            (
                f"{PREFIX}/{GROUP}/{M2}/stats",
                _envelope(M2, seq=1, incarnation=99, sent_us=time.time_ns() // 1000 + 3600 * 10**6),
            ),
            # not a UUID
            (f"{PREFIX}/{GROUP}/not-a-uuid/stats", _envelope("not-a-uuid")),
        ]
        asyncio.run(_publish(broker, forged))
        wait_for(lambda: _rejected(d1, "out_of_range") >= 1, 10, "seq 2^64-1 out of range")
        wait_for(lambda: _rejected(d1, "stale") >= 1, 10, "the seq jump refused")
        wait_for(lambda: _rejected(d1, "future") >= 1, 10, "the future envelope")
        wait_for(lambda: _rejected(d1, "invalid_id") >= 1, 10, "the invalid id")
        # the real M2 keeps being accepted: its seq on M1 moves on
        seq_now = int(d1.rows_by_member(STATUS)[M2]["SEQ"])
        wait_for(
            lambda: int(d1.rows_by_member(STATUS)[M2]["SEQ"]) > seq_now + 4,
            10,
            "M2's real envelopes still accepted",
        )
        assert d1.rows_by_member(MEMBERS)[M2]["MEMBER_STATE"] == "ONLINE"
