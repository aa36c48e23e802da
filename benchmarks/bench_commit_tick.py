"""The commit path's per-tick cost in one daemon of a 9-member group, beside the tick without it.

Usage: python benchmarks/bench_commit_tick.py [--ticks 120] [--rounds 5] [--before DIR]

One member's tick as its daemon does it, in one process, without the bus or
the source: encode its envelope (`ExtSections` + msgpack), `set_local`,
receive the eight other members' envelopes through `MemberTables.receive`,
and take the snapshot; then either nobody reads it (reader "none", as
bench-daemon (a)) or the SQL feed encodes every table of it (reader "sql",
`snapshot_message` + `encode_frame`, as a daemon with [sql] does each tick).
The samples come from the simulated model (bench-daemon's), evaluated before
the clock starts; "without" is the same samples with no `commit_path` and no
`communication`, so the envelopes carry neither section.

Per reader, a daemon with the section and one without tick in turns; each
figure is a round's median tick in CPU µs (process time: a loaded machine
preempts us, it does not make our work larger), the least disturbed of the
rounds, and the section's cost is with / without.
`--before DIR` also runs this script against the grstats of DIR (an
earlier checkout) in alternation with this one and prints both (ratios in
the same run).

Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MEMBERS = [f"00000001-0000-4000-8000-{i:012x}" for i in range(9)]
GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
T0 = 1_767_225_600_000_000  # 2026-01-01 00:00 UTC


def _settings() -> Any:
    from grstats.config import load_config  # noqa: PLC0415 - from the tree under test

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grstats.toml"
        path.write_text(
            f'[member]\ngroup = "{GROUP}"\nid = "{MEMBERS[0]}"\n'
            f"[simulated]\nmembers = {json.dumps(MEMBERS)}\n"
        )
        return load_config(path)


def _samples(ticks: int) -> list[list[Any]]:
    """Per tick, every member's sample from the simulated model."""
    from grstats.sources.simulated.model import GroupModel  # noqa: PLC0415
    from grstats.sources.simulated.source import SimulatedSource  # noqa: PLC0415

    model = GroupModel(_settings().source_settings)
    sources = [SimulatedSource(model, m) for m in MEMBERS]
    return [
        [s._evaluate(T0 + t * 1_000_000) for s in sources]  # the model itself, no thread
        for t in range(ticks)
    ]


def _payload(sections: Any, sample: Any, member: str, seq: int) -> bytes:
    from protocol import Envelope, MemberInfo, encode_envelope, encode_pipeline_stats  # noqa: PLC0415

    m = sample.member
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(member, m.host, m.port or 0, m.state, m.role, m.version, m.gcs_id),
            view_id=m.view_id,
            incarnation=7,
            seq=seq,
            sent_us=sample.sampled_at_us,
            stats=encode_pipeline_stats(sample.stats),
            ext=sections.ext(sample, gtids=False),
        )
    )


class _Daemon:
    """Member 0's daemon over `samples`, one tick at a time."""

    def __init__(self, samples: list[list[Any]]) -> None:
        from grstats.core.tables import MemberTables  # noqa: PLC0415
        from grstats.daemon.sections import ExtSections  # noqa: PLC0415

        others = [ExtSections() for _ in MEMBERS[1:]]
        self.samples = samples
        self.remote = [  # the other members' envelopes, encoded before the clock starts
            [
                (f"grstats/v1/{GROUP}/{m}/stats", _payload(others[i], row[i + 1], m, t + 1))
                for i, m in enumerate(MEMBERS[1:])
            ]
            for t, row in enumerate(samples)
        ]
        self.tables = MemberTables(group=GROUP, local_member_id=MEMBERS[0])
        self.own = ExtSections()

    def tick(self, t: int, reader: str) -> float:
        """CPU seconds of tick `t` (process time: preemption by other work is not ours)."""
        from grstats.sql.channel import encode_frame, snapshot_message  # noqa: PLC0415

        sample = self.samples[t][0]
        now = sample.sampled_at_us
        start = time.process_time()
        _payload(self.own, sample, MEMBERS[0], t + 1)
        self.tables.set_local(sample, incarnation=7, seq=t + 1)
        for topic, payload in self.remote[t]:
            self.tables.receive(topic, payload, now + 1000)
        snapshot = self.tables.snapshot(now + 2000)
        if reader == "sql":
            encode_frame(snapshot_message(snapshot), 64 << 20)
        return time.process_time() - start


def measure(ticks: int, rounds: int) -> dict[str, dict[str, float]]:
    """reader -> {"without": µs, "with": µs}: per round the median tick, the least
    disturbed round; the two daemons tick in turns, so that both see the same load."""
    with_section = _samples(ticks)
    without = [
        [dataclasses.replace(s, commit_path=None, communication=None) for s in row]
        for row in with_section
    ]
    warm = _Daemon(with_section[:10])  # imports, the first calls
    for t in range(10):
        warm.tick(t, "sql")
    out = {}
    for reader in ("none", "sql"):
        best = {"without": float("inf"), "with": float("inf")}
        for _ in range(rounds):
            daemons = {"without": _Daemon(without), "with": _Daemon(with_section)}
            spent: dict[str, list[float]] = {"without": [], "with": []}
            gc.collect()
            for t in range(ticks):
                order = ("without", "with") if t % 2 else ("with", "without")
                for name in order:
                    spent[name].append(daemons[name].tick(t, reader))
            for name, times in spent.items():
                best[name] = min(best[name], statistics.median(times) * 1e6)
        out[reader] = best
    return out


def _child(tree: str, ticks: int, rounds: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": tree}
    argv = [sys.executable, __file__, "--json", "--ticks", str(ticks), "--rounds", str(rounds)]
    done = subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=900)
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", help="an earlier checkout's root, run in alternation")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps(measure(args.ticks, args.rounds)))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine  # noqa: PLC0415

    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    here = str(Path(__file__).resolve().parents[1])
    trees = {"before": args.before, "after": here} if args.before else {"this": here}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(2 if args.before else 1):  # alternate, so both see the same load
        for name, tree in trees.items():
            runs[name].append(_child(tree, args.ticks, args.rounds))
    cost: dict[str, dict[str, float]] = {}
    for name, results in runs.items():
        for reader in ("none", "sql"):
            without = min(r[reader]["without"] for r in results)
            with_ = min(r[reader]["with"] for r in results)
            cost.setdefault(reader, {})[name] = with_ - without
            print(
                f"{name:>6} reader {reader:>4}: tick {without:7.0f} µs without, {with_:7.0f} µs "
                f"with the commit path: {with_ / without:.3f}x (+{with_ - without:.0f} µs)"
            )
    if args.before:
        for reader, by in cost.items():
            ratio = by["after"] / by["before"] if by["before"] > 0 else float("nan")
            print(f"the section's per-tick cost, reader {reader}: after / before {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
