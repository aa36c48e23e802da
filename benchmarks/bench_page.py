"""The live page under load: does serving it delay the daemon's publishing?

Usage: python benchmarks/bench_page.py [--seconds 60] [--clients 20] [--skip-script]

Three `grstats run` daemons (simulated source, period 1 s) on a private
Mosquitto; member 1's page is the one read. Three windows of `--seconds`
each, back to back in one run, the first the reference:

  idle      nobody reads the page;
  refresh   `--clients` clients each GET / every period, as a browser without
            JavaScript refreshing (the CSS and script are cached: immutable URLs);
  script    `--clients` clients each fetch, every period, what the page's
            script does: every table the page shows and /v1/live/<group>, one
            request after the other.

In each window: member 1's publishing gaps (the `sent_us` of its consecutive
stats envelopes, read from the broker), their largest and 99th percentile as
periods (goal: <= 1.5); its RSS at the end of the window against the end of
the idle one (goal: within +20 MB); its CPU % of one core; the requests
answered and failed and their mean latency; the load average before each
window. Figures only; nothing is asserted. Only processes started here are
signalled.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import time
import urllib.request
from dataclasses import dataclass, field

import aiomqtt
from _bench_procs import (
    GROUP,
    PREFIX,
    api_port_of,
    cpu_seconds,
    http_json,
    member_uuid,
    rss_mb,
    scratch_with_broker,
    start_daemon,
)
from _common import machine

from protocol import decode_envelope

PERIOD_S = 1.0
MEMBERS = [member_uuid(i, family=0xB) for i in range(1, 4)]


@dataclass
class Window:
    name: str
    sent_us: list[int] = field(default_factory=list)
    answered: int = 0
    failed: int = 0
    latency_s: float = 0.0
    bytes: int = 0


async def _get(port: int, path: str) -> int:
    """GET `path`; the body's length (raises OSError / ValueError on a failure)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    if not answer.startswith(b"HTTP/1.1 200"):
        raise ValueError(answer[:40])
    return len(answer)


async def _client(port: int, paths: list[str], window: Window, until: float) -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(random.uniform(0, PERIOD_S))  # browsers do not refresh in step
    while loop.time() < until:
        started = loop.time()
        for path in paths:  # one at a time, as the page's script asks
            asked = loop.time()
            try:
                window.bytes += await _get(port, path)
            except (OSError, ValueError, TimeoutError):
                window.failed += 1
            else:
                window.answered += 1
                window.latency_s += loop.time() - asked
        elapsed = loop.time() - started
        await asyncio.sleep(max(0.0, PERIOD_S - elapsed))


async def _listen(port: int, window_of: list[Window], stop: asyncio.Event) -> None:
    topic = f"{PREFIX}/{GROUP}/{MEMBERS[0]}/stats"
    async with aiomqtt.Client("127.0.0.1", port) as client:
        await client.subscribe(topic)
        async for message in client.messages:
            payload = bytes(message.payload)  # type: ignore[arg-type]
            if payload:
                window_of[0].sent_us.append(decode_envelope(payload).sent_us)
            if stop.is_set():
                return


def _gaps(window: Window) -> tuple[float, float, int]:
    sent = sorted(set(window.sent_us))
    gaps = sorted((b - a) / 1e6 / PERIOD_S for a, b in itertools.pairwise(sent))
    if not gaps:
        return float("nan"), float("nan"), 0
    p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
    return gaps[-1], p99, len(gaps)


async def _run(
    broker: int,
    api: int,
    pid: int,
    plans: list[tuple[str, list[str]]],
    *,
    seconds: float,
    clients: int,
) -> None:
    current: list[Window] = [Window("warm-up")]
    stop = asyncio.Event()
    listener = asyncio.create_task(_listen(broker, current, stop))
    await asyncio.sleep(5.0)
    loop = asyncio.get_running_loop()
    reference_rss = None
    for name, paths in plans:
        window = Window(name)
        load = os.getloadavg()[0]
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        current[0] = window
        until = loop.time() + seconds
        readers = [_client(api, paths, window, until) for _ in range(clients if paths else 0)]
        await asyncio.gather(asyncio.sleep(seconds), *readers)
        cpu = 100 * (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
        rss = rss_mb(pid)
        reference_rss = rss if reference_rss is None else reference_rss
        largest, p99, count = _gaps(window)
        requests = window.answered + window.failed
        latency = 1000 * window.latency_s / window.answered if window.answered else float("nan")
        print(
            f"{name:<8} load {load:4.2f} | gaps {count:3d}: max {largest:.2f}, "
            f"p99 {p99:.2f} periods | RSS {rss:6.1f} MB ({rss - reference_rss:+.1f} vs idle)"
            f" | CPU {cpu:5.1f} %"
            f" | {requests} requests ({window.failed} failed, "
            f"{requests / seconds:.0f}/s, mean {latency:.1f} ms, "
            f"{window.bytes / max(1, window.answered) / 1024:.1f} KiB each)"
        )
    stop.set()
    listener.cancel()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--skip-script", action="store_true")
    args = parser.parse_args(argv)
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    with scratch_with_broker("grstats-bench-page-") as (procs, workdir, broker):
        started = [start_daemon(procs, workdir, broker, m, MEMBERS) for m in MEMBERS]
        api = api_port_of(started[0][1])
        for _, log in started[1:]:
            api_port_of(log)
        deadline = time.monotonic() + 60
        while len(http_json(api, "/v1/tables/replication_group_members")) < 3:
            if time.monotonic() > deadline:
                raise RuntimeError("the three members did not see each other")
            time.sleep(0.2)
        print(
            f"member 1: pid {started[0][0].pid}, api {api}; {args.clients} clients, "
            f"{args.seconds:g} s a window, period {PERIOD_S:g} s"
        )
        tables = [t for t in http_json(api, "/v1/tables") if isinstance(t, str)]
        shown = [t for t in tables if t != "replication_applier_progress_by_worker"]
        plans: list[tuple[str, list[str]]] = [("idle", []), ("refresh", ["/"])]
        if not args.skip_script:
            plans.append(("script", [f"/v1/tables/{t}" for t in shown] + [f"/v1/live/{GROUP}"]))
        pid = started[0][0].pid
        asyncio.run(_run(broker, api, pid, plans, seconds=args.seconds, clients=args.clients))
        with urllib.request.urlopen(f"http://127.0.0.1:{api}/metrics", timeout=5) as response:
            metrics = response.read().decode()
        renders = [line for line in metrics.splitlines() if line.startswith("grstats_page_renders")]
        print(f"member 1: {', '.join(renders)} (pages and live bodies made, each shared)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
