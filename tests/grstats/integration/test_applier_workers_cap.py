"""Applier workers past the wire's bound (256) are left out of ext.applier, and counted.

A mysql-sourced daemon reads a 9.7-shaped fake server with 300 workers on the
GR applier channel: its own tables show all 300; the envelope carries the
first 256 in (channel, worker id) order, so a second daemon on the same real
Mosquitto shows workers 1..256 for it; every published envelope leaves out
300 - 256 = 44, counted in applier_workers_dropped (/healthz and /metrics).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from protocol import MAX_APPLIER_WORKERS
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    M2,
    DaemonProc,
    daemon_config,
    spawn_daemon,
    wait_for,
    wait_started,
)
from tests.fixtures.fake_mysql import PASSWORD, USER, UUID, FakeMySQL
from tests.fixtures.mysql_source import (
    CH,
    METRICS_COLUMNS,
    METRICS_TABLE,
    PROGRESS_COLUMNS,
    PROGRESS_TABLE,
    online_84,
)

WORKERS = 300
DROPPED = WORKERS - 256  # per envelope, by hand
PROGRESS = "replication_applier_progress_by_worker"
PERIOD = 0.25


def _server_with_many_workers(fake: FakeMySQL) -> None:
    online_84(fake)
    metrics = dict.fromkeys(METRICS_COLUMNS, 0)
    metrics.update(CHANNEL_NAME=CH, LAST_APPLIER_START="2026-11-23 09:00:00.000000")
    fake.tables[METRICS_TABLE] = (METRICS_COLUMNS, [metrics])
    # listed in reverse: the bound keeps the lowest ids, whatever the server's order
    workers = [[CH, w, 1000 + w, "UNASSIGNED", 0, 0] for w in range(WORKERS, 0, -1)]
    fake.tables[PROGRESS_TABLE] = (
        PROGRESS_COLUMNS,
        [dict(zip(PROGRESS_COLUMNS, w, strict=True)) for w in workers],
    )


def _worker_ids(d: DaemonProc, member: str) -> list[int]:
    return sorted(int(r["WORKER_ID"]) for r in d.table(PROGRESS) if r["MEMBER_ID"] == member)


def _metric(d: DaemonProc, name: str) -> float | None:
    _, body = d.get("/metrics")
    text = body.decode() if isinstance(body, bytes) else str(body)
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def test_workers_past_the_bound_are_dropped_and_counted(
    broker: Broker, tmp_path: Path
) -> None:
    assert MAX_APPLIER_WORKERS == 256  # the hand calculation above
    server = FakeMySQL()
    await server.start()
    procs: list[DaemonProc] = []
    try:
        _server_with_many_workers(server)
        config = daemon_config(broker.port, UUID, [UUID, M2], period=PERIOD)
        del config["simulated"]
        config["member"] = {}  # group and id come from the server
        config["source"] = {"kind": "mysql"}
        config["mysql"] = {
            "dsn": f"mysql://{USER}@127.0.0.1:{server.port}",
            "password_env": "GRSTATS_TEST_MYSQL_PW",
            "retry_initial": 0.05,
            "retry_max": 0.2,
        }
        env = {"GRSTATS_TEST_MYSQL_PW": PASSWORD}
        procs.append(spawn_daemon(tmp_path / "mysql", config, env=env))
        procs.append(
            spawn_daemon(
                tmp_path / "sim", daemon_config(broker.port, M2, [UUID, M2], period=PERIOD)
            )
        )
        local, remote = [await asyncio.to_thread(wait_started, d) for d in procs]

        # the sender's own tables: every worker
        ids = await asyncio.to_thread(
            wait_for, lambda: _worker_ids(local, UUID), 20, "the local worker rows"
        )
        assert ids == list(range(1, WORKERS + 1))
        # the receiver: the first 256 by worker id
        ids = await asyncio.to_thread(
            wait_for, lambda: _worker_ids(remote, UUID), 20, "the remote worker rows"
        )
        assert ids == list(range(1, 257))

        # /healthz shows the daemon's last snapshot: it may predate the publish the
        # receiver has already seen, so wait for the count to show
        def counted() -> dict[str, Any] | None:
            now: dict[str, Any] = local.counters()
            return now if now["applier_workers_dropped"] > 0 else None

        counters = await asyncio.to_thread(wait_for, counted, 10, "the dropped workers counted")
        dropped = counters["applier_workers_dropped"]
        assert dropped % DROPPED == 0  # 44 per published envelope
        assert dropped // DROPPED <= counters["messages_published"]
        metric = await asyncio.to_thread(_metric, local, "grstats_applier_workers_dropped_total")
        assert metric is not None and metric >= dropped and metric % DROPPED == 0
        warned = [e for e in local.events() if e.get("event") == "applier.workers_dropped"]
        assert len(warned) == 1
        assert (warned[0]["workers"], warned[0]["dropped"]) == (WORKERS, DROPPED)
        # the simulated daemon has few workers: nothing dropped there
        assert (await asyncio.to_thread(remote.counters))["applier_workers_dropped"] == 0
    finally:
        for d in procs:
            if d.alive():
                d.kill9()
        server.release.set()
        await server.stop()
