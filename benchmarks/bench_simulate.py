"""`grstats simulate` 9 members x 7 days: wall, CPU and peak RSS, and the files' sha256.

Usage: python benchmarks/bench_simulate.py [--rounds 3] [--members 9] [--days 7]
                                           [--start 2026-11-16] [--workers N]
                                           [--compare-tree DIR]

Each round runs `grstats simulate` of this checkout (and, with
`--compare-tree`, of that checkout right after it, alternating which goes
first) in a child process, and prints its wall time, user + system CPU and
peak RSS (getrusage of the child), the load average before it, and the
sha256 of `find . -type f | sort | xargs sha256sum` over what it wrote: the
same figure for both trees means the same bytes (a84d231c... for the
defaults since stop 36). Ratios are this tree's over the
compared tree's, per round. Goal (issue 44): under 10 s wall for 9 x 7.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine

REPO = Path(__file__).resolve().parents[1]
_MAIN = "from grstats.cli.main import main; main(prog_name='grstats')"


def files_sha256(root: Path) -> tuple[int, str]:
    """(files, sha256 of `find . -type f | sort | xargs sha256sum` run in `root`)."""
    outer = hashlib.sha256()
    names = sorted(f"./{p.relative_to(root)}" for p in root.rglob("*") if p.is_file())
    for name in names:
        digest = hashlib.sha256((root / name).read_bytes()).hexdigest()
        outer.update(f"{digest}  {name}\n".encode())
    return len(names), outer.hexdigest()


def run(tree: Path, args: argparse.Namespace, out: Path) -> dict[str, float | str]:
    """One `grstats simulate` of `tree` into `out`; its figures."""
    argv = [sys.executable, "-c", _MAIN, "simulate", "--members", str(args.members)]
    argv += ["--days", str(args.days), "--start", args.start, "--out", str(out)]
    if args.workers:
        argv += ["--workers", str(args.workers)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    errors = out.with_suffix(".stderr")
    with errors.open("wb") as err:  # its progress lines, and a traceback if it fails
        proc = subprocess.Popen(argv, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage (peak RSS too)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if proc.returncode:
        tail = errors.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"grstats simulate of {tree} exited with {proc.returncode}: {tail}")
    files, digest = files_sha256(out)
    shutil.rmtree(out)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024,
            "load": load, "files": files, "sha": digest}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--members", type=int, default=9)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--start", default="2026-11-16")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--compare-tree", type=Path)
    args = parser.parse_args()
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    trees = [("this", REPO)] + ([("compared", args.compare_tree)] if args.compare_tree else [])
    with tempfile.TemporaryDirectory(prefix="bench-simulate-") as tmp:
        for r in range(args.rounds):
            order = trees if r % 2 == 0 else trees[::-1]
            got = {name: run(tree, args, Path(tmp) / name) for name, tree in order}
            for name, _ in order:
                f = got[name]
                print(
                    f"round {r + 1} {name:>8}: wall {f['wall']:6.2f} s  CPU {f['cpu']:6.2f} s  "
                    f"peak RSS {f['rss']:5.0f} MB  "
                    f"(load {f['load']:.2f})  {f['files']} files sha256 {str(f['sha'])[:16]}"
                )
            if len(got) == 2:
                a, b = got["this"], got["compared"]
                print(
                    f"round {r + 1}    ratio: wall {float(a['wall']) / float(b['wall']):.2f}x  "
                    f"CPU {float(a['cpu']) / float(b['cpu']):.2f}x  "
                    f"same files: {a['sha'] == b['sha']}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
