"""The lag columns of history rows: core.rows.lag_history, the publisher and the receiver.

Expected figures are worked out by hand from the stage timestamps (seconds).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from grstats.core.lag import RECOVERY_CHANNEL, MemberLag, StageTrx, encode_member_lag
from grstats.core.records import LAG_HISTORY_COLUMNS
from grstats.core.rows import lag_history
from grstats.daemon import receiver as receiver_module
from grstats.daemon.receiver import Receiver
from tests.fixtures.member_lag import APPLIER, S, lag_envelope
from tests.fixtures.member_tables import (
    T0,
    local_sample,
    online_tables,
    topic,
)
from tests.fixtures.publishing import Sink, make_publisher

RECOVERY = dataclasses.replace(
    APPLIER, channel=RECOVERY_CHANNEL, last_queued=StageTrx("x:1", T0 - 90 * S, None, None, T0)
)
EXPECTED = {
    "replication_lag_seconds": 3.25,
    "queue_lag_seconds": 1.2,
    "apply_lag_seconds": 3.0,
    "apply_time_seconds": 0.5,
}


def test_lag_history_columns_are_the_declared_history_names() -> None:
    assert (*EXPECTED, "clock_offset_seconds") == LAG_HISTORY_COLUMNS


def test_lag_history_takes_the_applier_channel_figures() -> None:
    figures = lag_history(MemberLag(T0 + 1_250_000, (RECOVERY, APPLIER)), -0.5)
    assert figures == pytest.approx({**EXPECTED, "clock_offset_seconds": -0.5})


def test_lag_history_without_an_applier_channel_is_all_null() -> None:
    assert set(lag_history(MemberLag(T0, (RECOVERY,)), 0.0).values()) == {None}
    assert set(lag_history(None, 0.0).values()) == {None}


def test_receiver_records_the_lag_the_remote_member_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receiver_module, "now_us", lambda: T0 + 10_000)
    sink = Sink()
    receiver = Receiver(online_tables(), sink)  # type: ignore[arg-type]
    lag = encode_member_lag(MemberLag(T0 + 1_250_000, (APPLIER,)))
    receiver.on_message(topic(), lag_envelope(lag, sent_us=T0), retained=False)
    receiver.on_message(topic(), lag_envelope(None, seq=2, sent_us=T0 + S), retained=False)
    first, second = sink.rows
    # clock offset: sent T0, received T0 + 10 ms -> -0.01 s
    assert {c: getattr(first, c) for c in LAG_HISTORY_COLUMNS} == pytest.approx(
        {**EXPECTED, "clock_offset_seconds": -0.01}
    )
    assert {getattr(second, c) for c in LAG_HISTORY_COLUMNS} == {None}  # no ext.lag, no figures


def test_publisher_records_the_local_lag_with_a_zero_clock_offset(tmp_path: Path) -> None:
    sink = Sink()
    sample = dataclasses.replace(local_sample(), sampled_at_us=T0 + 1_250_000, lag=(APPLIER,))
    asyncio.run(make_publisher(tmp_path, sink, sample).tick(0, None))
    (row,) = sink.rows
    assert {c: getattr(row, c) for c in LAG_HISTORY_COLUMNS} == pytest.approx(
        {**EXPECTED, "clock_offset_seconds": 0.0}
    )


def test_publisher_records_null_lag_when_the_source_has_none(tmp_path: Path) -> None:
    sink = Sink()
    asyncio.run(make_publisher(tmp_path, sink, local_sample()).tick(0, None))
    (row,) = sink.rows
    assert {getattr(row, c) for c in LAG_HISTORY_COLUMNS} == {None}
