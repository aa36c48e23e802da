"""The endpoint in-process, read with PyMySQL: MySQL's error codes, limits, read-only.

The server runs on its own event loop in a thread (PyMySQL is synchronous);
the history is written by `grstats simulate` and expected values are read
from it with DuckDB directly, not through the endpoint.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pymysql
import pytest

from grstats.core import columns
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.daemons import GRSTATS
from tests.fixtures.sql_inprocess import LOCAL, REMOTE, Running, serve

PASSWORD = "s3cret"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("history")
    subprocess.run(
        [GRSTATS, "simulate", "--members", "3", "--days", "1", "--start", "2024-03-04",
         "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


@pytest.fixture
def running(history: Path) -> Iterator[Running]:
    yield from serve(
        SqlOptions(
            port=0,
            password_hash=native_password_hash(PASSWORD),
            history_dir=str(history),
            max_connections=3,
            query_timeout=0.5,
            max_rows=1000,
        )
    )


def _connect(port: int, password: str = PASSWORD, **kw: object) -> pymysql.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host="127.0.0.1", port=port, user="grstats", password=password, connect_timeout=10, **kw
    )


def _error(port: int, sql: str) -> tuple[int, str]:
    with _connect(port) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.MySQLError) as info:
            cur.execute(sql)
        # the connection survives an error
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)
    return info.value.args[0], info.value.args[1]


def test_live_rows_of_every_member_with_server_uuid_the_local_member(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT MEMBER_ID, COUNT_TRANSACTIONS_CHECKED FROM "
            "performance_schema.replication_group_member_stats ORDER BY MEMBER_ID"
        )
        assert cur.fetchall() == ((LOCAL, 5), (REMOTE, 7))
        cur.execute("SELECT @@server_uuid, @@version_comment")
        uuid, comment = cur.fetchone()
        assert uuid == LOCAL and "grstats" in comment
        cur.execute(
            "SELECT MEMBER_ID FROM performance_schema.replication_group_member_stats "
            "WHERE MEMBER_ID = @@server_uuid"
        )
        assert cur.fetchall() == ((LOCAL,),)


def test_ad_hoc_join_of_stats_and_members(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT m.MEMBER_HOST, m.MEMBER_PORT, m.MEMBER_STATE, s.COUNT_TRANSACTIONS_CHECKED"
            " FROM performance_schema.replication_group_member_stats s"
            " JOIN performance_schema.replication_group_members m USING (MEMBER_ID)"
            " WHERE m.MEMBER_STATE <> 'ONLINE' OR s.COUNT_TRANSACTIONS_CHECKED > 6"
        )
        assert cur.fetchall() == (("db2", 3307, "UNREACHABLE", 7),)


def test_column_names_and_order_are_mysqls(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM performance_schema.replication_group_member_stats")
        assert tuple(d[0] for d in cur.description) == columns.MEMBER_STATS.names
        cur.execute("SHOW COLUMNS FROM performance_schema.replication_group_members")
        assert tuple(r[0] for r in cur.fetchall()) == columns.MEMBERS.names


def test_history_group_by_matches_duckdb_reading_the_parquet(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT member_id, COUNT(*), MAX(count_transactions_checked), "
            "SUM(count_transactions_local_proposed) FROM grstats.history "
            "WHERE date = '2024-03-04' GROUP BY member_id ORDER BY member_id"
        )
        got = [tuple(int(v) if not isinstance(v, str) else v for v in r) for r in cur.fetchall()]
    expected = duckdb.sql(
        "SELECT member_id, COUNT(*), MAX(count_transactions_checked), "
        "SUM(count_transactions_local_proposed) FROM read_parquet("
        f"'{running.history}/*/*/*.parquet') GROUP BY member_id ORDER BY member_id"
    ).fetchall()
    assert got == [tuple(r) for r in expected]
    assert len(got) == 3


def test_mysql_functions_of_monitoring_queries(running: Running) -> None:
    u = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(
            f"SELECT GTID_SUBTRACT('{u}:1-10', '{u}:3-4'), GTID_SUBSET('{u}:3', '{u}:1-4'), "
            "IF(1 > 0, 'y', 'n'), TIME_TO_SEC(TIMEDIFF('2024-01-01 01:00:00', "
            "'2024-01-01 00:00:00')), UNIX_TIMESTAMP('2024-01-01 00:00:00')"
        )
        sub, subset, if_, secs, unix = cur.fetchone()
        # NOW(6) has microseconds, NOW() none (each a fresh statement: a new time)
        nows = []
        for _ in range(3):
            cur.execute("SELECT NOW(6), NOW()")
            nows.append(cur.fetchone())
    assert sub == f"{u}:1-2:5-10"
    assert subset == 1 and if_ == "y"
    assert float(secs) == 3600.0
    assert float(unix) == 1704067200.0
    assert any(now6.microsecond for now6, _ in nows)  # three at .000000: one in 10^18
    assert all(now.microsecond == 0 for _, now in nows)
    assert all(now6.replace(microsecond=0) == now for now6, now in nows)  # one statement time


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("SELECT * FROM performance_schema.no_such_table", 1146),
        ("SELEC 1", 1064),
        ("SELECT nope FROM performance_schema.replication_group_members", 1054),
        ("INSERT INTO grstats.history (seq) VALUES (1)", 1290),
        ("DELETE FROM performance_schema.replication_group_members", 1290),
        ("CREATE TABLE grstats.t (a INT)", 1290),
        ("SELECT * FROM replication_group_members", 1046),
        ("SELECT * FROM `/etc/passwd`", 1046),
        ("SELECT * FROM read_csv('/etc/passwd')", 1064),
    ],
)
def test_refusals_are_mysql_error_packets(running: Running, sql: str, code: int) -> None:
    assert _error(running.port, sql)[0] == code


def test_unknown_table_sqlstate_is_42S02(running: Running) -> None:
    with (
        _connect(running.port) as conn,
        conn.cursor() as cur,
        pytest.raises(pymysql.MySQLError) as info,
    ):
        cur.execute("SELECT * FROM grstats.nope")
    assert info.value.args[0] == 1146
    assert "Table 'grstats.nope' doesn't exist" in info.value.args[1]


def test_wrong_password_and_unknown_user_get_1045(running: Running) -> None:
    with pytest.raises(pymysql.MySQLError) as info:
        _connect(running.port, password="wrong")
    assert info.value.args[0] == 1045
    with pytest.raises(pymysql.MySQLError) as info:
        pymysql.connect(host="127.0.0.1", port=running.port, user="root", password=PASSWORD)
    assert info.value.args[0] == 1045


def test_query_past_the_timeout_is_interrupted_with_3024(running: Running) -> None:
    code, _ = _error(
        running.port,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) "
        "SELECT COUNT(*) FROM r",
    )
    assert code == 3024
    assert running.server.figures().queries_interrupted >= 1


def test_result_past_max_rows_is_refused_not_cut(running: Running) -> None:
    code, message = _error(running.port, "SELECT seq FROM grstats.history")
    assert code == 1104 and "max_rows=1000" in message
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute("SELECT seq FROM grstats.history LIMIT 1000")
        assert len(cur.fetchall()) == 1000


def test_connection_past_max_connections_gets_1040(running: Running) -> None:
    held = [_connect(running.port) for _ in range(3)]
    try:
        with pytest.raises(pymysql.MySQLError) as info:
            _connect(running.port)
        assert info.value.args[0] == 1040
        assert running.server.refused_connections == 1
    finally:
        for c in held:
            c.close()


def test_use_and_show_tables(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        dbs = {r[0] for r in cur.fetchall()}
        assert {"performance_schema", "grstats", "information_schema"} <= dbs
        cur.execute("USE grstats")
        cur.execute("SHOW TABLES")
        assert {"member_status", "history"} <= {r[0] for r in cur.fetchall()}
        cur.execute("SELECT COUNT(*) FROM history WHERE date = '2024-03-04'")
        assert cur.fetchone()[0] == 3 * 86400
        with pytest.raises(pymysql.MySQLError) as info:
            cur.execute("USE nodb")
        assert info.value.args[0] == 1049
