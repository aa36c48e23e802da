"""Issue 39 row 6: liveness (`/livez`) apart from readiness (`/healthz`).

Strategy: a real daemon (simulated source, real Mosquitto) with [sql] on;
its SQL child is stopped (SIGSTOP) and then killed: `/healthz` says so
(503 with the child's reason: readiness, for a load balancer or a person)
while `/livez` keeps answering 200 (liveness, for a restart policy: an SQL
problem is no reason to restart the member's publishing). And the other
way: a daemon whose own tick loop stalls is not alive -- `/livez` answers
503 with the stall, and the systemd watchdog is not pinged for it (so
systemd restarts it), checked on the routes and the watchdog loop by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest

from grstats.api.health import ApiStats
from grstats.api.routes import Routes
from grstats.core.snapshot import DaemonSnapshot
from grstats.daemon.notify import watchdog_loop
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import M1, M2, daemon_config, spawn_daemon, wait_for, wait_started

pytestmark = pytest.mark.faults

PASSWORD = "s3cret"


def _get(daemon: Any, path: str) -> tuple[int, dict[str, Any]]:
    status, body = daemon.get(path)
    assert isinstance(body, dict), body
    return status, body


def test_an_sql_child_stopped_or_killed_is_not_ready_but_the_daemon_is_alive(
    broker: Broker, tmp_path: Path
) -> None:
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    config = daemon_config(broker.port, M1, [M1, M2], period=0.5)
    config["sql"] = {
        "listen": "127.0.0.1:0",
        "password_file": str(secret),
        "max_address_space": 2 << 30,
        "child_timeout": 2.0,
    }
    daemon = wait_started(spawn_daemon(tmp_path / "d", config))
    try:
        port = next(
            int(e["sql_port"]) for e in daemon.events() if e.get("event") == "daemon.started"
        )

        def serving_child() -> int | None:
            with contextlib.suppress(pymysql.MySQLError, OSError):  # its first connection
                pymysql.connect(
                    host="127.0.0.1", port=port, user="grstats", password=PASSWORD,
                    connect_timeout=5,
                ).close()  # fmt: skip
            sql = _get(daemon, "/healthz")[1].get("sql", {})
            return int(sql["pid"]) if sql.get("serving") and sql.get("pid") else None

        child = wait_for(serving_child, 60, "the SQL child serving")
        assert _get(daemon, "/livez") == (200, {"status": "alive"})
        os.kill(child, signal.SIGSTOP)  # silent past child_timeout: not ready
        try:

            def degraded() -> dict[str, Any] | None:
                status, body = _get(daemon, "/healthz")
                return body if status == 503 else None

            health = wait_for(degraded, 30, "/healthz to degrade")
            assert any(r.startswith("sql") for r in health["reasons"]), health
            assert _get(daemon, "/livez") == (200, {"status": "alive"})
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        wait_for(lambda: _get(daemon, "/healthz")[0] == 503 or None, 10, "killed: not ready")
        assert _get(daemon, "/livez") == (200, {"status": "alive"})
        assert daemon.alive()
    finally:
        daemon.kill9()


def _routes(liveness: str) -> Routes:
    snapshot = DaemonSnapshot(taken_at_us=0, group_name="", local_member_id="")
    return Routes(lambda: snapshot, ApiStats, get_liveness=lambda: liveness)


def test_livez_answers_503_with_the_stall_when_the_tick_loop_stops() -> None:
    status, _, body = _routes("tick loop stalled for 21.0 s (at most 20.0 s)").answer("/livez")
    assert status == 503
    assert b'"status":"stalled"' in body[0] and b"21.0 s" in body[0]
    assert _routes("").answer("/livez")[0] == 200


async def test_the_watchdog_is_pinged_only_while_the_daemon_is_alive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = f"grstats-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind("\0" + name)
        notify.setblocking(False)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        stalled = ""
        task = asyncio.create_task(watchdog_loop(0.02, lambda: stalled))
        await asyncio.sleep(0.2)
        alive_pings = _drain(notify)
        stalled = "tick loop stalled"
        await asyncio.sleep(0.05)
        _drain(notify)  # a ping already under way
        await asyncio.sleep(0.2)
        stalled_pings = _drain(notify)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert alive_pings >= 3
    assert stalled_pings == 0


def _drain(sock: socket.socket) -> int:
    count = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            if sock.recv(4096) == b"WATCHDOG=1":
                count += 1
    return count
