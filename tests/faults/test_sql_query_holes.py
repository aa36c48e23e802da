"""The SQL endpoint's statements against hostile clients (issue 22's attack table, the query rows).

Strategy: the endpoint runs in this process on its own loop over a history
written by `grstats simulate`; PyMySQL is the client. Each attack is checked
for MySQL's refusal (or a bounded answer) and for what the issue measured:
the server loop's longest stall (a 10 ms heartbeat on that loop), rows and
bytes past the limits, a file outside the tables read. Expected values come
from DuckDB reading the files directly or are written by hand.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pymysql
import pytest

from grstats.sql import SqlOptions, native_password_hash
from tests.faults import mysqlwire
from tests.fixtures.daemons import GRSTATS
from tests.fixtures.sql_inprocess import Running, serve

pytestmark = [pytest.mark.faults, pytest.mark.timing]  # bounds a delay: run alone

PASSWORD = "s3cret"
MAX_ROWS = 1000
MAX_BYTES = 1 << 20
SECRET = "grstats-test-secret-7f3a"
MEMBERS_TABLE = "performance_schema.replication_group_members"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("history")
    subprocess.run(
        [GRSTATS, "simulate", "--members", "3", "--days", "1", "--start", "2024-03-04",
         "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def rollups(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rollups")
    (root / "secret.txt").write_text(SECRET)  # inside an allowed directory: still not a table
    return root


@pytest.fixture
def running(history: Path, rollups: Path) -> Iterator[Running]:
    yield from serve(
        SqlOptions(
            port=0,
            password_hash=native_password_hash(PASSWORD),
            history_dir=str(history),
            rollups_dir=str(rollups),
            query_timeout=2.0,
            max_rows=MAX_ROWS,
            max_result_bytes=MAX_BYTES,
        )
    )


def _connect(port: int) -> pymysql.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host="127.0.0.1",
        port=port,
        user="grstats",
        password=PASSWORD,
        connect_timeout=10,
        read_timeout=60,
    )


def _refusal(port: int, sql: str) -> tuple[int, str]:
    with _connect(port) as conn, conn.cursor() as cur:
        try:
            cur.execute(sql)
        except pymysql.MySQLError as exc:
            return exc.args[0], str(exc.args[1])
        return 0, repr(cur.fetchall())[:2000]


def test_information_schema_joins_run_under_the_limits(running: Running) -> None:
    _refusal(running.port, "SELECT COUNT(*) FROM information_schema.columns")  # warm a worker
    before = mysqlwire.rss()
    watch = mysqlwire.LoopWatch(running.loop)
    # a 2-way join has more rows than max_rows: refused, never sent
    code, _ = _refusal(
        running.port, "SELECT a.column_name FROM information_schema.columns a, "
        "information_schema.columns b"
    )  # fmt: skip
    assert code == 1104
    # a 4-way join's count runs past query_timeout: interrupted
    code, _ = _refusal(
        running.port,
        "SELECT count(*) FROM information_schema.columns a, information_schema.columns b, "
        "information_schema.columns c, information_schema.columns d",
    )
    assert code == 3024
    gap = watch.stop()
    assert gap < mysqlwire.STALL_BOUND_S, f"the server's loop stalled {gap:.2f} s"
    grown = mysqlwire.rss() - before  # 141 MB -> 2.75 GB in the issue
    assert grown < 50 << 20, f"RSS grew {grown >> 20} MiB"
    figures = running.figures()
    assert figures.results_refused["max_rows"] == 1
    assert figures.queries_interrupted == 1


def test_information_schema_answers_like_before(running: Running, history: Path) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'grstats' AND table_name = 'history' ORDER BY ordinal_position"
        )
        names = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT * FROM grstats.history LIMIT 0")
        assert names == [d[0] for d in cur.description]
        cur.execute("SELECT schema_name FROM information_schema.schemata ORDER BY 1")
        assert {"grstats", "performance_schema", "information_schema"} <= {
            r[0] for r in cur.fetchall()
        }
    # the history's own columns, read by DuckDB from the files
    files = duckdb.sql(
        f"SELECT * FROM read_parquet('{history}/group=*/date=*/*.parquet') LIMIT 0"
    ).columns
    assert set(files) - {"group"} <= set(names)


def test_result_bytes_are_the_encoded_bytes(running: Running) -> None:
    # two 600 KB BLOBs: 24 bytes each by the old count, 1.2 MB on the wire
    code, _ = _refusal(
        running.port, f"SELECT UNHEX(REPEAT('41', 600000)) AS b FROM {MEMBERS_TABLE}"
    )
    assert code == 1104
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT UNHEX(REPEAT('41', 400000)) AS b FROM {MEMBERS_TABLE}")
        rows = cur.fetchall()
    assert [bytes(r[0]) if not isinstance(r[0], str) else r[0].encode() for r in rows] == [
        b"A" * 400000
    ] * 2
    assert running.figures().results_refused["max_result_bytes"] == 1


@pytest.mark.parametrize(
    ("sql", "codes"),
    [
        ("SELECT * FROM {m}, LATERAL read_text('{r}/secret.txt')", {1064, 1305}),
        ("SELECT * FROM {m} CROSS APPLY read_text('{r}/secret.txt')", {1064, 1305}),
        ("SELECT * FROM {m} OUTER APPLY read_blob('{r}/secret.txt')", {1064, 1305}),
        ("SELECT read_text('{r}/secret.txt')", {1305}),
        ("SELECT * FROM read_text('{r}/secret.txt')", {1064}),
        ("WITH `{r}/secret.txt` AS (SELECT 1) SELECT * FROM `{r}/secret.txt`", {1064}),
        # a CTE out of scope: DuckDB would look the name up as a file
        (
            "SELECT * FROM (WITH `secret.txt` AS (SELECT 1) SELECT * FROM `secret.txt`) x, "
            "`secret.txt`",
            {1064, 1046, 1146},
        ),
        ("SELECT range(0, 1000000)", {1305}),
        ("SELECT getenv('HOME')", {1305}),
        ("SELECT current_setting('allowed_directories')", {1305}),
    ],
)
def test_only_the_allowlisted_tables_and_functions(
    running: Running, rollups: Path, sql: str, codes: set[int]
) -> None:
    code, text = _refusal(running.port, sql.format(m=MEMBERS_TABLE, r=rollups))
    assert code in codes, text
    assert SECRET not in text


def test_the_allowlist_keeps_monitoring_queries(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute(
            "WITH m AS (SELECT member_id, member_state FROM performance_schema."
            "replication_group_members), s AS (SELECT * FROM m WHERE member_state = 'ONLINE') "
            "SELECT COUNT(*), MAX(LENGTH(member_id)), IF(COUNT(*) > 0, 'yes', 'no'), "
            "DATE_FORMAT(NOW(), '%Y'), date_trunc('hour', NOW()) IS NOT NULL "
            "FROM s WHERE member_id IN (SELECT member_id FROM m)"
        )
        (count, width, any_, year, truncated), *_ = cur.fetchall()
    assert (count, width, any_, truncated) == (1, 36, "yes", 1)
    assert len(year) == 4


def test_describe_and_show_forms_of_the_mysql_client(running: Running) -> None:
    with _connect(running.port) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM grstats.history LIMIT 0")
        columns = [d[0] for d in cur.description]
        cur.execute("USE grstats")
        for sql in (
            "DESCRIBE history",
            "DESC history",
            "describe `history`",
            "EXPLAIN history",
            "DESCRIBE grstats.history",
            "SHOW COLUMNS FROM history",
            "SHOW FULL COLUMNS FROM history",
            "SHOW FIELDS FROM history",
            "SHOW COLUMNS FROM history FROM grstats",
        ):
            cur.execute(sql)
            assert [r[0] for r in cur.fetchall()] == columns, sql
        cur.execute("DESCRIBE history member_id")
        assert [r[0] for r in cur.fetchall()] == ["member_id"]
        cur.execute("SHOW TABLES")
        assert "history" in {r[0] for r in cur.fetchall()}
        cur.execute("SHOW FULL TABLES")
        assert ("history", "BASE TABLE") in {tuple(r) for r in cur.fetchall()}
        cur.execute("SHOW DATABASES")
        assert {"grstats", "performance_schema"} <= {r[0] for r in cur.fetchall()}
        for sql in ("SHOW INDEX FROM history", "SHOW KEYS FROM history"):
            cur.execute(sql)
            assert cur.fetchall() == (), sql


def test_a_long_expression_under_the_size_limit_does_not_stall_the_loop(
    running: Running,
) -> None:
    watch = mysqlwire.LoopWatch(running.loop)
    sql = "SELECT " + "+".join(["1"] * 15_000)  # 60 KB: parsed, but in a worker
    with _connect(running.port) as conn, conn.cursor() as cur:
        try:
            cur.execute(sql)
            assert cur.fetchall() == ((15_000,),)
        except pymysql.MySQLError as exc:  # sqlglot's or DuckDB's depth limit: an error packet
            assert exc.args[0] in (1064, 1105), exc
    gap = watch.stop()
    assert gap < mysqlwire.STALL_BOUND_S, f"the server's loop stalled {gap:.2f} s"


@pytest.mark.skipif(shutil.which("mariadb") is None, reason="needs mariadb")
def test_the_mariadb_client_describes_and_reads_a_row_past_16_mib(running: Running) -> None:
    base = ["mariadb", "-h", "127.0.0.1", "-P", str(running.port), "-u", "grstats",
            f"-p{PASSWORD}", "--ssl=0", "--batch", "--max-allowed-packet=64M"]  # fmt: skip
    # --auto-rehash with a database: the client lists tables and fields on connect
    out = subprocess.run(
        [*base, "--auto-rehash", "-D", "grstats", "-e", "DESCRIBE history; SHOW TABLES"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    fields = [line.split("\t")[0] for line in out.splitlines()]
    assert "member_id" in fields and "sampled_at" in fields and "history" in fields
    # a row past 16 MiB under the default max_result_bytes (64 MiB)
    for plain in serve(SqlOptions(port=0, password_hash=native_password_hash(PASSWORD))):
        base[4] = str(plain.port)
        out = subprocess.run(
            [*base, "-N", "-e", "SELECT REPEAT('x', 20000000), 7"],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
    assert out == "x" * 20_000_000 + "\t7\n"
