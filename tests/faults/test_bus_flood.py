"""A flood of junk envelopes on one topic must not make an innocent member UNREACHABLE (issue 21).

Two real daemons (M1, M2) on a real Mosquitto; a plain MQTT client publishes
250 hostile envelopes a second for a bounded time on a third member's topic
of the same group, so both daemons receive and decode every one. Each junk
envelope is good except for a ~60 KiB unknown `ext` section of empty maps:
decoding it cost ~17 ms (more on a busy machine) with a Python hook per map,
which kept each daemon's event loop busy longer than a second per second of
flood, and each showed the other, innocent member UNREACHABLE although both
published on time.

Expected values are the flood's own figures: how many were sent, and that
M1 and M2 stay ONLINE on each other throughout (M2's liveness is judged on
M2's own messages, which must keep arriving).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiomqtt
import msgpack
import pytest

from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    MEMBERS,
    DaemonProc,
    daemon_config,
    daemons,
    wait_for,
)

pytestmark = [pytest.mark.faults, pytest.mark.timing]  # bounds a delay: run alone

PREFIX = "grstats/v1"
FAKE = "77777777-7777-7777-7777-777777777777"
RATE = 250  # junk envelopes a second
SECONDS = 6  # of flood: 1 500 envelopes, ~90 MB through the broker
PERIOD = 0.5  # UNREACHABLE after 4 silent periods: 2 s


def _junk(seq: int) -> bytes:
    good = encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(FAKE, "10.9.9.9", 3306, "ONLINE", "SECONDARY", "8.4.3", "x:1"),
            view_id="1:1",
            incarnation=1,
            seq=seq,
            sent_us=time.time_ns() // 1000,
            stats=encode_pipeline_stats(PipelineStats(transactions_certified=seq)),
        )
    )
    message = msgpack.unpackb(good, raw=False)
    message["ext"] = {"junk": [{}] * 60_000}
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed


async def _flood(broker: Broker, stop_on: asyncio.Event) -> int:
    """RATE envelopes a second for SECONDS, paced in tenths; returns how many were sent."""
    payload = _junk(1)  # one seq: the first is accepted, the rest are "stale" -- all decoded
    topic = f"{PREFIX}/{GROUP}/{FAKE}/stats"
    sent = 0
    async with aiomqtt.Client(broker.host, broker.port, max_queued_outgoing_messages=0) as client:
        start = time.monotonic()
        for tick in range(SECONDS * 10):
            if stop_on.is_set():
                break
            for _ in range(RATE // 10):
                await client.publish(topic, payload, qos=0)
                sent += 1
            # pace the load: the next tenth of a second starts on schedule
            await asyncio.sleep(max(0.0, start + (tick + 1) / 10 - time.monotonic()))
        await client.publish(f"{PREFIX}/fence", b"", qos=1)  # all above handed over
    return sent


def _states(d: DaemonProc) -> dict[str, str]:
    return {row["MEMBER_ID"]: row["MEMBER_STATE"] for row in d.table(MEMBERS)}


async def _watch(d1: DaemonProc, d2: DaemonProc, stop: asyncio.Event) -> list[str]:
    """Poll both daemons while the flood runs; every moment one shows the other not ONLINE."""
    seen: list[str] = []
    while not stop.is_set():
        for d, other in ((d1, M2), (d2, M1)):
            state = (await asyncio.to_thread(_states, d)).get(other, "absent")
            if state != "ONLINE":
                seen.append(f"{d.member_id[:4]} shows {other[:4]} {state}")
        await asyncio.sleep(0.1)  # sampling interval of the watch, not a wait for a condition
    return seen


async def _attack(broker: Broker, d1: DaemonProc, d2: DaemonProc) -> tuple[int, list[str]]:
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch(d1, d2, stop))
    try:
        sent = await _flood(broker, stop)
    finally:
        stop.set()
        seen = await watcher
    return sent, seen


def test_a_junk_flood_on_one_topic_leaves_an_innocent_member_online(
    broker: Broker, tmp_path: Path
) -> None:
    configs = [daemon_config(broker.port, m, [M1, M2], period=PERIOD) for m in (M1, M2)]
    with daemons(tmp_path, configs) as (d1, d2):
        wait_for(lambda: _states(d1).get(M2) == "ONLINE", 15, "M2 ONLINE on M1")
        wait_for(lambda: _states(d2).get(M1) == "ONLINE", 15, "M1 ONLINE on M2")
        sent, not_online = asyncio.run(_attack(broker, d1, d2))
        assert sent == RATE * SECONDS
        assert not_online == [], not_online[:10]
        # the flood reached both and was decoded: its junk section dropped once per envelope
        for d in (d1, d2):
            wait_for(
                lambda d=d: d.counters()["ext_sections_dropped"] >= 0.9 * sent,  # type: ignore[misc]
                30,
                f"{d.member_id[:4]} decoded the flood",
            )
            assert d.alive()
