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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _bench_floor import FloorPlan, capture, mysql_figures, print_mysql, server_load, start_floor
from _bench_procs import (
    GROUP,
    REPO,
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
    edges: tuple[Any, Any] = (None, None)

    def mean_cpu(self, pids: list[int]) -> float:
        return sum(self.cpu[p] for p in pids) / len(pids)

    def mean_rss(self, pids: list[int]) -> float:
        return sum(self.rss[p] for p in pids) / len(pids)


def _read(reading: Callable[[], float]) -> float:
    try:
        return reading()
    except OSError:  # the process ended (a restarted SQL endpoint): no figure
        return float("nan")


def measure(pids: list[int], seconds: float, edges: Callable[[], Any] | None = None) -> Window:
    """CPU and RSS of `pids` over `seconds` after a warm-up; `edges()` is read at both ends
    (`Window.edges`: its value before, after)."""
    time.sleep(WARMUP_S)
    before = edges() if edges else None
    cpu0 = {pid: _read(lambda p=pid: cpu_seconds(p)) for pid in pids}
    all0 = {pid: _read(lambda p=pid: cpu_seconds(p, waited_children=True)) for pid in pids}
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    after = edges() if edges else None
    cpu = {pid: 100 * (_read(lambda p=pid: cpu_seconds(p)) - cpu0[pid]) / elapsed for pid in pids}
    cpu_all = {
        pid: 100 * (_read(lambda p=pid: cpu_seconds(p, waited_children=True)) - all0[pid]) / elapsed
        for pid in pids
    }
    rss = {pid: _read(lambda p=pid: rss_mb(p)) for pid in pids}
    return Window(elapsed, cpu, rss, cpu_all, (before, after))


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


@dataclass
class DaemonSet:
    """The production daemons of one checkout with [sql] off or on, in one window."""

    tree: str  # "this" or the compared checkout's path
    sql: bool
    pids: list[int] = field(default_factory=list)
    readies: list[Path] = field(default_factory=list)  # their fake servers' ready files
    dirs: list[Path] = field(default_factory=list)

    @property
    def label(self) -> str:
        tree = "" if self.tree == "this" else f"[{Path(self.tree).name}] "
        return f"{tree}[sql] {'on ' if self.sql else 'off'}"


def production(
    seconds: float, per_set: int, flush: float | None = None, compare: Path | None = None
) -> None:
    """(d) mysql source against fake servers in another process, history on, [sql] off / on,
    beside bare aiomqtt and the I/O floor; with `compare`, that checkout's daemons too."""
    trees = [("this", REPO)] + ([(str(compare), compare)] if compare else [])
    sets = [DaemonSet(name, sql) for name, _ in trees for sql in (False, True)]
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="bench-prod-") as tmp:
        workdir = Path(tmp)
        try:
            broker = start_broker(procs, workdir)
            servers = start_mimic(procs, workdir, len(sets) * per_set + 1)  # the last: floor's
            logs = []
            for i, server in enumerate(servers[:-1]):
                one, tree = sets[i // per_set], dict(trees)[sets[i // per_set].tree]
                d = workdir / f"d{i}"
                d.mkdir()
                toml = production_toml(broker, server["port"], d, one.sql, flush)
                (d / "grstats.toml").write_text(toml)
                argv = [GRSTATS, "run", "--config", str(d / "grstats.toml")]
                one.pids.append(procs.start(argv, d / "log", tree).pid)
                one.readies.append(workdir / f"mimic-{i}.json")
                one.dirs.append(d)
                logs.append(d / "log")
            for log in logs:
                api_port_of(log)
            plan = capture(sets[0].readies[0], sets[0].dirs[0] / "history")
            floor_ready = workdir / f"mimic-{len(servers) - 1}.json"
            bare = start_bare(procs, workdir, broker, seconds)
            floor = start_floor(
                procs,
                workdir,
                broker,
                seconds + WARMUP_S + 5,
                plan=plan,
                mysql_port=servers[-1]["port"],
            )
            time.sleep(1.0)  # a compared tree's SQL endpoints start with their daemon
            kids = {pid: children(pid) for one in sets if one.sql for pid in one.pids}
            every = [p for one in sets for p in one.pids] + [bare.pid, floor.pid]
            every += [k for ks in kids.values() for k in ks]
            readies = [r for one in sets for r in one.readies] + [floor_ready]
            w = measure(every, seconds, lambda: {r: server_load(r) for r in readies})
            first = first_queries(sets, workdir)
        finally:
            procs.stop_all()
    _report(w, sets, kids, (bare.pid, floor.pid, floor_ready), per_set, flush, plan)
    _report_first(first)


def _report(  # noqa: PLR0917 - one window's figures, printed once
    w: Window,
    sets: list[DaemonSet],
    kids: dict[int, list[int]],
    references: tuple[int, int, Path],
    per_set: int,
    flush: float | None,
    plan: FloorPlan,
) -> None:
    bare, floor, floor_ready = references
    b_cpu, b_rss = max(w.cpu[bare], 1e-9), w.rss[bare]
    f_cpu, f_rss = max(w.cpu[floor], 1e-9), w.rss[floor]
    print(
        f"(d) production configuration: mysql source (fake 8.4 servers in another process), "
        f"history on (flush {'default' if flush is None else flush} s), period 1 s, "
        f"{per_set} daemons per row + 1 bare aiomqtt + the I/O floor, {w.seconds:.0f} s window"
    )
    print(f"    bare aiomqtt: CPU {b_cpu:.2f} %  RSS {b_rss:.1f} MB")
    print(
        f"    I/O floor (the same MQTT exchange with a daemon's envelopes, its statements "
        f"over asyncmy, {plan.wal_bytes} B/s of WAL fsynced):\n"
        f"                  CPU {f_cpu:.2f} % ({f_cpu / b_cpu:.2f}x bare)  RSS {f_rss:.1f} MB"
    )
    rss_off: dict[str, float] = {}
    for one in sets:
        cpu, rss = w.mean_cpu(one.pids), w.mean_rss(one.pids)
        cpu_all = sum(w.cpu_all[p] for p in one.pids) / len(one.pids)
        print(
            f"    {one.label} daemon: CPU {cpu:.2f} % ({cpu / b_cpu:.2f}x bare, "
            f"{cpu / f_cpu:.2f}x floor; own cost {cpu - f_cpu:+.2f} points), "
            f"RSS {rss:.1f} MB ({rss / b_rss:.2f}x bare)  (goal: <= 1.5x floor, <= 1.5x RSS)\n"
            f"{'':>22}with its history children: CPU {cpu_all:.2f} % ({cpu_all / f_cpu:.2f}x floor)"
        )
        if not one.sql:
            rss_off[one.tree] = rss
            continue
        endpoints = [k for p in one.pids for k in kids[p]]
        tot_cpu = sum(w.cpu[p] + sum(w.cpu[k] for k in kids[p]) for p in one.pids) / per_set
        tot_rss = sum(w.rss[p] + sum(w.rss[k] for k in kids[p]) for p in one.pids) / per_set
        print(
            f"{'':>22}with the endpoint's process ({len(endpoints)} running): "
            f"CPU {tot_cpu:.2f} % ({tot_cpu / f_cpu:.2f}x floor), RSS {tot_rss:.1f} MB: "
            f"{tot_rss - rss_off[one.tree]:+.1f} MB over [sql] off (goal: <= +20 MB unused)"
        )
    before, after = w.edges
    rows = [
        (one.label + " daemon", mysql_figures(before[r], after[r], w.seconds))
        for one in sets
        for r in one.readies[:1]
    ]
    rows.append(("I/O floor", mysql_figures(before[floor_ready], after[floor_ready], w.seconds)))
    print_mysql(rows)
    print(f"    (load average {os.getloadavg()[0]:.2f}; group {GROUP})")


def first_queries(sets: list[DaemonSet], workdir: Path) -> list[tuple[str, float, float]]:
    """For each [sql]-on daemon: the first query's time (its endpoint's process started by it,
    unless one runs already) and the next one's on a new connection, both with PyMySQL."""
    import pymysql  # noqa: PLC0415 - the dev venv's client, only for this

    out = []
    for one in sets:
        if not one.sql:
            continue
        for d in one.dirs:
            # the port its endpoint listens on (an older checkout's child logs it)
            lines = (d / "log").read_text().splitlines()
            port = next(
                (int(json.loads(x)["port"]) for x in reversed(lines) if '"sql.listening"' in x),
                0,
            )
            if not port:
                raise RuntimeError(f"{one.label}: no sql.listening in {d / 'log'}: {lines[-20:]}")
            times = []
            for _ in range(2):
                t0 = time.monotonic()
                with (
                    pymysql.connect(
                        host="127.0.0.1",
                        port=port,
                        user="grstats",
                        password=SQL_PASSWORD,
                        connect_timeout=30,
                    ) as conn,
                    conn.cursor() as cur,
                ):
                    cur.execute("SELECT @@server_uuid")
                    cur.fetchall()
                times.append(time.monotonic() - t0)
            out.append((one.label, times[0], times[1]))
    return out


def _report_first(first: list[tuple[str, float, float]]) -> None:
    print("    first SQL query after the window (connect + SELECT @@server_uuid, PyMySQL):")
    for label, cold, warm in first:
        print(
            f"      {label}: first {cold * 1000:.0f} ms, next (new connection) "
            f"{warm * 1000:.0f} ms: the first pays {1000 * (cold - warm):+.0f} ms"
        )
    print(f"      (load average {os.getloadavg()[0]:.2f})")
