"""CPU per accepted gtids section: hostile 24 KiB sets against the small-set control.

Usage: python benchmarks/bench_gtid_divergence.py [--seconds 20] [--attackers 8]
       [--honest 2] [--interval 2] [--unlisted]

A daemon's `MemberTables` (the receive path, the GTID divergence table) gets,
each second of virtual time, one gtids section from every remote member (as
many as the section's cadence accepts: one per half `--interval`) and its own
sample. The attackers' sets are legal: `--intervals` single-GTID intervals of
the group's UUID (5,014 by default: about 24 KiB of text, issue 39 row 1),
a new set every time; the honest members' and the local member's are the
group's set, growing. The control run is the same with every set small (`uuid:1-N`).
Printed: CPU (process time) per accepted gtids section in each run, the ratio
hostile / control, and the set operations the divergence state did (when
this checkout has them). The attackers are listed in the local server's view
(the worst case: their sets count in the witnesses' intersection and union)
unless `--unlisted`. Figures only; nothing is asserted.

`PYTHONPATH=<another checkout> python benchmarks/bench_gtid_divergence.py`
measures that checkout's code the same way (before/after).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any

from grstats.core.sample import LocalMember, LocalSample
from grstats.core.tables import Limits, MemberTables, RegistryLimits
from protocol import (
    Envelope,
    GtidSet,
    GtidState,
    MemberInfo,
    PipelineStats,
    encode_envelope,
    encode_pipeline_stats,
)

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
LOCAL = "10000000-0000-4000-8000-000000000000"
T0 = 1_800_000_000_000_000
S = 1_000_000


def _uuid(i: int) -> str:
    return f"{i:08x}-0000-4000-8000-000000000000"


def _hostile(k: int, second: int, intervals: int) -> str:
    # every other GNO of the group's UUID (what every member's set holds: the worst case,
    # every union and intersection merges them), shifted each second: a new, legal set
    start = 1 + ((second + k) % 2)
    return GROUP + "".join(f":{start + 2 * i}" for i in range(intervals))


def _group_set(second: int) -> str:
    return f"{GROUP}:1-{1000 + 50 * second}"


def _envelope(member: str, seq: int, executed: str, at_us: int, applied: int) -> bytes:
    stats = PipelineStats(transaction_gtids_present=True, transactions_applied=applied)
    return encode_envelope(
        Envelope(
            GROUP,
            MemberInfo(member, "h", 3306, "ONLINE", "SECONDARY", "8.4.3", "h:33061"),
            "17000000:3",
            7,
            seq,
            at_us,
            encode_pipeline_stats(stats),
            {"gtids": [1, at_us, executed, ""]},
        )
    )


def _sample(at_us: int, second: int, view: frozenset[str]) -> LocalSample:
    state = GtidState(at_us, GtidSet.parse(_group_set(second)), GtidSet())
    member = LocalMember(GROUP, LOCAL, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "17000000:3")
    fields = {f.name for f in dataclasses.fields(LocalSample)}
    extra: dict[str, Any] = {"view": view} if "view" in fields else {}
    return LocalSample(member, PipelineStats(), at_us, gtid_state=state, **extra)


def run(args: argparse.Namespace, *, hostile: bool) -> tuple[float, float, int, int]:
    """(CPU seconds receiving, CPU seconds judging (the local tick's divergence and a
    reader), accepted gtids sections, set operations or -1) of one run."""
    tables = MemberTables(
        group=GROUP,
        local_member_id=LOCAL,
        registry_limits=RegistryLimits(
            period_s=1.0, unreachable_after=1000, forget_after_s=10_000.0
        ),
        limits=Limits(),
        gtid_interval_s=args.interval,
    )
    honest = [_uuid(0x30000000 + i) for i in range(args.honest)]
    attackers = [_uuid(0x20000000 + k) for k in range(args.attackers)]
    view = frozenset({LOCAL, *honest, *([] if args.unlisted else attackers)})
    payloads = []  # built before the clock starts: encoding is the sender's cost
    for second in range(args.seconds):
        at_us = T0 + second * S
        batch = []
        for member in honest:
            batch.append((member, _envelope(member, second + 1, _group_set(second), at_us, 0)))
        for k, member in enumerate(attackers):
            executed = (
                _hostile(k, second, args.intervals)
                if hostile
                else f"{_uuid(0x20000000 + k)}:1-{100 + second}"
            )
            batch.append((member, _envelope(member, second + 1, executed, at_us, 0)))
        payloads.append((at_us, second, batch))
    accepted = 0
    receiving = judging = 0.0
    for at_us, second, batch in payloads:
        began = time.process_time()
        for member, payload in batch:
            result = tables.receive(f"grstats/v1/{GROUP}/{member}/stats", payload, at_us)
            accepted += type(result).__name__ in ("Applied", "Accepted")
        sample = _sample(at_us, second, view)
        middle = time.process_time()
        tables.set_local(sample, incarnation=1, seq=second + 1)
        tables.snapshot(at_us).table("grstats_member_gtids")  # a reader each second
        ended = time.process_time()
        receiving += middle - began
        judging += ended - middle
    gtids = tables.gtids
    operations = getattr(getattr(gtids, "sets", None), "set_operations", -1)
    return receiving, judging, accepted, operations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--attackers", type=int, default=8)
    parser.add_argument("--honest", type=int, default=2)
    parser.add_argument("--intervals", type=int, default=5014)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--unlisted", action="store_true")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), cpus {os.cpu_count()}")
    print(f"sets: {len(_hostile(0, 0, args.intervals))} bytes of text per hostile set")
    results = {}
    for name, hostile in (("control", False), ("hostile", True), ("control again", False)):
        receiving, judging, accepted, ops = run(args, hostile=hostile)
        n = max(1, accepted)
        results[name] = (receiving + judging) / n, judging / n
        print(
            f"{name:>14}: {accepted} gtids sections, {1e3 * (receiving + judging) / n:.3f} ms "
            f"CPU per section ({1e3 * receiving / n:.3f} receiving, {1e3 * judging / n:.3f} "
            f"judging), set operations {ops}"
        )
    control = [min(results["control"][i], results["control again"][i]) for i in (0, 1)]
    print(
        f"hostile / control per section: {results['hostile'][0] / control[0]:.1f}x "
        f"(judging alone {results['hostile'][1] / control[1]:.1f}x)"
    )


if __name__ == "__main__":
    main()
