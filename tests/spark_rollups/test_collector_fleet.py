"""The fleet path (issue 21): a collector's history -> the rollup -> "Who held the group back".

A fleet is rolled up from a central collector's history, not from the
members'. Before, a collector ran no flow-control replay, its rows carried
NULL fc_*, and the weekly report had nothing to say about who held the group
back. Here a real collector's tables and receive path (`MemberTables` in
collector mode, `Receiver`) take five minutes of one group's stats messages,
one per member a second, and record into a real `HistoryWriter`; the rollup
and the report run as in production.

The group, by hand: members A (the writer: 100 local commits a second), B
and C certify 100 transactions a second; A and B apply them all with empty
queues; C had fallen behind -- 5000 transactions queued when the collector
starts -- and catches up at 10 a second (it applies 110), so its queue stays
over the threshold (100) for all five minutes while its catch-up ETA stays
finite (queue / 10 s). C alone is ever over a threshold, so C alone is ever
the bottleneck: every throttled second is caused by C (a 100 % share); the
writers are throttled throughout (within MySQL's first ten steps the quota
is MAXTPS * 0.9, then min(C's delta applied 110, the least delta 100) * 0.9
= 90: never 0).
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.tables import Limits, MemberTables, RegistryLimits
from grstats.daemon import receiver as receiver_module
from grstats.daemon.receiver import Receiver
from grstats.history.writer import HistoryWriter
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from spark_rollups.report import report
from spark_rollups.rollup import run_rollup

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # a JVM on a shared box

GROUP = "f1ee7000-0000-4000-8000-000000000001"
A = "a0000000-0000-4000-8000-00000000000a"
B = "b0000000-0000-4000-8000-00000000000b"
C = "c0000000-0000-4000-8000-00000000000c"
START = dt.datetime(2026, 11, 17, 10, 0, tzinfo=dt.UTC)  # Tuesday of ISO week 2026-W47
T0 = int(START.timestamp()) * 1_000_000
S = 1_000_000
SECONDS = 300
PORTS = {A: 3306, B: 3307, C: 3308}  # the report labels members host:port


def _message(member: str, k: int) -> bytes:
    n = k + 1  # counters after k + 1 seconds
    stats = PipelineStats(
        transactions_certified=100 * n,
        transactions_applied=110 * n if member == C else 100 * n,
        transactions_waiting_apply=5_000 - 10 * k if member == C else 0,
        transactions_local=100 * n if member == A else 0,
    )
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(
                member, "10.0.0.1", PORTS[member], "ONLINE", "SECONDARY", "8.4.3", "x:1"
            ),
            view_id="1:1",
            incarnation=1,
            seq=k + 1,
            sent_us=T0 + k * S,
            stats=encode_pipeline_stats(stats),
        )
    )


async def _collect(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [T0]
    monkeypatch.setattr(receiver_module, "now_us", lambda: now[0])
    tables = MemberTables(
        group=None,
        local_member_id=None,
        registry_limits=RegistryLimits(forget_after_s=600.0),
        limits=Limits(max_clock_skew_s=1e9),  # simulated time: a week in the past
        flow_control=FlowControlSettings(certifier_threshold=100, applier_threshold=100),
    )
    writer = HistoryWriter(history, scope="all", retention_days=100_000)
    await writer.start()
    receiver = Receiver(tables, writer)
    for k in range(SECONDS):
        for index, member in enumerate((A, B, C)):
            now[0] = T0 + k * S + 1_000 * (index + 1)  # a millisecond of transit
            receiver.on_message(f"grstats/v1/{GROUP}/{member}/stats", _message(member, k), False)
        tables.tick(T0 + k * S + S // 2)  # the collector's own step clock
    await writer.close()


def test_a_fleet_rolled_up_from_a_collector_names_the_member_that_held_the_group_back(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history, rollups, out = tmp_path / "history", tmp_path / "rollups", tmp_path / "report"
    asyncio.run(_collect(history, monkeypatch))
    run_rollup(spark, str(history), str(rollups), since="2026-11-17")
    report(spark, str(rollups), "2026-W47", out)
    markdown = (out / GROUP / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Who held the group back\n", 1)[1].split("\n## ", 1)[0]
    assert "Most of it was caused by member **10.0.0.1:3308**" in section
    assert "(100.0% of the held time)" in section
    with (out / GROUP / "flow_by_member.csv").open(encoding="utf-8") as handle:
        members = list(csv.DictReader(handle))
    # the report's tables list members in host:port order
    assert [m["member"] for m in members] == ["10.0.0.1:3306", "10.0.0.1:3307", "10.0.0.1:3308"]
    assert float(members[2]["share"]) == pytest.approx(1.0)
    assert all(float(m["share"]) == 0 for m in members[:2]), members
