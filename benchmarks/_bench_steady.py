"""bench_daemon's steady-state scenarios: (a) simulated daemons, (d) the production configuration.

Both put daemons beside one bare aiomqtt process doing the same exchange (one
pre-encoded envelope per second, retained, and draining the group's topics)
on a private Mosquitto, and read CPU % of one core (utime + stime deltas over
the window, after a warm-up) and RSS from /proc.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _bench_procs import (
    GROUP,
    SCRIPT,
    WARMUP_S,
    Procs,
    api_port_of,
    cpu_seconds,
    member_uuid,
    rss_mb,
    start_broker,
    start_daemon,
)

MIMIC = str(Path(__file__).resolve().parent / "_bench_mimic.py")
GRSTATS = str(Path(sys.executable).parent / "grstats")
MYSQL_PASSWORD = "pw"  # tests/fixtures/fake_mysql.py's account
SQL_PASSWORD = "bench-sql"


def start_bare(procs: Procs, workdir: Path, broker: int, seconds: float) -> subprocess.Popen[bytes]:
    argv = [sys.executable, SCRIPT, "--role", "bare-steady", "--port", str(broker)]
    argv += ["--member", member_uuid(99, 1), "--seconds", str(seconds + WARMUP_S + 5)]
    return procs.start(argv, workdir / "bare.log")


def children(pid: int, module: str = "grstats.daemon.sqlmain") -> list[int]:
    """The children of `pid` running `module` (the SQL endpoint's process; the
    short-lived history children come and go and are read through cutime/cstime)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and module.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


@dataclass
class Window:
    """CPU % of one core and RSS MB per PID over one measured window.

    `cpu_all` adds the CPU of the children each PID waited for (the member
    daemon's short-lived history children).
    """

    seconds: float
    cpu: dict[int, float]
    rss: dict[int, float]
    cpu_all: dict[int, float]

    def mean_cpu(self, pids: list[int]) -> float:
        return sum(self.cpu[p] for p in pids) / len(pids)

    def mean_rss(self, pids: list[int]) -> float:
        return sum(self.rss[p] for p in pids) / len(pids)


def _read(reading: Callable[[], float]) -> float:
    try:
        return reading()
    except OSError:  # the process ended (a restarted SQL endpoint): no figure
        return float("nan")


def measure(pids: list[int], seconds: float) -> Window:
    time.sleep(WARMUP_S)
    cpu0 = {pid: _read(lambda p=pid: cpu_seconds(p)) for pid in pids}
    all0 = {pid: _read(lambda p=pid: cpu_seconds(p, waited_children=True)) for pid in pids}
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    cpu = {pid: 100 * (_read(lambda p=pid: cpu_seconds(p)) - cpu0[pid]) / elapsed for pid in pids}
    cpu_all = {
        pid: 100 * (_read(lambda p=pid: cpu_seconds(p, waited_children=True)) - all0[pid]) / elapsed
        for pid in pids
    }
    rss = {pid: _read(lambda p=pid: rss_mb(p)) for pid in pids}
    return Window(elapsed, cpu, rss, cpu_all)


def steady(seconds: float) -> None:
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
        workdir = Path(tmp)
        try:
            broker = start_broker(procs, workdir)
            members = [member_uuid(i, 1) for i in range(9)]
            started = [start_daemon(procs, workdir, broker, m, members) for m in members]
            for _, log in started:
                api_port_of(log)
            bare = start_bare(procs, workdir, broker, seconds)
            daemons = [p.pid for p, _ in started]
            w = measure([*daemons, bare.pid], seconds)
        finally:
            procs.stop_all()
    print(f"(a) steady state, 9 daemons at 1 Hz + 1 bare aiomqtt, {w.seconds:.0f} s window")
    for i, pid in enumerate(daemons):
        print(f"    daemon {i + 1}: CPU {w.cpu[pid]:5.2f} %  RSS {w.rss[pid]:5.1f} MB")
    top_cpu = max(w.cpu[p] for p in daemons)
    print(
        f"    daemons: CPU mean {w.mean_cpu(daemons):.2f} % max {top_cpu:.2f} %; "
        f"RSS mean {w.mean_rss(daemons):.1f} MB max {max(w.rss[p] for p in daemons):.1f} MB"
    )
    print(f"    bare aiomqtt: CPU {w.cpu[bare.pid]:.2f} %  RSS {w.rss[bare.pid]:.1f} MB")
    print(
        f"    ratio daemon/bare: CPU {w.mean_cpu(daemons) / max(w.cpu[bare.pid], 1e-9):.2f}x, "
        f"RSS {w.mean_rss(daemons) / w.rss[bare.pid]:.2f}x  (goal: < 1 % CPU, < 80 MB)"
    )


def production_toml(
    broker: int, server: int, workdir: Path, sql: bool, flush: float | None = None
) -> str:
    (workdir / "mysql.password").write_text(MYSQL_PASSWORD + "\n")
    text = f"""
[source]
kind = "mysql"
[mysql]
dsn = "mysql://grstats@127.0.0.1:{server}"
password_file = "{workdir / "mysql.password"}"
[bus]
port = {broker}
[publish]
period = 1.0
[api]
listen = "127.0.0.1:0"
[history]
dir = "{workdir / "history"}"
{"" if flush is None else f"flush_interval = {flush}"}
[log]
format = "json"
"""
    if sql:
        (workdir / "sql.password").write_text(SQL_PASSWORD + "\n")
        text += f'[sql]\nlisten = "127.0.0.1:0"\npassword_file = "{workdir / "sql.password"}"\n'
    return text


def start_mimic(
    procs: Procs, workdir: Path, servers: int, shape: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """One fake server per process, all of one group; their ports and member ids.
    `shape`: _bench_mimic.py's --version / --commit-path arguments (default: 8.4, neither)."""
    readies = [workdir / f"mimic-{i}.json" for i in range(servers)]
    for i, ready in enumerate(readies):
        argv = [sys.executable, MIMIC, "--servers", str(servers), "--only", str(i), *shape]
        procs.start([*argv, "--ready", str(ready)], workdir / f"mimic-{i}.log")
    deadline = time.monotonic() + 60
    while not all(ready.exists() for ready in readies):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the mimic servers never started: {workdir}/mimic-*.log")
        time.sleep(0.05)
    return [entry for ready in readies for entry in json.loads(ready.read_text())]


def production(seconds: float, per_set: int, flush: float | None = None) -> None:
    """(d) mysql source against fake servers in another process, history on, [sql] off / on."""
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="bench-prod-") as tmp:
        workdir = Path(tmp)
        try:
            broker = start_broker(procs, workdir)
            servers = start_mimic(procs, workdir, 2 * per_set)
            sets: dict[bool, list[int]] = {False: [], True: []}
            logs = []
            for i, server in enumerate(servers):
                sql = i >= per_set
                d = workdir / f"d{i}"
                d.mkdir()
                (d / "grstats.toml").write_text(
                    production_toml(broker, server["port"], d, sql, flush)
                )
                proc = procs.start([GRSTATS, "run", "--config", str(d / "grstats.toml")], d / "log")
                sets[sql].append(proc.pid)
                logs.append(d / "log")
            for log in logs:
                api_port_of(log)
            bare = start_bare(procs, workdir, broker, seconds)
            time.sleep(1.0)  # the SQL endpoints' processes are started once the daemon runs
            kids = {pid: children(pid) for pid in sets[True]}
            every = [*sets[False], *sets[True], *(k for ks in kids.values() for k in ks), bare.pid]
            w = measure(every, seconds)
        finally:
            procs.stop_all()
    b_cpu, b_rss = max(w.cpu[bare.pid], 1e-9), w.rss[bare.pid]
    print(
        f"(d) production configuration: mysql source (fake 8.4 servers in another process), "
        f"history on (flush {'default' if flush is None else flush} s), period 1 s, "
        f"{per_set} daemons per row + 1 bare aiomqtt, "
        f"{w.seconds:.0f} s window"
    )
    print(f"    bare aiomqtt: CPU {b_cpu:.2f} %  RSS {b_rss:.1f} MB")
    for sql, pids in sets.items():
        cpu, rss = w.mean_cpu(pids), w.mean_rss(pids)
        cpu_all = sum(w.cpu_all[p] for p in pids) / len(pids)
        print(
            f"    [sql] {'on ' if sql else 'off'} daemon: CPU {cpu:.2f} % ({cpu / b_cpu:.2f}x), "
            f"RSS {rss:.1f} MB ({rss / b_rss:.2f}x)  (goal: <= 1.3x CPU, <= 1.5x RSS)\n"
            f"               with its history children: CPU {cpu_all:.2f} % "
            f"({cpu_all / b_cpu:.2f}x)"
        )
    if any(kids.values()):
        tot_cpu = sum(w.cpu[p] + sum(w.cpu[k] for k in kids[p]) for p in sets[True]) / per_set
        tot_rss = sum(w.rss[p] + sum(w.rss[k] for k in kids[p]) for p in sets[True]) / per_set
        print(
            f"    [sql] on, with the endpoint's process: CPU {tot_cpu:.2f} % "
            f"({tot_cpu / b_cpu:.2f}x), RSS {tot_rss:.1f} MB ({tot_rss / b_rss:.2f}x)"
        )
    print(f"    (load average {os.getloadavg()[0]:.2f}; group {GROUP})")
