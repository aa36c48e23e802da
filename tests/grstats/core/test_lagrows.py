"""core.lagrows: MySQL Shell's replicationLag, the stage lags and MySQL's text forms, by hand."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core import columns as col
from grstats.core.lag import ChannelLag, MemberLag, StageTrx
from grstats.core.lagrows import (
    APPLIER_QUEUE_APPLIED,
    ZERO_TIMESTAMP,
    format_timestamp,
    lag_rows,
    parse_timestamp,
    replication_lag,
    timediff,
    within_clock_offset,
)

SRC = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
MEMBER = "22222222-2222-2222-2222-222222222222"
# 2023-11-14 22:13:20 UTC (1_700_000_000 s), in µs
T = 1_700_000_000_000_000

BUSY = ChannelLag(
    receiver_on=True,
    applier_on=True,
    # queued gno 12: committed at T, queued from T+0.4 s to T+0.5 s
    last_queued=StageTrx(f"{SRC}:12", T, T + 100_000, T + 400_000, T + 500_000),
    # applied gno 10: committed at T-2 s, applied from T+1.0 s to T+1.75 s
    last_applied=StageTrx(f"{SRC}:10", T - 2_000_000, T - 2_000_000, T + 1_000_000, T + 1_750_000),
    # applying gno 11: committed on its immediate source at T-1.25 s
    applying=StageTrx(f"{SRC}:11", T - 1_500_000, T - 1_250_000, T + 1_800_000, None),
    workers=4,
    busy_workers=1,
)
AT = T + 2_000_000  # the member read these at T+2 s


def test_replication_lag_is_now_minus_the_applying_immediate_commit() -> None:
    # T+2 s - (T-1.25 s) = 3.25 s
    assert replication_lag(BUSY, AT) == ("00:00:03.250000", 3.25)


@pytest.mark.parametrize(
    "change",
    [
        {"receiver_on": False},
        {"applier_on": False},
        {"receiver_on": False, "applier_on": False},
    ],
)
def test_replication_lag_is_null_when_a_channel_thread_is_off(change: dict[str, bool]) -> None:
    assert replication_lag(dataclasses.replace(BUSY, **change), AT) == (None, None)


def test_unknown_thread_states_are_not_off() -> None:
    channel = dataclasses.replace(BUSY, receiver_on=None, applier_on=None)
    assert replication_lag(channel, AT) == ("00:00:03.250000", 3.25)


@pytest.mark.parametrize(
    "change",
    [
        {"last_queued": StageTrx()},  # nothing ever queued: GTID_SUBTRACT('', x) = ''
        {"applying": StageTrx()},  # no worker busy
        {"applying": StageTrx(f"{SRC}:11")},  # busy, but its immediate commit is 0
        {"last_applied": StageTrx(f"{SRC}:12", T, T, T, T)},  # last queued already applied
    ],
    ids=["nothing_queued", "nothing_applying", "zero_commit", "queue_applied"],
)
def test_replication_lag_is_applier_queue_applied_when_nothing_waits(
    change: dict[str, StageTrx],
) -> None:
    channel = dataclasses.replace(BUSY, **change)
    assert replication_lag(channel, AT) == (APPLIER_QUEUE_APPLIED, 0.0)


@pytest.mark.parametrize(
    ("us", "text"),
    [
        (0, "00:00:00.000000"),
        (3_250_000, "00:00:03.250000"),
        (-1_500_001, "-00:00:01.500001"),
        (((25 * 60 + 1) * 60 + 2) * 1_000_000 + 3, "25:01:02.000003"),
        (10**13, "838:59:59.000000"),  # MySQL's TIME maximum
        (-(10**13), "-838:59:59.000000"),
    ],
)
def test_timediff_prints_mysql_time_text(us: int, text: str) -> None:
    assert timediff(us) == text


def test_timestamps_print_as_mysql_timestamp6_in_utc_whatever_the_local_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    assert format_timestamp(T + 250_000) == "2023-11-14 22:13:20.250000"
    assert format_timestamp(None) == ZERO_TIMESTAMP
    assert parse_timestamp("2023-11-14 22:13:20.250000") == T + 250_000
    assert parse_timestamp(ZERO_TIMESTAMP) is None
    assert parse_timestamp("yesterday") is None


def test_row_has_every_column_and_the_stage_lags_by_hand() -> None:
    (row,) = lag_rows(MEMBER, MemberLag(AT, (BUSY,)), offset_s=0.125, spread_s=0.25)
    assert tuple(row) == col.MEMBER_LAG.names
    assert row[col.MEMBER_ID] == MEMBER
    assert row[col.CHANNEL_NAME] == "group_replication_applier"
    assert row[col.LAST_QUEUED_TRANSACTION] == f"{SRC}:12"
    assert row[col.LAST_QUEUED_END_QUEUE] == "2023-11-14 22:13:20.500000"
    assert row[col.LAST_APPLIED_START_APPLY] == "2023-11-14 22:13:21.000000"
    assert row[col.APPLYING_IMMEDIATE_COMMIT] == "2023-11-14 22:13:18.750000"
    assert row[col.LAST_PROCESSED_TRANSACTION] == ""
    assert row[col.LAST_PROCESSED_END_BUFFER] == ZERO_TIMESTAMP
    assert row[col.REPLICATION_LAG] == "00:00:03.250000"
    assert row[col.REPLICATION_LAG_SECONDS] == 3.25
    assert row[col.QUEUE_LAG_SECONDS] == 0.5  # T+0.5 - T
    assert row[col.APPLY_LAG_SECONDS] == 3.75  # T+1.75 - (T-2)
    assert row[col.APPLY_TIME_SECONDS] == 0.75  # T+1.75 - (T+1.0)
    assert row[col.CLOCK_OFFSET_SECONDS] == 0.125
    assert row[col.LAG_WITHIN_CLOCK_OFFSET] == 0  # 3.25, 0.5, 3.75 all > 0.25


def test_stage_lags_are_null_without_their_timestamps() -> None:
    channel = dataclasses.replace(BUSY, last_queued=StageTrx(f"{SRC}:12"), last_applied=StageTrx())
    (row,) = lag_rows(MEMBER, MemberLag(AT, (channel,)), offset_s=None, spread_s=None)
    assert row[col.QUEUE_LAG_SECONDS] is None
    assert row[col.APPLY_LAG_SECONDS] is None
    assert row[col.APPLY_TIME_SECONDS] is None
    assert row[col.LAG_WITHIN_CLOCK_OFFSET] is None


def test_a_lag_no_larger_than_the_clock_spread_is_flagged() -> None:
    # queue lag 0.5 s <= spread 0.6 s: skew alone could explain it
    assert within_clock_offset((3.25, 0.5, 3.75), 0.6) == 1
    assert within_clock_offset((3.25, 0.7, 3.75), 0.6) == 0
    # a negative lag is impossible on one clock
    assert within_clock_offset((-0.01,), 0.0) == 1
    assert within_clock_offset((None, None), 0.6) is None
    assert within_clock_offset((1.0,), None) is None


def test_applier_queue_applied_is_not_a_clock_figure() -> None:
    idle = dataclasses.replace(BUSY, applying=StageTrx())
    (row,) = lag_rows(MEMBER, MemberLag(AT, (idle,)), offset_s=0.0, spread_s=0.6)
    # only the queue (0.5) and apply (3.75) lags count; 0.5 <= 0.6
    assert row[col.LAG_WITHIN_CLOCK_OFFSET] == 1
    assert row[col.REPLICATION_LAG_SECONDS] == 0.0
