"""bench-daemon (e)'s commit-path pair with both phases at once: the section's CPU, side by side.

Usage: python benchmarks/bench_commit_tick_groups.py [--windows 6] [--seconds 30]
                                                     [--before DIR]

bench_daemon.py --commit-path-pair runs its "with" and "without" phases one
after the other; on a shared box the load moves between phases by more than
the 5 % it looks for. Here the two groups run at the same time, each on its
own Mosquitto: 9 simulated daemons at the default MySQL version (they send
ext.commit_path and ext.commit_path_comm) and 9 at `[simulated] version =
"8.0.22"` (neither), so whatever loads the box loads both. With `--before
DIR` the same two groups of an earlier checkout run beside them (four groups
of 9). The daemons are started in turns, one of each group at a time.

After every daemon is up and a warm-up, each of `--windows` windows of
`--seconds` reads every daemon's CPU (utime + stime from /proc) and prints the
mean ms of CPU per second per daemon of each group and the ratio with /
without; then the means over the windows. Figures only; nothing is asserted.
Only processes started here are signalled (by PID).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_procs import (
    Procs,
    api_port_of,
    cpu_seconds,
    daemon_toml,
    member_uuid,
    start_broker,
)
from _common import machine

VERSIONS = {"with": "", "without": 'version = "8.0.22"'}  # as bench-daemon (e)
STARTUP_S = 400.0  # 18 or 36 daemons importing at once on a loaded 2-core box
WARMUP_S = 10.0


def _groups(procs: Procs, workdir: Path, trees: dict[str, str]) -> dict[str, list[int]]:
    """Start a broker and 9 daemons per (tree, with/without); their PIDs by group label."""
    grstats = str(Path(sys.executable).parent / "grstats")
    members = [member_uuid(i, 1) for i in range(9)]
    labels = [(tree, version) for tree in trees for version in VERSIONS]
    brokers = {}
    for tree, version in labels:
        (workdir / f"{tree}-{version}").mkdir()
        brokers[tree, version] = start_broker(procs, workdir / f"{tree}-{version}")
    started: dict[str, list[tuple[int, Path]]] = {}
    for m in members:  # in turns: no group starts (or warms up) before another
        for tree, version in labels:
            d = workdir / f"{tree}-{version}" / m
            d.mkdir()
            toml = d / "grstats.toml"
            toml.write_text(daemon_toml(brokers[tree, version], m, members, VERSIONS[version]))
            # not Procs.start: it puts this checkout first, and a --before tree's
            # daemons must import that tree
            with (d / "log").open("wb") as out:
                proc = subprocess.Popen(
                    [grstats, "run", "--config", str(toml)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "PYTHONPATH": trees[tree]},
                )
            procs.items.append(proc)  # stopped by PID with the rest
            started.setdefault(f"{tree}/{version}", []).append((proc.pid, d / "log"))
    for daemons in started.values():
        for _, log in daemons:
            api_port_of(log, STARTUP_S)
    return {label: [pid for pid, _ in daemons] for label, daemons in started.items()}


def _ratios(ms: dict[str, float], trees: dict[str, str]) -> str:
    return "  ".join(f"{t} {ms[f'{t}/with'] / ms[f'{t}/without']:.3f}x" for t in trees)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--before", help="an earlier checkout's root, run beside this one")
    args = parser.parse_args(argv)
    here = str(Path(__file__).resolve().parents[1])
    trees = {"before": args.before, "after": here} if args.before else {"this": here}
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="bench-commit-groups-") as tmp:
        try:
            groups = _groups(procs, Path(tmp), trees)
            time.sleep(WARMUP_S)
            mean = dict.fromkeys(groups, 0.0)
            for w in range(args.windows):
                before = {g: sum(map(cpu_seconds, pids)) for g, pids in groups.items()}
                t0 = time.monotonic()
                time.sleep(args.seconds)
                elapsed = time.monotonic() - t0
                ms = {
                    g: 1000 * (sum(map(cpu_seconds, pids)) - before[g]) / len(pids) / elapsed
                    for g, pids in groups.items()
                }
                for g in groups:
                    mean[g] += ms[g] / args.windows
                cells = "  ".join(f"{g} {v:.2f}" for g, v in ms.items())
                print(
                    f"window {w}: ms CPU/s per daemon {cells}; with/without {_ratios(ms, trees)}"
                    f" (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        finally:
            procs.stop_all()
    print("mean ms CPU/s per daemon: " + "  ".join(f"{g} {v:.2f}" for g, v in mean.items()))
    print(f"with/without over the windows: {_ratios(mean, trees)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
