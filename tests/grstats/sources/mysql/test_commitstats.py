"""The server's commit-path figures (Gr_* status variables) over the real wire.

A mysql-mimic server of each version shape serves performance_schema.global_status
with the Gr_* rows MySQL of that version shows (tests/fixtures/mysql_definitions.json:
none on 8.0, WL#15506's on 8.4 and 9.x). The figures reach the sample exactly;
without them the sample has none and nothing is logged as a fault. Expected values
are written by hand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from grstats.core.sample import LocalSample
from grstats.sources.mysql.commitstats import build_commit_path, build_communication
from protocol import CommitPathCounters, GroupCommunication
from tests.fixtures import mysql_definitions as defs
from tests.fixtures.fake_mysql import FakeMySQL
from tests.fixtures.mysql_source import (
    GLOBAL_STATUS_COLUMNS,
    GLOBAL_STATUS_TABLE,
    MEMBERS_TABLE,
    SECOND,
    STATS_TABLE,
    T0,
    member_84,
    online_84,
    row_84,
    sample_until,
)

# what a server shows, by hand (text, as global_status's VARCHAR(1024) does)
SHOWN = {
    "Gr_all_consensus_proposals_count": "1200",
    "Gr_all_consensus_time_sum": "3600000",
    "Gr_empty_consensus_proposals_count": "40",
    "Gr_extended_consensus_count": "3",
    "Gr_consensus_bytes_sent_sum": "960000",
    "Gr_consensus_bytes_received_sum": "1920000",
    "Gr_total_messages_sent_count": "1500",
    "Gr_last_consensus_end_timestamp": "2026-11-23 09:00:01.250000",
    "Gr_control_messages_sent_count": "300",
    "Gr_control_messages_sent_bytes_sum": "30000",
    "Gr_control_messages_sent_roundtrip_time_sum": "600000",
    "Gr_data_messages_sent_count": "1200",
    "Gr_data_messages_sent_bytes_sum": "900000",
    "Gr_data_messages_sent_roundtrip_time_sum": "4800000",
    "Gr_transactions_consistency_before_begin_count": "10",
    "Gr_transactions_consistency_before_begin_time_sum": "25000",
    "Gr_transactions_consistency_after_termination_count": "20",
    "Gr_transactions_consistency_after_termination_time_sum": "70000",
    "Gr_transactions_consistency_after_sync_count": "5",
    "Gr_transactions_consistency_after_sync_time_sum": "9000",
    "Gr_certification_garbage_collector_count": "60",
    "Gr_certification_garbage_collector_time_sum": "120000",
}
# 2026-11-23 09:00:01.25 UTC: 56 years (14 leap days) = 20454 days to 2026, + 304 (Jan-Oct)
# + 22 = 20780 days after the epoch, then 9 h and 1.25 s
LAST_US = (20780 * 86400 + 9 * 3600 + 1) * 1_000_000 + 250_000
EXPECTED = CommitPathCounters(
    consensus_proposals=1200,
    consensus_time_us=3_600_000,
    empty_proposals=40,
    extended_rounds=3,
    consensus_bytes_sent=960_000,
    consensus_bytes_received=1_920_000,
    messages_sent=1500,
    control_messages=300,
    control_bytes=30_000,
    control_rtt_us=600_000,
    data_messages=1200,
    data_bytes=900_000,
    data_rtt_us=4_800_000,
    before_begin=10,
    before_begin_us=25_000,
    after_termination=20,
    after_termination_us=70_000,
    after_sync=5,
    after_sync_us=9000,
    gc_runs=60,
    gc_time_us=120_000,
    throttled=None,  # no flow-control stats component on this server
    throttled_us=None,
    last_consensus_end_us=LAST_US,
)


def _status(fake: FakeMySQL, version: str, **extra: str) -> None:
    shipped = set(defs.gr_status_variables(version))
    rows = [{"VARIABLE_NAME": k, "VARIABLE_VALUE": v} for k, v in SHOWN.items() if k in shipped]
    rows += [{"VARIABLE_NAME": k, "VARIABLE_VALUE": v} for k, v in extra.items()]
    # other status variables the query must not pick up
    rows += [
        {"VARIABLE_NAME": "Uptime", "VARIABLE_VALUE": "999"},
        {"VARIABLE_NAME": "GrXallXconsensusXproposalsXcount", "VARIABLE_VALUE": "888"},
    ]
    fake.tables[GLOBAL_STATUS_TABLE] = (GLOBAL_STATUS_COLUMNS, rows)


@pytest.fixture(params=defs.VERSIONS)
async def versioned(request: pytest.FixtureRequest) -> AsyncIterator[tuple[FakeMySQL, str]]:
    server = FakeMySQL(request.param)
    await server.start()
    try:
        yield server, request.param
    finally:
        server.release.set()
        await server.stop()


def test_the_definitions_ship_the_variables_from_8_1_on() -> None:
    assert defs.gr_status_variables("8.0") == ()
    assert set(defs.gr_status_variables("8.4")) == set(SHOWN)
    assert defs.gr_status_variables("9.x") == defs.gr_status_variables("8.4")


async def test_each_version_shape_gives_its_figures_or_none_without_a_fault(
    versioned: tuple[FakeMySQL, str], make_source: Any
) -> None:
    fake, version = versioned
    online_84(fake)
    _status(fake, version)
    source = make_source(fake.port)
    with capture_logs() as logs:
        sample = await source.sample(T0)
    assert sample.member.state == "ONLINE"
    assert sample.stats.transactions_certified == 12345  # the stats sample is whole
    if version == "8.0":
        assert sample.commit_path is None
    else:
        assert sample.commit_path == EXPECTED
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


async def test_one_query_also_serves_the_flow_control_figures(
    versioned: tuple[FakeMySQL, str], make_source: Any
) -> None:
    fake, version = versioned
    if version == "8.0":
        pytest.skip("the commit-path figures are 8.1.0+")
    online_84(fake)
    _status(
        fake,
        version,
        Gr_flow_control_throttle_count="4",
        Gr_flow_control_throttle_time_sum="2500000",
        Gr_flow_control_throttle_active_count="0",
        Gr_flow_control_throttle_last_throttle_timestamp="",
    )
    sample = await make_source(fake.port).sample(T0)
    assert sample.commit_path is not None
    assert (sample.commit_path.throttled, sample.commit_path.throttled_us) == (4, 2_500_000)
    assert sample.flow_control is not None
    assert sample.flow_control.time_sum == 2_500_000


def test_an_odd_cell_is_none_alone() -> None:
    rows = [{"VARIABLE_NAME": k, "VARIABLE_VALUE": v} for k, v in SHOWN.items()]
    rows[0] = {"VARIABLE_NAME": "Gr_all_consensus_proposals_count", "VARIABLE_VALUE": "-1"}
    rows[7] = {"VARIABLE_NAME": "Gr_last_consensus_end_timestamp", "VARIABLE_VALUE": ""}
    rows[1] = {
        "VARIABLE_NAME": "GR_ALL_CONSENSUS_TIME_SUM",
        "VARIABLE_VALUE": "18446744073709551616",
    }
    got = build_commit_path(rows)
    assert got.consensus_proposals is None
    assert got.consensus_time_us is None  # past 2^64 - 1
    assert got.last_consensus_end_us is None
    assert got.gc_time_us == 120_000
    assert got.shown()


def test_no_rows_shows_nothing() -> None:
    assert not build_commit_path([]).shown()


# -- replication_group_communication_information (8.0.23+) --------------------
COMM_TABLE = "replication_group_communication_information"
LEADER = "cccccccc-cccc-cccc-cccc-cccccccccccc"
OTHER = "dddddddd-dddd-dddd-dddd-dddddddddddd"


def _communication(fake: FakeMySQL, columns: list[str] | None = None, **row: Any) -> None:
    names = columns or defs.names(COMM_TABLE, fake.version)
    shown = {
        "WRITE_CONCURRENCY": 10,
        "PROTOCOL_VERSION": "8.0.27",
        "WRITE_CONSENSUS_LEADERS_PREFERRED": LEADER,
        "WRITE_CONSENSUS_LEADERS_ACTUAL": f"{LEADER},{OTHER}",
        "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE": 1,
        "MEMBER_FAILURE_SUSPICIONS_COUNT": f'{{"{LEADER}":0,"{OTHER}":2}}',
        **row,
    }
    fake.tables[COMM_TABLE] = (names, [{c: shown[c] for c in names}])


def test_the_definitions_have_the_table_in_every_version_shape() -> None:
    first = [
        "WRITE_CONCURRENCY",
        "PROTOCOL_VERSION",
        "WRITE_CONSENSUS_LEADERS_PREFERRED",
        "WRITE_CONSENSUS_LEADERS_ACTUAL",
        "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE",
    ]
    assert defs.names(COMM_TABLE, "8.0") == first
    assert defs.names(COMM_TABLE, "8.4") == [*first, "MEMBER_FAILURE_SUSPICIONS_COUNT"]
    assert defs.names(COMM_TABLE, "9.x") == defs.names(COMM_TABLE, "8.4")


async def test_each_version_shape_gives_the_communication_information(
    versioned: tuple[FakeMySQL, str], make_source: Any
) -> None:
    fake, _ = versioned
    online_84(fake)
    _communication(fake)
    with capture_logs() as logs:
        sample = await make_source(fake.port).sample(T0)
    assert sample.communication == GroupCommunication(
        10, "8.0.27", (LEADER,), (LEADER, OTHER), True
    )
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


async def test_an_8_0_23_table_has_no_single_leader_column(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _communication(fake, defs.names(COMM_TABLE, "8.0")[:4], WRITE_CONSENSUS_LEADERS_ACTUAL="")
    sample = await make_source(fake.port).sample(T0)
    assert sample.communication == GroupCommunication(10, "8.0.27", (LEADER,), (), None)


async def test_no_table_or_no_row_is_none_without_a_fault(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    source = make_source(fake.port)
    fake.tables[COMM_TABLE] = (defs.names(COMM_TABLE, "8.4"), [])  # GR plugin not running
    with capture_logs() as logs:
        assert (await source.sample(T0)).communication is None
        del fake.tables[COMM_TABLE]  # no GR plugin, or before 8.0.23
        sample = await source.sample(T0 + 1_000_000)
    assert sample.communication is None
    assert sample.stats.transactions_certified == 12345
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


def test_an_odd_communication_cell_is_none_alone() -> None:
    got = build_communication(
        [
            {
                "WRITE_CONCURRENCY": "ten",
                "PROTOCOL_VERSION": "8.0.27\x1b[31m",
                "WRITE_CONSENSUS_LEADERS_PREFERRED": "db1:3306",
                "WRITE_CONSENSUS_LEADERS_ACTUAL": LEADER.upper(),
                "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE": 2,
            }
        ]
    )
    assert got == GroupCommunication(None, None, None, (LEADER,), None)


# -- the communication information is read at a cadence (cadence.REREAD_S) --
# It changes only by a UDF call or a view / state / role change; its query was 5.8 % of
# a production daemon's working samples when it ran every poll.
PERIOD_S = 30  # cadence.REREAD_S, written out


def _concurrency(sample: LocalSample) -> int | None:
    assert sample.communication is not None
    return sample.communication.write_concurrency


async def test_the_communication_information_is_read_again_on_a_view_role_or_period(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _communication(fake)
    source = make_source(fake.port)
    for second in range(5):
        assert _concurrency(await source.sample(T0 + second * SECOND)) == 10
    assert fake.queries[COMM_TABLE] == 1  # the first poll only
    assert fake.queries[STATS_TABLE] >= 5  # the stats: every poll
    assert fake.queries[GLOBAL_STATUS_TABLE] == 5  # the Gr_* counters: every poll, exact

    # an operator's UDF call: the sample carries the last value read until a re-read
    _communication(fake, WRITE_CONCURRENCY=20)
    assert _concurrency(await source.sample(T0 + 5 * SECOND)) == 10
    fake.set_row(STATS_TABLE, **row_84(VIEW_ID="17324567890123456:4"))  # a view change
    assert _concurrency(await source.sample(T0 + 6 * SECOND)) == 20
    assert fake.queries[COMM_TABLE] == 2

    _communication(fake, WRITE_CONCURRENCY=30)
    fake.set_row(MEMBERS_TABLE, **member_84(MEMBER_ROLE="SECONDARY"))  # a primary change
    assert _concurrency(await source.sample(T0 + 7 * SECOND)) == 30
    assert fake.queries[COMM_TABLE] == 3

    _communication(fake, WRITE_CONCURRENCY=40)
    assert _concurrency(await source.sample(T0 + (7 + PERIOD_S - 1) * SECOND)) == 30
    assert _concurrency(await source.sample(T0 + (7 + PERIOD_S) * SECOND)) == 40
    assert fake.queries[COMM_TABLE] == 4
    # the wall clock stepped back: read again rather than trust the age
    _communication(fake, WRITE_CONCURRENCY=50)
    assert _concurrency(await source.sample(T0)) == 50
    assert fake.queries[COMM_TABLE] == 5


async def test_a_failed_or_new_session_reads_the_communication_information_again(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _communication(fake)
    source = make_source(fake.port, poll_timeout=2.0)
    fake.hang_tables.add(COMM_TABLE)
    with capture_logs() as logs:
        sample = await source.sample(T0)
    assert sample.communication is None  # the read timed out: None, as before
    assert sample.stats.transactions_certified == 12345
    assert [e["reason"] for e in logs if e["event"] == "mysql.lag_unavailable"] == [
        "communication_timeout"
    ]
    fake.hang_tables.clear()
    fake.release.set()
    sample = await sample_until(source, T0 + SECOND, lambda s: s.communication is not None)
    assert _concurrency(sample) == 10
    read = fake.queries[COMM_TABLE]

    _communication(fake, WRITE_CONCURRENCY=20)
    fake.kill_sessions()  # a restarted server, a recycled session: a new session
    sample = await sample_until(
        source,
        T0 + 10 * SECOND,
        lambda s: s.communication is not None and s.communication.write_concurrency == 20,
    )
    assert fake.queries[COMM_TABLE] == read + 1
