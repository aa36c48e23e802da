"""The data bench_codec.py measures: the stats, the ext sections a member sends, the envelope.

Imported by bench_codec.py after its sys.path line, so `protocol` is the tree under test.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from protocol import (
    ApplierChannel,
    ApplierReport,
    ApplierWorker,
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
    decode_applier,
    decode_commit_path,
    decode_commit_path_comm,
    decode_gtid_state,
    decode_lag,
    encode_applier,
    encode_commit_path,
    encode_commit_path_comm,
    encode_gtid_state,
    encode_lag,
)
from protocol.applier import CHANNEL_FIGURES

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "pipeline_stats_encode.json"

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


class Section(NamedTuple):
    """One `ext` section of a bench envelope: its value, codec and plain-dict twin."""

    name: str
    value: Any
    encode: Callable[[Any], object]  # the sender's encoder (identity for plain text)
    decode: Callable[[object], object]  # the receiver's strict decoder
    plain: object  # the same data as msgpack would carry it as a plain dict


def _plain_text(value: object) -> object:
    return value


def lag_section(lag: LagReport) -> Section:
    return Section("lag", lag, encode_lag, decode_lag, asdict(lag))  # figures as named maps


def gtids_section(gtids: GtidState) -> Section:
    plain = {"at_us": gtids.at_us, "executed": str(gtids.executed), "purged": str(gtids.purged)}
    return Section("gtids", gtids, encode_gtid_state, decode_gtid_state, plain)


def commit_sections(commit: tuple[CommitPathReport, GroupCommunication]) -> list[Section]:
    report, comm = commit
    return [
        Section("commit_path", report, encode_commit_path, decode_commit_path, asdict(report)),
        Section(
            "commit_path_comm",
            comm,
            encode_commit_path_comm,
            decode_commit_path_comm,
            asdict(comm),
        ),
    ]


def busy_applier() -> ApplierReport:
    """A 9.x member's ext.applier: the group_replication_applier channel with every
    figure shown (a busy day's sizes) and its four workers."""
    t = 1781234570000001
    name = "group_replication_applier"
    figures = (3 * 10**12 + 104729 * i for i in range(len(CHANNEL_FIGURES)))
    channel = ApplierChannel(name, 86_400 * 10**9, t - 3_600_000_000, *figures)
    workers = tuple(ApplierWorker(name, i, 60 + i, "DML", 4096 + i, 2048 + i) for i in range(4))
    return ApplierReport(t, "native", (channel,), workers)


def steady_sections() -> list[Section]:
    """Every `ext` section a 9.x member sends each period in steady state (what
    grstats.daemon.sections.ExtSections builds; ext.gtids rides only every 30 s)."""
    applier = busy_applier()
    return [
        Section("communication_stack", "MYSQL", _plain_text, _plain_text, "MYSQL"),
        lag_section(busy_lag()),
        Section("applier", applier, encode_applier, decode_applier, asdict(applier)),
        *commit_sections(commit_path()),
    ]


_MEMBER = MemberInfo(
    id="8a94f357-aab4-11df-86ab-c80aa9429562",
    host="db1.example",
    port=3306,
    state="ONLINE",
    role="PRIMARY",
    version="8.4.3",
    gcs_id="db1.example:33061",
)


def build_envelope(stats_bytes: bytes, ext: dict[str, object]) -> Envelope:
    return Envelope(
        group="aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        member=_MEMBER,
        view_id="17812345670000000:3",
        incarnation=0x9E3779B97F4A7C15,
        seq=86400,
        sent_us=1781234570000001,
        stats=stats_bytes,
        ext=ext,
    )
