"""Daemon footprint and receive throughput, each beside bare aiomqtt in the same run.

Usage: python benchmarks/bench_daemon.py [--seconds 120] [--fanin-seconds 20]
                                         [--publishers 2] [--members 300]
                                         [--skip-steady] [--skip-fanin]

(a) steady state: 9 `grstats run` daemons (simulated source, period 1 s) and
    one bare aiomqtt process doing the same exchange (publish one
    pre-encoded envelope per second, retained, and drain the group's topics)
    on a private Mosquitto for `--seconds`. After a 5 s warm-up, CPU % of one
    core from /proc/<pid>/stat (utime + stime deltas over the window) and RSS
    from /proc/<pid>/status. Goals: < 1 % CPU and < 80 MB RSS per daemon.
(b) fan-in: one daemon's receive path (decode, validate, apply to the tables)
    while `--publishers` processes publish pre-encoded envelopes of
    `--members` members each (seq increasing, so every one is acceptable) as
    fast as they can, bounded in count and time. Accepted envelopes per second
    from the daemon's counters (/healthz), then the same load against a bare
    aiomqtt subscriber that only counts messages. Goal: daemon >= 0.6 x bare.

(c) collector fan-in (`--fanin` runs only this): the same publishers against,
    back to back in one run, a bare aiomqtt subscriber, a raw `mosquitto_sub
    -C N` consumer, one `grstats collect` and two of them in one shared group
    (`[bus] shared_group`), each collector with history on (WAL fsync every
    second, Parquet at stop; the Parquet rows are counted after the stop).
    Envelopes/s from the first to the last accepted one (/healthz polled every
    0.1 s), CPU per envelope, the load average before each. Goals: one collector
    >= 25 k envelopes/s; two >= 1.7 x one (only meaningful with two free cores:
    the broker and the publishers share them here).

Figures only; nothing is asserted. Only processes started here are signalled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import machine

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grstats.cli.demo.mosquitto import (  # noqa: E402 - after the sys.path line so a plain checkout works
    find_mosquitto,
    write_loopback_config,
)
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


# -- helpers ---------------------------------------------------------------------


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


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


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

    def start(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
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
    binary = find_mosquitto() or "/usr/sbin/mosquitto"
    port = free_port()
    conf = write_loopback_config(workdir / "mosquitto.conf", port)
    procs.start([binary, "-c", str(conf)], workdir / "mosquitto.log")
    wait_port(port)
    return port


def daemon_toml(broker: int, member: str, members: list[str]) -> str:
    return f"""
[member]
group = "{GROUP}"
id = "{member}"
[simulated]
members = {json.dumps(members)}
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


def start_daemon(procs: Procs, workdir: Path, broker: int, member: str, members: list[str]) -> Any:
    d = workdir / member
    d.mkdir()
    (d / "grstats.toml").write_text(daemon_toml(broker, member, members))
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
    raise RuntimeError(f"no daemon.started in {log}")


# -- child roles -------------------------------------------------------------------


async def role_bare_steady(port: int, member: str, seconds: float) -> None:
    import aiomqtt  # noqa: PLC0415 - benchmark child process only

    topic = f"{PREFIX}/{GROUP}/{member}/stats"
    received = 0
    async with aiomqtt.Client("127.0.0.1", port) as client:
        await client.subscribe(f"{PREFIX}/{GROUP}/+/+")

        async def drain() -> None:
            nonlocal received
            async for _ in client.messages:
                received += 1

        task = asyncio.create_task(drain())
        loop = asyncio.get_running_loop()
        start = loop.time()
        seq = 0
        while loop.time() - start < seconds:
            seq += 1
            await client.publish(topic, envelope_bytes(member, seq), qos=0, retain=True)
            await asyncio.sleep(start + seq - loop.time())
        task.cancel()
    print(json.dumps({"received": received}))


async def role_bare_sub(port: int, idle_s: float, deadline_s: float, ready: str) -> None:
    import aiomqtt  # noqa: PLC0415 - benchmark child process only

    count = 0
    first = last = 0.0
    v5 = os.environ.get("BENCH_BARE_V5") == "1"
    protocol = aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311
    async with aiomqtt.Client("127.0.0.1", port, protocol=protocol) as client:
        await client.subscribe(f"{PREFIX}/{GROUP}/+/+", qos=1 if v5 else 0)
        Path(ready).touch()  # noqa: ASYNC240 - one tiny file before the measurement starts
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        iterator = client.messages.__aiter__()
        while loop.time() < end:
            try:
                await asyncio.wait_for(iterator.__anext__(), idle_s if count else end - loop.time())
            except TimeoutError:
                break
            now = time.monotonic()
            if count == 0:
                first = now
            last = now
            count += 1
    print(json.dumps({"count": count, "seconds": last - first}))


async def role_bus_sub(port: int, idle_s: float, deadline_s: float, ready: str) -> None:
    """grstats' own Bus (MQTT 5, hand-over to a handler) that only counts: the MQTT floor."""
    from grstats.bus.client import Bus, BusOptions  # noqa: PLC0415 - benchmark child only

    count = 0
    first = last = 0.0

    def handler(topic: str, payload: bytes, retained: bool) -> None:
        nonlocal count, first, last
        last = time.monotonic()
        if not count:
            first = last
        count += 1

    bus = Bus(BusOptions(port=port), subscriptions=[f"{PREFIX}/{GROUP}/+/+"], handler=handler)
    task = asyncio.create_task(bus.run())
    await bus.connected.wait()
    Path(ready).touch()  # noqa: ASYNC240 - one tiny file before the measurement starts
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    # idle is "no message for idle_s": a deadline, not an event; 0.1 s polls are cheap
    while loop.time() < end and not (count and time.monotonic() - last > idle_s):  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    cpu = time.process_time()
    await bus.close()
    await task
    print(json.dumps({"count": count, "seconds": last - first, "cpu": cpu}))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _publish_packet(topic: str, payload: bytes) -> bytes:
    name = topic.encode()
    body = len(name).to_bytes(2, "big") + name + payload
    return b"\x30" + _varint(len(body)) + body  # PUBLISH, QoS 0, no retain


def role_publisher(port: int, family: int, members: int, per_member: int, seconds: float) -> None:
    """Blast pre-built MQTT 3.1.1 QoS 0 PUBLISH packets over a raw socket.

    A raw socket publishes far faster than any Python MQTT client can receive,
    so the subscriber under test (not the publisher) sets the pace.
    """
    ids = [member_uuid(i, family) for i in range(members)]
    now_us = time.time_ns() // 1000 - per_member  # today's partition, within the clock-skew limit
    packets = [
        _publish_packet(f"{PREFIX}/{GROUP}/{m}/stats", envelope_bytes(m, seq, sent_us=now_us))
        for seq in range(1, per_member + 1)
        for m in ids
    ]
    client_id = f"bench-pub-{family}".encode()
    connect_body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(client_id).to_bytes(2, "big") + client_id
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"\x10" + _varint(len(connect_body)) + connect_body)
        if sock.recv(4)[:1] != b"\x20":
            raise RuntimeError("no CONNACK")
        deadline = time.monotonic() + seconds
        for start in range(0, len(packets), 500):
            chunk = packets[start : start + 500]
            sock.sendall(b"".join(chunk))
            sent += len(chunk)
            if time.monotonic() > deadline:
                break
        sock.sendall(b"\xe0\x00")  # DISCONNECT
    print(json.dumps({"sent": sent}))


# -- scenarios -----------------------------------------------------------------------


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
            bare = procs.start(
                [
                    sys.executable,
                    __file__,
                    "--role",
                    "bare-steady",
                    "--port",
                    str(broker),
                    "--member",
                    member_uuid(99, 1),
                    "--seconds",
                    str(seconds + WARMUP_S + 5),
                ],
                workdir / "bare.log",
            )
            time.sleep(WARMUP_S)
            pids = [p.pid for p, _ in started] + [bare.pid]
            cpu0 = {pid: cpu_seconds(pid) for pid in pids}
            t0 = time.monotonic()
            time.sleep(seconds)
            elapsed = time.monotonic() - t0
            cpu = {pid: 100 * (cpu_seconds(pid) - cpu0[pid]) / elapsed for pid in pids}
            rss = {pid: rss_mb(pid) for pid in pids}
        finally:
            procs.stop_all()
    print(f"(a) steady state, 9 daemons at 1 Hz + 1 bare aiomqtt, {elapsed:.0f} s window")
    for i, (p, _) in enumerate(started):
        print(f"    daemon {i + 1}: CPU {cpu[p.pid]:5.2f} %  RSS {rss[p.pid]:5.1f} MB")
    d_cpu = [cpu[p.pid] for p, _ in started]
    d_rss = [rss[p.pid] for p, _ in started]
    print(
        f"    daemons: CPU mean {sum(d_cpu) / 9:.2f} % max {max(d_cpu):.2f} %; "
        f"RSS mean {sum(d_rss) / 9:.1f} MB max {max(d_rss):.1f} MB"
    )
    print(f"    bare aiomqtt: CPU {cpu[bare.pid]:.2f} %  RSS {rss[bare.pid]:.1f} MB")
    print(
        f"    ratio daemon/bare: CPU {sum(d_cpu) / 9 / max(cpu[bare.pid], 1e-9):.2f}x, "
        f"RSS {sum(d_rss) / 9 / rss[bare.pid]:.2f}x  (goal: < 1 % CPU, < 80 MB)"
    )


def run_publishers(
    procs: Procs, workdir: Path, broker: int, args: argparse.Namespace, tag: str
) -> int:
    pubs = [
        procs.start(
            [
                sys.executable,
                __file__,
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
                    __file__,
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
            samples: list[tuple[float, int]] = []
            base = healthz(api)["counters"]["envelopes_accepted"]
            import threading  # noqa: PLC0415

            result: dict[str, int] = {}
            thread = threading.Thread(
                target=lambda: result.update(sent=run_publishers(procs, workdir, broker, args, "d"))
            )
            cpu0 = cpu_seconds(proc.pid)
            thread.start()
            idle_since = None
            last = base
            while True:
                now = time.monotonic()
                accepted = healthz(api)["counters"]["envelopes_accepted"]
                samples.append((now, accepted))
                if accepted == last and not thread.is_alive():
                    idle_since = idle_since or now
                    if now - idle_since > 2.0:
                        break
                else:
                    idle_since = None
                last = accepted
                time.sleep(0.2)
            thread.join()
            moving = [(t, a) for t, a in samples if a > base]
            t_first = max(t for t, a in samples if a == base) if moving else 0.0
            t_last = min(t for t, a in samples if a == last)
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
    procs: Procs, workdir: Path, broker: int, count: int, tag: str
) -> tuple[list[subprocess.Popen[bytes]], list[int], Path]:
    history = workdir / f"history-{tag}"
    grstats = str(Path(sys.executable).parent / "grstats")
    started = []
    for i in range(count):
        d = workdir / f"collector-{tag}-{i}"
        d.mkdir()
        (d / "grstats.toml").write_text(collector_toml(broker, history, f"bench-{tag}-{i}", tag))
        proc = procs.start([grstats, "collect", "--config", str(d / "grstats.toml")], d / "log")
        started.append((proc, d / "log"))
    ports = [api_port_of(log) for _, log in started]
    for port in ports:
        while not healthz(port).get("bus_connected"):
            time.sleep(0.05)
    return [p for p, _ in started], ports, history


def parquet_rows(history: Path) -> int:
    import pyarrow.parquet as pq  # noqa: PLC0415 - only once the collectors stopped

    return sum(pq.read_metadata(p).num_rows for p in history.glob("group=*/date=*/part-*.parquet"))


def measure_collectors(
    procs: Procs, workdir: Path, broker: int, args: argparse.Namespace, count: int
) -> dict[str, float]:
    import threading  # noqa: PLC0415

    load = os.getloadavg()[0]
    tag = f"c{count}"
    collectors, ports, history = start_collectors(procs, workdir, broker, count, tag)

    def total() -> int:
        return sum(healthz(p)["counters"]["envelopes_accepted"] for p in ports)

    base = last = total()
    result: dict[str, int] = {}
    thread = threading.Thread(
        target=lambda: result.update(sent=run_publishers(procs, workdir, broker, args, tag))
    )
    cpu0 = [cpu_seconds(p.pid) for p in collectors]
    thread.start()
    samples: list[tuple[float, int]] = []
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
        time.sleep(0.1)
    thread.join()
    t_first = max(t for t, a in samples if a == base)
    t_last = min(t for t, a in samples if a == last)
    cpu = sum(cpu_seconds(p.pid) for p in collectors) - sum(cpu0)
    rss = max(rss_mb(p.pid) for p in collectors)
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
    }


def measure_bare(
    procs: Procs, workdir: Path, broker: int, args: argparse.Namespace, role: str = "bare-sub"
) -> Any:
    load = os.getloadavg()[0]
    ready = workdir / f"{role}.ready"
    bare = procs.start(
        [
            sys.executable,
            __file__,
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
    import shutil  # noqa: PLC0415

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
            one = measure_collectors(procs, workdir, broker, args, 1)
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
    for name, r in (("1 collector, history on", one), ("2 collectors, shared", two)):
        line(
            name,
            r,
            f"\n{'':31}CPU {r['cpu_us']:.0f} us/env, RSS max {r['rss']:.0f} MB, "
            f"{r['written']:.0f} rows in Parquet",
        )
    print(
        f"    ratios: 1 collector / bare aiomqtt {one['rate'] / max(bare['rate'], 1e-9):.2f}"
        + (
            f", / mosquitto_sub {one['rate'] / max(msub['rate'], 1e-9):.2f}"
            if msub is not None
            else ""
        )
        + f"; 2 collectors / 1 {two['rate'] / max(one['rate'], 1e-9):.2f}"
        + "  (goals: >= 25,000 env/s; 2/1 >= 1.7)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--fanin-seconds", type=float, default=20.0)
    parser.add_argument("--publishers", type=int, default=2)
    parser.add_argument("--members", type=int, default=300)
    parser.add_argument("--per-member", type=int, default=200)
    parser.add_argument("--skip-steady", action="store_true")
    parser.add_argument("--skip-fanin", action="store_true")
    parser.add_argument("--fanin", action="store_true", help="only (c): collectors, 1 and 2")
    # child roles
    parser.add_argument("--role", choices=("bare-steady", "bare-sub", "bus-sub", "publisher"))
    parser.add_argument("--port", type=int)
    parser.add_argument("--member")
    parser.add_argument("--family", type=int, default=10)
    parser.add_argument("--idle", type=float, default=2.0)
    parser.add_argument("--ready")
    args = parser.parse_args(argv)
    if args.role == "bare-steady":
        asyncio.run(role_bare_steady(args.port, args.member, args.seconds))
        return 0
    if args.role == "bare-sub":
        asyncio.run(role_bare_sub(args.port, args.idle, args.seconds, args.ready))
        return 0
    if args.role == "bus-sub":
        asyncio.run(role_bus_sub(args.port, args.idle, args.seconds, args.ready))
        return 0
    if args.role == "publisher":
        role_publisher(args.port, args.family, args.members, args.per_member, args.seconds)
        return 0
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    if args.fanin:
        fanin_collectors(args)
        return 0
    if not args.skip_steady:
        steady(args.seconds)
    if not args.skip_fanin:
        fanin(args)
        fanin_collectors(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
