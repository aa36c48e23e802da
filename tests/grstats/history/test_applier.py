"""The applier columns of history rows: core.rows.applier_history, the publisher, the receiver.

Expected values are written by hand (the channel's figures, renamed to the
history's lower-case P_S names).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from grstats.core.applier import NATIVE, ApplierChannel, MemberApplier, encode_member_applier
from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.core.rows import applier_history
from grstats.daemon import receiver as receiver_module
from grstats.daemon.receiver import Receiver
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.member_tables import (
    GROUP,
    REMOTE,
    T0,
    local_sample,
    online_tables,
    topic,
)
from tests.fixtures.publishing import Sink, make_publisher

CHANNEL = ApplierChannel(
    channel="group_replication_applier",
    active_ns=10_000_000_000,
    last_start_us=T0 - 10_000_000,
    committed=120,
    ongoing=2,
    pending=7,
    committed_bytes=144_000,
    events_committed=600,
    waits_for_work_count=50,
    waits_for_work_ns=5_000_000_000,
    waits_for_worker_count=3,
    waits_for_worker_ns=300_000_000,
    waits_dependency_count=11,
    waits_dependency_ns=1_100_000_000,
    waits_queue_memory_count=0,
    waits_queue_memory_ns=0,
    waits_queues_full_count=1,
    waits_queues_full_ns=10_000_000,
    waits_commit_order_count=40,
    waits_commit_order_ns=2_500_000_000,
    read_relay_log_ns=90_000_000,
)
# by hand: the counters only (ongoing and pending are gauges, not kept)
EXPECTED = {
    "total_active_time_duration": 10_000_000_000,
    "transactions_committed_count": 120,
    "transactions_committed_size_bytes_sum": 144_000,
    "events_committed_count": 600,
    "waits_for_work_from_source_count": 50,
    "waits_for_work_from_source_sum_time": 5_000_000_000,
    "waits_for_available_worker_count": 3,
    "waits_for_available_worker_sum_time": 300_000_000,
    "waits_commit_schedule_dependency_count": 11,
    "waits_commit_schedule_dependency_sum_time": 1_100_000_000,
    "waits_for_worker_queues_memory_count": 0,
    "waits_for_worker_queues_memory_sum_time": 0,
    "waits_worker_queues_full_count": 1,
    "waits_worker_queues_full_sum_time": 10_000_000,
    "waits_due_to_commit_order_count": 40,
    "waits_due_to_commit_order_sum_time": 2_500_000_000,
    "read_from_relay_log_sum_time": 90_000_000,
}
OTHER = dataclasses.replace(CHANNEL, channel="async_from_dc2", committed=999_999)


def _applier(*channels: ApplierChannel) -> MemberApplier:
    return MemberApplier(at_us=T0, source=NATIVE, channels=channels, workers=())


def test_applier_history_columns_are_the_declared_counters() -> None:
    assert tuple(EXPECTED) == APPLIER_HISTORY_COLUMNS


def test_applier_history_takes_the_group_replication_applier_channel() -> None:
    assert applier_history(_applier(OTHER, CHANNEL)) == EXPECTED


def test_applier_history_without_the_channel_is_all_null() -> None:
    assert set(applier_history(_applier(OTHER)).values()) == {None}
    assert set(applier_history(None).values()) == {None}


def test_a_null_figure_stays_null() -> None:
    derived = dataclasses.replace(CHANNEL, active_ns=None, waits_for_work_ns=None)
    figures = applier_history(_applier(derived))
    assert figures["total_active_time_duration"] is None
    assert figures["waits_for_work_from_source_sum_time"] is None
    assert figures["transactions_committed_count"] == 120


def _envelope(applier: Any, seq: int) -> bytes:
    ext: dict[str, Any] = {"communication_stack": "MySQL"}
    if applier is not None:
        ext["applier"] = applier
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(REMOTE, "10.0.0.2", 3306, "ONLINE", "SECONDARY", "9.7.0", "x:1"),
            view_id="17000000:3",
            incarnation=7,
            seq=seq,
            sent_us=T0 + seq * 1_000_000,
            stats=encode_pipeline_stats(PipelineStats(transactions_certified=5)),
            ext=ext,
        )
    )


def test_receiver_records_the_applier_counters_the_remote_member_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(receiver_module, "now_us", lambda: T0 + 10_000_000)
    sink = Sink()
    receiver = Receiver(online_tables(), sink)  # type: ignore[arg-type]
    wire = encode_member_applier(_applier(CHANNEL))
    receiver.on_message(topic(REMOTE), _envelope(wire, 1), retained=False)
    receiver.on_message(topic(REMOTE), _envelope(None, 2), retained=False)
    first, second = sink.rows
    assert {c: getattr(first, c) for c in APPLIER_HISTORY_COLUMNS} == EXPECTED
    # no ext.applier in this envelope: no figures (never the previous envelope's)
    assert {getattr(second, c) for c in APPLIER_HISTORY_COLUMNS} == {None}


def test_publisher_records_the_local_applier_counters(tmp_path: Path) -> None:
    sink = Sink()
    sample = dataclasses.replace(local_sample(), applier=_applier(CHANNEL))
    asyncio.run(make_publisher(tmp_path, sink, sample).tick(0, None))
    (row,) = sink.rows
    assert {c: getattr(row, c) for c in APPLIER_HISTORY_COLUMNS} == EXPECTED


def test_publisher_records_null_counters_when_the_source_has_none(tmp_path: Path) -> None:
    sink = Sink()
    asyncio.run(make_publisher(tmp_path, sink, local_sample()).tick(0, None))
    (row,) = sink.rows
    assert {getattr(row, c) for c in APPLIER_HISTORY_COLUMNS} == {None}
