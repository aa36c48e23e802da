"""What a server shows, old and new: the mysql source and the local rows equal it.

The server is a mysql-mimic fake (tests/fixtures/fake_mysql.py, its tables as MySQL
ships them); its rows and the fixtures are tests/fixtures/mysql_source.py's.
"""

from __future__ import annotations

from typing import Any

import pytest

from grstats.core.tables import MemberTables
from tests.fixtures.fake_mysql import GROUP, OTHER_UUID, UUID, FakeMySQL
from tests.fixtures.mysql_source import (
    MEMBERS_COLUMNS_57,
    MEMBERS_COLUMNS_80,
    MEMBERS_COLUMNS_84,
    MEMBERS_TABLE,
    STATS_COLUMNS_57,
    STATS_COLUMNS_84,
    STATS_TABLE,
    T0,
    row_84,
)

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
