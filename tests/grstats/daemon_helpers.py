"""Run `grstats run` daemons as subprocesses against the test broker and read their API.

A daemon gets a generated TOML (simulated source, ephemeral API port) and
logs JSON lines to a file; its API port is read from the `daemon.started`
event. Only the PIDs started here are ever signalled.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
M1 = "11111111-1111-1111-1111-111111111111"
M2 = "22222222-2222-2222-2222-222222222222"
M3 = "33333333-3333-3333-3333-333333333333"
GRSTATS = str(Path(sys.executable).parent / "grstats")
STATS = "replication_group_member_stats"
MEMBERS = "replication_group_members"
STATUS = "grstats_member_status"

T = TypeVar("T")

# Every daemon a test started, so that a failing test cannot leave one running:
# tests/conftest.py kills whatever is still alive here after each test.
SPAWNED: list[DaemonProc] = []


def wait_for(probe: Callable[[], T | None], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll `probe` until it returns a truthy value; fail with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except (OSError, http.client.HTTPException, ValueError) as exc:
            last = exc
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """GET http://127.0.0.1:<port><path> -> (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


def render_toml(sections: dict[str, Any]) -> str:
    lines: list[str] = []
    arrays: list[tuple[str, list[dict[str, Any]]]] = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        for key, value in values.items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                arrays.append((f"{name}.{key}", value))
            else:
                lines.append(f"{key} = {toml_value(value)}")
    for name, tables in arrays:
        for table in tables:
            lines.append(f"[[{name}]]")
            lines.extend(f"{k} = {toml_value(v)}" for k, v in table.items())
    return "\n".join(lines) + "\n"


@dataclass
class DaemonProc:
    """One running daemon subprocess."""

    member_id: str
    workdir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    api_port: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def has_event(self, name: str) -> bool:
        return any(e.get("event") == name for e in self.events())

    def get(self, path: str) -> tuple[int, Any]:
        status, body = http_get(self.api_port, path)
        return status, json.loads(body) if body.startswith((b"[", b"{")) else body

    def table(self, name: str) -> list[dict[str, Any]]:
        status, rows = self.get(f"/v1/tables/{name}")
        assert status == 200, (status, rows)
        return list(rows)

    def rows_by_member(self, name: str = STATS) -> dict[str, dict[str, Any]]:
        return {row["MEMBER_ID"]: row for row in self.table(name)}

    def counters(self) -> dict[str, int]:
        _, body = self.get("/healthz")
        return dict(body["counters"])

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill9(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 10.0) -> int:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)


def daemon_config(
    broker_port: int,
    member_id: str,
    members: Sequence[str],
    *,
    period: float = 0.25,
    gtid_interval: float = 30,
    unreachable_after: int = 4,
    forget_after: float = 60,
    simulated: dict[str, Any] | None = None,
) -> dict[str, Any]:
    sim: dict[str, Any] = {"members": list(members), "seed": 7}
    sim.update(simulated or {})
    publish: dict[str, Any] = {
        "period": period,
        "gtid_interval": gtid_interval,
        "unreachable_after": unreachable_after,
        "forget_after": forget_after,
    }
    if gtid_interval < 30:
        publish["allow_short_gtid_interval"] = True
    return {
        "member": {"group": GROUP, "id": member_id, "host": "127.0.0.1", "port": 3306},
        "source": {"kind": "simulated"},
        "simulated": sim,
        "bus": {"host": "127.0.0.1", "port": broker_port, "keepalive": 5},
        "publish": publish,
        "api": {"listen": "127.0.0.1:0"},
        "log": {"level": "info", "format": "json"},
    }


def mysql_daemon_config(
    broker_port: int,
    server_port: int,
    password_file: Path,
    *,
    period: float = 0.25,
    gtid_interval: float = 30,
) -> dict[str, Any]:
    """A daemon reading a (fake) MySQL server on loopback: group and member id from the server."""
    config = daemon_config(broker_port, M1, [M1], period=period, gtid_interval=gtid_interval)
    del config["simulated"]
    config["member"] = {}
    config["source"] = {"kind": "mysql"}
    config["mysql"] = {
        "dsn": f"mysql://grstats@127.0.0.1:{server_port}",
        "password_file": str(password_file),
        "retry_initial": 0.05,
        "retry_max": 0.2,
    }
    return config


def spawn_daemon(
    workdir: Path,
    config: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    command: str = "run",
) -> DaemonProc:
    """Start one daemon process (not waiting for anything)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "grstats.toml"
    config_path.write_text(render_toml(config), encoding="utf-8")
    log_path = workdir / "daemon.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [GRSTATS, command, "--config", str(config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    member_id = config.get("member", {}).get("id", "collector")
    daemon = DaemonProc(member_id, workdir, process, log_path)
    SPAWNED.append(daemon)
    return daemon


def wait_started(daemon: DaemonProc, *, ready: bool = True) -> DaemonProc:
    """Learn the daemon's API port from its log; optionally wait for its first connect."""

    def started() -> int | None:
        if not daemon.alive():
            raise AssertionError(f"daemon exited: {daemon.log_path.read_text()[-2000:]}")
        for event in daemon.events():
            if event.get("event") == "daemon.started":
                return int(event["api_port"])
        return None

    daemon.api_port = wait_for(started, 60, f"{daemon.member_id} to start")
    if ready:
        wait_for(lambda: daemon.has_event("daemon.ready"), 30, f"{daemon.member_id} to connect")
    return daemon


def start_daemon(workdir: Path, config: dict[str, Any], *, ready: bool = True) -> DaemonProc:
    """Start one daemon and wait until its API port is known (and READY if asked)."""
    return wait_started(spawn_daemon(workdir, config), ready=ready)


@contextmanager
def daemons(
    tmp_path: Path, configs: Sequence[dict[str, Any]], *, wait_ready: bool = True
) -> Iterator[list[DaemonProc]]:
    """Start several daemons in parallel; stop (SIGKILL) whatever is still running at exit."""
    started: list[DaemonProc] = []
    try:
        for index, config in enumerate(configs):
            started.append(spawn_daemon(tmp_path / f"d{index}", config))
        for d in started:
            wait_started(d, ready=wait_ready)
        yield started
    finally:
        for d in started:
            if d.alive():
                d.process.send_signal(signal.SIGKILL)
                d.process.wait(timeout=10)
