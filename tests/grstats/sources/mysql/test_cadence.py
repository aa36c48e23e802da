"""What is read every poll and what at a cadence (cadence.py), counted by the fake server.

The fake counts the statements the source sends, its round trips (COM_QUERY
packets: one carries several statements) and its queries by table. What must
be read every poll is read once, in one round trip: the two GR
tables whole (the local rows and the server's view), the variables with the
GTID sets in one SELECT, the four lag tables (whose workers rows also give
8.x's derived applier figures; with the two channel configuration tables they
are the six WL#3656 channel tables) and the Gr_* status. What changes only with the
group or the server -- whether replication_applier_metrics exists, the
communication information -- is read on the first poll and again on a view,
state or role change, a new session, a failed read, a clock step back, or
every 30 s. Expected counts are written by hand from that list.
"""

from __future__ import annotations

from typing import Any

from structlog.testing import capture_logs

from tests.fixtures.fake_mysql import FakeMySQL
from tests.fixtures.mysql_source import (
    CH,
    MEMBERS_TABLE,
    METRICS_TABLE,
    SECOND,
    STATS_TABLE,
    T0,
    WORKER_TABLE,
    member_84,
    online_84,
    row_84,
    sample_until,
)

POLLS = 5
PERIOD_S = 30  # cadence.REREAD_S, written out
COMM_TABLE = "replication_group_communication_information"
# every poll: the stats and members tables, the variables, the 4 lag tables (every channel:
# four of the six WL#3656 tables), the 2 channel configuration tables, global_status
EVERY_POLL = 10
# the first poll also: the driver's SET AUTOCOMMIT at connect (asyncmy, autocommit=True),
# SET time_zone, the communication information, the metrics probe
FIRST_POLL = EVERY_POLL + 4
# round trips of a poll: the stats, members and variables, the 4 lag tables and
# global_status in one (a COM_QUERY of several statements: CLIENT_MULTI_STATEMENTS);
# the first poll also: SET AUTOCOMMIT, the communication information, the metrics
# probe (SET time_zone goes in the poll's round trip)
EVERY_POLL_ROUND_TRIPS = 1
FIRST_POLL_ROUND_TRIPS = EVERY_POLL_ROUND_TRIPS + 3


def _online(fake: FakeMySQL) -> None:
    """An ONLINE member with one idle applier worker (8.x's derived figures need one)."""
    online_84(fake)
    columns = fake.tables[WORKER_TABLE][0]
    worker = {"CHANNEL_NAME": CH, "WORKER_ID": 1, "THREAD_ID": 51, "SERVICE_STATE": "ON"}
    fake.tables[WORKER_TABLE] = (columns, [{c: worker.get(c) for c in columns}])


async def test_n_polls_make_the_expected_reads(versioned: FakeMySQL, make_source: Any) -> None:
    fake = versioned
    _online(fake)
    source = make_source(fake.port)
    for second in range(POLLS):
        sample = await source.sample(T0 + second * SECOND)
        assert sample.member.state == "ONLINE"
        assert sample.applier is not None
        assert sample.gtid_state is not None
    native = fake.version == "9.x"  # replication_applier_metrics and _progress_by_worker
    expected = FIRST_POLL + (POLLS - 1) * EVERY_POLL + (2 * POLLS - 1 if native else 0)
    assert fake.statements == expected  # the old code: 73 on 8.x (14 a poll)
    trips = FIRST_POLL_ROUND_TRIPS + (POLLS - 1) * EVERY_POLL_ROUND_TRIPS
    # the old code: one round trip per statement (44 on 8.x); on 9.x the first poll's
    # probe found replication_applier_metrics, so its progress read is one more, and
    # from then on both go in the poll's one round trip
    assert fake.round_trips == trips + (1 if native else 0)
    assert fake.queries[STATS_TABLE] == POLLS  # the local row and the view: one read
    assert fake.queries[MEMBERS_TABLE] == POLLS
    assert fake.queries[WORKER_TABLE] == POLLS  # the lag's read serves the applier
    assert fake.queries["global_status"] == POLLS
    assert fake.queries["replication_connection_configuration"] == POLLS
    assert fake.queries["replication_applier_configuration"] == POLLS
    assert fake.queries[METRICS_TABLE] == (POLLS if native else 1)
    assert fake.queries[COMM_TABLE] == 1


async def test_each_trigger_probes_the_applier_metrics_table_again(
    fake: FakeMySQL, make_source: Any
) -> None:
    _online(fake)  # an 8.4 server: no replication_applier_metrics

    def probes() -> int:
        return fake.queries[METRICS_TABLE]

    source = make_source(fake.port, poll_timeout=2.0)
    for second in range(POLLS):
        assert (await source.sample(T0 + second * SECOND)).applier is not None
    assert probes() == 1  # the first poll only

    fake.set_row(STATS_TABLE, **row_84(VIEW_ID="17324567890123456:4"))  # a view change
    await source.sample(T0 + 5 * SECOND)
    assert probes() == 2
    fake.set_row(MEMBERS_TABLE, **member_84(MEMBER_ROLE="SECONDARY"))  # a primary change
    await source.sample(T0 + 6 * SECOND)
    assert probes() == 3
    fake.set_row(MEMBERS_TABLE, **member_84(MEMBER_STATE="RECOVERING", MEMBER_ROLE="SECONDARY"))
    await source.sample(T0 + 7 * SECOND)  # a state change
    assert probes() == 4
    await source.sample(T0 + (7 + PERIOD_S - 1) * SECOND)
    assert probes() == 4
    await source.sample(T0 + (7 + PERIOD_S) * SECOND)  # the cadence
    assert probes() == 5
    await source.sample(T0)  # the wall clock stepped back: read again rather than trust the age
    assert probes() == 6
    await source.sample(T0 + SECOND)
    assert probes() == 6

    fake.kill_sessions()  # a restarted server, a recycled session: a new session
    await sample_until(source, T0 + 2 * SECOND, lambda s: s.applier is not None)
    assert probes() == 7

    fake.hang_tables.add(METRICS_TABLE)  # a failed read: due again at the next poll
    fake.set_row(STATS_TABLE, **row_84(VIEW_ID="17324567890123456:5"))
    with capture_logs() as logs:
        sample = await source.sample(T0 + 20 * SECOND)
    assert sample.applier is None
    assert [e["reason"] for e in logs if e["event"] == "mysql.lag_unavailable"] == [
        "applier_timeout"
    ]
    fake.hang_tables.clear()
    fake.release.set()
    await sample_until(source, T0 + 21 * SECOND, lambda s: s.applier is not None)
    assert probes() == 9
