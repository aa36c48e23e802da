"""Daemon lifecycle extras over a real broker: sd_notify, history, the collector, the API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from grstats.history.writer import read_history
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    M3,
    STATS,
    DaemonProc,
    daemon_config,
    daemons,
    http_get,
    spawn_daemon,
    wait_for,
    wait_started,
)

pytestmark = pytest.mark.slow
PERIOD = 0.25
OTHER_GROUP = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"


def test_sd_notify_ready_watchdog_status_stopping_and_local_history(
    broker: Broker, tmp_path: Path
) -> None:
    name = f"grstats-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)  # abstract: NOTIFY_SOCKET="@name"
        sock.settimeout(0.2)
        config = daemon_config(broker.port, M1, [M1], period=PERIOD)
        config["history"] = {"dir": str(tmp_path / "history"), "flush_interval": 0.5}
        env = {"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "400000"}
        daemon = wait_started(spawn_daemon(tmp_path / "d", config, env=env))
        datagrams: list[str] = []

        def count(text: str) -> int:
            with contextlib.suppress(TimeoutError):
                datagrams.append(sock.recv(4096).decode())
            return sum(text in d for d in datagrams)

        wait_for(lambda: count("READY=1"), 10, "READY=1")
        wait_for(lambda: count("WATCHDOG=1") >= 2, 10, "two WATCHDOG=1")
        assert any(d.startswith("STATUS=") for d in datagrams)
        wait_for(lambda: daemon.rows_by_member("grstats_member_status")[M1]["SEQ"] >= 6, 10, "")
        assert daemon.terminate() == 0
        wait_for(lambda: count("STOPPING=1"), 5, "STOPPING=1")

    table: pa.Table = read_history(tmp_path / "history")
    rows = table.to_pylist()
    assert rows, "no history rows"
    assert {r["member_id"] for r in rows} == {M1}  # scope local
    assert len({r["incarnation"] for r in rows}) == 1
    seqs = [r["seq"] for r in sorted(rows, key=lambda r: r["sampled_at"])]
    assert seqs == sorted(set(seqs))  # one row per tick, never a duplicate
    assert rows[0]["group_name"] == GROUP
    flagged = [r for r in rows if r["transactions_committed_all_members"] is not None]
    assert flagged, "the first message carries the GTID sets"
    assert len(flagged) < len(rows)  # flag '0' rows have null GTID columns


def test_collector_keeps_every_member_of_every_group_with_history(
    broker: Broker, tmp_path: Path
) -> None:
    configs = [daemon_config(broker.port, m, [M1, M2], period=PERIOD) for m in (M1, M2)]
    other = daemon_config(broker.port, M3, [M3], period=PERIOD)
    other["member"]["group"] = OTHER_GROUP
    configs.append(other)
    collector_config = {
        "bus": {"host": "127.0.0.1", "port": broker.port},
        "publish": {"period": PERIOD, "unreachable_after": 4},
        "api": {"listen": "127.0.0.1:0"},
        "history": {"dir": str(tmp_path / "history"), "flush_interval": 0.5},
        "log": {"format": "json"},
    }
    with daemons(tmp_path, configs):
        collector = wait_started(
            spawn_daemon(tmp_path / "collector", collector_config, command="collect")
        )
        try:
            rows = wait_for(
                lambda: (r := collector.table("grstats_member_status")) and len(r) == 3 and r,
                10,
                "three members from two groups",
            )
            assert sorted((r["GROUP_NAME"], r["MEMBER_ID"]) for r in rows) == [
                (GROUP, M1),
                (GROUP, M2),
                (OTHER_GROUP, M3),
            ]
            assert all(r["IS_LOCAL"] == 0 for r in rows)
            assert len(collector.table(STATS)) == 3
            wait_for(
                lambda: all(r["ACCEPTED"] >= 4 for r in collector.table("grstats_member_status")),
                10,
                "a few envelopes each",
            )
        finally:
            assert collector.terminate() == 0
    history = read_history(tmp_path / "history").to_pylist()
    assert {(r["group_name"], r["member_id"]) for r in history} == {
        (GROUP, M1),
        (GROUP, M2),
        (OTHER_GROUP, M3),
    }


def test_api_serves_tables_metrics_health_and_json_404(broker: Broker, tmp_path: Path) -> None:
    with daemons(tmp_path, [daemon_config(broker.port, M1, [M1], period=PERIOD)]) as (d,):
        status, body = http_get(d.api_port, "/v1/tables/replication_group_members")
        assert status == 200
        assert json.loads(body)[0]["MEMBER_ID"] == M1
        status, body = http_get(d.api_port, "/v1/tables/nope")
        assert status == 404
        assert json.loads(body)["error"] == "unknown table"
        status, body = http_get(d.api_port, "/healthz")
        health = json.loads(body)
        assert status == 200
        assert health["bus_connected"] is True
        assert health["members"] == 1
        conn_status, metrics = http_get(d.api_port, "/metrics")
        assert conn_status == 200
        assert f'member_id="{M1}"' in metrics.decode()
        with socket.create_connection(("127.0.0.1", d.api_port), timeout=5) as raw:
            raw.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            head = raw.recv(65536).split(b"\r\n\r\n", 1)[0].decode()
        assert "Content-Type: text/plain; version=0.0.4" in head
        with socket.create_connection(("127.0.0.1", d.api_port), timeout=5) as raw:
            raw.sendall(b"garbage\r\n\r\n")
            assert raw.recv(100).startswith(b"HTTP/1.1 400")


async def test_mysql_source_daemon_learns_identity_from_the_server(
    broker: Broker, tmp_path: Path
) -> None:
    from tests.fixtures import fake_mysql  # noqa: PLC0415 - a fake server
    from tests.fixtures.mysql_source import online_84  # noqa: PLC0415

    server = fake_mysql.FakeMySQL()  # GR not started yet: no rows
    await server.start()
    d: DaemonProc | None = None
    try:
        config = daemon_config(broker.port, M1, [M1], period=PERIOD)
        del config["simulated"]
        config["member"] = {}  # group and id come from the server
        config["source"] = {"kind": "mysql"}
        config["mysql"] = {
            "dsn": f"mysql://{fake_mysql.USER}@127.0.0.1:{server.port}",
            "password_env": "GRSTATS_TEST_MYSQL_PW",
            "retry_initial": 0.05,
            "retry_max": 0.2,
        }
        env = {"GRSTATS_TEST_MYSQL_PW": fake_mysql.PASSWORD}
        d = spawn_daemon(tmp_path / "d", config, env=env)
        d = await asyncio.to_thread(wait_started, d, ready=False)

        def offline_row() -> list[dict[str, object]] | None:
            rows = d.table(STATS)
            return rows if rows and rows[0]["VIEW_ID"] == "" else None

        rows = await asyncio.to_thread(wait_for, offline_row, 10, "the pre-join row")
        assert len(rows) == 1
        assert rows[0]["COUNT_TRANSACTIONS_CHECKED"] == 0

        online_84(server)  # the member joins the group
        await asyncio.to_thread(
            wait_for, lambda: d.has_event("daemon.ready"), 20, "identity learned, bus connected"
        )
        row = await asyncio.to_thread(
            wait_for,
            lambda: (r := d.rows_by_member().get(fake_mysql.UUID)) and r["VIEW_ID"] and r,
            10,
            "the live local row",
        )
        assert row["COUNT_TRANSACTIONS_CHECKED"] == 12345
        assert row["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"] == 2
        _, health = await asyncio.to_thread(d.get, "/healthz")
        assert health["group"] == fake_mysql.GROUP
        assert await asyncio.to_thread(d.terminate) == 0
    finally:
        if d is not None and d.alive():  # a failed assertion must not leave it running
            d.kill9()
        server.release.set()
        await server.stop()


def test_collector_filters_plain_and_shared() -> None:
    from grstats.daemon.wiring import collector_subscriptions  # noqa: PLC0415

    assert collector_subscriptions("p/v1", "") == (["p/v1/+/+/+"], [])
    assert collector_subscriptions("p/v1", "col") == (
        ["$share/col/p/v1/+/+/stats", "p/v1/+/+/status", "p/v1/+/+/gtids"],
        ["p/v1/+/+/stats"],
    )


def test_history_writer_instance_of_collectors_follows_the_client_id(tmp_path: Path) -> None:
    from grstats.config import load_config  # noqa: PLC0415
    from grstats.daemon.process import history_instance  # noqa: PLC0415

    path = tmp_path / "grstats.toml"
    path.write_text(
        '[bus]\nclient_id = "c-2"\n[member]\nid = "11111111-1111-1111-1111-111111111111"\n'
    )
    settings = load_config(path, require_member=False)
    assert history_instance(settings, collector=True) == "collector-c-2"
    assert history_instance(settings, collector=False) == "11111111-1111-1111-1111-111111111111"
    path.write_text("")
    assert history_instance(load_config(path, require_member=False), collector=True) == "collector"


def test_a_shared_collector_judges_silence_over_ten_times_the_periods(tmp_path: Path) -> None:
    from grstats.config import load_config  # noqa: PLC0415
    from grstats.daemon.lifecycle import Daemon  # noqa: PLC0415

    path = tmp_path / "grstats.toml"
    path.write_text("[publish]\nunreachable_after = 3\n")
    plain = Daemon(load_config(path, require_member=False), None)
    path.write_text('[publish]\nunreachable_after = 3\n[bus]\nshared_group = "c"\n')
    shared = Daemon(load_config(path, require_member=False), None)
    assert plain.tables.registry.limits.unreachable_after == 3
    assert shared.tables.registry.limits.unreachable_after == 30


def test_api_readers_under_a_flood_share_one_snapshot_the_tick_gets_a_fresh_one(
    tmp_path: Path,
) -> None:
    # a busy collector's tables change with every envelope: rebuilding every table of
    # every member for each /healthz or /metrics request cost it a fifth of its CPU
    from grstats.config import load_config  # noqa: PLC0415
    from grstats.daemon.lifecycle import Daemon  # noqa: PLC0415

    path = tmp_path / "grstats.toml"
    path.write_text("[publish]\nperiod = 60\nforget_after = 600\n")  # readers: <= 0.25 s old
    daemon = Daemon(load_config(path, require_member=False), None)
    first = daemon.get_snapshot()
    for _ in range(20):
        daemon.tables.registry.version += 1  # an envelope applied between two requests
        assert daemon.get_snapshot() is first
    daemon.tables.registry.version += 1
    assert daemon.get_snapshot(fresh=True) is not first
