"""Every member of the server's view: three real daemons on a real Mosquitto, a fourth member
that exists only in the (fake) MySQL servers' views.

Each daemon reads its own 8.4-shaped server (tests/fixtures/fake_mysql.py). Each
server shows all four members in replication_group_members and
replication_group_member_stats, as MySQL does (it receives every member's
stats itself); member 4 has no grstats daemon. Every daemon must show four
rows in MEMBER_ID order, member 4's marked ROW_ORIGIN 'server' in
grstats_member_status and grstats_member_from_server 1 in /metrics.

The server as a live oracle: server 3 shows member 1's COUNT_TRANSACTIONS_CHECKED
as 999 while member 1's own server (and so its daemon) says 100. Daemon 3 counts
that column's disagreements and says so in /healthz and grstats_member_status;
daemons 1 and 2, whose servers agree with the bus, compare and count none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    M1,
    M2,
    M3,
    MEMBERS,
    STATS,
    DaemonProc,
    daemons,
    http_get,
    mysql_daemon_config,
    wait_for,
)
from tests.fixtures.fake_mysql import PASSWORD, FakeMySQL
from tests.fixtures.mysql_source import (
    MEMBERS_COLUMNS_84,
    MEMBERS_TABLE,
    STATS_COLUMNS_84,
    STATS_TABLE,
    member_84,
    row_84,
)

pytestmark = pytest.mark.slow

M4 = "44444444-4444-4444-4444-444444444444"  # in the servers' views only
DAEMONS = (M1, M2, M3)
ALL = (M1, M2, M3, M4)
STATUS = "grstats_member_status"


WRONG = 999  # what server 3 shows of member 1's COUNT_TRANSACTIONS_CHECKED (truth: 100)


def _group_rows(server: FakeMySQL, own: str) -> None:
    """The four members as every server shows them; `own` is this server's @@server_uuid."""
    server.variables["server_uuid"] = own
    stats = [row_84(MEMBER_ID=m, COUNT_TRANSACTIONS_CHECKED=100 + i) for i, m in enumerate(ALL)]
    if own == M3:
        stats[0]["COUNT_TRANSACTIONS_CHECKED"] = WRONG
    members = [
        member_84(
            MEMBER_ID=m, MEMBER_HOST=f"db{i + 1}", MEMBER_ROLE="PRIMARY" if i == 0 else "SECONDARY"
        )
        for i, m in enumerate(ALL)
    ]
    server.tables[STATS_TABLE] = (STATS_COLUMNS_84, stats)
    server.tables[MEMBERS_TABLE] = (MEMBERS_COLUMNS_84, members)


@pytest.fixture
async def servers() -> AsyncIterator[list[FakeMySQL]]:
    started = []
    try:
        for own in DAEMONS:
            s = FakeMySQL("8.4")
            _group_rows(s, own)
            await s.start()
            started.append(s)
        yield started
    finally:
        for s in started:
            s.release.set()
            await s.stop()


def _four_rows_with_origins(d: DaemonProc) -> dict[str, Any] | None:
    # the tables are read one by one: each must show all four members at once
    stats = d.table(STATS)
    members = d.table(MEMBERS)
    origins = {r["MEMBER_ID"]: r["ROW_ORIGIN"] for r in d.table(STATUS)}
    want = {M1: "daemon", M2: "daemon", M3: "daemon", M4: "server"}
    every = [r["MEMBER_ID"] for r in stats] == list(ALL) == [r["MEMBER_ID"] for r in members]
    if origins != want or not every:  # MEMBER_ID order, as MySQL
        return None
    return {"stats": stats, "members": members}


def _run(broker: Broker, tmp_path: Path, servers: list[FakeMySQL]) -> None:
    secret = tmp_path / "mysql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    configs = [mysql_daemon_config(broker.port, s.port, secret) for s in servers]
    with daemons(tmp_path, configs) as started:
        for d in started:
            got = wait_for(
                lambda d=d: _four_rows_with_origins(d), 30, "four members, M4 from the server"
            )
            m4 = next(r for r in got["members"] if r["MEMBER_ID"] == M4)
            assert (m4["MEMBER_HOST"], m4["MEMBER_STATE"], m4["MEMBER_ROLE"]) == (
                "db4",
                "ONLINE",
                "SECONDARY",
            )
            m4_stats = next(r for r in got["stats"] if r["MEMBER_ID"] == M4)
            assert m4_stats["COUNT_TRANSACTIONS_CHECKED"] == 103  # the server's figure
            status, body = http_get(d.api_port, "/metrics")
            assert status == 200
            shown = {
                s.labels["member_id"]: s.value
                for f in text_string_to_metric_families(body.decode())
                if f.name == "grstats_member_from_server"
                for s in f.samples
            }
            assert shown == {M1: 0, M2: 0, M3: 0, M4: 1}
        d1, d2, d3 = started
        disagreeing = "oracle_disagreements_count_transactions_checked"

        def compared(d: DaemonProc, enough: int = 20) -> dict[str, int] | None:
            counters = d.counters()
            return counters if counters.get("oracle_comparisons", 0) >= enough else None

        counters3 = wait_for(
            lambda: (c := compared(d3)) and c.get(disagreeing, 0) >= 2 and c, 30, "disagreements"
        )
        assert {k: v for k, v in counters3.items() if k.startswith("oracle_dis") and v} == {
            disagreeing: counters3[disagreeing]
        }  # that column only
        _, health = d3.get("/healthz")
        assert "server_oracle" in health["reasons"]
        status = {r["MEMBER_ID"]: r["SERVER_DISAGREEMENTS"] for r in d3.table(STATUS)}
        assert status[M1] > 0 and status[M2] == 0 and status[M4] is None
        for d in (d1, d2):  # their servers agree with the bus: compared, never disagreeing
            counters = wait_for(lambda d=d: compared(d), 30, "comparisons")
            assert [k for k, v in counters.items() if k.startswith("oracle_dis") and v] == []
            _, health = d.get("/healthz")
            assert "server_oracle" not in health["reasons"]


async def test_every_daemon_shows_the_member_only_its_server_knows(
    broker: Broker, tmp_path: Path, servers: list[FakeMySQL]
) -> None:
    await asyncio.to_thread(_run, broker, tmp_path, servers)
