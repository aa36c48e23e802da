"""bench_daemon's process plumbing: ports, /proc readings, the broker, daemons, envelopes.

Only processes started through `Procs` are ever signalled (by PID).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from protocol import (  # noqa: E402 - after the sys.path line so a plain checkout works
    Envelope,
    MemberInfo,
    PipelineStats,
    encode_envelope,
    encode_pipeline_stats,
)

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
PREFIX = "grstats/v1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
WARMUP_S = 5.0
# the script whose --role options start the child processes
SCRIPT = str(Path(__file__).resolve().parent / "bench_daemon.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def member_uuid(index: int, family: int = 0) -> str:
    return f"{family:08x}-0000-4000-8000-{index:012x}"


def envelope_bytes(
    member: str, seq: int, incarnation: int = 42, sent_us: int = 1_767_225_600_000_000
) -> bytes:
    stats = PipelineStats(
        transactions_waiting_certification=1,
        transactions_waiting_apply=3,
        transactions_certified=12345 + seq,
        transactions_applied=12340 + seq,
        transactions_local=4000 + seq,
        transactions_rows_validating=812,
        sent_timestamp=sent_us + seq,
    )
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(member, "10.0.0.9", 3306, "ONLINE", "PRIMARY", "8.4.3", "h:1"),
            view_id="1767225600:9",
            incarnation=incarnation,
            seq=seq,
            sent_us=sent_us + seq,
            stats=encode_pipeline_stats(stats),
        )
    )


def cpu_seconds(pid: int, *, waited_children: bool = False) -> float:
    """CPU seconds of `pid`; with `waited_children`, plus those of its children it waited for.

    A member daemon's history steps run in short-lived children (cutime, cstime).
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = int(fields[11]) + int(fields[12])  # utime, stime
    kids = int(fields[13]) + int(fields[14]) if waited_children else 0  # cutime, cstime
    return (own + kids) / CLK_TCK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"port {port} never accepted")


def http_json(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return json.loads(response.read())


def healthz(port: int) -> Any:
    try:
        return http_json(port, "/healthz")
    except urllib.error.HTTPError as exc:  # 503 while disconnected still has a body
        return json.loads(exc.read())


class Procs:
    """Processes started by this benchmark; stopped by PID at exit."""

    def __init__(self) -> None:
        self.items: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], log: Path, tree: Path = REPO) -> subprocess.Popen[bytes]:
        # the children import this checkout (or `tree`: another checkout's daemons, measured
        # beside this one's), not whatever the venv has installed (a worktree sharing a
        # venv would measure another checkout's daemons)
        path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
        with log.open("wb") as out:
            # in `tree` too: `python -m` (the SQL endpoint's child) puts the cwd first on sys.path
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": path},
                cwd=tree,
            )
        self.items.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.items:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.items:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_broker(procs: Procs, workdir: Path) -> int:
    # imported here, not at the top: the bare aiomqtt reference process imports
    # this module and must not hold grstats (importing grstats imports structlog)
    from grstats.cli.demo.mosquitto import find_mosquitto, write_loopback_config  # noqa: PLC0415

    binary = find_mosquitto() or "/usr/sbin/mosquitto"
    port = free_port()
    conf = write_loopback_config(workdir / "mosquitto.conf", port)
    procs.start([binary, "-c", str(conf)], workdir / "mosquitto.log")
    wait_port(port)
    return port


@contextlib.contextmanager
def scratch_with_broker(prefix: str) -> Iterator[tuple[Procs, Path, int]]:
    """(processes, a scratch directory, a broker's port in it); every process stopped after."""
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        workdir = Path(tmp)
        try:
            yield procs, workdir, start_broker(procs, workdir)
        finally:
            procs.stop_all()


def daemon_toml(broker: int, member: str, members: list[str], simulated: str = "") -> str:
    """One simulated member's config; `simulated`: further `[simulated]` lines."""
    return f"""
[member]
group = "{GROUP}"
id = "{member}"
[simulated]
members = {json.dumps(members)}
{simulated}
[bus]
port = {broker}
[publish]
period = 1.0
[api]
listen = "127.0.0.1:0"
[limits]
max_members_per_group = 100000  # the fan-in publishers play hundreds of members
[log]
format = "json"
"""


def start_daemon(
    procs: Procs,
    workdir: Path,
    broker: int,
    member: str,
    members: list[str],
    *,
    simulated: str = "",
) -> Any:
    d = workdir / member
    d.mkdir()
    (d / "grstats.toml").write_text(daemon_toml(broker, member, members, simulated))
    grstats = str(Path(sys.executable).parent / "grstats")
    proc = procs.start([grstats, "run", "--config", str(d / "grstats.toml")], d / "log")
    return proc, d / "log"


def api_port_of(log: Path, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if '"daemon.started"' in line:
                return int(json.loads(line)["api_port"])
        time.sleep(0.05)
    raise RuntimeError(f"no daemon.started in {log}: {log.read_text(errors='replace')[-2000:]}")
