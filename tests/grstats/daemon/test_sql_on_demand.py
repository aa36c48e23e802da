"""The SQL endpoint's process exists only while someone uses it (issue 44).

One real daemon (simulated source, real Mosquitto) with [sql] on and a short
`child_idle_stop`. Before any client connects, no process runs
`grstats.daemon.sqlmain` (read from /proc, not from the daemon's figures) and
the port is already bound; a real client's (PyMySQL) first query is answered
with the daemon's member and live rows; the process ends once no client came
for `child_idle_stop`, and the next connection, on the same port, starts a
new one whose counters add to the first's.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pymysql

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    M1,
    M2,
    MEMBERS,
    DaemonProc,
    daemon_config,
    start_daemon,
    wait_for,
)

PASSWORD = "s3cret"
IDLE_STOP_S = 2.0


def _endpoint_processes(daemon: int) -> list[int]:
    """PIDs of the daemon's children running the SQL endpoint (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        alive = fields[0] not in ("Z", "X")
        if alive and int(fields[1]) == daemon and b"grstats.daemon.sqlmain" in cmdline:
            found.append(int(stat.parent.name))
    return found


def _sql(daemon: DaemonProc) -> dict[str, Any]:
    _, body = daemon.get("/healthz")
    return dict(body["sql"])


def _queries(daemon: DaemonProc) -> float:
    _, body = daemon.get("/metrics")
    for line in body.decode().splitlines():
        if line.startswith("grstats_sql_queries_total "):
            return float(line.split()[-1])
    return -1.0


def _ask(port: int) -> tuple[Any, ...]:
    with (
        pymysql.connect(
            host="127.0.0.1", port=port, user="grstats", password=PASSWORD, connect_timeout=10
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(
            "SELECT @@server_uuid, COUNT(*) FROM performance_schema.replication_group_members"
        )
        row = cur.fetchone()
        assert row is not None
        return tuple(row)


def test_no_endpoint_process_before_the_first_connection_then_one_until_idle(
    broker: Broker, tmp_path: Path
) -> None:
    (tmp_path / "sql.password").write_text(PASSWORD + "\n", encoding="utf-8")
    config = daemon_config(broker.port, M1, [M1, M2])
    config["sql"] = {
        "listen": "127.0.0.1:0",
        "password_file": str(tmp_path / "sql.password"),
        "child_idle_stop": IDLE_STOP_S,
    }
    daemon = start_daemon(tmp_path / "d", config)
    pid = daemon.process.pid
    port = next(int(e["sql_port"]) for e in daemon.events() if e.get("event") == "daemon.started")
    assert port > 0  # bound by the daemon: known before any process serves it
    # several periods (0.25 s) of publishing and snapshots, and still no endpoint process
    published = daemon.counters()["messages_published"]
    wait_for(lambda: daemon.counters()["messages_published"] >= published + 8, 30, "8 ticks")
    assert _endpoint_processes(pid) == []
    sql = _sql(daemon)
    assert (sql["process"], sql["pid"], sql["serving"]) == ("idle", 0, True), sql
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass  # the port is the daemon's own: it accepts into the kernel's queue

    members = len(daemon.table(MEMBERS))
    started = time.monotonic()
    assert _ask(port) == (M1, members)  # the first query, answered from the daemon's live tables
    first_query_s = time.monotonic() - started
    children = _endpoint_processes(pid)
    assert len(children) == 1, children
    assert _sql(daemon)["pid"] == children[0]

    def ended() -> dict[str, Any] | None:
        sql = _sql(daemon)
        return sql if sql["process"] == "idle" and sql["pid"] == 0 else None

    sql = wait_for(ended, 30, f"the endpoint process to end after {IDLE_STOP_S} s idle")
    assert sql["last_exit"] == "no client for child_idle_stop seconds", sql
    assert (sql["restarts"], sql["serving"]) == (0, True), sql
    wait_for(lambda: _endpoint_processes(pid) == [], 10, "no endpoint process left")

    assert _ask(port) == (M1, members)  # the same port: a new process
    assert len(_endpoint_processes(pid)) == 1
    wait_for(lambda: _queries(daemon) == 2, 30, "both processes' queries in /metrics")
    assert _sql(daemon)["restarts"] == 0  # an idle end is not a failure
    print(f"first query with the process start: {first_query_s:.2f} s")  # pytest -s
    assert daemon.terminate() == 0
