"""Stats-message and envelope codec speed beside msgpack of an equivalent plain dict.

Usage: python benchmarks/bench_codec.py [--repeat 9] [--before DIR [--rounds 2]] [--profile TOP]

Cases (each message encoded/decoded once per call, best of --repeat timeit
loops of about 20 ms, reported in microseconds per message):
- `typical_with_gtids` from the golden vectors with flag '0' and empty
  strings: the 212-byte message every member sends every second;
- the same counters with a 100-UUID committed set (`uuid:1-N` blocks joined
  by ",\\n") and flag '1': the message sent every 30 s;
- the full envelope round trip: encode stats -> encode envelope -> decode
  envelope -> decode stats, without and with a one-channel `ext.lag` (a busy
  applier: every stage filled; its encode and strict decode included), and
  the flag-'1' envelope with the 100-UUID set and `ext.gtids` (@@gtid_executed
  of the same 100 UUIDs, @@gtid_purged of half of them; its encode, MySQL
  grammar parse and decode included);
- a hostile envelope (issue 21): a good envelope with a 60 000-empty-map
  unknown `ext` section (~64 KiB), decoded as admission decodes it (unknown
  sections skipped), beside `unpackb` of the same bytes and, for the cost
  before, `unpackb` with the duplicate-key hook on every map (what the
  decoder ran over the whole buffer until then);
- the envelope with `ext.commit_path` (a 9.x member: every counter shown) and
  `ext.commit_path_comm` (three consensus leaders), both codecs included;
- the envelope with every `ext` section a 9.x member sends each period in
  steady state (`grstats.daemon.sections`): `communication_stack`, the busy
  `ext.lag`, `ext.applier` (one channel, every figure, four workers),
  `ext.commit_path` and `ext.commit_path_comm`, each section's encode and
  strict decode included, the envelope read as admission reads it (issue 29's
  goal: at most 1.5x msgpack).
Beside each, `msgpack.packb`/`unpackb` of the same data as a plain dict (the
13 fields; for the envelope, the envelope map with the stats as a nested
dict) measured in the same run, and the ratio grstats / msgpack. Goal:
decoding the flag-'0' message costs at most 2x `unpackb`. Figures only;
nothing is asserted.

`--before DIR` measures DIR's `protocol` package and this checkout's
alternately (`--rounds` each, best kept) and prints after/before per case;
`--profile TOP` prints where the steady-sections round trip spends its time
(cProfile, frames by inclusive share). Every run first prints whether the
measured `protocol` is pure Python or compiled (mypyc: docs/codec-profile.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NamedTuple

import msgpack
from _common import machine

REPO = Path(__file__).resolve().parents[1]


def _tree(argv: list[str]) -> Path:
    """The tree whose `protocol` is measured: `--tree DIR` (how --before runs), else REPO."""
    if "--tree" in argv[:-1]:
        return Path(argv[argv.index("--tree") + 1]).resolve()
    return REPO


TREE = _tree(sys.argv)
sys.path.insert(0, str(TREE))

from _codec_cases import (  # noqa: E402 - imports protocol: after the sys.path line
    Section,
    build_envelope,
    busy_lag,
    commit_path,
    commit_sections,
    gtid_state,
    gtids_section,
    hundred_uuid_set,
    lag_section,
    steady_sections,
    typical_stats,
)

from protocol import (  # noqa: E402 - after the sys.path line so a plain checkout works
    Envelope,
    MemberInfo,
    PipelineStats,
    decode_envelope,
    decode_envelope_sections,
    decode_pipeline_stats,
    encode_envelope,
    encode_pipeline_stats,
)
from protocol import envelope as _envelope  # noqa: E402
from protocol.envelope_read import unique_keys  # noqa: E402
from protocol.pipeline_stats_decode import decode_pipeline_stats_general  # noqa: E402

STEADY = "envelope, every steady section"
ROUND_TRIP = "enc+enc+dec+dec"

DECODE_GOAL = 2.0
ROUND_TRIP_GOAL = 1.5  # issue 29


def best_of(func: Callable[[], object], repeat: int) -> float:
    """Best CPU time per call in microseconds: best of `repeat` loops of about 20 ms each.

    The process's CPU time, not the wall clock: on a shared machine the time
    spent waiting for a core is not the codec's.
    """
    timer = timeit.Timer(func, timer=time.process_time)
    number = 1
    while timer.timeit(number) < 0.02:
        number *= 2
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def stats_case(stats: PipelineStats, repeat: int) -> dict[str, float]:
    message = encode_pipeline_stats(stats)
    plain = asdict(stats)
    packed = msgpack.packb(plain, use_bin_type=True)
    assert decode_pipeline_stats(message) == stats
    assert msgpack.unpackb(packed) == plain
    return {
        "encode": best_of(lambda: encode_pipeline_stats(stats), repeat),
        "packb": best_of(lambda: msgpack.packb(plain, use_bin_type=True), repeat),
        "decode": best_of(lambda: decode_pipeline_stats(message), repeat),
        "decode_general": best_of(lambda: decode_pipeline_stats_general(message), repeat),
        "unpackb": best_of(lambda: msgpack.unpackb(packed), repeat),
        "size": len(message),
        "msgpack_size": len(packed),
    }


def _round_trip(stats: PipelineStats, sections: Sequence[Section]) -> Callable[[], PipelineStats]:
    """encode stats -> encode each section -> encode envelope -> decode the envelope as
    admission does -> decode each section strictly -> decode stats."""
    keep = [s.name for s in sections]

    def round_trip() -> PipelineStats:
        ext = {s.name: s.encode(s.value) for s in sections}
        wire = encode_envelope(build_envelope(encode_pipeline_stats(stats), ext))
        decoded, _ = decode_envelope_sections(wire, keep=keep)
        for s in sections:
            s.decode(decoded.ext[s.name])
        return decode_pipeline_stats(decoded.stats)

    return round_trip


def envelope_case(
    stats: PipelineStats, repeat: int, sections: Sequence[Section] = ()
) -> dict[str, float]:
    round_trip = _round_trip(stats, sections)

    def wire() -> bytes:
        ext = {s.name: s.encode(s.value) for s in sections}
        return encode_envelope(build_envelope(encode_pipeline_stats(stats), ext))

    plain = asdict(build_envelope(b"", {}))
    plain["stats"] = asdict(stats)
    if sections:
        plain["ext"] = {s.name: s.plain for s in sections}

    def plain_round_trip() -> object:
        return msgpack.unpackb(msgpack.packb(plain, use_bin_type=True))

    assert round_trip() == stats
    decoded = decode_envelope(wire())
    assert [s.decode(decoded.ext[s.name]) for s in sections] == [s.value for s in sections]
    return {
        "round_trip": best_of(round_trip, repeat),
        "msgpack_round_trip": best_of(plain_round_trip, repeat),
        "size": len(wire()),
    }


def junk_case(repeat: int) -> dict[str, float]:
    """A ~64 KiB envelope of empty maps in an unknown section, as admission decodes it."""
    good = encode_envelope(
        Envelope(
            group="aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            member=MemberInfo(
                "8a94f357-aab4-11df-86ab-c80aa9429562", "h", 3306, "ONLINE", "", "", ""
            ),
            view_id="1:1",
            incarnation=1,
            seq=1,
            sent_us=1781234570000001,
            stats=encode_pipeline_stats(typical_stats()),
        )
    )
    message = msgpack.unpackb(good, raw=False)
    message["ext"] = {"junk": [{}] * 60_000}
    junk = msgpack.packb(message, use_bin_type=True)
    keep = ("communication_stack", "lag", "applier")
    assert decode_envelope_sections(junk, keep=keep)[1] == ("junk",)

    def hooked() -> object:
        return msgpack.unpackb(junk, object_pairs_hook=unique_keys)

    return {
        "decode": best_of(lambda: decode_envelope_sections(junk, keep=keep), repeat),
        "unpackb": best_of(lambda: msgpack.unpackb(junk), repeat),
        "hooked": best_of(hooked, repeat),
        "size": len(junk),
    }


class Row(NamedTuple):
    case: str
    op: str
    ours: float  # µs per call
    reference: float  # msgpack µs per call, same run


def measure(repeat: int) -> list[Row]:
    """Every case's row, in the printed order (the steady-sections round trip is the goal's)."""
    flag0 = typical_stats()
    with_set = replace(
        flag0,
        transaction_gtids_present=True,
        transactions_committed_all_members=hundred_uuid_set(),
        transaction_last_conflict_free=b"",
    )
    rows: list[Row] = []
    for label, stats in (("stats flag '0'", flag0), ("stats 100-UUID set, flag '1'", with_set)):
        r = stats_case(stats, repeat)
        name = f"{label} ({r['size']:.0f} B)"
        rows += [
            Row(name, "encode", r["encode"], r["packb"]),
            Row(name, "decode", r["decode"], r["unpackb"]),
            Row(name, "decode (general)", r["decode_general"], r["unpackb"]),
        ]
    cases: list[tuple[str, PipelineStats, list[Section]]] = [
        ("envelope round trip", flag0, []),
        ("envelope + ext.lag", flag0, [lag_section(busy_lag())]),
        ("envelope + ext.commit_path(+_comm)", flag0, commit_sections(commit_path())),
        ("envelope flag '1', 100-UUID set", with_set, []),
        ("  the same + ext.gtids", with_set, [gtids_section(gtid_state())]),
        (STEADY, flag0, steady_sections()),
    ]
    for label, case_stats, sections in cases:
        e = envelope_case(case_stats, repeat, sections)
        name = f"{label} ({e['size']:.0f} B)"
        rows.append(Row(name, ROUND_TRIP, e["round_trip"], e["msgpack_round_trip"]))
    j = junk_case(repeat)
    name = f"hostile envelope ({j['size']:.0f} B)"
    rows.append(Row(name, "admission decode", j["decode"], j["unpackb"]))
    rows.append(Row(name, "hooked (before)", j["hooked"], j["unpackb"]))
    return rows


def print_rows(rows: list[Row]) -> None:
    header = f"{'case':<38} {'op':<16} {'grstats µs':>10} {'msgpack µs':>11} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    last = ""
    for row in rows:
        name = "" if row.case == last else row.case
        last = row.case
        ratio = row.ours / row.reference
        print(f"{name:<38} {row.op:<16} {row.ours:>10.2f} {row.reference:>11.2f} {ratio:>6.2f}")
    decode = next(r for r in rows if r.case.startswith("stats flag '0'") and r.op == "decode")
    steady = next(r for r in rows if r.case.startswith(STEADY))
    for text, ratio, goal in (
        ("decode flag-'0' <= {:.1f}x msgpack.unpackb", decode.ours / decode.reference, DECODE_GOAL),
        (
            "round trip with every steady section <= {:.1f}x msgpack",
            steady.ours / steady.reference,
            ROUND_TRIP_GOAL,
        ),
    ):
        verdict = "met" if ratio <= goal else "NOT met"
        print(f"goal: {text.format(goal)}: {verdict} ({ratio:.2f}x)")


def built_as(module_file: str) -> str:
    """How the measured `protocol` was built: its modules are extensions (mypyc) or sources."""
    return "compiled (mypyc)" if module_file.endswith((".so", ".pyd")) else "pure Python"


def _tree_built_as(tree: Path) -> str:
    """`built_as` of the `protocol` a `--tree tree` run imports (asked of a fresh interpreter)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import protocol.envelope as e; print(e.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tree)], check=True, capture_output=True, text=True
    ).stdout
    return built_as(out.strip())


def compare(before: Path, rounds: int, repeat: int) -> None:
    """Run this script on `before`'s protocol and on this checkout's, alternately."""
    for which, tree in (("before", before), ("after", TREE)):
        print(f"protocol ({which}): {_tree_built_as(tree)}")
    runs: dict[str, list[list[Row]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for which, tree in (("before", before), ("after", TREE)):
            out = subprocess.run(
                [sys.executable, __file__, "--tree", str(tree), "--json", "--repeat", str(repeat)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[which].append([Row(*r) for r in json.loads(out)])
    best = {
        which: [
            Row(r[0].case, r[0].op, min(x.ours for x in r), min(x.reference for x in r))
            for r in zip(*results, strict=True)
        ]
        for which, results in runs.items()
    }
    print(f"before: {before}  after: {TREE}  ({rounds} alternate rounds, best of each)")
    header = (
        f"{'case':<38} {'op':<16} {'before µs':>10} {'after µs':>9} {'after/':>7} "
        f"{'before/':>8} {'after/':>7}"
    )
    print(header)
    print(f"{'':<38} {'':<16} {'':>10} {'':>9} {'before':>7} {'msgpack':>8} {'msgpack':>7}")
    print("-" * len(header))
    for old, new in zip(best["before"], best["after"], strict=True):
        name = old.case if old.case == new.case else f"{old.case} -> {new.case}"
        print(
            f"{name:<38} {new.op:<16} {old.ours:>10.2f} {new.ours:>9.2f} "
            f"{new.ours / old.ours:>7.2f} {old.ours / old.reference:>8.2f} "
            f"{new.ours / new.reference:>7.2f}"
        )


def profile(top: int, seconds: float) -> None:
    """cProfile of the steady-sections round trip: the top frames by inclusive share."""
    import cProfile  # noqa: PLC0415 - profiling only
    import pstats  # noqa: PLC0415

    sections = steady_sections()
    stats = typical_stats()
    envelope_case(stats, 1, sections)  # its checks
    round_trip = _round_trip(stats, sections)
    profiler = cProfile.Profile()
    deadline = time.perf_counter() + seconds
    calls = 0
    profiler.enable()
    while time.perf_counter() < deadline:
        round_trip()
        calls += 1
    profiler.disable()
    raw: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = max(inclusive for _, _, _, inclusive, _ in raw.values())  # the round trip's
    print(f"{calls} round trips; inclusive% own% calls/trip frame")
    by_inclusive = sorted(raw.items(), key=lambda kv: kv[1][3], reverse=True)
    for (path, line, func), (_, ncalls, own, inclusive, _) in by_inclusive[:top]:
        where = f"{Path(path).name}:{line}({func})" if line else func
        print(
            f"{100 * inclusive / total:5.1f}% {100 * own / total:5.1f}% "
            f"{ncalls / calls:5.1f}  {where}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timeit repeats (best is kept)")
    parser.add_argument("--tree", type=Path, help="measure this tree's `protocol` package")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--before", type=Path, help="compare with this tree's `protocol`, run alternately"
    )
    parser.add_argument("--rounds", type=int, default=2, help="alternate rounds for --before")
    parser.add_argument(
        "--profile", type=int, metavar="TOP", help="profile the steady round trip instead"
    )
    args = parser.parse_args(argv)

    if args.json:
        print(json.dumps(measure(args.repeat)))
        return 0
    print(machine(f"msgpack {'.'.join(map(str, msgpack.version))}"))
    if args.profile:
        print(f"protocol: {built_as(_envelope.__file__ or '')}")
        profile(args.profile, seconds=3.0)
    elif args.before:
        compare(args.before.resolve(), args.rounds, args.repeat)
    else:
        print(f"protocol: {built_as(_envelope.__file__ or '')}")
        print_rows(measure(args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
