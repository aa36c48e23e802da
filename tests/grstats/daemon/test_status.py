"""/healthz of a collector under a flood is read from its counters, not from a rebuilt snapshot.

A busy collector's tables change with every envelope; building every table of
every member for each /healthz poll cost it a fifth of its CPU (py-spy,
benchmarks/profile_collector.py). The daemon here is the real one, fed real
envelopes through its receive path; the expected figures are the envelopes
this test sent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from grstats.config import load_config
from grstats.daemon.lifecycle import Daemon
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
MEMBERS = [f"5ca1e000-0000-4000-8000-{i:012x}" for i in range(1, 4)]


def _envelope(member: str, seq: int) -> bytes:
    now = time.time_ns() // 1000
    stats = PipelineStats(transactions_certified=100 + seq, sent_timestamp=now)
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(member, "127.0.0.1", 3306, "ONLINE", "PRIMARY", "8.4.3", "h:1"),
            view_id="1767225600:3",
            incarnation=7,
            seq=seq,
            sent_us=now,
            stats=encode_pipeline_stats(stats),
        )
    )


def _collector(tmp_path: Path) -> Daemon:
    path = tmp_path / "grstats.toml"
    path.write_text("[publish]\nperiod = 60\nforget_after = 600\n")
    return Daemon(load_config(path, require_member=False), None)


def _get(daemon: Daemon, path: str) -> tuple[int, Any]:
    status, _, body = daemon.api.route(path)
    return status, b"".join(body)


def test_healthz_under_a_flood_builds_no_table(tmp_path: Path) -> None:
    daemon = _collector(tmp_path)
    for seq in range(1, 6):
        for member in MEMBERS:
            topic = f"grstats/v1/{GROUP}/{member}/stats"
            daemon.receiver.on_message(topic, _envelope(member, seq), False)
            status, body = _get(daemon, "/healthz")
            healthz = json.loads(body)
    assert daemon.snapshots_built == 0
    # not connected to a bus (never started): degraded, with the exact counts of now
    assert status == 503 and healthz["reasons"] == ["bus_disconnected"]
    assert healthz["members"] == 3
    assert healthz["counters"]["envelopes_accepted"] == 15
    assert not healthz["bus_connected"]
    # the tables themselves are built for a reader of the tables
    status, body = _get(daemon, "/v1/tables/replication_group_members")
    assert status == 200 and len(json.loads(body)) == 3
    assert daemon.snapshots_built == 1
    # nothing new: /healthz leaves that snapshot alone
    _get(daemon, "/healthz")
    _get(daemon, "/v1/tables/replication_group_members")
    assert daemon.snapshots_built == 1
    # what /healthz has counted, the next reader of the tables sees (however young)
    fourth = "5ca1e000-0000-4000-8000-000000000004"
    daemon.receiver.on_message(f"grstats/v1/{GROUP}/{fourth}/stats", _envelope(fourth, 1), False)
    assert json.loads(_get(daemon, "/healthz")[1])["members"] == 4
    status, body = _get(daemon, "/v1/tables/replication_group_members")
    assert len(json.loads(body)) == 4
    assert daemon.snapshots_built == 2
