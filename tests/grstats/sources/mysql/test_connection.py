"""The mysql source when the server goes away, hangs, refuses or never greets.

The server is a mysql-mimic fake (tests/fixtures/fake_mysql.py, its tables as MySQL
ships them); its rows and the fixtures are tests/fixtures/mysql_source.py's.
Stopping the fake closes its listener and aborts every open session (a crashed
mysqld); starting it again reuses the port.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from structlog.testing import capture_logs

from grstats.core.sample import LocalMember, LocalSample
from grstats.sources.mysql.connection import Connection
from grstats.sources.mysql.settings import MySQLSettings
from protocol import PipelineStats
from tests.fixtures.fake_mysql import GROUP, PASSWORD, USER, UUID, FakeMySQL
from tests.fixtures.mysql_source import SECOND, T0, free_port, online_84, sample_until


async def test_server_going_away_goes_offline_after_grace_and_resumes(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake, COUNT_TRANSACTIONS_CHECKED=10)
    source = make_source(fake.port, offline_after=5.0)
    with capture_logs() as events:
        before = await source.sample(T0)
        assert before.member.state == "ONLINE"

        await fake.stop()
        during = [await source.sample(T0 + k * SECOND) for k in (1, 2, 4)]
        after_grace = await source.sample(T0 + 5 * SECOND)

        online_84(fake, COUNT_TRANSACTIONS_CHECKED=20)
        await fake.start()  # same port
        back = await sample_until(
            source, T0 + 6 * SECOND, lambda s: s.member.state == "ONLINE", within=10.0
        )

    # within the grace: the last good sample, restamped
    assert [s.sampled_at_us for s in during] == [T0 + SECOND, T0 + 2 * SECOND, T0 + 4 * SECOND]
    assert all(s.member == before.member and s.stats == before.stats for s in during)
    # after it: OFFLINE, identifiers kept, counters and GTID texts as MySQL shows them
    assert after_grace == LocalSample(
        member=LocalMember(
            group_name=GROUP,
            member_id=UUID,
            host="db1.example",
            port=3306,
            state="OFFLINE",
            role="",
            version="8.4.3",
            view_id="",
            communication_stack="MySQL",
        ),
        stats=PipelineStats(flow_control_mode=1),
        sampled_at_us=T0 + 5 * SECOND,
    )
    assert back.stats.transactions_certified == 20
    names = [e["event"] for e in events]
    assert "mysql.disconnected" in names
    assert names.index("mysql.reconnected") > names.index("mysql.disconnected")


async def test_killed_session_reconnects_within_the_same_sample(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake, COUNT_TRANSACTIONS_CHECKED=10)
    source = make_source(fake.port, offline_after=0.0)  # no grace: a gap would show OFFLINE
    assert (await source.sample(T0)).stats.transactions_certified == 10

    fake.kill_sessions()
    online_84(fake, COUNT_TRANSACTIONS_CHECKED=11)
    with capture_logs() as events:
        sample = await source.sample(T0 + SECOND)

    assert sample.member.state == "ONLINE"
    assert sample.stats.transactions_certified == 11
    assert [e["event"] for e in events] == ["mysql.disconnected", "mysql.reconnected"]


async def test_hung_server_sample_returns_and_goes_offline(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    source = make_source(fake.port, poll_timeout=2.0, offline_after=3.0)
    assert (await source.sample(T0)).member.state == "ONLINE"

    fake.hang = True  # every performance_schema query now blocks
    within_grace = await asyncio.wait_for(source.sample(T0 + SECOND), timeout=30)
    past_grace = await asyncio.wait_for(source.sample(T0 + 3 * SECOND), timeout=30)
    fake.hang = False
    fake.release.set()
    back = await sample_until(source, T0 + 4 * SECOND, lambda s: s.member.state == "ONLINE")

    assert within_grace.member.state == "ONLINE"
    assert within_grace.stats.transactions_certified == 12345
    assert past_grace.member.state == "OFFLINE"
    assert past_grace.stats.transactions_certified == 0
    assert back.stats.transactions_certified == 12345


async def test_server_down_at_start_gives_offline_with_empty_identifiers(
    make_source: Any,
) -> None:
    port = free_port()
    source = make_source(port)
    await source.start()  # does not raise

    sample = await source.sample(T0)

    assert dataclasses.replace(sample, server_view=()) == LocalSample(
        member=LocalMember(
            group_name="",
            member_id="",
            host="",
            port=None,
            state="OFFLINE",
            role="",
            version="",
            communication_stack="",
        ),
        stats=PipelineStats(),
        sampled_at_us=T0,
    )
    assert not source.connected


async def test_wrong_password_is_logged_and_sampled_as_offline(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    source = make_source(fake.port, password="wrong")
    with capture_logs() as events:
        await source.start()
        sample = await source.sample(T0)

    assert sample.member.state == "OFFLINE"
    assert sample.member.member_id == ""
    failures = [e for e in events if e["event"] == "mysql.connect_failed"]
    assert failures
    assert failures[0]["errno"] == 1045  # ER_ACCESS_DENIED_ERROR


async def test_unix_socket_param_connects_through_the_socket(
    make_source: Any, tmp_path: Any
) -> None:
    path = str(tmp_path / "mysqld.sock")
    fake = FakeMySQL()
    online_84(fake, COUNT_TRANSACTIONS_CHECKED=42)
    await fake.start(unix_socket=path)
    try:
        # the TCP port in the DSN has nothing listening: only the socket can answer
        source = make_source(free_port(), query=f"?unix_socket={path}")
        sample = await source.sample(T0)
        await source.close()
    finally:
        await fake.stop()

    assert sample.member.state == "ONLINE"
    assert sample.stats.transactions_certified == 42


async def test_server_that_never_greets_does_not_block_start_or_sample(
    make_source: Any,
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accept the TCP connection, never send the MySQL handshake
        writer.close()

    server = await asyncio.start_server(silent, host="127.0.0.1", port=0)
    port = server.sockets[0].getsockname()[1]
    source = make_source(port, connect_timeout=0.3, poll_timeout=0.5)
    try:
        with capture_logs() as events:
            await asyncio.wait_for(source.start(), timeout=30)
            sample = await asyncio.wait_for(source.sample(T0), timeout=30)
        await source.close()
    finally:
        server.close()
        await server.wait_closed()

    assert sample.member.state == "OFFLINE"
    assert "mysql.connect_failed" in [e["event"] for e in events]


async def test_a_refused_statement_in_a_batch_leaves_the_others_and_the_session_in_step(
    fake: FakeMySQL,
) -> None:
    # MySQL runs a multi-statement COM_QUERY in order and stops at the first
    # error (C API manual, "Multiple Statement Execution Support"): the
    # statements after a refused one are sent again, each answered as alone
    db = Connection(MySQLSettings(dsn=f"mysql://{USER}@127.0.0.1:{fake.port}", password=PASSWORD))
    conn = await db.ensure()
    assert conn is not None
    trips = fake.round_trips
    got: list[Any] = []
    with capture_logs() as events:
        await db.batch(
            conn,
            (
                ("uuid", "SELECT @@server_uuid"),
                ("missing", "SELECT * FROM performance_schema.no_such_table"),
                ("unknown", "SELECT @@no_such_variable"),
                ("group", "SELECT @@group_replication_group_name"),
            ),
            got,
        )
    assert [None if r is None else [tuple(row) for row in r[1]] for r in got] == [
        [(UUID,)],
        None,
        None,
        [(GROUP,)],
    ]
    assert fake.round_trips == trips + 3  # up to each error, then the rest
    refused = [(e["query"], e["errno"]) for e in events if e["event"] == "mysql.query_rejected"]
    assert refused == [("missing", 1146), ("unknown", 1193)]
    # the session is in step: the next statement gets its own answer
    again = await db.query(conn, "again", "SELECT @@group_replication_group_name")
    assert again is not None and [tuple(r) for r in again[1]] == [(GROUP,)]
    await db.close()
