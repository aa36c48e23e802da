"""The mysql source over the real MySQL wire protocol.

A mysql-mimic server on 127.0.0.1 (a free port, tests/fixtures/fake_mysql.py)
answers what the source sends through asyncmy, its tables declared as MySQL
ships them (tests/fixtures/mysql_definitions.json). Stopping the fake closes
its listener and aborts every open session (a crashed mysqld); starting it
again reuses the port.

Time: ``offline_after`` is measured on the caller's ``now_us``, so the tests
pass synthetic timestamps; real waiting only happens for reconnects, polled
with deadlines.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from grstats.core.sample import LocalMember, LocalSample
from grstats.core.tables import MemberTables
from grstats.sources.mysql import MySQLSettings, MySQLSource, parse_dsn, wire_int32, wire_int64
from protocol import GtidSet, GtidState, PipelineStats
from tests.fixtures import mysql_definitions as defs
from tests.fixtures.fake_mysql import (
    ER_NO_SUCH_TABLE,
    GROUP,
    OTHER_UUID,
    PASSWORD,
    SERVER_TIME_ZONE,
    USER,
    UUID,
    ZERO_TIMESTAMP,
    FakeMySQL,
)

__all__ = [  # the fake server's names, imported from here by the other mysql tests
    "ER_NO_SUCH_TABLE",
    "OTHER_UUID",
    "SERVER_TIME_ZONE",
    "ZERO_TIMESTAMP",
    "FakeMySQL",
]

T0 = 1_700_000_000_000_000  # µs; the tests' synthetic clock starts here
SECOND = 1_000_000
VIEW_ID = "17324567890123456:3"

STATS_TABLE = "replication_group_member_stats"
MEMBERS_TABLE = "replication_group_members"

# The shapes come from MySQL's own definitions (tests/fixtures/mysql_definitions.json);
# older servers' shapes are prefixes of them.
STATS_COLUMNS_84 = defs.names(STATS_TABLE, "8.4")
STATS_COLUMNS_57 = STATS_COLUMNS_84[:9]  # 5.7 / 8.0.1: no REMOTE_* / LOCAL_* columns
MEMBERS_COLUMNS_84 = defs.names(MEMBERS_TABLE, "8.4")
MEMBERS_COLUMNS_80 = MEMBERS_COLUMNS_84[:7]  # 8.0.2-8.0.26: no COMMUNICATION_STACK
MEMBERS_COLUMNS_57 = MEMBERS_COLUMNS_84[:5]  # no ROLE / VERSION / COMMUNICATION_STACK

# The WL#7374 tables (replication lag by stage); every 8.0+ server has them, so
# the fake serves them (no rows unless a test sets some).
CONNECTION_STATUS_TABLE = "replication_connection_status"
APPLIER_STATUS_TABLE = "replication_applier_status"
COORDINATOR_TABLE = "replication_applier_status_by_coordinator"
WORKER_TABLE = "replication_applier_status_by_worker"
CONNECTION_STATUS_COLUMNS_84 = defs.names(CONNECTION_STATUS_TABLE, "8.4")
APPLIER_STATUS_COLUMNS = defs.names(APPLIER_STATUS_TABLE, "8.4")
COORDINATOR_COLUMNS_84 = defs.names(COORDINATOR_TABLE, "8.4")
WORKER_COLUMNS_84 = defs.names(WORKER_TABLE, "8.4")  # 8.0.13+: transient-error retries
WORKER_COLUMNS_80 = WORKER_COLUMNS_84[:16]  # 8.0.2 - 8.0.12: WL#7374's columns
# every 5.7+ server has global_status; the Gr_flow_control_throttle_* rows only
# with the flow-control stats component (a test adds them)
GLOBAL_STATUS_TABLE = "global_status"
GLOBAL_STATUS_COLUMNS = defs.names(GLOBAL_STATUS_TABLE, "8.4")

COMMITTED = f"{GROUP}:1-12345,\nbbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:1-5"
LAST_FREE = f"{GROUP}:12345"


def row_84(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "CHANNEL_NAME": "group_replication_applier",
        "VIEW_ID": VIEW_ID,
        "MEMBER_ID": UUID,
        "COUNT_TRANSACTIONS_IN_QUEUE": 1,
        "COUNT_TRANSACTIONS_CHECKED": 12345,
        "COUNT_CONFLICTS_DETECTED": 7,
        "COUNT_TRANSACTIONS_ROWS_VALIDATING": 812,
        "TRANSACTIONS_COMMITTED_ALL_MEMBERS": COMMITTED,
        "LAST_CONFLICT_FREE_TRANSACTION": LAST_FREE,
        "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": 3,
        "COUNT_TRANSACTIONS_REMOTE_APPLIED": 12340,
        "COUNT_TRANSACTIONS_LOCAL_PROPOSED": 100,
        "COUNT_TRANSACTIONS_LOCAL_ROLLBACK": 2,
    }
    values.update(overrides)
    return values


def member_84(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "CHANNEL_NAME": "group_replication_applier",
        "MEMBER_ID": UUID,
        "MEMBER_HOST": "db1.example",
        "MEMBER_PORT": 3306,
        "MEMBER_STATE": "ONLINE",
        "MEMBER_ROLE": "PRIMARY",
        "MEMBER_VERSION": "8.4.3",
        "MEMBER_COMMUNICATION_STACK": "MySQL",  # as MySQL spells it
    }
    values.update(overrides)
    return values


def online_84(fake: FakeMySQL, **stats: Any) -> None:
    fake.set_row(STATS_TABLE, **row_84(**stats))
    fake.set_row(MEMBERS_TABLE, **member_84())


@pytest.fixture
async def fake() -> AsyncIterator[FakeMySQL]:
    server = FakeMySQL()
    await server.start()
    try:
        yield server
    finally:
        server.release.set()
        await server.stop()


@pytest.fixture
async def make_source() -> AsyncIterator[Callable[..., MySQLSource]]:
    sources: list[MySQLSource] = []

    def make(port: int, password: str = PASSWORD, query: str = "", **settings: Any) -> MySQLSource:
        defaults: dict[str, Any] = {
            "poll_timeout": 2.0,
            "connect_timeout": 2.0,
            "offline_after": 5.0,
            "retry_initial": 0.02,
            "retry_max": 0.1,
        }
        defaults.update(settings)
        source = MySQLSource(
            MySQLSettings(
                dsn=f"mysql://{USER}@127.0.0.1:{port}{query}", password=password, **defaults
            )
        )
        sources.append(source)
        return source

    yield make
    for source in sources:
        await source.close()


async def sample_until(
    source: MySQLSource, start_us: int, done: Callable[[LocalSample], bool], within: float = 10.0
) -> LocalSample:
    """Sample once per synthetic second until `done` holds; fail after `within` real seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    now_us = start_us
    while True:
        sample = await source.sample(now_us)
        assert sample.sampled_at_us == now_us
        if done(sample):
            return sample
        assert loop.time() < deadline, f"condition not reached; last sample {sample}"
        now_us += SECOND
        await asyncio.sleep(0.01)  # poll interval of the deadline loop


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- signed wire representation ----------------------------------------------------------


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [
        (0, 0),
        (12345, 12345),
        (9223372036854775807, 9223372036854775807),  # 2**63 - 1 stays
        (9223372036854775808, -9223372036854775808),  # 2**63 -> INT64_MIN
        (18446744073709551615, -1),  # 2**64 - 1
        (18446744073709551000, -616),  # 2**64 - 616
    ],
)
def test_wire_int64_wraps_unsigned_counters(unsigned: int, signed: int) -> None:
    assert wire_int64(unsigned) == signed


# A queue size is never negative, yet MySQL's sender would wrap one >= 2**31
# (pipeline_stats.cc send_stats_member_message: static_cast<int32> of
# applier_module->get_message_queue_size()), and the waiting-apply counter of
# servers before MySQL's fix went negative, shown by P_S as 2**64 - |x| (the
# fix: get_transactions_waiting_apply_during_recovery returns 0 rather than
# going negative). grstats never sends a wrapped number: it clamps to
# [0, 2**31 - 1] -- a negative becomes 0, as fixed MySQL reports it.
@pytest.mark.parametrize(
    ("unsigned", "sent"),
    [
        (0, 0),
        (25000, 25000),
        (2147483647, 2147483647),  # INT32_MAX stays
        (2147483648, 2147483647),  # 2**31 saturates (static_cast would give -2**31)
        (4294967291, 2147483647),  # 2**32 - 5 saturates (static_cast would give -5)
        (3000000000, 2147483647),  # static_cast would give -1294967296
        (2**63 - 1, 2147483647),  # the largest non-negative int64 P_S can hold
        (18446744073709551611, 0),  # P_S shows int32 -5 as 2**64 - 5: negative -> 0
        (2**63, 0),  # INT64_MIN seen unsigned
    ],
)
def test_wire_int32_clamps_queue_sizes_to_0_and_int32_max(unsigned: int, sent: int) -> None:
    assert wire_int32(unsigned) == sent


# -- DSN and settings ------------------------------------------------------------------------


def test_parse_dsn_reads_user_host_port_and_params() -> None:
    dsn = "mysql://gr%40stats@db1.example:3307?charset=utf8mb4&unix_socket=/run/mysqld/s.sock"
    assert parse_dsn(dsn) == (
        "gr@stats",
        "db1.example",
        3307,
        {"charset": "utf8mb4", "unix_socket": "/run/mysqld/s.sock"},
    )


def test_parse_dsn_defaults_port_3306() -> None:
    assert parse_dsn("mysql://grstats@127.0.0.1") == ("grstats", "127.0.0.1", 3306, {})


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("", "empty"),
        ("postgres://grstats@h:5432", "mysql:// scheme"),
        ("grstats@127.0.0.1:3306", "mysql:// scheme"),
        ("mysql://grstats:secret@127.0.0.1", "password"),
        ("mysql://127.0.0.1:3306", "user name"),
        ("mysql://grstats@:3306", "host"),
        ("mysql://grstats@127.0.0.1:abc", "port must be an integer 1-65535, got 'abc'"),
        ("mysql://grstats@127.0.0.1:70000", "port must be an integer 1-65535"),
        ("mysql://grstats@127.0.0.1:3306/mydb", "path"),
        ("mysql://grstats@127.0.0.1?sslmode=on", "unknown parameter 'sslmode'"),
        ("mysql://grstats@127.0.0.1?charset=", "empty value"),
    ],
)
def test_parse_dsn_rejects_with_named_problem(dsn: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_dsn(dsn)


def test_settings_hide_password_from_repr() -> None:
    settings = MySQLSettings(dsn="mysql://grstats@127.0.0.1:3306", password="s3cr3t-pw")
    assert "s3cr3t-pw" not in repr(settings)
    assert (settings.poll_timeout, settings.connect_timeout, settings.offline_after) == (2, 2, 10)
    assert (settings.retry_initial, settings.retry_max) == (0.5, 10)


def test_settings_reject_non_positive_timeout_naming_field() -> None:
    with pytest.raises(ValueError, match="poll_timeout"):
        MySQLSettings(poll_timeout=0)


# -- reading a server ------------------------------------------------------------------------


async def test_full_84_row_gives_exact_sample(fake: FakeMySQL, make_source: Any) -> None:
    online_84(fake)
    source = make_source(fake.port)
    await source.start()

    sample = await source.sample(T0)

    assert dataclasses.replace(sample, server_view=()) == LocalSample(
        member=LocalMember(
            group_name=GROUP,
            member_id=UUID,
            host="db1.example",
            port=3306,
            state="ONLINE",
            role="PRIMARY",
            version="8.4.3",
            view_id=VIEW_ID,
            communication_stack="MySQL",
        ),
        stats=PipelineStats(
            transactions_waiting_certification=1,
            transactions_waiting_apply=3,
            transactions_certified=12345,
            transactions_applied=12340,
            transactions_local=100,
            transactions_negative_certified=7,
            transactions_rows_validating=812,
            transaction_gtids_present=False,
            transactions_committed_all_members=COMMITTED.encode(),
            transaction_last_conflict_free=LAST_FREE.encode(),
            transactions_local_rollback=2,
            flow_control_mode=1,
            sent_timestamp=None,
        ),
        sampled_at_us=T0,
        gtid_state=GtidState(T0, GtidSet(), GtidSet()),  # a fresh server's empty sets
    )


@pytest.mark.parametrize(("mode", "expected"), [("QUOTA", 1), ("DISABLED", 0), (None, 1)])
async def test_flow_control_mode_maps_quota_1_disabled_0_null_1(
    fake: FakeMySQL, make_source: Any, mode: str | None, expected: int
) -> None:
    fake.variables["group_replication_flow_control_mode"] = mode
    online_84(fake)

    sample = await make_source(fake.port).sample(T0)

    assert sample.stats.flow_control_mode == expected


async def test_old_server_without_newer_columns_defaults_them_to_zero(
    fake: FakeMySQL, make_source: Any
) -> None:
    fake.variables["version"] = "5.7.44-log"
    fake.tables[STATS_TABLE] = (STATS_COLUMNS_57, [])
    fake.tables[MEMBERS_TABLE] = (MEMBERS_COLUMNS_57, [])
    fake.set_row(STATS_TABLE, **row_84())
    fake.set_row(MEMBERS_TABLE, **member_84())

    sample = await make_source(fake.port).sample(T0)

    assert sample.member == LocalMember(
        group_name=GROUP,
        member_id=UUID,
        host="db1.example",
        port=3306,
        state="ONLINE",
        role="",  # MEMBER_ROLE column absent
        version="",  # MEMBER_VERSION column absent: nothing shown, nothing invented
        view_id=VIEW_ID,
        communication_stack="",  # column absent
    )
    assert sample.stats == PipelineStats(
        transactions_waiting_certification=1,
        transactions_waiting_apply=0,
        transactions_certified=12345,
        transactions_applied=0,
        transactions_local=0,
        transactions_negative_certified=7,
        transactions_rows_validating=812,
        transactions_committed_all_members=COMMITTED.encode(),
        transaction_last_conflict_free=LAST_FREE.encode(),
        transactions_local_rollback=0,
        flow_control_mode=1,
    )


async def test_gr_not_installed_gives_offline_member_with_empty_identifiers(
    fake: FakeMySQL, make_source: Any
) -> None:
    # plugin not installed: the GR variables are unknown (error 1193), the tables
    # empty; the local member is shown as MySQL shows one before GR starts
    # (DESIGN.md section 4: empty identifiers), never with an invented identity
    del fake.variables["group_replication_group_name"]
    del fake.variables["group_replication_flow_control_mode"]
    fake.variables.update(hostname="db7", port=3310)

    sample = await make_source(fake.port).sample(T0)

    assert sample == LocalSample(
        member=LocalMember(
            group_name="",
            member_id="",
            host="",
            port=None,
            state="OFFLINE",
            role="",
            version="",
            view_id="",
            communication_stack="",
        ),
        stats=PipelineStats(),
        sampled_at_us=T0,
        gtid_state=GtidState(T0, GtidSet(), GtidSet()),  # a fresh server's empty sets
    )


async def test_gr_stopped_keeps_configured_group_and_zero_counters(
    fake: FakeMySQL, make_source: Any
) -> None:
    # plugin installed, group configured, GR stopped: one OFFLINE members row, no stats row
    fake.set_row(
        MEMBERS_TABLE,
        **member_84(MEMBER_STATE="OFFLINE", MEMBER_ROLE="", MEMBER_COMMUNICATION_STACK="XCom"),
    )

    sample = await make_source(fake.port).sample(T0)

    assert sample.member == LocalMember(
        group_name=GROUP,
        member_id=UUID,
        host="db1.example",
        port=3306,
        state="OFFLINE",
        role="",
        version="8.4.3",
        view_id="",
        communication_stack="XCom",
    )
    assert sample.stats == PipelineStats()


# -- what the server shows, old and new servers -------------------------------------------
#
# MySQL's plugin/group_replication/src/ps_information.cc (mysql/mysql-server),
# read in two versions:
#   2018 (commit 01b9dde8, copyright 2015, 2018; the 5.7 / 8.0 behaviour): when
#     the plugin was never initialised (group_member_manager == NULL),
#     get_group_members_info sets only CHANNEL_NAME and MEMBER_STATE = OFFLINE,
#     and get_group_member_stats only CHANNEL_NAME; MEMBER_VERSION is blanked
#     for an OFFLINE member;
#   2024 (commit 56c7120e, copyright 2015, 2024; the 8.4 behaviour): the
#     never-initialised members row carries the server's UUID, host, port,
#     version and configured communication stack with state OFFLINE, while the
#     stats row still has only CHANNEL_NAME; for an OFFLINE local member (GR
#     stopped) the stats row has CHANNEL_NAME and MEMBER_ID, nothing else.
# storage/perfschema/table_replication_group_members.cc shows MEMBER_PORT 0 as
# NULL. MEMBER_COMMUNICATION_STACK is spelled "XCom" / "MySQL" (MySQL manual,
# replication_group_members example output). Counters not set show 0 and texts
# "" (the description of the not-started row).
#
# The source must show those rows as they are, and the rows grstats builds for
# the local member (MemberTables) must equal them.

ONLINE_STATS = row_84()
GR_CHANNEL = "group_replication_applier"
SHAPES = {
    # (stats columns, members columns)
    "5.7": (STATS_COLUMNS_57, MEMBERS_COLUMNS_57),
    "8.0": (STATS_COLUMNS_84, MEMBERS_COLUMNS_80),
    "8.4": (STATS_COLUMNS_84, MEMBERS_COLUMNS_84),
}


def empty_stats(**values: Any) -> dict[str, Any]:
    """A stats row with only the given columns set: counters 0, texts ""."""
    row: dict[str, Any] = {c: 0 if c.startswith("COUNT_") else "" for c in STATS_COLUMNS_84}
    row.update(CHANNEL_NAME=GR_CHANNEL, **values)
    return row


def member(*cells: str | int | None) -> dict[str, Any]:
    """A members row from ID, HOST, PORT, STATE, ROLE, VERSION, COMMUNICATION_STACK."""
    return dict(zip(MEMBERS_COLUMNS_84, (GR_CHANNEL, *cells), strict=True))


# shape -> scenario -> (stats row, members row), as the server of that era shows them
SERVER_ROWS: dict[str, dict[str, tuple[dict[str, Any], dict[str, Any]]]] = {
    "old": {  # 2018 ps_information.cc
        "never_started": (empty_stats(), member("", "", None, "OFFLINE", "", "", "")),
        "stopped": (
            empty_stats(MEMBER_ID=UUID),
            member(UUID, "db1.example", 3306, "OFFLINE", "", "", ""),
        ),
        "online": (
            ONLINE_STATS,
            member(UUID, "db1.example", 3306, "ONLINE", "SECONDARY", "8.0.36", ""),
        ),
        "error": (
            {**ONLINE_STATS, "VIEW_ID": ""},
            member(UUID, "db1.example", 3306, "ERROR", "", "8.0.36", ""),
        ),
    },
    "new": {  # 2024 ps_information.cc
        "never_started": (
            empty_stats(),
            member(UUID, "db1.example", 3306, "OFFLINE", "", "8.4.3", "XCom"),
        ),
        "stopped": (
            empty_stats(MEMBER_ID=UUID),
            member(UUID, "db1.example", 3306, "OFFLINE", "", "8.4.3", "XCom"),
        ),
        "online": (
            ONLINE_STATS,
            member(UUID, "db1.example", 3306, "ONLINE", "PRIMARY", "8.4.3", "MySQL"),
        ),
        "error": (
            {**ONLINE_STATS, "VIEW_ID": ""},
            member(UUID, "db1.example", 3306, "ERROR", "", "8.4.3", "XCom"),
        ),
    },
}


def shown(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """`row` as grstats must show it when the server has only `columns` (others: 0 / "")."""
    return {c: row[c] if c in columns else 0 if c.startswith("COUNT_") else "" for c in row}


@pytest.mark.parametrize("scenario", ["never_started", "stopped", "online", "error"])
@pytest.mark.parametrize("shape", ["5.7", "8.0", "8.4"])
async def test_local_member_and_rows_are_exactly_what_the_server_shows(
    fake: FakeMySQL, make_source: Any, shape: str, scenario: str
) -> None:
    stats_columns, members_columns = SHAPES[shape]
    stats, members = SERVER_ROWS["new" if shape == "8.4" else "old"][scenario]
    fake.tables[STATS_TABLE] = (stats_columns, [{c: stats[c] for c in stats_columns}])
    fake.tables[MEMBERS_TABLE] = (members_columns, [{c: members[c] for c in members_columns}])
    if scenario in ("online", "error"):  # another member's rows must not leak into ours
        other_stats = row_84(MEMBER_ID=OTHER_UUID, COUNT_TRANSACTIONS_CHECKED=999_999)
        other = member(OTHER_UUID, "db2.example", 3306, "ONLINE", "SECONDARY", "8.4.3", "XCom")
        fake.tables[STATS_TABLE][1].append({c: other_stats[c] for c in stats_columns})
        fake.tables[MEMBERS_TABLE][1].append({c: other[c] for c in members_columns})
    want_stats = shown(stats, stats_columns)
    want_member = shown(members, members_columns)
    want_member["MEMBER_PORT"] = members["MEMBER_PORT"]  # NULL stays None

    sample = await make_source(fake.port).sample(T0)

    m = sample.member
    assert (m.member_id, m.host, m.port, m.state, m.role, m.version, m.communication_stack) == (
        want_member["MEMBER_ID"],
        want_member["MEMBER_HOST"],
        want_member["MEMBER_PORT"],
        want_member["MEMBER_STATE"],
        want_member["MEMBER_ROLE"],
        want_member["MEMBER_VERSION"],
        want_member["MEMBER_COMMUNICATION_STACK"],
    )
    assert m.view_id == want_stats["VIEW_ID"]
    assert m.group_name == GROUP
    tables = MemberTables(group=GROUP, local_member_id=UUID)
    tables.set_local(sample, incarnation=1, seq=1)
    snap = tables.snapshot(T0)
    # the other member is shown too (from the server's view) unless ours is alone
    ours = [
        dict(r)
        for r in snap.table("replication_group_member_stats")
        if r["MEMBER_ID"] != OTHER_UUID
    ]
    assert ours == [want_stats]
    assert [
        dict(r) for r in snap.table("replication_group_members") if r["MEMBER_ID"] != OTHER_UUID
    ] == [want_member]


async def test_unsigned_counters_wrap_to_int64_and_queue_sizes_clamp_to_int32(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(
        fake,
        COUNT_TRANSACTIONS_IN_QUEUE=2**64 - 5,
        COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE=2**31,
        COUNT_TRANSACTIONS_CHECKED=2**64 - 1,
        COUNT_TRANSACTIONS_REMOTE_APPLIED=2**63,
        COUNT_TRANSACTIONS_LOCAL_PROPOSED=2**63 - 1,
        COUNT_CONFLICTS_DETECTED=2**64 - 2**32,
    )

    stats = (await make_source(fake.port).sample(T0)).stats

    assert stats.transactions_waiting_certification == 0  # a negative queue is sent as 0
    assert stats.transactions_waiting_apply == 2147483647  # saturated, not wrapped
    assert stats.transactions_certified == -1
    assert stats.transactions_applied == -9223372036854775808
    assert stats.transactions_local == 9223372036854775807
    assert stats.transactions_negative_certified == -4294967296


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
    source = make_source(fake.port, poll_timeout=0.3, offline_after=3.0)
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


async def test_server_uuid_is_known_while_the_tables_show_no_member(
    fake: FakeMySQL, make_source: Any
) -> None:
    # GR never started: the tables show MEMBER_ID "" (what grstats shows too), but the
    # daemon still learns whom it speaks for from @@server_uuid.
    sample = await make_source(fake.port).sample(T0)
    assert sample.member.member_id == ""
    assert sample.member.server_uuid == UUID


# -- every member of the server's view (WL#10380: the server receives every member's stats)

M0 = "00000000-0000-0000-0000-000000000000"  # sorts before the local member
M9 = "99999999-9999-9999-9999-999999999999"  # no stats row yet: 0 and "" as MySQL shows


async def test_the_other_members_of_the_servers_view_in_member_id_order(
    fake: FakeMySQL, make_source: Any
) -> None:
    fake.tables[STATS_TABLE] = (
        STATS_COLUMNS_84,
        [
            row_84(MEMBER_ID=M9, COUNT_TRANSACTIONS_CHECKED=5),  # shown before its member row
            row_84(),
            row_84(MEMBER_ID=M0, COUNT_TRANSACTIONS_CHECKED=77, COUNT_CONFLICTS_DETECTED=1,
                   TRANSACTIONS_COMMITTED_ALL_MEMBERS="", LAST_CONFLICT_FREE_TRANSACTION=""),
        ],
    )  # fmt: skip
    fake.tables[MEMBERS_TABLE] = (
        MEMBERS_COLUMNS_84,
        [
            member_84(MEMBER_ID=M9, MEMBER_HOST="db9", MEMBER_ROLE="SECONDARY"),
            member_84(),
            member_84(MEMBER_ID=M0, MEMBER_HOST="db0", MEMBER_PORT=3310, MEMBER_ROLE="SECONDARY",
                      MEMBER_STATE="RECOVERING", MEMBER_VERSION="8.4.2"),
        ],
    )  # fmt: skip
    fake.tables[STATS_TABLE][1].pop(0)  # M9's stats have not arrived at this server yet

    sample = await make_source(fake.port).sample(T0)

    shown = [(v.member.member_id, v.member.host, v.member.port, v.member.state)
             for v in sample.server_view]  # fmt: skip
    assert shown == [(M0, "db0", 3310, "RECOVERING"), (M9, "db9", 3306, "ONLINE")]
    m0, m9 = (v.stats for v in sample.server_view)
    assert (m0.transactions_certified, m0.transactions_negative_certified) == (77, 1)
    assert m0.transactions_committed_all_members == b""
    assert (m9.transactions_certified, m9.transactions_committed_all_members) == (0, b"")
    assert sample.server_view[0].member.view_id == VIEW_ID
    assert sample.server_view[1].member.view_id == ""  # no stats row: no VIEW_ID either
    assert sample.member.member_id == UUID  # ours is not in the view list


async def test_an_offline_member_shows_no_other_members(fake: FakeMySQL, make_source: Any) -> None:
    fake.set_row(MEMBERS_TABLE, **member_84(MEMBER_STATE="OFFLINE", MEMBER_ROLE=""))
    sample = await make_source(fake.port).sample(T0)
    assert sample.server_view == ()


# -- each version's shapes -----------------------------------------------------------------


@pytest.fixture(params=defs.VERSIONS)
async def versioned(request: pytest.FixtureRequest) -> AsyncIterator[FakeMySQL]:
    """A fake server declaring MySQL `request.param`'s tables (9.x: with the applier ones)."""
    server = FakeMySQL(request.param)
    await server.start()
    try:
        yield server
    finally:
        server.release.set()
        await server.stop()


async def test_each_versions_shapes_give_the_local_sample(
    versioned: FakeMySQL, make_source: Any
) -> None:
    online_84(versioned)
    sample = await make_source(versioned.port).sample(T0)
    assert (sample.member.member_id, sample.member.state, sample.member.view_id) == (
        UUID,
        "ONLINE",
        VIEW_ID,
    )
    assert sample.stats.transactions_certified == 12345
    assert sample.stats.transactions_committed_all_members == COMMITTED.encode()
    # 9.x ships the WL#15620 tables (native, no channel yet); 8.x has neither
    # table nor workers here (no figures at all)
    if versioned.version == "9.x":
        assert sample.applier is not None and sample.applier.source == "native"
    else:
        assert sample.applier is None
