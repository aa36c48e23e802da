"""Collectors scaled out by an MQTT 5 shared subscription, against a real Mosquitto.

Three `grstats collect` processes of one shared group write one history tree
while a test publisher sends the envelopes of four members; one collector is
SIGKILLed between two phases. The expected samples are the ones the test
published, never what the code reports.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from grstats.bus.client import Bus, BusOptions
from grstats.history.wal import writer_id
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    STATS,
    DaemonProc,
    spawn_daemon,
    wait_for,
    wait_started,
)

PREFIX = "grstats/v1"
MEMBERS = [f"5ca1e000-0000-4000-8000-{i:012x}" for i in range(1, 5)]
INCARNATION = 2**63 + 11
PHASE = 40  # envelopes per member and phase

Key = tuple[str, str, int, int]


def envelope(member: str, seq: int) -> bytes:
    now = time.time_ns() // 1000
    stats = PipelineStats(
        transactions_certified=1000 + seq,
        transactions_applied=990 + seq,
        transactions_local=100 + seq,
        sent_timestamp=now,
    )
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(member, "127.0.0.1", 3306, "ONLINE", "PRIMARY", "8.4.3", "h:1"),
            view_id="1767225600:3",
            incarnation=INCARNATION,
            seq=seq,
            sent_us=now,
            stats=encode_pipeline_stats(stats),
        )
    )


async def _publish(broker: Broker, seqs: range, *, client_id: str = "") -> None:
    bus = Bus(BusOptions(host=broker.host, port=broker.port, client_id=client_id))
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(bus.run())
        await asyncio.wait_for(bus.connected.wait(), 10)
        for member in MEMBERS:
            status = f"{PREFIX}/{GROUP}/{member}/status"
            assert await bus.publish(status, b"online", qos=1, retain=True)
        for seq in seqs:  # interleaved, as live members are
            for member in MEMBERS:
                topic = f"{PREFIX}/{GROUP}/{member}/stats"
                assert await bus.publish(topic, envelope(member, seq), retain=True)
        await bus.close()
        await asyncio.wait_for(task, 10)


def publish(broker: Broker, seqs: range) -> set[Key]:
    """Publish seqs of every member; returns the keys sent."""
    asyncio.run(_publish(broker, seqs))
    return {(GROUP, m, INCARNATION, s) for m in MEMBERS for s in seqs}


def take_over_session(broker: Broker, client_id: str) -> None:
    """Connect with a dead client's id: once CONNACKed, the broker holds no connection of it.

    A SIGKILLed collector's socket is closed by the kernel, but the broker may
    not have read the EOF yet; a session takeover makes it certain that the
    dead client is out of the shared group before the next phase.
    """
    asyncio.run(_publish(broker, range(0), client_id=client_id))


def collector_config(broker: Broker, history: Path, index: int) -> dict[str, Any]:
    return {
        "bus": {
            "host": "127.0.0.1",
            "port": broker.port,
            "keepalive": 5,
            "client_id": f"collector-{index}",
            "shared_group": "grstats-test",
        },
        "publish": {"period": 0.25, "unreachable_after": 4},
        "api": {"listen": "127.0.0.1:0"},
        "history": {"dir": str(history), "flush_interval": 0.3, "fsync_interval": 0.1},
        "log": {"format": "json"},
    }


def start_collector(broker: Broker, history: Path, tmp_path: Path, index: int) -> DaemonProc:
    config = collector_config(broker, history, index)
    return wait_started(spawn_daemon(tmp_path / f"collector{index}", config, command="collect"))


def accepted(collector: DaemonProc) -> int:
    return collector.counters()["envelopes_accepted"]


def keys_in(files: list[Path]) -> list[Key]:
    out: list[Key] = []
    for path in files:
        table = pq.read_table(path, columns=["group_name", "member_id", "incarnation", "seq"])
        out.extend(zip(*(table[c].to_pylist() for c in table.column_names), strict=True))
    return out


def parquet_files(history: Path, client_index: int | None = None) -> list[Path]:
    files = sorted(history.glob("group=*/date=*/part-*.parquet"))
    if client_index is None:
        return files
    tag = writer_id(f"collector-collector-{client_index}")
    return [f for f in files if f"-{tag}-" in f.name]


@pytest.mark.slow
def test_three_shared_collectors_one_killed_write_every_envelope_once(
    broker: Broker, tmp_path: Path
) -> None:
    history = tmp_path / "history"
    collectors = [start_collector(broker, history, tmp_path, i) for i in range(3)]
    late: DaemonProc | None = None
    try:
        expected = publish(broker, range(1, PHASE + 1))
        # every phase-1 envelope went to exactly one of the three
        wait_for(lambda: sum(map(accepted, collectors)) == len(expected), 30, "phase 1 accepted")
        shares = [accepted(c) for c in collectors]
        assert all(shares), f"the broker gave a collector nothing: {shares}"
        # what collector 0 accepted is in its Parquet files before it is killed
        wait_for(
            lambda: len(keys_in(parquet_files(history, 0))) == shares[0], 30, "collector 0 durable"
        )
        collectors[0].kill9()
        take_over_session(broker, "collector-0")

        expected |= publish(broker, range(PHASE + 1, 2 * PHASE + 1))
        survivors = collectors[1:]
        wait_for(
            lambda: sum(map(accepted, survivors)) == sum(shares[1:]) + PHASE * len(MEMBERS),
            30,
            "phase 2 accepted by the two survivors",
        )

        # a collector started late shows every member at once: the retained path
        late = start_collector(broker, history, tmp_path, 3)
        assert {r["MEMBER_ID"] for r in late.table(STATS)} == set(MEMBERS)
        status = {r["MEMBER_ID"]: r for r in late.table("grstats_member_status")}
        assert {m: status[m]["SEQ"] for m in MEMBERS} == dict.fromkeys(MEMBERS, 2 * PHASE)
        for c in [*survivors, late]:
            assert c.terminate() == 0
    finally:
        for c in [*collectors, *([late] if late else [])]:
            if c.alive():
                c.kill9()

    raw = keys_in(parquet_files(history))
    assert set(raw) == expected  # nothing lost, nothing invented
    counts = Counter(raw)
    # each live envelope was handled by one collector only; the last one of each
    # member is also read back from the retained store by the late collector
    assert {k for k, n in counts.items() if n > 1} <= {k for k in expected if k[3] == 2 * PHASE}
    assert all(parquet_files(history, i) for i in range(3)), "every collector wrote its share"
