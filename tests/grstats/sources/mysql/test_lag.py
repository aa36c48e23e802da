"""The mysql source's replication lag by stage (WL#7374) over the real wire protocol.

The fake server (tests/fixtures/fake_mysql.py) shows TIMESTAMP(6) cells the
way MySQL does: in the session's time zone, the server's default being +05:30,
and MySQL's all-zero "none" as '0000-00-00 00:00:00.000000'. Cells are given
here as µs since the epoch (0: none); expected values are written by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from structlog.testing import capture_logs

from grstats.core.lag import APPLIER_CHANNEL, RECOVERY_CHANNEL, ChannelLag, StageTrx
from grstats.sources.mysql import MySQLSource
from grstats.sources.mysql.lag import timestamp_us
from tests.fixtures import mysql_definitions as defs
from tests.fixtures.fake_mysql import FakeMySQL
from tests.fixtures.mysql_source import (
    APPLIER_STATUS_COLUMNS,
    APPLIER_STATUS_TABLE,
    CONNECTION_STATUS_COLUMNS_84,
    CONNECTION_STATUS_TABLE,
    COORDINATOR_COLUMNS_84,
    COORDINATOR_TABLE,
    GLOBAL_STATUS_TABLE,
    MEMBERS_TABLE,
    SECOND,
    T0,
    WORKER_COLUMNS_80,
    WORKER_COLUMNS_84,
    WORKER_TABLE,
    member_84,
    online_84,
)

GTID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
# 2026-11-23 09:00:00.000100 UTC; the fake shows it as 14:30:00.000100 (+05:30)
ORIG = 1_795_424_400_000_100
MS = 1_000

# 5.7: the tables exist, without any WL#7374 column
CONNECTION_STATUS_COLUMNS_57 = CONNECTION_STATUS_COLUMNS_84[:11]
COORDINATOR_COLUMNS_57 = COORDINATOR_COLUMNS_84[:6]
WORKER_COLUMNS_57 = [*WORKER_COLUMNS_80[:4], "LAST_SEEN_TRANSACTION", *WORKER_COLUMNS_80[4:7]]


def _row(columns: list[str], **values: Any) -> dict[str, Any]:
    """A row as MySQL shows an unset one: "" GTIDs, all-zero timestamps."""
    row: dict[str, Any] = {}
    for c in columns:
        if c in values:
            row[c] = values[c]
        elif c.endswith("_TIMESTAMP"):
            row[c] = 0
        elif c.endswith("TRANSACTION"):
            row[c] = ""
        else:
            row[c] = None
    return row


def _stage(
    prefix: str, gno: int, original: int, start: str, start_us: int, **end: int
) -> dict[str, Any]:
    """Cells of one stage transaction (immediate commit = original + 1 ms)."""
    cells = {
        prefix: f"{GTID}:{gno}",
        f"{prefix}_ORIGINAL_COMMIT_TIMESTAMP": original,
        f"{prefix}_IMMEDIATE_COMMIT_TIMESTAMP": original + MS,
        f"{prefix}_{start}_TIMESTAMP": start_us,
    }
    cells.update({f"{prefix}_{name}_TIMESTAMP": us for name, us in end.items()})
    return cells


def _trx(gno: int, original: int, start_us: int, end_us: int | None) -> StageTrx:
    return StageTrx(f"{GTID}:{gno}", original, original + MS, start_us, end_us)


def _set(fake: FakeMySQL, table: str, columns: list[str], *rows: dict[str, Any]) -> None:
    fake.tables[table] = (columns, [_row(columns, **r) for r in rows])


def _worker(worker_id: int, state: str = "ON", **cells: Any) -> dict[str, Any]:
    return {
        "CHANNEL_NAME": APPLIER_CHANNEL,
        "WORKER_ID": worker_id,
        "SERVICE_STATE": state,
        **cells,
    }


def _applier_channel(fake: FakeMySQL, state: str = "ON", channel: str = APPLIER_CHANNEL) -> None:
    """Connection, applier and coordinator rows of an idle channel: last transaction 10."""
    _set(
        fake,
        CONNECTION_STATUS_TABLE,
        CONNECTION_STATUS_COLUMNS_84,
        {
            "CHANNEL_NAME": channel,
            "SERVICE_STATE": state,
            **_stage(
                "LAST_QUEUED_TRANSACTION",
                10,
                ORIG,
                "START_QUEUE",
                ORIG + 2 * MS,
                END_QUEUE=ORIG + 3 * MS,
            ),
        },
    )
    _set(
        fake,
        APPLIER_STATUS_TABLE,
        APPLIER_STATUS_COLUMNS,
        {"CHANNEL_NAME": channel, "SERVICE_STATE": state, "REMAINING_DELAY": None},
    )
    _set(
        fake,
        COORDINATOR_TABLE,
        COORDINATOR_COLUMNS_84,
        {
            "CHANNEL_NAME": channel,
            "SERVICE_STATE": state,
            **_stage(
                "LAST_PROCESSED_TRANSACTION",
                10,
                ORIG,
                "START_BUFFER",
                ORIG + 4 * MS,
                END_BUFFER=ORIG + 5 * MS,
            ),
        },
    )


IDLE_WORKERS = (
    _worker(
        1,
        **_stage(
            "LAST_APPLIED_TRANSACTION",
            9,
            ORIG - 50 * MS,
            "START_APPLY",
            ORIG - 40 * MS,
            END_APPLY=ORIG - 30 * MS,
        ),
    ),
    _worker(
        2,
        **_stage(
            "LAST_APPLIED_TRANSACTION",
            10,
            ORIG,
            "START_APPLY",
            ORIG + 6 * MS,
            END_APPLY=ORIG + 9 * MS,
        ),
    ),
    _worker(3),  # never used: "" and all-zero timestamps
    _worker(4),
)
IDLE = ChannelLag(
    channel=APPLIER_CHANNEL,
    receiver_on=True,
    applier_on=True,
    last_queued=_trx(10, ORIG, ORIG + 2 * MS, ORIG + 3 * MS),
    last_processed=_trx(10, ORIG, ORIG + 4 * MS, ORIG + 5 * MS),
    last_applied=_trx(10, ORIG, ORIG + 6 * MS, ORIG + 9 * MS),
    workers=4,
    busy_workers=0,
)


async def _lag(source: MySQLSource, now_us: int = T0) -> tuple[ChannelLag, ...]:
    sample = await source.sample(now_us)
    assert sample.member.state != "OFFLINE"
    return sample.lag


@pytest.mark.parametrize("server_zone", ["+05:30", "-08:00", "+00:00"])
async def test_idle_84_applier_reads_utc_timestamps_and_zero_as_none(
    fake: FakeMySQL, make_source: Any, server_zone: str
) -> None:
    fake.time_zone = server_zone
    online_84(fake)
    _applier_channel(fake)
    _set(fake, WORKER_TABLE, WORKER_COLUMNS_84, *IDLE_WORKERS)
    assert await _lag(make_source(fake.port)) == (IDLE,)


async def test_busy_80_multi_worker_applier_picks_latest_applied_and_oldest_applying(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _applier_channel(fake)
    now = ORIG + 2 * SECOND
    _set(
        fake,
        WORKER_TABLE,
        WORKER_COLUMNS_80,
        _worker(
            1,
            **_stage(
                "LAST_APPLIED_TRANSACTION", 7, ORIG - 3 * MS, "START_APPLY", ORIG, END_APPLY=now
            ),
            **_stage("APPLYING_TRANSACTION", 12, ORIG + 20 * MS, "START_APPLY", now + MS),
        ),
        _worker(
            2,
            **_stage(
                "LAST_APPLIED_TRANSACTION",
                8,
                ORIG - 2 * MS,
                "START_APPLY",
                ORIG,
                END_APPLY=now + 5 * MS,  # ended last: the last applied
            ),
            **_stage("APPLYING_TRANSACTION", 11, ORIG + 10 * MS, "START_APPLY", now + 6 * MS),
        ),
        _worker(
            3,
            **_stage(
                "LAST_APPLIED_TRANSACTION", 6, ORIG - 4 * MS, "START_APPLY", ORIG, END_APPLY=now
            ),
            **_stage("APPLYING_TRANSACTION", 13, ORIG + 30 * MS, "START_APPLY", now + 2 * MS),
        ),
        _worker(4),  # idle
    )
    (lag,) = await _lag(make_source(fake.port))
    assert lag.last_applied == _trx(8, ORIG - 2 * MS, ORIG, now + 5 * MS)
    # the oldest immediate commit among the busy: worker 2's, though it started last
    assert lag.applying == _trx(11, ORIG + 10 * MS, now + 6 * MS, None)
    assert (lag.workers, lag.busy_workers) == (4, 3)


async def test_channel_off_keeps_its_last_transactions(fake: FakeMySQL, make_source: Any) -> None:
    online_84(fake)
    _applier_channel(fake, state="OFF")
    _set(
        fake,
        WORKER_TABLE,
        WORKER_COLUMNS_84,
        *(
            _worker(
                w["WORKER_ID"],
                "OFF",
                **{
                    k: v
                    for k, v in w.items()
                    if k not in ("WORKER_ID", "SERVICE_STATE", "CHANNEL_NAME")
                },
            )
            for w in IDLE_WORKERS
        ),
    )
    (lag,) = await _lag(make_source(fake.port))
    assert (lag.receiver_on, lag.applier_on) == (False, False)
    assert lag.last_applied == IDLE.last_applied and lag.last_queued == IDLE.last_queued


async def test_single_threaded_applier_without_coordinator_row(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _applier_channel(fake)
    _set(fake, COORDINATOR_TABLE, COORDINATOR_COLUMNS_84)  # no coordinator thread
    _set(
        fake,
        WORKER_TABLE,
        WORKER_COLUMNS_84,
        _worker(
            0,
            **_stage(
                "LAST_APPLIED_TRANSACTION",
                10,
                ORIG,
                "START_APPLY",
                ORIG + 6 * MS,
                END_APPLY=ORIG + 9 * MS,
            ),
        ),
    )
    (lag,) = await _lag(make_source(fake.port))
    assert lag.last_processed == StageTrx() == lag.processing
    assert (lag.last_applied, lag.workers, lag.applier_on) == (IDLE.last_applied, 1, True)


async def test_recovery_channel_shows_only_while_recovering(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _applier_channel(fake)
    rows = fake.tables[CONNECTION_STATUS_TABLE][1]
    recovery = dict(rows[0], CHANNEL_NAME=RECOVERY_CHANNEL, SERVICE_STATE="CONNECTING")
    fake.tables[CONNECTION_STATUS_TABLE] = (CONNECTION_STATUS_COLUMNS_84, [*rows, recovery])
    source = make_source(fake.port)
    assert [c.channel for c in await _lag(source)] == [APPLIER_CHANNEL]

    fake.set_row(MEMBERS_TABLE, **member_84(MEMBER_STATE="RECOVERING"))
    applier, recovering = await _lag(source, T0 + SECOND)
    assert applier.channel == APPLIER_CHANNEL
    assert recovering.channel == RECOVERY_CHANNEL
    assert recovering.receiver_on is False  # CONNECTING is not ON
    assert recovering.last_queued == IDLE.last_queued
    assert recovering.applier_on is None and recovering.workers == 0  # no applier rows


async def test_57_tables_give_states_and_no_transactions(fake: FakeMySQL, make_source: Any) -> None:
    online_84(fake)
    _set(
        fake,
        CONNECTION_STATUS_TABLE,
        CONNECTION_STATUS_COLUMNS_57,
        {"CHANNEL_NAME": APPLIER_CHANNEL, "SERVICE_STATE": "ON"},
    )
    _set(
        fake,
        APPLIER_STATUS_TABLE,
        APPLIER_STATUS_COLUMNS,
        {"CHANNEL_NAME": APPLIER_CHANNEL, "SERVICE_STATE": "ON"},
    )
    _set(fake, COORDINATOR_TABLE, COORDINATOR_COLUMNS_57)
    _set(
        fake,
        WORKER_TABLE,
        WORKER_COLUMNS_57,
        _worker(0, LAST_SEEN_TRANSACTION=f"{GTID}:10"),
    )
    assert await _lag(make_source(fake.port)) == (
        ChannelLag(receiver_on=True, applier_on=True, workers=1),
    )


async def test_server_without_gr_channels_or_tables_gives_no_lag(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    source = make_source(fake.port)
    assert await _lag(source) == ()  # GR channel rows absent
    del fake.tables[WORKER_TABLE]  # a table the server does not have: no error
    _applier_channel(fake)
    (lag,) = await _lag(source, T0 + SECOND)
    assert (lag.workers, lag.last_applied, lag.last_queued) == (0, StageTrx(), IDLE.last_queued)


def _hung(fake: FakeMySQL, table: str) -> None:  # ONLINE 8.4, idle channel, `table` hangs
    online_84(fake, COUNT_TRANSACTIONS_CHECKED=10)
    _applier_channel(fake)
    _set(fake, WORKER_TABLE, WORKER_COLUMNS_84, *IDLE_WORKERS)
    fake.hang_tables = {table}


async def test_hung_lag_query_keeps_the_stats_sample(fake: FakeMySQL, make_source: Any) -> None:
    _hung(fake, WORKER_TABLE)
    source = make_source(fake.port, poll_timeout=2.0, offline_after=0.0)
    with capture_logs() as events:
        for i in range(2):
            sample = await source.sample(T0 + i * SECOND)
            assert (sample.member.state, sample.stats.transactions_certified) == ("ONLINE", 10)
            assert sample.lag == ()
    assert [e["event"] for e in events].count("mysql.lag_unavailable") == 1  # logged once
    fake.hang_tables = set()
    assert await _lag(source, T0 + 2 * SECOND) == (IDLE,)


async def test_hung_gr_status_read_keeps_the_lag_read_in_the_same_round_trip(
    fake: FakeMySQL, make_source: Any
) -> None:
    # the lag's tables and global_status go in one round trip: the lag's results,
    # read before global_status hung, are kept, and the failure is global_status's
    _hung(fake, GLOBAL_STATUS_TABLE)
    source = make_source(fake.port, poll_timeout=1.0, offline_after=0.0)
    with capture_logs() as events:
        sample = await source.sample(T0)
    assert (sample.member.state, sample.stats.transactions_certified) == ("ONLINE", 10)
    assert (sample.lag, sample.flow_control) == ((IDLE,), None)
    reasons = [e["reason"] for e in events if e["event"] == "mysql.lag_unavailable"]
    assert reasons == ["flow_stats_timeout"]
    fake.hang_tables = set()


# ---- timestamp conversion, whatever the local zone (run with TZ=Asia/Kolkata too) ----


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("0000-00-00 00:00:00.000000", None),  # MySQL's "none", as the driver hands it over
        (b"0000-00-00 00:00:00.000000", None),
        ("0000-00-00 00:00:00", None),
        ("2026-11-23 09:00:00.000100", ORIG),
        (b"2026-11-23 09:00:00.0001", ORIG),
        ("2026-11-23 09:00:00", ORIG - 100),
        (datetime(2026, 11, 23, 9, 0, 0, 100), ORIG),  # naive: the '+00:00' session's UTC
        (
            datetime(2026, 11, 23, 14, 30, 0, 100, tzinfo=timezone(timedelta(hours=5, minutes=30))),
            ORIG,
        ),
        (datetime(1970, 1, 1, tzinfo=UTC), None),
        ("not a time", None),
        ("2026-02-31 00:00:00", None),
        (12345, None),
    ],
)
def test_timestamp_us_reads_utc_and_maps_none_to_none(value: Any, expected: int | None) -> None:
    assert timestamp_us(value) == expected


# A tagged GTID (8.3+) at MySQL's longest: uuid, a 32-character tag, a 19-digit gno.
TAGGED_89 = f"{GTID}:{'t' * 32}:9223372036854775807"


async def test_an_89_character_tagged_gtid_is_read_whole(fake: FakeMySQL, make_source: Any) -> None:
    # 8.4 declares the GTID columns CHAR(90) (the fake refuses longer cells)
    assert len(TAGGED_89) == 89
    online_84(fake)
    _applier_channel(fake)
    worker = _worker(1, **_stage("LAST_APPLIED_TRANSACTION", 1, ORIG, "START_APPLY", ORIG + MS,
                                 END_APPLY=ORIG + 2 * MS))  # fmt: skip
    worker["LAST_APPLIED_TRANSACTION"] = TAGGED_89
    _set(fake, WORKER_TABLE, WORKER_COLUMNS_84, worker)
    (lag,) = await _lag(make_source(fake.port))
    assert lag.last_applied.gtid == TAGGED_89


async def test_the_longest_gtid_of_each_version_is_read_whole(
    versioned: FakeMySQL, make_source: Any
) -> None:
    # 8.0: CHAR(57), untagged GTIDs only; 8.4 and 9.x: CHAR(90), tagged ones
    width = next(
        c.length
        for c in defs.columns(WORKER_TABLE, versioned.version) or ()
        if c.name == "LAST_APPLIED_TRANSACTION"
    )
    longest = f"{GTID}:9223372036854775807" if width == 57 else TAGGED_89
    online_84(versioned)
    _applier_channel(versioned)
    worker = _worker(1, **_stage("LAST_APPLIED_TRANSACTION", 1, ORIG, "START_APPLY", ORIG + MS,
                                 END_APPLY=ORIG + 2 * MS))  # fmt: skip
    worker["LAST_APPLIED_TRANSACTION"] = longest
    columns = defs.names(WORKER_TABLE, versioned.version)
    _set(versioned, WORKER_TABLE, columns, worker)
    (lag,) = await _lag(make_source(versioned.port))
    assert lag.last_applied.gtid == longest
