"""The mysql source reading a server over the real MySQL wire protocol: the local sample.

The server is a mysql-mimic fake (tests/fixtures/fake_mysql.py, its tables as MySQL
ships them); its rows and the fixtures are tests/fixtures/mysql_source.py's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from grstats.core.sample import LocalMember, LocalSample
from protocol import GtidSet, GtidState, PipelineStats
from tests.fixtures.fake_mysql import GROUP, OTHER_UUID, UUID, FakeMySQL
from tests.fixtures.mysql_source import (
    COMMITTED,
    LAST_FREE,
    MEMBERS_COLUMNS_57,
    MEMBERS_TABLE,
    STATS_COLUMNS_57,
    STATS_TABLE,
    T0,
    VIEW_ID,
    member_84,
    online_84,
    row_84,
)

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
        view=frozenset({UUID, OTHER_UUID}),  # who replication_group_members lists
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
        view=frozenset(),  # no member rows: the server lists nobody
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


async def test_server_uuid_is_known_while_the_tables_show_no_member(
    fake: FakeMySQL, make_source: Any
) -> None:
    # GR never started: the tables show MEMBER_ID "" (what grstats shows too), but the
    # daemon still learns whom it speaks for from @@server_uuid.
    sample = await make_source(fake.port).sample(T0)
    assert sample.member.member_id == ""
    assert sample.member.server_uuid == UUID


# -- each version's shapes -----------------------------------------------------------------


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
