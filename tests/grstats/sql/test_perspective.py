"""A login `<user>+<member_id>` sees the tables as that member: @@server_uuid is the member.

mysqld_exporter's member-stats query filters `WHERE MEMBER_ID=@@server_uuid`
and labels its series with no member, as against MySQL; one exporter per
member, each logging in as `grstats+<member_id>`, exports every member's stats
from one endpoint. Expected values are the fixed snapshot's (LOCAL checked 5,
REMOTE checked 7: tests/fixtures/sql_inprocess.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.sql_inprocess import LOCAL, REMOTE, Running, serve
from tests.grstats.sql.exporter import exporter_lines

PASSWORD = "s3cret"


@pytest.fixture
def running() -> Iterator[Running]:
    yield from serve(SqlOptions(port=0, password_hash=native_password_hash(PASSWORD)))


def _connect(port: int, user: str) -> pymysql.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host="127.0.0.1", port=port, user=user, password=PASSWORD, connect_timeout=10
    )


def test_login_with_a_member_sees_that_member_as_server_uuid(running: Running) -> None:
    with _connect(running.port, f"grstats+{REMOTE.upper()}") as conn, conn.cursor() as cur:
        cur.execute("SELECT @@server_uuid")
        assert cur.fetchone() == (REMOTE,)
        cur.execute(
            "SELECT MEMBER_ID, COUNT_TRANSACTIONS_CHECKED FROM "
            "performance_schema.replication_group_member_stats WHERE MEMBER_ID=@@server_uuid"
        )
        assert cur.fetchall() == ((REMOTE, 7),)
        cur.execute("SELECT COUNT(*) FROM performance_schema.replication_group_member_stats")
        assert cur.fetchone() == (2,)  # every member's rows are still there
    with _connect(running.port, "grstats") as conn, conn.cursor() as cur:
        cur.execute("SELECT @@server_uuid")
        assert cur.fetchone() == (LOCAL,)


@pytest.mark.parametrize("user", ["grstats+", "grstats+db2", "other+" + REMOTE, "grstats" + REMOTE])
def test_anything_else_than_the_account_or_account_plus_uuid_gets_1045(
    running: Running, user: str
) -> None:
    with pytest.raises(pymysql.MySQLError) as info:
        _connect(running.port, user)
    assert info.value.args[0] == 1045


@pytest.mark.skipif(
    shutil.which("prometheus-mysqld-exporter") is None, reason="needs prometheus-mysqld-exporter"
)
def test_one_exporter_per_member_exports_each_members_stats(
    running: Running, tmp_path: Path
) -> None:
    checked = {}
    for member in (LOCAL, REMOTE):
        lines = exporter_lines(tmp_path, running.port, f"grstats+{member}", PASSWORD)
        assert "mysql_up 1" in lines
        assert "mysql_exporter_last_scrape_error 0" in lines
        errors = [ln for ln in lines if ln.startswith("mysql_exporter_scrape_errors_total")]
        assert all(ln.endswith(" 0") for ln in errors), errors
        checked[member] = [
            ln for ln in lines if ln.startswith("mysql_perf_schema_transactions_checked_total")
        ]
    assert checked == {
        LOCAL: ["mysql_perf_schema_transactions_checked_total 5"],
        REMOTE: ["mysql_perf_schema_transactions_checked_total 7"],
    }
