"""Every member of the server's view (WL#10380: the server receives every member's stats).

The server is a mysql-mimic fake (tests/fixtures/fake_mysql.py, its tables as MySQL
ships them); its rows and the fixtures are tests/fixtures/mysql_source.py's.
"""

from __future__ import annotations

from typing import Any

from tests.fixtures.fake_mysql import UUID, FakeMySQL
from tests.fixtures.mysql_source import (
    MEMBERS_COLUMNS_84,
    MEMBERS_TABLE,
    STATS_COLUMNS_84,
    STATS_TABLE,
    T0,
    VIEW_ID,
    member_84,
    row_84,
)

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
    # who its replication_group_members lists, itself included (core.gtid_watch's view)
    assert sample.view == frozenset({UUID, M0, M9})


async def test_an_offline_member_shows_no_other_members(fake: FakeMySQL, make_source: Any) -> None:
    fake.set_row(MEMBERS_TABLE, **member_84(MEMBER_STATE="OFFLINE", MEMBER_ROLE=""))
    sample = await make_source(fake.port).sample(T0)
    assert sample.server_view == ()
    assert sample.view == frozenset({UUID})  # outside the group it lists only itself
