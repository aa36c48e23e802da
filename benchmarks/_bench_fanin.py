"""bench_daemon's receive-path scenarios: (b) one daemon's fan-in, (c) collectors with history."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _bench_procs import (
    GROUP,
    PREFIX,
    REPO,
    SCRIPT,
    Procs,
    api_port_of,
    cpu_seconds,
    healthz,
    member_uuid,
    rss_mb,
    start_broker,
    start_daemon,
)


def run_publishers(
    procs: Procs, workdir: Path, broker: int, args: argparse.Namespace, tag: str
) -> int:
    pubs = [
        procs.start(
            [
                sys.executable,
                SCRIPT,
                "--role",
                "publisher",
                "--port",
                str(broker),
                "--family",
                str(10 + i),
                "--members",
                str(args.members),
                "--per-member",
                str(args.per_member),
                "--seconds",
                str(args.fanin_seconds),
            ],
            workdir / f"pub-{tag}-{i}.log",
        )
        for i in range(args.publishers)
    ]
    sent = 0
    for i, p in enumerate(pubs):
        p.wait(timeout=args.fanin_seconds + 120)
        lines = (workdir / f"pub-{tag}-{i}.log").read_text().strip().splitlines()
        sent += json.loads(lines[-1])["sent"]
    return sent


def fanin(args: argparse.Namespace) -> None:
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="bench-fanin-") as tmp:
        workdir = Path(tmp)
        try:
            broker = start_broker(procs, workdir)
            # Bare subscriber first.
            ready = workdir / "bare.ready"
            bare = procs.start(
                [
                    sys.executable,
                    SCRIPT,
                    "--role",
                    "bare-sub",
                    "--port",
                    str(broker),
                    "--idle",
                    "2",
                    "--seconds",
                    str(args.fanin_seconds + 60),
                    "--ready",
                    str(ready),
                ],
                workdir / "bare-sub.log",
            )
            while not ready.exists():
                time.sleep(0.05)
            sent_bare = run_publishers(procs, workdir, broker, args, "bare")
            bare.wait(timeout=args.fanin_seconds + 120)
            bare_result = json.loads(
                (workdir / "bare-sub.log").read_text().strip().splitlines()[-1]
            )
            bare_rate = bare_result["count"] / max(bare_result["seconds"], 1e-9)

            # Then the daemon (its own member is not among the publishers).
            me = member_uuid(0, 1)
            proc, log = start_daemon(procs, workdir, broker, me, [me])
            api = api_port_of(log)
            while not healthz(api).get("bus_connected"):
                time.sleep(0.05)
            base = healthz(api)["counters"]["envelopes_accepted"]

            result: dict[str, int] = {}
            thread = threading.Thread(
                target=lambda: result.update(sent=run_publishers(procs, workdir, broker, args, "d"))
            )
            cpu0 = cpu_seconds(proc.pid)
            thread.start()
            t_first, t_last, last = until_drained(
                lambda: healthz(api)["counters"]["envelopes_accepted"], thread, base, 0.2
            )
            daemon_count = last - base
            daemon_rate = daemon_count / max(t_last - t_first, 1e-9)
            daemon_cpu = cpu_seconds(proc.pid) - cpu0
            rejected = {
                k: v
                for k, v in healthz(api)["counters"].items()
                if k.startswith("envelopes_rejected")
            }
            daemon_rss = rss_mb(proc.pid)
        finally:
            procs.stop_all()
    print(
        f"(b) fan-in: {args.publishers} publishers x {args.members} members, "
        f"<= {args.per_member} envelopes each, <= {args.fanin_seconds:.0f} s"
    )
    print(
        f"    bare aiomqtt subscriber: {bare_result['count']} of {sent_bare} messages "
        f"in {bare_result['seconds']:.2f} s = {bare_rate:,.0f} msg/s"
    )
    print(
        f"    daemon: {daemon_count} of {result.get('sent', 0)} envelopes accepted "
        f"= {daemon_rate:,.0f} env/s (CPU {daemon_cpu:.1f} s, RSS {daemon_rss:.1f} MB, "
        f"rejected {sum(rejected.values())})"
    )
    print(f"    ratio daemon/bare: {daemon_rate / max(bare_rate, 1e-9):.2f}  (goal: >= 0.6)")


def collector_toml(broker: int, history: Path, name: str, shared: str) -> str:
    return f"""
[bus]
port = {broker}
client_id = "{name}"
shared_group = "{shared}"
[api]
listen = "127.0.0.1:0"
[history]
dir = "{history}"
[limits]
max_members_per_group = 100000
[log]
format = "json"
"""


def start_collectors(
    procs: Procs, workdir: Path, broker: int, count: int, tag: str, *, tree: Path = REPO
) -> tuple[list[subprocess.Popen[bytes]], list[int], Path]:
    history = workdir / f"history-{tag}"
    grstats = str(Path(sys.executable).parent / "grstats")
    started = []
    for i in range(count):
        d = workdir / f"collector-{tag}-{i}"
        d.mkdir()
        (d / "grstats.toml").write_text(collector_toml(broker, history, f"bench-{tag}-{i}", tag))
        argv = [grstats, "collect", "--config", str(d / "grstats.toml")]
        started.append((procs.start(argv, d / "log", tree), d / "log"))
    ports = [api_port_of(log) for _, log in started]
    for port in ports:
        while not healthz(port).get("bus_connected"):
            time.sleep(0.05)
    return [p for p, _ in started], ports, history


def settle(pids: list[int], quiet_cpu_s: float = 0.02, timeout: float = 30.0) -> None:
    """Wait until `pids` used under `quiet_cpu_s` of CPU in half a second (or `timeout`)."""
    deadline = time.monotonic() + timeout
    before = sum(cpu_seconds(p) for p in pids)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sum(cpu_seconds(p) for p in pids)
        if now - before < quiet_cpu_s:
            return
        before = now


def parquet_rows(history: Path) -> int:
    import pyarrow.parquet as pq  # noqa: PLC0415 - only once the collectors stopped

    return sum(pq.read_metadata(p).num_rows for p in history.glob("group=*/date=*/part-*.parquet"))


def until_drained(
    total: Callable[[], int], thread: threading.Thread, base: int, interval: float = 0.1
) -> tuple[float, float, int]:
    """Poll `total` every `interval` s until `thread` (the publishers) ended and it stood 2 s.

    Returns (the last moment it read `base`, the first it read its final value, that value).
    """
    samples: list[tuple[float, int]] = []
    last = base
    idle_since = None
    while True:
        now = time.monotonic()
        accepted = total()
        samples.append((now, accepted))
        if accepted == last and not thread.is_alive():
            idle_since = idle_since or now
            if now - idle_since > 2.0:
                break
        else:
            idle_since = None
        last = accepted
        time.sleep(interval)
    thread.join()
    t_first = max(t for t, a in samples if a == base)
    t_last = min(t for t, a in samples if a == last)
    return t_first, t_last, last


def measure_collectors(
    procs: Procs,
    workdir: Path,
    broker: int,
    args: argparse.Namespace,
    count: int,
    *,
    tree: Path = REPO,
) -> dict[str, float]:

    load = os.getloadavg()[0]
    tag = f"c{count}" + ("" if tree == REPO else "-compared")
    collectors, ports, history = start_collectors(procs, workdir, broker, count, tag, tree=tree)

    def total() -> int:
        return sum(healthz(p)["counters"]["envelopes_accepted"] for p in ports)

    settle([p.pid for p in collectors])  # their start-up (imports, housekeeping) is not the load's

    base = last = total()
    result: dict[str, int] = {}
    thread = threading.Thread(
        target=lambda: result.update(sent=run_publishers(procs, workdir, broker, args, tag))
    )
    cpu0 = [cpu_seconds(p.pid) for p in collectors]
    thread.start()
    t_first, t_last, last = until_drained(total, thread, base)
    cpu = sum(cpu_seconds(p.pid) for p in collectors) - sum(cpu0)
    rss = max(rss_mb(p.pid) for p in collectors)
    rejected: dict[str, int] = {}
    for port in ports:
        for name, n in healthz(port)["counters"].items():
            if name.startswith("envelopes_rejected_") and n:
                key = name.removeprefix("envelopes_rejected_")
                rejected[key] = rejected.get(key, 0) + n
    for p in collectors:
        p.send_signal(signal.SIGTERM)
    for p in collectors:
        p.wait(timeout=30)
    count_ = last - base
    return {
        "load": load,
        "accepted": count_,
        "sent": result.get("sent", 0),
        "rate": count_ / max(t_last - t_first, 1e-9),
        "cpu_us": 1e6 * cpu / max(count_, 1),
        "rss": rss,
        "written": parquet_rows(history),
        "rejected": rejected,
    }


def measure_bare(
    procs: Procs, workdir: Path, broker: int, args: argparse.Namespace, role: str = "bare-sub"
) -> Any:
    load = os.getloadavg()[0]
    ready = workdir / f"{role}.ready"
    bare = procs.start(
        [
            sys.executable,
            SCRIPT,
            "--role",
            role,
            "--port",
            str(broker),
            "--idle",
            "2",
            "--seconds",
            str(args.fanin_seconds + 60),
            "--ready",
            str(ready),
        ],
        workdir / f"{role}.log",
    )
    while not ready.exists():
        time.sleep(0.05)
    sent = run_publishers(procs, workdir, broker, args, role)
    bare.wait(timeout=args.fanin_seconds + 120)
    result = json.loads((workdir / f"{role}.log").read_text().strip().splitlines()[-1])
    rate = result["count"] / max(result["seconds"], 1e-9)
    out = {"load": load, "accepted": result["count"], "sent": sent, "rate": rate}
    if "cpu" in result:
        out["cpu_us"] = 1e6 * result["cpu"] / max(result["count"], 1)
    return out


def measure_mosquitto_sub(
    procs: Procs, workdir: Path, broker: int, args: argparse.Namespace
) -> dict[str, float] | None:

    binary = shutil.which("mosquitto_sub")
    if binary is None:
        return None
    load = os.getloadavg()[0]
    expected = args.publishers * args.members * args.per_member
    out = workdir / "mosquitto_sub.out"
    sub = procs.start(
        [
            binary,
            "-p",
            str(broker),
            "-t",
            f"{PREFIX}/{GROUP}/+/+",
            "-C",
            str(expected),
            "-W",
            str(int(args.fanin_seconds + 30)),
            "-F",
            "%U",
        ],
        out,
    )
    time.sleep(0.5)  # no ready signal from mosquitto_sub: give it time to subscribe
    sent = run_publishers(procs, workdir, broker, args, "msub")
    sub.wait(timeout=args.fanin_seconds + 60)
    stamps = [float(x) for x in out.read_text().split() if x[:1].isdigit()]
    rate = (len(stamps) - 1) / max(stamps[-1] - stamps[0], 1e-9) if len(stamps) > 1 else 0.0
    return {"load": load, "accepted": len(stamps), "sent": sent, "rate": rate}


def fanin_collectors(args: argparse.Namespace) -> None:
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
        workdir = Path(tmp)
        try:
            broker = start_broker(procs, workdir)
            bare = measure_bare(procs, workdir, broker, args)
            msub = measure_mosquitto_sub(procs, workdir, broker, args)
            bus = measure_bare(procs, workdir, broker, args, "bus-sub")
            bus_paho = measure_bare(procs, workdir, broker, args, "bus-sub-paho")
            one = measure_collectors(procs, workdir, broker, args, 1)
            compared = None
            if args.compare_tree is not None:
                compared = measure_collectors(
                    procs, workdir, broker, args, 1, tree=args.compare_tree
                )
            two = measure_collectors(procs, workdir, broker, args, 2)
        finally:
            procs.stop_all()
    print(
        f"(c) collector fan-in: {args.publishers} publishers x {args.members} members "
        f"x {args.per_member} envelopes, one run, back to back"
    )

    def line(name: str, r: dict[str, float], extra: str = "") -> None:
        print(
            f"    {name:<26} {r['rate']:>9,.0f} env/s  ({r['accepted']:.0f} of {r['sent']:.0f}; "
            f"load {r['load']:.2f}){extra}"
        )

    line("bare aiomqtt (count only)", bare)
    if msub is not None:
        line("mosquitto_sub -C N", msub)
    line("grstats Bus (count only)", bus, f"\n{'':31}CPU {bus['cpu_us']:.0f} us/env (MQTT 5 floor)")
    line(
        "grstats Bus, paho reading",
        bus_paho,
        f"\n{'':31}CPU {bus_paho['cpu_us']:.0f} us/env (the floor before the socket tap)",
    )
    rows = [("1 collector, history on", one), ("2 collectors, shared", two)]
    if compared is not None:
        rows.insert(1, (f"1 collector of {args.compare_tree.name}", compared))
    for name, r in rows:
        line(
            name,
            r,
            f"\n{'':31}CPU {r['cpu_us']:.0f} us/env, RSS max {r['rss']:.0f} MB, "
            f"{r['written']:.0f} rows in Parquet, rejected {r['rejected'] or 0}",
        )
    print(
        f"    ratios: 1 collector / bare aiomqtt {one['rate'] / max(bare['rate'], 1e-9):.2f}"
        + (
            f", / mosquitto_sub {one['rate'] / max(msub['rate'], 1e-9):.2f}"
            if msub is not None
            else ""
        )
        + f"; 2 collectors / 1 {two['rate'] / max(one['rate'], 1e-9):.2f}"
        + "  (goals: >= 25,000 env/s; 2/1 >= 1.8)"
    )
    print(
        f"    1 collector / grstats Bus: rate {one['rate'] / max(bus['rate'], 1e-9):.2f}, "
        f"CPU {bus['cpu_us'] / max(one['cpu_us'], 1e-9):.2f}; / the Bus reading with paho "
        f"(as issue 44 was filed): rate {one['rate'] / max(bus_paho['rate'], 1e-9):.2f}, "
        f"CPU {bus_paho['cpu_us'] / max(one['cpu_us'], 1e-9):.2f}  (goal: >= 0.65)"
    )
