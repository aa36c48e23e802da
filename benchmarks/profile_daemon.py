"""Where one production member daemon spends its CPU (py-spy), as in `make bench-daemon` (d).

Usage: python benchmarks/profile_daemon.py [--seconds 60] [--top 40] [--sql] [--gil]
       python benchmarks/profile_daemon.py --calls [--seconds 60] [--top 40]
       python benchmarks/profile_daemon.py --simulated-pair [--calls] [--seconds 60] [--top 40]

One `grstats run` with the mysql source against a fake MySQL 8.4 server in
another process (benchmarks/_bench_mimic.py), history on, period 1 s ([sql]
off unless `--sql`), on a private Mosquitto. After a 5 s warm-up py-spy (a
profiling-only tool: `pip install py-spy`) samples it for `--seconds` at
1 kHz. A member daemon is idle ~99 % of the time, and py-spy counts a thread
waiting in epoll_wait or on a condition as active, so the stacks ending in a
selector's select() or a Condition/Event wait are left out: the shares printed
are of the samples that were doing work (every thread: the history writer's
too). The daemon's CPU % over the same window is printed beside them. With
`--gil` only the samples of the thread holding the GIL are kept: Python
running on the CPU, not a thread blocked in fsync or send (what CPU % counts).

With `--calls` (no `--simulated-pair`) that production daemon runs under
cProfile twice, [sql] off then on, and what is printed is Python function
calls per second of each, the most called functions with [sql] off and,
function by function, the calls per second `[sql]` adds: what the daemon
does every second for its SQL endpoint.

`--simulated-pair` profiles instead one daemon of bench-daemon (e)'s group
(9 simulated daemons, period 1 s) twice: at the default MySQL version
(ext.commit_path sent) and at `[simulated] version = "8.0.22"` (no section).
It prints each phase's CPU % and then, frame by frame, the working samples
per second of each phase and their difference, largest first: where the
section's CPU goes. With `--calls` that daemon runs under cProfile instead
(every thread, from its start to its stop after `--seconds`), and what is
printed is Python function calls: per second of each phase and, function by
function, the calls per second the section adds. Counts do not depend on the
box's load as times do; they show what is done, not what it costs.

Bounded by `--seconds`; only processes started here are signalled.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import pstats
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _bench_procs import (
    REPO,
    WARMUP_S,
    Procs,
    api_port_of,
    cpu_seconds,
    daemon_toml,
    member_uuid,
    scratch_with_broker,
    start_broker,
    start_daemon,
)
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


_QUERY_FRAMES = ("Connection.query ", "Connection.batch ")  # the outermost is the call site


def query_callers(work: Path) -> list[str]:
    """Share of the working samples spent in each mysql `Connection.query` / `.batch` call site."""
    by_site: dict[str, int] = {}
    total = 0
    for line in work.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count or 0)
        frames = stack.split(";")
        at = next((i for i, f in enumerate(frames) if f.startswith(_QUERY_FRAMES)), 0)
        if at:
            site = re.sub(r"\(\S*?grstats/", "(grstats/", frames[at - 1])
            by_site[site] = by_site.get(site, 0) + int(count)
    ranked = sorted(by_site.items(), key=lambda kv: -kv[1])
    return [f"{100 * n / max(1, total):5.1f}%  {site}" for site, n in ranked]


def _spy(
    procs: Procs, workdir: Path, pid: int, seconds: float, raw: Path, *, gil: bool = False
) -> float:
    """py-spy `pid` for `seconds` into `raw`; its CPU % of one core meanwhile. With `gil`,
    only the samples of a thread holding the GIL (running Python: no fsync, no send)."""
    spy_bin = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    argv = [spy_bin, "record", "--pid", str(pid), "--format", "raw", "--rate"]
    argv += ["1000", "--nonblocking", "--duration", str(int(seconds)), "-o", str(raw)]
    argv += ["--gil"] if gil else []
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    spy = procs.start(argv, workdir / "py-spy.log")
    spy.wait(timeout=seconds + 60)
    return 100 * (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)


def frame_samples(raw: Path) -> dict[str, int]:
    """py-spy's raw stacks -> frame (no line number, paths from site-packages or the
    tree) -> the samples it is on the stack of (inclusive)."""
    inclusive: collections.Counter[str] = collections.Counter()
    prefix = re.compile(r"/\S*?(site-packages|python3\.\d+)/|" + re.escape(f"{REPO}/"))
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = {prefix.sub("", re.sub(r":\d+\)$", ")", f)) for f in stack.split(";") if f}
        for frame in frames:
            inclusive[frame] += int(count)
    return dict(inclusive)


# `python -c` for a daemon under cProfile in every thread: argv[1] is the stats
# file (written at exit), the rest `grstats`'s arguments
_PROFILED = """
import cProfile, pstats, sys, threading
out = sys.argv.pop(1)
done = []
thread_run = threading.Thread.run
def run(self):
    p = cProfile.Profile()
    p.enable()
    try:
        thread_run(self)
    finally:
        p.disable()
        done.append(p)
threading.Thread.run = run
from grstats.cli.main import main
p = cProfile.Profile()
p.enable()
try:
    main()
except SystemExit:
    pass
finally:
    p.disable()
    stats = pstats.Stats(p)
    for q in done:
        stats.add(q)
    stats.dump_stats(out)
"""


def _calls(stats_file: Path) -> dict[str, int]:
    """Function (file:line(name), paths shortened) -> its calls in a cProfile stats file."""
    prefix = re.compile(r"\S*?(site-packages|python3\.\d+)/|" + re.escape(f"{REPO}/"))
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(str(stats_file)).stats  # type: ignore[attr-defined]
    out: collections.Counter[str] = collections.Counter()
    for (file, line, name), row in stats.items():
        # a built-in's name carries its object's address: the same one in two runs differs
        out[prefix.sub("", f"{file}:{line}({re.sub(r' at 0x[0-9a-f]+', '', name)})")] += row[1]
    return dict(out)


@contextlib.contextmanager
def _nine_members() -> Iterator[tuple[Procs, Path, Any, list[str]]]:
    """A broker in a scratch directory and nine member UUIDs; every process stopped after."""
    with scratch_with_broker("profile-daemon-") as (procs, workdir, broker):
        yield procs, workdir, broker, [member_uuid(i, 1) for i in range(9)]


def simulated_calls(seconds: float, top: int) -> None:
    """cProfile daemon 0 of 9 simulated daemons with the commit path and without."""
    per_second: dict[str, dict[str, float]] = {}
    for label, simulated in SIMULATED_PAIR.items():
        with _nine_members() as (procs, workdir, broker, members):
            stats = workdir / "daemon.pstats"
            toml = workdir / "grstats.toml"
            toml.write_text(daemon_toml(broker, members[0], members, simulated))
            argv = [sys.executable, "-c", _PROFILED, str(stats), "run", "--config", str(toml)]
            daemon = procs.start(argv, workdir / "daemon.log")
            others = [
                start_daemon(procs, workdir, broker, m, members, simulated=simulated)
                for m in members[1:]
            ]
            for log in (workdir / "daemon.log", *(log for _, log in others)):
                api_port_of(log)
            time.sleep(seconds)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)  # the stats are written as it exits
            calls = _calls(stats)
        total = sum(calls.values())
        print(f"{label:>7}: daemon 0 of 9, {total / seconds:.0f} calls/s (startup included)")
        per_second[label] = {f: n / seconds for f, n in calls.items()}
    with_, without = per_second["with"], per_second["without"]
    extra = sum(with_.values()) - sum(without.values())
    print(f"the section adds {extra:.0f} calls/s; by function (calls/s: with, without, added):")
    frames = sorted(
        set(with_) | set(without), key=lambda f: with_.get(f, 0) - without.get(f, 0), reverse=True
    )
    for f in frames[:top]:
        a, b = with_.get(f, 0.0), without.get(f, 0.0)
        print(f"{a:8.1f} {b:8.1f} {a - b:+8.1f}  {f}")


SIMULATED_PAIR = {"with": "", "without": 'version = "8.0.22"'}  # as bench-daemon (e)


def production_calls(seconds: float, top: int) -> None:
    """cProfile the production daemon with [sql] off and on; the calls [sql] adds."""
    per_second: dict[str, dict[str, float]] = {}
    for label, sql in (("off", False), ("on", True)):
        with scratch_with_broker("profile-daemon-") as (procs, workdir, broker):
            server = start_mimic(procs, workdir, 1)[0]
            stats, toml = workdir / "daemon.pstats", workdir / "grstats.toml"
            toml.write_text(production_toml(broker, server["port"], workdir, sql))
            argv = [sys.executable, "-c", _PROFILED, str(stats), "run", "--config", str(toml)]
            daemon = procs.start(argv, workdir / "daemon.log")
            api_port_of(workdir / "daemon.log")
            time.sleep(seconds)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)  # the stats are written as it exits
            calls = _calls(stats)
        print(f"[sql] {label:>3}: {sum(calls.values()) / seconds:.0f} calls/s (startup included)")
        per_second[label] = {f: n / seconds for f, n in calls.items()}
    on, off = per_second["on"], per_second["off"]
    print("[sql] off, the most called functions (calls/s):")
    for f in sorted(off, key=lambda f: -off[f])[:top]:
        print(f"{off[f]:8.1f}  {f}")
    print(f"[sql] adds {sum(on.values()) - sum(off.values()):.0f} calls/s; by function (on, off):")
    frames = sorted(set(on) | set(off), key=lambda f: on.get(f, 0) - off.get(f, 0), reverse=True)
    for f in frames[:top]:
        a, b = on.get(f, 0.0), off.get(f, 0.0)
        print(f"{a:8.1f} {b:8.1f} {a - b:+8.1f}  {f}")


def simulated_pair(seconds: float, top: int) -> None:
    """Profile daemon 0 of 9 simulated daemons with the commit path and without."""
    per_second: dict[str, dict[str, float]] = {}
    for label, simulated in SIMULATED_PAIR.items():
        with _nine_members() as (procs, workdir, broker, members):
            raw, work = workdir / "profile.raw", workdir / "working.raw"
            started = [
                start_daemon(procs, workdir, broker, m, members, simulated=simulated)
                for m in members
            ]
            for _, log in started:
                api_port_of(log)
            time.sleep(WARMUP_S)
            cpu = _spy(procs, workdir, started[0][0].pid, seconds, raw)
            procs.stop_all()
            if not raw.exists():
                print(f"{label}: py-spy wrote no profile (see its log)")
                return
            kept, _ = working_stacks(raw, work)
            print(
                f"{label:>7}: daemon 0 of 9 CPU {cpu:.2f} % (py-spy attached), "
                f"{kept / seconds:.0f} working samples/s, load {os.getloadavg()[0]:.2f}"
            )
            per_second[label] = {f: n / seconds for f, n in frame_samples(work).items()}
    with_, without = per_second["with"], per_second["without"]
    frames = sorted(
        set(with_) | set(without),
        key=lambda f: abs(with_.get(f, 0) - without.get(f, 0)),
        reverse=True,
    )
    print("working samples/s (1 kHz): with, without, difference; frame (inclusive)")
    for f in frames[:top]:
        a, b = with_.get(f, 0.0), without.get(f, 0.0)
        print(f"{a:7.1f} {b:7.1f} {a - b:+7.1f}  {f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sql", action="store_true", help="with the SQL endpoint on")
    parser.add_argument(
        "--gil", action="store_true", help="only samples holding the GIL (Python on the CPU)"
    )
    parser.add_argument(
        "--simulated-pair", action="store_true", help="bench-daemon (e)'s daemon, with/without"
    )
    parser.add_argument(
        "--calls", action="store_true", help="cProfile's calls/s ([sql] off/on, or the pair)"
    )
    args = parser.parse_args()
    grstats = str(Path(sys.executable).parent / "grstats")
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    if args.simulated_pair and args.calls:
        simulated_calls(args.seconds, args.top)
        return 0
    if args.simulated_pair:
        simulated_pair(args.seconds, args.top)
        return 0
    if args.calls:
        production_calls(args.seconds, args.top)
        return 0
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
            cpu = _spy(procs, workdir, daemon.pid, args.seconds, raw, gil=args.gil)
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
