"""Where one production member daemon spends its CPU (py-spy), as in `make bench-daemon` (d).

Usage: python benchmarks/profile_daemon.py [--seconds 60] [--top 40] [--sql]

One `grstats run` with the mysql source against a fake MySQL 8.4 server in
another process (benchmarks/_bench_mimic.py), history on, period 1 s ([sql]
off unless `--sql`), on a private Mosquitto. After a 5 s warm-up py-spy (a
profiling-only tool: `pip install py-spy`) samples it for `--seconds` at
1 kHz. A member daemon is idle ~99 % of the time, and py-spy counts a thread
waiting in epoll_wait or on a condition as active, so the stacks ending in a
selector's select() or a Condition/Event wait are left out: the shares printed
are of the samples that were doing work (every thread: the history writer's
too). The daemon's CPU % over the same window is printed beside them.

Bounded by `--seconds`; only processes started here are signalled.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _bench_procs import WARMUP_S, Procs, api_port_of, cpu_seconds, start_broker
from _bench_steady import production_toml, start_mimic
from _common import machine
from profile_collector import top_frames

# leaf frames of a thread waiting, not working (py-spy reports them as active)
IDLE_LEAVES = ("EpollSelector.select", "_PollLikeSelector.select", "Condition.wait", "Event.wait")


def working_stacks(raw: Path, out: Path) -> tuple[int, int]:
    """Copy to `out` the stacks of `raw` whose leaf is not a wait; (kept, all) sample counts."""
    kept, total, lines = 0, 0, []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        total += int(count)
        if not stack.rsplit(";", 1)[-1].startswith(IDLE_LEAVES):
            kept += int(count)
            lines.append(line)
    out.write_text("\n".join(lines) + "\n")
    return kept, total


def query_callers(work: Path) -> list[str]:
    """Share of the working samples spent in each mysql `Connection.query` call site."""
    by_site: dict[str, int] = {}
    total = 0
    for line in work.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count or 0)
        frames = stack.split(";")
        at = next((i for i, f in enumerate(frames) if f.startswith("Connection.query ")), 0)
        if at:
            site = re.sub(r"\(\S*?grstats/", "(grstats/", frames[at - 1])
            by_site[site] = by_site.get(site, 0) + int(count)
    ranked = sorted(by_site.items(), key=lambda kv: -kv[1])
    return [f"{100 * n / max(1, total):5.1f}%  {site}" for site, n in ranked]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sql", action="store_true", help="with the SQL endpoint on")
    args = parser.parse_args()
    spy_bin = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    grstats = str(Path(sys.executable).parent / "grstats")
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="profile-daemon-") as tmp:
        workdir = Path(tmp)
        raw, work = workdir / "profile.raw", workdir / "working.raw"
        try:
            broker = start_broker(procs, workdir)
            server = start_mimic(procs, workdir, 1)[0]
            toml = workdir / "grstats.toml"
            toml.write_text(production_toml(broker, server["port"], workdir, args.sql))
            daemon = procs.start([grstats, "run", "--config", str(toml)], workdir / "daemon.log")
            api_port_of(workdir / "daemon.log")
            time.sleep(WARMUP_S)
            argv = [spy_bin, "record", "--pid", str(daemon.pid), "--format", "raw", "--rate"]
            argv += ["1000", "--nonblocking", "--duration", str(int(args.seconds)), "-o", str(raw)]
            cpu0, t0 = cpu_seconds(daemon.pid), time.monotonic()
            spy = procs.start(argv, workdir / "py-spy.log")
            spy.wait(timeout=args.seconds + 60)
            cpu = 100 * (cpu_seconds(daemon.pid) - cpu0) / (time.monotonic() - t0)
        finally:
            procs.stop_all()
        print(
            f"1 member daemon, mysql source, history on, [sql] {'on' if args.sql else 'off'}: "
            f"CPU {cpu:.2f} % of one core (py-spy attached), load {os.getloadavg()[0]:.2f}"
        )
        if raw.exists():
            kept, total = working_stacks(raw, work)
            print(f"{kept} of {total} samples working; inclusive / own share of those, frame:")
            print("\n".join(top_frames(work, args.top)))
            print("mysql queries by call site (share of the working samples):")
            print("\n".join(query_callers(work)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
