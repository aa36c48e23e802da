"""@@gtid_executed / @@gtid_purged over the real wire (a mysql-mimic server).

The texts are what each MySQL shape prints: 8.0 one UUID per line, 8.4 with
tagged GTIDs after the untagged intervals of the same UUID. Expected sets are
written by hand.
"""

from __future__ import annotations

from typing import Any

import asyncmy
import asyncmy.errors
import pytest

from grstats.sources.mysql.gtidstate import build_gtid_state
from protocol import GtidSet
from tests.fixtures.fake_mysql import (
    ER_INCORRECT_GLOBAL_LOCAL_VAR,
    GROUP,
    PASSWORD,
    USER,
    FakeMySQL,
)
from tests.fixtures.mysql_source import T0, online_84

OTHER = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
VIEW = "cccccccc-cccc-cccc-cccc-cccccccccccc"


async def test_80_sets_are_read_as_printed(fake: FakeMySQL, make_source: Any) -> None:
    online_84(fake)
    fake.variables["version"] = "8.0.40"
    fake.variables["gtid_executed"] = f"{GROUP}:1-12345,\n{OTHER}:1-5,\n{VIEW}:1-3"
    fake.variables["gtid_purged"] = f"{GROUP}:1-100"
    sample = await make_source(fake.port).sample(T0)
    state = sample.gtid_state
    assert state is not None and state.at_us == T0
    assert state.executed == GtidSet([(GROUP, "", 1, 12345), (OTHER, "", 1, 5), (VIEW, "", 1, 3)])
    assert state.purged == GtidSet([(GROUP, "", 1, 100)])


async def test_84_tagged_sets_are_read_as_printed(fake: FakeMySQL, make_source: Any) -> None:
    online_84(fake)
    fake.variables["gtid_executed"] = f"{GROUP}:1-12345:maint:1-2,\n{OTHER}:1-5"
    sample = await make_source(fake.port).sample(T0)  # a fresh server: gtid_purged ""
    state = sample.gtid_state
    assert state is not None
    assert state.executed == GtidSet(
        [(GROUP, "", 1, 12345), (GROUP, "maint", 1, 2), (OTHER, "", 1, 5)]
    )
    assert state.purged.is_empty()


async def test_a_commit_after_connecting_shows_in_the_next_sample(
    fake: FakeMySQL, make_source: Any
) -> None:
    # @@gtid_executed is GLOBAL-only on MySQL: every poll reads the server's set
    # as it is then, not a copy taken when the source connected
    online_84(fake)
    fake.variables["gtid_executed"] = f"{GROUP}:1-10"
    source = make_source(fake.port)
    first = (await source.sample(T0)).gtid_state
    assert first is not None and first.executed == GtidSet([(GROUP, "", 1, 10)])
    fake.variables["gtid_executed"] = f"{GROUP}:1-13,\n{OTHER}:1"  # 3 local commits, 1 applied
    fake.variables["gtid_purged"] = f"{GROUP}:1-4"
    second = (await source.sample(T0 + 1_000_000)).gtid_state
    assert second is not None
    assert second.executed == GtidSet([(GROUP, "", 1, 13), (OTHER, "", 1, 1)])
    assert second.purged == GtidSet([(GROUP, "", 1, 4)])
    assert second.executed.count() - first.executed.count() == 4


async def test_the_sets_have_no_session_value_and_time_zone_has(fake: FakeMySQL) -> None:
    # MySQL 8.0+: @@session.gtid_executed is error 1238; time_zone is per session
    conn = await asyncmy.connect(host="127.0.0.1", port=fake.port, user=USER, password=PASSWORD)
    try:
        async with conn.cursor() as cur:
            for name in ("gtid_executed", "gtid_purged", "server_uuid"):
                with pytest.raises(asyncmy.errors.OperationalError) as refused:
                    await cur.execute(f"SELECT @@session.{name}")
                assert refused.value.args == (
                    ER_INCORRECT_GLOBAL_LOCAL_VAR,
                    f"Variable '{name}' is a GLOBAL variable",
                )
            await cur.execute("SET @@session.time_zone = '+00:00'")
            fake.time_zone = "-03:00"  # SET GLOBAL: a session already open keeps its own
            await cur.execute("SELECT @@time_zone, @@session.time_zone, @@global.time_zone")
            assert await cur.fetchall() == (("+00:00", "+00:00", "-03:00"),)
    finally:
        conn.close()


async def test_a_server_without_the_variables_keeps_its_stats(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    del fake.variables["gtid_executed"]  # error 1193 like MySQL
    sample = await make_source(fake.port).sample(T0)
    assert sample.gtid_state is None
    assert sample.member.state == "ONLINE"


def test_text_the_parser_refuses_gives_none() -> None:
    assert build_gtid_state((f"{GROUP}:0", ""), T0) is None
    assert build_gtid_state(None, T0) is None
    state = build_gtid_state((f"{GROUP}:1-3".encode(), b""), T0)
    assert state is not None and state.executed.count() == 3
