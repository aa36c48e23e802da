"""Text as MySQL prints it, from a (fake) MySQL server to every output of another daemon.

Member 1's daemon reads an 8.4-shaped server (tests/fixtures/fake_mysql.py): a
GTID set of two lines (",\\n", as MySQL prints it, one of them tagged) and an
89-character tagged GTID (MySQL's longest: uuid, 32-character tag, 19-digit
number) as the last applied transaction. Member 2's daemon receives them on a
real Mosquitto and shows them intact in its API (JSON), its SQL endpoint (a
real client), and `grstats stats` / `grstats lag` as CSV (read back with
Python's csv module) and as a table (the set on several lines). Expected texts
are the ones written into the fake server.
"""

from __future__ import annotations

import asyncio
import csv
import io
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    DaemonProc,
    daemon_config,
    daemons,
    mysql_daemon_config,
    wait_for,
)
from tests.fixtures.fake_mysql import PASSWORD, FakeMySQL
from tests.fixtures.mysql_source import (
    MEMBERS_TABLE,
    STATS_TABLE,
    WORKER_COLUMNS_84,
    WORKER_TABLE,
    member_84,
    row_84,
)

pytestmark = pytest.mark.slow

TAGGED_89 = f"{GROUP}:{'t' * 32}:9223372036854775807"
GTID_SET = (
    f"{GROUP}:1-12345:{'t' * 32}:1-9223372036854775807,\nbbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:1-5"
)
SQL_PASSWORD = "s3cret"
APPLIER = "group_replication_applier"
GRSTATS = [sys.executable, "-c", "from grstats.cli.main import main; main()"]
T = 1_795_424_400_000_000  # µs, 2026-11-23 09:00:00 UTC


@pytest.fixture
async def server() -> AsyncIterator[FakeMySQL]:
    s = FakeMySQL("8.4")
    await s.start()
    try:
        yield s
    finally:
        s.release.set()
        await s.stop()


def _serve_texts(server: FakeMySQL) -> None:
    server.set_row(STATS_TABLE, **row_84(TRANSACTIONS_COMMITTED_ALL_MEMBERS=GTID_SET))
    server.set_row(MEMBERS_TABLE, **member_84())
    worker: dict[str, Any] = dict.fromkeys(WORKER_COLUMNS_84)
    worker.update(
        {c: 0 for c in WORKER_COLUMNS_84 if c.endswith("_TIMESTAMP")},
        CHANNEL_NAME=APPLIER,
        WORKER_ID=1,
        SERVICE_STATE="ON",
        LAST_APPLIED_TRANSACTION=TAGGED_89,
        LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP=T,
        LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP=T,
        LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP=T + 1000,
        LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP=T + 2000,
        APPLYING_TRANSACTION="",
    )
    server.tables[WORKER_TABLE] = (WORKER_COLUMNS_84, [worker])


def _cli(*args: str) -> str:
    out = subprocess.run(
        [*GRSTATS, *args], capture_output=True, text=True, timeout=60, check=False,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin", "TERM": "dumb"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def _sql_port(daemon: DaemonProc) -> int:
    for event in daemon.events():
        if event.get("event") == "daemon.started":
            return int(event["sql_port"])
    raise AssertionError("no daemon.started event")


def _run(broker: Broker, tmp_path: Path, server: FakeMySQL) -> None:
    secret = tmp_path / "mysql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    sql_secret = tmp_path / "sql.password"
    sql_secret.write_text(SQL_PASSWORD + "\n", encoding="utf-8")
    first = mysql_daemon_config(broker.port, server.port, secret, gtid_interval=1)
    second = daemon_config(broker.port, M2, [M2], gtid_interval=1)
    second["sql"] = {"listen": "127.0.0.1:0", "password_file": str(sql_secret)}
    with daemons(tmp_path, [first, second]) as (_, receiver):
        api = f"http://127.0.0.1:{receiver.api_port}"

        def arrived() -> bool | None:
            stats = receiver.rows_by_member().get(M1)
            lag = [r for r in receiver.table("grstats_member_lag") if r["MEMBER_ID"] == M1]
            return (
                stats is not None
                and stats["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == GTID_SET
                and any(r["LAST_APPLIED_TRANSACTION"] == TAGGED_89 for r in lag)
            ) or None

        wait_for(arrived, 30, "member 1's texts at member 2 (API JSON)")

        # the SQL endpoint's live tables come from the daemon once a period (its child
        # process): at most one period behind the API, so wait for them too
        conn = pymysql.connect(
            host="127.0.0.1", port=_sql_port(receiver), user="grstats", password=SQL_PASSWORD
        )
        with conn, conn.cursor() as cur:

            def select(sql: str, args: tuple[str, ...], want: Any) -> bool | None:
                cur.execute(sql, args)
                return cur.fetchall() == want or None

            wait_for(
                lambda: select(
                    "SELECT LAST_APPLIED_TRANSACTION FROM grstats.member_lag"
                    " WHERE MEMBER_ID = %s AND CHANNEL_NAME = %s",
                    (M1, APPLIER),
                    ((TAGGED_89,),),
                ),
                30,
                "the 89-character tagged GTID over SQL",
            )
            wait_for(
                lambda: select(
                    "SELECT TRANSACTIONS_COMMITTED_ALL_MEMBERS FROM performance_schema."
                    "replication_group_member_stats WHERE MEMBER_ID = %s",
                    (M1,),
                    ((GTID_SET,),),
                ),
                30,
                "the two-line GTID set over SQL",
            )

        stats = {
            r["MEMBER_ID"]: r
            for r in csv.DictReader(
                io.StringIO(_cli("stats", "--api", api, "--format", "csv"), newline="")
            )
        }
        assert stats[M1]["TRANSACTIONS_COMMITTED_ALL_MEMBERS"] == GTID_SET
        lag = [
            r
            for r in csv.DictReader(
                io.StringIO(_cli("lag", "--api", api, "--format", "csv"), newline="")
            )
            if r["MEMBER_ID"] == M1 and r["CHANNEL_NAME"] == APPLIER
        ]
        assert [r["LAST_APPLIED_TRANSACTION"] for r in lag] == [TAGGED_89]
        first_line, second_line = GTID_SET.split("\n")
        boxed = _cli("stats", "--api", api, "--wide").splitlines()  # every column
        at = next(i for i, line in enumerate(boxed) if first_line in line)
        assert second_line in boxed[at + 1]  # the set goes on in the same cell, next line
        assert boxed[at + 1].startswith("| ")


async def test_gtid_texts_go_intact_from_the_server_to_api_sql_csv_and_table(
    broker: Broker, tmp_path: Path, server: FakeMySQL
) -> None:
    _serve_texts(server)
    await asyncio.to_thread(_run, broker, tmp_path, server)
