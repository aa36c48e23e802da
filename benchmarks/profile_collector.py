"""Where one collector with history spends its CPU under the fan-in load (py-spy).

Usage: python benchmarks/profile_collector.py [--per-member 100] [--members 300]
                                              [--publishers 2] [--top 40] [--no-profile]

The load of `make bench-daemon`'s (c) (see _bench_fanin.py): `--publishers`
processes publish pre-encoded envelopes of `--members` members each, at most
`--per-member` each, to one `grstats collect` with history on, while /healthz
is polled every 0.1 s as the benchmark does. py-spy (a profiling-only tool:
`pip install py-spy`; it attaches to the collector by PID) samples the
collector for the whole burst; the frames are printed by inclusive and by own
share of the samples (every thread: the history writer's too). Env/s and CPU
per envelope are printed as well; with py-spy attached they are a little
lower than without (`--no-profile`).

Bounded: the publishers stop after `--per-member` envelopes each or 20 s.
Only processes started here are signalled.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from _bench_fanin import healthz, run_publishers, start_collectors, until_drained
from _bench_procs import Procs, cpu_seconds, start_broker
from _common import machine


def top_frames(raw: Path, top: int) -> list[str]:
    """py-spy's raw (collapsed) stacks -> lines "inclusive% own% frame" by inclusive share."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    prefix = re.compile(r"/\S*?(site-packages|python3\.\d+)/|" + re.escape(os.getcwd() + "/"))
    return [
        f"{100 * n / total:5.1f}% {100 * own[f] / total:5.1f}%  {prefix.sub('', f)}"
        for f, n in inclusive.most_common(top)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-member", type=int, default=100)
    parser.add_argument("--members", type=int, default=300)
    parser.add_argument("--publishers", type=int, default=2)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args()
    load = argparse.Namespace(
        publishers=args.publishers,
        members=args.members,
        per_member=args.per_member,
        fanin_seconds=20.0,
    )
    spy_bin = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    procs = Procs()
    with tempfile.TemporaryDirectory(prefix="profile-collector-") as tmp:
        workdir = Path(tmp)
        raw = workdir / "profile.raw"
        try:
            broker = start_broker(procs, workdir)
            collectors, ports, _ = start_collectors(procs, workdir, broker, 1, "p")
            pid, port = collectors[0].pid, ports[0]
            spy = None
            if not args.no_profile:
                argv = [spy_bin, "record", "--pid", str(pid), "--format", "raw"]
                argv += ["--rate", "200", "--nonblocking", "-o", str(raw)]
                spy = procs.start(argv, workdir / "py-spy.log")
                time.sleep(1.0)  # py-spy attaches
            base = last = healthz(port)["counters"]["envelopes_accepted"]
            cpu0 = cpu_seconds(pid)
            sent: dict[str, int] = {}
            thread = threading.Thread(
                target=lambda: sent.update(n=run_publishers(procs, workdir, broker, load, "p"))
            )
            thread.start()
            t_first, t_last, last = until_drained(
                lambda: healthz(port)["counters"]["envelopes_accepted"], thread, base
            )
            cpu = cpu_seconds(pid) - cpu0
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
            n = last - base
            print(
                f"1 collector, history on: {n} of {sent.get('n', 0)} envelopes, "
                f"{n / max(t_last - t_first, 1e-9):,.0f} env/s, "
                f"CPU {1e6 * cpu / max(n, 1):.0f} us/env, load {os.getloadavg()[0]:.2f}"
                + (" (py-spy attached)" if spy is not None else "")
            )
            if spy is not None and raw.exists():
                print("inclusive   own  frame (share of py-spy's samples, every thread)")
                print("\n".join(top_frames(raw, args.top)))
        finally:
            procs.stop_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
