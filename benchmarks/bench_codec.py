"""Stats-message and envelope codec speed beside msgpack of an equivalent plain dict.

Usage: python benchmarks/bench_codec.py [--repeat 9]

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
  `ext.commit_path_comm` (three consensus leaders), both codecs included.
Beside each, `msgpack.packb`/`unpackb` of the same data as a plain dict (the
13 fields; for the envelope, the envelope map with the stats as a nested
dict) measured in the same run, and the ratio grstats / msgpack. Goal:
decoding the flag-'0' message costs at most 2x `unpackb`. Figures only;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import timeit
import uuid
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import msgpack
from _common import machine

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from protocol import (  # noqa: E402 - after the sys.path line so a plain checkout works
    CommitPathCounters,
    CommitPathReport,
    Envelope,
    GroupCommunication,
    GtidSet,
    GtidState,
    LagChannel,
    LagReport,
    LagStage,
    MemberInfo,
    PipelineStats,
    decode_commit_path,
    decode_commit_path_comm,
    decode_envelope,
    decode_envelope_sections,
    decode_gtid_state,
    decode_lag,
    decode_pipeline_stats,
    encode_commit_path,
    encode_commit_path_comm,
    encode_envelope,
    encode_gtid_state,
    encode_lag,
    encode_pipeline_stats,
)
from protocol.envelope_read import unique_keys  # noqa: E402
from protocol.pipeline_stats_decode import decode_pipeline_stats_general  # noqa: E402

VECTORS = REPO.parent / "shared" / "vectors" / "pipeline_stats_encode.json"
DECODE_GOAL = 2.0

# typical_with_gtids, written out for a checkout without ../shared.
_TYPICAL = {
    "transactions_waiting_certification": 1,
    "transactions_waiting_apply": 3,
    "transactions_certified": 12345,
    "transactions_applied": 12340,
    "transactions_local": 12345,
    "transactions_negative_certified": 0,
    "transactions_rows_validating": 812,
    "transactions_local_rollback": 0,
    "flow_control_mode": 1,
    "sent_timestamp": 1781234570000001,
}


def typical_stats() -> PipelineStats:
    """The `typical_with_gtids` vector's counters with flag '0' and empty strings."""
    values: dict[str, Any] = dict(_TYPICAL)
    if VECTORS.exists():
        vector = next(
            v
            for v in json.loads(VECTORS.read_text(encoding="utf-8"))
            if v["name"] == "typical_with_gtids"
        )
        values = {name: vector[name] for name in _TYPICAL}
    return PipelineStats(**values, transaction_gtids_present=False)


def hundred_uuid_set() -> bytes:
    """100 distinct UUIDs, each `:1-N`, sorted as MySQL prints them, joined by ",\\n"."""
    uuids = sorted(
        str(uuid.UUID(bytes=hashlib.sha256(f"bench/{i}".encode()).digest()[:16]))
        for i in range(100)
    )
    return ",\n".join(f"{u}:1-{1000 + 37 * i}" for i, u in enumerate(uuids)).encode()


def best_of(func: Callable[[], object], repeat: int) -> float:
    """Best time per call in microseconds: best of `repeat` loops of about 20 ms each."""
    timer = timeit.Timer(func)
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


def busy_lag() -> LagReport:
    """One applier channel with every stage filled (the largest usual section)."""
    t = 1781234570000001
    gtid = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:{}"
    stage = [
        LagStage(gtid.format(1000 + i), t - 9000, t - 8000, t - 700 + i, t - 100 + i)
        for i in range(6)
    ]
    return LagReport(t, (LagChannel("group_replication_applier", True, True, 4, 2, *stage),))


def gtid_state() -> GtidState:
    """@@gtid_executed of the 100-UUID set; @@gtid_purged of every other UUID line."""
    executed = GtidSet.parse(hundred_uuid_set())
    lines = hundred_uuid_set().decode().split(",\n")
    return GtidState(1781234570000001, executed, GtidSet.parse(",".join(lines[::2])))


def commit_path() -> tuple[CommitPathReport, GroupCommunication]:
    """A 9.x member's ext.commit_path (every counter shown, a busy day's sizes) and
    ext.commit_path_comm of a three-member group where every member leads."""
    t = 1781234570000001
    counters = CommitPathCounters(*(10**9 + 7919 * i for i in range(23)), t - 1000)
    leaders = tuple(f"{d * 8}-{d * 4}-{d * 4}-{d * 4}-{d * 12}" for d in "123")
    return CommitPathReport(t, counters), GroupCommunication(10, "8.0.27", leaders, leaders, False)


def envelope_case(
    stats: PipelineStats,
    repeat: int,
    lag: LagReport | None = None,
    gtids: GtidState | None = None,
    commit: tuple[CommitPathReport, GroupCommunication] | None = None,
) -> dict[str, float]:
    member = MemberInfo(
        id="8a94f357-aab4-11df-86ab-c80aa9429562",
        host="db1.example",
        port=3306,
        state="ONLINE",
        role="PRIMARY",
        version="8.4.3",
        gcs_id="db1.example:33061",
    )

    def envelope(stats_bytes: bytes) -> Envelope:
        return Envelope(
            group="aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            member=member,
            view_id="17812345670000000:3",
            incarnation=0x9E3779B97F4A7C15,
            seq=86400,
            sent_us=1781234570000001,
            stats=stats_bytes,
            ext=ext(),
        )

    def ext() -> dict[str, Any]:
        out: dict[str, Any] = {}
        if lag is not None:
            out["lag"] = encode_lag(lag)
        if gtids is not None:
            out["gtids"] = encode_gtid_state(gtids)
        if commit is not None:
            out["commit_path"] = encode_commit_path(commit[0])
            out["commit_path_comm"] = encode_commit_path_comm(commit[1])
        return out

    def round_trip() -> PipelineStats:
        wire = encode_envelope(envelope(encode_pipeline_stats(stats)))
        decoded = decode_envelope(wire)
        if lag is not None:
            decode_lag(decoded.ext["lag"])
        if gtids is not None:
            decode_gtid_state(decoded.ext["gtids"])
        if commit is not None:
            decode_commit_path(decoded.ext["commit_path"])
            decode_commit_path_comm(decoded.ext["commit_path_comm"])
        return decode_pipeline_stats(decoded.stats)

    plain = asdict(envelope(b""))
    plain["stats"] = asdict(stats)
    if lag is not None:
        plain["ext"] = {"lag": asdict(lag)}  # the same figures as named maps
    if gtids is not None:  # the same texts, as strings in a map
        plain["ext"] = {
            "gtids": {
                "at_us": gtids.at_us,
                "executed": str(gtids.executed),
                "purged": str(gtids.purged),
            }
        }

    if commit is not None:  # the same figures as named maps
        plain["ext"] = {"commit_path": asdict(commit[0]), "commit_path_comm": asdict(commit[1])}

    def plain_round_trip() -> object:
        return msgpack.unpackb(msgpack.packb(plain, use_bin_type=True))

    assert round_trip() == stats
    return {
        "round_trip": best_of(round_trip, repeat),
        "msgpack_round_trip": best_of(plain_round_trip, repeat),
        "size": len(encode_envelope(envelope(encode_pipeline_stats(stats)))),
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timeit repeats (best is kept)")
    args = parser.parse_args(argv)

    print(machine(f"msgpack {'.'.join(map(str, msgpack.version))}"))
    flag0 = typical_stats()
    with_set = replace(
        flag0,
        transaction_gtids_present=True,
        transactions_committed_all_members=hundred_uuid_set(),
        transaction_last_conflict_free=b"",
    )
    header = f"{'case':<38} {'op':<16} {'grstats µs':>10} {'msgpack µs':>11} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    goal_ratio = 0.0
    for label, stats in (("stats flag '0'", flag0), ("stats 100-UUID set, flag '1'", with_set)):
        r = stats_case(stats, args.repeat)
        name = f"{label} ({r['size']:.0f} B)"
        rows = [
            ("encode", r["encode"], r["packb"]),
            ("decode", r["decode"], r["unpackb"]),
            ("decode (general)", r["decode_general"], r["unpackb"]),
        ]
        for op, ours, reference in rows:
            print(f"{name:<38} {op:<16} {ours:>10.2f} {reference:>11.2f} {ours / reference:>6.2f}")
            name = ""
        if stats is flag0:
            goal_ratio = r["decode"] / r["unpackb"]
    cases: list[tuple[str, PipelineStats, LagReport | None, GtidState | None, bool]] = [
        ("envelope round trip", flag0, None, None, False),
        ("envelope + ext.lag", flag0, busy_lag(), None, False),
        ("envelope + ext.commit_path(+_comm)", flag0, None, None, True),
        ("envelope flag '1', 100-UUID set", with_set, None, None, False),
        ("  the same + ext.gtids", with_set, None, gtid_state(), False),
    ]
    for label, case_stats, lag, gtids, commit in cases:
        e = envelope_case(case_stats, args.repeat, lag, gtids, commit_path() if commit else None)
        name = f"{label} ({e['size']:.0f} B)"
        ratio = e["round_trip"] / e["msgpack_round_trip"]
        print(
            f"{name:<38} {'enc+enc+dec+dec':<16} {e['round_trip']:>10.2f} "
            f"{e['msgpack_round_trip']:>11.2f} {ratio:>6.2f}"
        )
    j = junk_case(args.repeat)
    name = f"hostile envelope ({j['size']:.0f} B)"
    for op, ours in (("admission decode", j["decode"]), ("hooked (before)", j["hooked"])):
        print(
            f"{name:<38} {op:<16} {ours:>10.2f} {j['unpackb']:>11.2f} {ours / j['unpackb']:>6.2f}"
        )
        name = ""
    verdict = "met" if goal_ratio <= DECODE_GOAL else "NOT met"
    print(
        f"goal: decode flag-'0' <= {DECODE_GOAL:.1f}x msgpack.unpackb: "
        f"{verdict} ({goal_ratio:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
