"""grstats.member_gtids (the API's grstats_member_gtids) over the MySQL protocol.

The multi-line GTID sets arrive exact; the counts are numbers SQL can sum.
"""

from __future__ import annotations

from collections.abc import Iterator

import pymysql
import pytest

from grstats.core import columns as col
from grstats.core.snapshot import DaemonSnapshot, with_tables
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.sql_inprocess import LOCAL, REMOTE, Running, serve, snapshot

PASSWORD = "s3cret"
GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
EXECUTED = f"{LOCAL}:1,\n{GROUP}:1-100:maint:1-2"


def _with_gtids() -> DaemonSnapshot:
    def row(member: str, executed: str, errant: str, count: int, method: str) -> dict[str, object]:
        out: dict[str, object] = dict.fromkeys(col.MEMBER_GTIDS.names)
        out.update(
            {
                col.MEMBER_ID: member,
                col.GTID_EXECUTED: executed,
                col.GTID_PURGED: "",
                col.GTIDS_READ_AT: "2026-11-25 20:00:00.000000",
                col.ERRANT_TRANSACTIONS: errant,
                col.ERRANT_COUNT: count,
                col.MISSING_COUNT: 0,
                col.RECOVERY_METHOD: method,
                col.DONORS: REMOTE if member == LOCAL else LOCAL,
            }
        )
        return out

    rows = (
        row(LOCAL, EXECUTED, f"{LOCAL}:1", 1, "CLONE"),
        row(REMOTE, f"{GROUP}:1-100:maint:1-2", "", 0, "INCREMENTAL"),
    )
    return with_tables(snapshot(), {"grstats_member_gtids": rows})


@pytest.fixture
def running() -> Iterator[Running]:
    options = SqlOptions(port=0, password_hash=native_password_hash(PASSWORD))
    yield from serve(options, _with_gtids)


def test_member_gtids_are_a_table_of_the_sql_endpoint(running: Running) -> None:
    with (
        pymysql.connect(
            host="127.0.0.1", port=running.port, user="grstats", password=PASSWORD
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(
            "SELECT MEMBER_ID, GTID_EXECUTED, ERRANT_TRANSACTIONS, ERRANT_COUNT, RECOVERY_METHOD"
            " FROM grstats.member_gtids ORDER BY MEMBER_ID"
        )
        assert cur.fetchall() == (
            (LOCAL, EXECUTED, f"{LOCAL}:1", 1, "CLONE"),
            (REMOTE, f"{GROUP}:1-100:maint:1-2", "", 0, "INCREMENTAL"),
        )
        cur.execute("SELECT SUM(ERRANT_COUNT) FROM grstats.member_gtids")
        assert int(cur.fetchone()[0]) == 1
