"""A member daemon under a flood of legal ext.gtids sections (issue 39 row 1).

Usage: python benchmarks/bench_section_cadence.py [--seconds 25] [--members 8] [--rate 5]

Two phases, each on a fresh private Mosquitto with one `grstats run` daemon
(simulated source, period 1 s, gtid_interval 30 s): `--members` bus members
each publish `--rate` stats envelopes a second for `--seconds`, every one
with an ext.gtids section -- in the first phase a 24 KiB executed set of
5,014 single-GTID intervals (tests/fixtures/gtid_flood.py LARGE), in the
second `uuid:1-100` (the control). For each: the daemon's CPU seconds over
the window (/proc/<pid>/stat), the largest gap between two of its own
published stats envelopes (its publishing, in periods), and the largest
/healthz answer time. Goals: gap <= 1.5 periods; CPU within 2x the control.

Figures only; nothing is asserted. Only processes started here are signalled.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
import urllib.request
from pathlib import Path

from _bench_procs import GROUP, PREFIX, api_port_of, cpu_seconds, scratch_with_broker, start_daemon
from _common import machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import aiomqtt

from tests.fixtures.gtid_flood import LARGE, SMALL, attacker, flood_envelope

LOCAL = "11111111-1111-1111-1111-111111111111"


async def _phase(
    broker: int, pid: int, api: int, executed: str, args: argparse.Namespace
) -> tuple[str, float]:
    rounds = int(args.seconds * args.rate)
    payloads = [
        [flood_envelope(GROUP, attacker(m), seq, executed) for m in range(args.members)]
        for seq in range(1, rounds + 1)
    ]
    arrivals: list[float] = []
    healthz: list[float] = []

    async def watch() -> None:
        async with aiomqtt.Client("127.0.0.1", broker) as client:
            await client.subscribe(f"{PREFIX}/{GROUP}/{LOCAL}/stats")
            async for _ in client.messages:
                arrivals.append(time.monotonic())

    async def probe() -> None:
        while True:
            start = time.monotonic()
            await asyncio.to_thread(urllib.request.urlopen, f"http://127.0.0.1:{api}/healthz")
            healthz.append(time.monotonic() - start)
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch())
    prober = asyncio.create_task(probe())
    await asyncio.sleep(2.0)  # the retained copy, then live ones
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    async with aiomqtt.Client("127.0.0.1", broker, max_queued_outgoing_messages=0) as client:
        for k, round_ in enumerate(payloads):
            for m, payload in enumerate(round_):
                await client.publish(f"{PREFIX}/{GROUP}/{attacker(m)}/stats", payload, qos=0)
            await asyncio.sleep(max(0.0, t0 + (k + 1) / args.rate - time.monotonic()))
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    watcher.cancel()
    prober.cancel()
    window = [t for t in arrivals if t0 <= t <= t1]
    gaps = [b - a for a, b in itertools.pairwise(window)]
    sent = rounds * args.members
    return (
        f"{sent} envelopes in {t1 - t0:.1f} s: daemon CPU {cpu1 - cpu0:.2f} s "
        f"({100 * (cpu1 - cpu0) / (t1 - t0):.0f} % of a core), largest publishing gap "
        f"{max(gaps, default=float('nan')):.2f} s, largest /healthz {max(healthz, default=0):.2f} s"
    ), cpu1 - cpu0


def main(argv: list[str] | None = None) -> int:
    """Run both phases and print their figures and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=25.0)
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--rate", type=float, default=5.0)
    args = parser.parse_args(argv)
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    cpu: dict[str, float] = {}
    for name, executed in (("large sets", LARGE), ("control uuid:1-100", SMALL)):
        with scratch_with_broker("grstats-cadence-") as (procs, workdir, broker):
            proc, log = start_daemon(procs, workdir, broker, LOCAL, [LOCAL])
            api = api_port_of(log)
            line, cpu[name] = asyncio.run(_phase(broker, proc.pid, api, executed, args))
            print(f"{name}: {line} (load {os.getloadavg()[0]:.2f})")
    large, small = cpu.values()
    print(f"CPU ratio large/control: {large / small:.2f}x" if small else "control CPU 0")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
