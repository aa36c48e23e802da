"""The mysql source's WL#15620 read over the real wire protocol (mysql-mimic).

A 9.x-shaped server has replication_applier_metrics and
replication_applier_progress_by_worker, declared as MySQL ships them
(tests/fixtures/mysql_definitions.json): shown exactly, every column read. An 8.0-shaped one has
neither: ongoing and pending come from its 8.0 tables, everything else NULL,
and no error. Expected values are written by hand.
"""

from __future__ import annotations

from typing import Any

from structlog.testing import capture_logs

from grstats.core.applier import ApplierChannel, ApplierWorker, MemberApplier
from protocol import GtidSet, GtidState
from tests.fixtures.fake_mysql import OTHER_UUID, FakeMySQL
from tests.fixtures.mysql_source import (
    CH,
    METRICS_COLUMNS,
    METRICS_TABLE,
    PROGRESS_COLUMNS,
    PROGRESS_TABLE,
    SECOND,
    T0,
    WORKER_COLUMNS_84,
    WORKER_TABLE,
    online_84,
)

# MySQL 9.x's own definitions (components/replication_applier_metrics), never grstats'
LAST_START_US = 1_795_424_400_000_000  # 2026-11-23 09:00:00 UTC


def _97(fake: FakeMySQL) -> None:
    online_84(fake, COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE=3)
    fake.declare(METRICS_TABLE, "9.x")
    fake.declare(PROGRESS_TABLE, "9.x")
    # LAST_APPLIER_START is a TIMESTAMP (no fraction): the fake shows it as MySQL does
    values = [CH, 7_200_000_000_000, LAST_START_US, 1000, 2, 3, 1_200_000, 2400,
              900, 3600, 5000, 40, 6_000_000_000_000, 5, 1_000_000, 6, 2_000_000, 8, 80_000,
              1, 30_000, 7, 3_000_000, 4_000_000]  # fmt: skip
    fake.tables[METRICS_TABLE] = (
        METRICS_COLUMNS,
        [dict(zip(METRICS_COLUMNS, values, strict=True))],
    )
    workers = [[CH, 1, 51, "DML", 1200, 600], [CH, 2, 52, "UNASSIGNED", 0, 0]]
    fake.tables[PROGRESS_TABLE] = (
        PROGRESS_COLUMNS,
        [dict(zip(PROGRESS_COLUMNS, w, strict=True)) for w in workers],
    )


async def _applier(source: Any) -> MemberApplier | None:
    sample = await source.sample(T0)
    assert sample.member.state == "ONLINE"
    return sample.applier


async def test_a_97_server_is_shown_exactly(fake: FakeMySQL, make_source: Any) -> None:
    _97(fake)
    got = await _applier(make_source(fake.port))
    assert got == MemberApplier(
        at_us=T0,
        source="native",
        channels=(
            ApplierChannel(
                CH,
                7_200_000_000_000,
                1_795_424_400_000_000,
                1000,
                2,
                3,
                1_200_000,
                2400,
                900,
                3600,
                5000,
                40,
                6_000_000_000_000,
                5,
                1_000_000,
                6,
                2_000_000,
                8,
                80_000,
                1,
                30_000,
                7,
                3_000_000,
                4_000_000,
            ),
        ),
        workers=(
            ApplierWorker(CH, 1, 51, "DML", 1200, 600),
            ApplierWorker(CH, 2, 52, "UNASSIGNED", 0, 0),
        ),
    )


async def test_a_97_server_with_pending_not_yet_computed_gives_null(
    fake: FakeMySQL, make_source: Any
) -> None:
    _97(fake)
    _, rows = fake.tables[METRICS_TABLE]
    rows[0]["TRANSACTIONS_PENDING_COUNT"] = None
    rows[0]["TRANSACTIONS_PENDING_SIZE_BYTES_SUM"] = None
    got = await _applier(make_source(fake.port))
    assert got is not None
    assert got.channels[0].pending is None
    assert got.channels[0].pending_bytes is None
    assert got.channels[0].committed == 1000


async def test_an_80_server_gives_what_it_knows_and_null_for_the_rest(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake, COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE=9)
    busy = dict.fromkeys(WORKER_COLUMNS_84)
    busy.update(CHANNEL_NAME=CH, WORKER_ID=1, THREAD_ID=61, SERVICE_STATE="ON",
                APPLYING_TRANSACTION="aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:7")  # fmt: skip
    idle = dict.fromkeys(WORKER_COLUMNS_84)
    idle.update(CHANNEL_NAME=CH, WORKER_ID=2, THREAD_ID=62, SERVICE_STATE="ON",
                APPLYING_TRANSACTION="")  # fmt: skip
    fake.tables[WORKER_TABLE] = (WORKER_COLUMNS_84, [busy, idle])
    got = await _applier(make_source(fake.port))
    assert got == MemberApplier(
        at_us=T0,
        source="derived",
        channels=(ApplierChannel(CH, ongoing=1, pending=9),),
        workers=(
            ApplierWorker(CH, 1, 61, None, None, None),
            ApplierWorker(CH, 2, 62, "UNASSIGNED", 0, 0),
        ),
    )


async def test_a_hung_applier_query_keeps_the_stats_sample(
    fake: FakeMySQL, make_source: Any
) -> None:
    _97(fake)
    fake.hang_tables.add(METRICS_TABLE)
    # the reads before the hung one share this deadline: 2 s so that, on a loaded
    # machine, it is the applier query that times out and not the lag query before it
    source = make_source(fake.port, poll_timeout=2.0)
    with capture_logs() as events:
        sample = await source.sample(T0)
    assert sample.member.state == "ONLINE"
    assert sample.stats.transactions_waiting_apply == 3
    assert sample.applier is None
    # the timeout dropped the connection: the extras after it give nothing, unqueried
    assert (sample.flow_control, sample.communication) == (None, None)
    # the GTID sets and the server's view are read with the stats, before the extras
    assert sample.gtid_state == GtidState(T0, GtidSet(), GtidSet())
    assert [v.member.member_id for v in sample.server_view] == [OTHER_UUID]
    unavailable = [e["reason"] for e in events if e["event"] == "mysql.lag_unavailable"]
    assert unavailable == ["applier_timeout"]


async def test_a_hung_applier_read_in_the_polls_round_trip_keeps_the_stats_and_lag(
    fake: FakeMySQL, make_source: Any
) -> None:
    # once a poll found replication_applier_metrics, both applier reads go last in
    # the poll's one round trip: a hang there keeps what was read before it
    _97(fake)
    source = make_source(fake.port, poll_timeout=2.0)
    first = await source.sample(T0)
    assert first.applier is not None
    fake.hang_tables.add(METRICS_TABLE)
    with capture_logs() as events:
        sample = await source.sample(T0 + SECOND)
    assert (sample.member.state, sample.stats.transactions_waiting_apply) == ("ONLINE", 3)
    assert (sample.lag, sample.applier) == (first.lag, None)
    assert [v.member.member_id for v in sample.server_view] == [OTHER_UUID]
    unavailable = [e["reason"] for e in events if e["event"] == "mysql.lag_unavailable"]
    assert unavailable == ["applier_timeout"]


async def test_every_column_of_a_9x_server_arrives_non_null(
    fake: FakeMySQL, make_source: Any
) -> None:
    # all 24 columns of MySQL's replication_applier_metrics: a name grstats reads
    # that MySQL does not ship would arrive as NULL here
    _97(fake)
    got = await _applier(make_source(fake.port))
    assert got is not None
    channel = got.channels[0]
    fields = [f for f in channel.__dataclass_fields__ if getattr(channel, f) is None]
    assert fields == []
    assert len(METRICS_COLUMNS) == 24
    assert channel.last_start_us == LAST_START_US
