"""Result metadata: unsigned columns carry MySQL's UNSIGNED flag; values past 2^63 come through.

MySQL declares performance_schema's counters BIGINT UNSIGNED; a client that
decodes by the column definition (flags) must see them unsigned. Checked with
PyMySQL's raw field descriptors and the mariadb client's --column-type-info.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator

import pymysql
import pytest
from pymysql.constants import COMMAND, FIELD_TYPE, FLAG
from pymysql.protocol import FieldDescriptorPacket

from grstats.core import columns
from grstats.core.lag import ChannelLag, MemberLag, StageTrx
from grstats.core.lagrows import lag_rows
from grstats.core.snapshot import DaemonSnapshot, with_tables
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures import mysql_definitions as defs
from tests.fixtures.sql_inprocess import LOCAL, REMOTE, Running, serve, snapshot

PASSWORD = "s3cret"
BIG = 2**64 - 1  # the largest BIGINT UNSIGNED
PAST_SIGNED = 2**63 + 5  # one past what a signed BIGINT holds, and then some


def _big_snapshot() -> DaemonSnapshot:
    base = snapshot()
    stats = []
    for row, value in zip(
        base.table("replication_group_member_stats"), (BIG, PAST_SIGNED), strict=True
    ):
        stats.append({**row, columns.COUNT_TRANSACTIONS_CHECKED: value})
    return with_tables(base, {"replication_group_member_stats": tuple(stats)})


@pytest.fixture
def running() -> Iterator[Running]:
    options = SqlOptions(port=0, password_hash=native_password_hash(PASSWORD))
    yield from serve(options, _big_snapshot)


QUERY = (
    "SELECT MEMBER_ID, COUNT_TRANSACTIONS_CHECKED, COUNT_CONFLICTS_DETECTED, "
    "CAST(COUNT_CONFLICTS_DETECTED AS SIGNED) AS signed_copy "
    "FROM performance_schema.replication_group_member_stats ORDER BY MEMBER_ID"
)


def test_unsigned_columns_carry_the_flag_and_keep_values_past_2_63(running: Running) -> None:
    conn = pymysql.connect(
        host="127.0.0.1", port=running.port, user="grstats", password=PASSWORD, connect_timeout=10
    )
    with conn, conn.cursor() as cur:
        cur.execute(QUERY)
        rows = cur.fetchall()
        fields = {f.name: f for f in cur._result.fields}
    assert rows[0][:2] == (LOCAL, BIG)
    assert rows[1][:2] == (REMOTE, PAST_SIGNED)
    checked = fields["COUNT_TRANSACTIONS_CHECKED"]
    assert checked.type_code == FIELD_TYPE.LONGLONG
    assert checked.flags & FLAG.UNSIGNED
    assert fields["COUNT_CONFLICTS_DETECTED"].flags & FLAG.UNSIGNED
    assert not fields["MEMBER_ID"].flags & FLAG.UNSIGNED
    assert not fields["signed_copy"].flags & FLAG.UNSIGNED


@pytest.mark.skipif(shutil.which("mariadb") is None, reason="needs the mariadb client")
def test_mariadb_column_type_info_shows_unsigned(running: Running) -> None:
    out = subprocess.run(
        ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(running.port), "-u", "grstats",
         f"-p{PASSWORD}", "--skip-ssl", "--table", "--column-type-info", "-e", QUERY],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    # "Field   2:  `NAME`" ... "Flags:      UNSIGNED NUM" per column
    flags = dict(re.findall(r"^Field +\d+: +`(\w+)`.*?^Flags: *(.*?) *$", out.stdout, re.M | re.S))
    assert "UNSIGNED" in flags["COUNT_TRANSACTIONS_CHECKED"].split(), out.stdout
    assert "UNSIGNED" not in flags["MEMBER_ID"].split()
    assert "UNSIGNED" not in flags["signed_copy"].split()
    assert str(BIG) in out.stdout and str(PAST_SIGNED) in out.stdout


def test_binary_protocol_sends_unsigned_flag_and_unsigned_values(running: Running) -> None:
    # COM_STMT_PREPARE / COM_STMT_EXECUTE spoken through PyMySQL's packet layer
    # (PyMySQL has no prepared statements of its own); the rows are compared with
    # the binary row format written out by hand: 0x00, NULL bitmap (2 columns + 2
    # offset bits: one byte), MEMBER_ID length-prefixed, the counter as 8 bytes LE.
    sql = (
        "SELECT MEMBER_ID, COUNT_TRANSACTIONS_CHECKED FROM "
        "performance_schema.replication_group_member_stats ORDER BY MEMBER_ID"
    )
    conn = pymysql.connect(
        host="127.0.0.1", port=running.port, user="grstats", password=PASSWORD, connect_timeout=10
    )
    with conn:
        conn._execute_command(COMMAND.COM_STMT_PREPARE, sql)
        prepared = conn._read_packet().get_all_data()
        assert prepared[0] == 0
        statement = int.from_bytes(prepared[1:5], "little")
        conn._execute_command(
            COMMAND.COM_STMT_EXECUTE,
            statement.to_bytes(4, "little") + b"\x00" + (1).to_bytes(4, "little"),
        )
        assert conn._read_packet().get_all_data() == b"\x02"  # two columns
        fields = [conn._read_packet(FieldDescriptorPacket) for _ in range(2)]
        conn._read_packet()  # the EOF after the definitions
        rows = []
        for _ in range(3):  # two rows and the closing EOF
            packet = conn._read_packet().get_all_data()
            if packet[0] == 0xFE:
                break
            rows.append(packet)
    assert [f.name for f in fields] == ["MEMBER_ID", "COUNT_TRANSACTIONS_CHECKED"]
    assert fields[1].type_code == FIELD_TYPE.LONGLONG and fields[1].flags & FLAG.UNSIGNED
    assert not fields[0].flags & FLAG.UNSIGNED
    assert rows == [
        b"\x00\x00" + bytes([36]) + member.encode() + value.to_bytes(8, "little")
        for member, value in ((LOCAL, BIG), (REMOTE, PAST_SIGNED))
    ]


@pytest.mark.parametrize("table", ["replication_group_member_stats", "replication_group_members"])
def test_show_columns_says_null_as_mysql_declares_it(running: Running, table: str) -> None:
    # expected from MySQL's own definitions (tests/fixtures/mysql_definitions.json)
    declared = {c.name: "YES" if c.nullable else "NO" for c in defs.columns(table, "8.4") or ()}
    conn = pymysql.connect(
        host="127.0.0.1", port=running.port, user="grstats", password=PASSWORD, connect_timeout=10
    )
    with conn, conn.cursor() as cur:
        cur.execute(f"SHOW COLUMNS FROM performance_schema.{table}")
        shown = {row[0]: row[2] for row in cur.fetchall()}
        cur.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.columns"
            f" WHERE TABLE_SCHEMA = 'performance_schema' AND TABLE_NAME = '{table}'"
        )
        info = dict(cur.fetchall())
    assert {name: shown[name] for name in declared} == declared
    assert {name: info[name] for name in declared} == declared
    assert "NO" in declared.values() and (
        table != "replication_group_members" or "YES" in declared.values()
    )


def _lag_snapshot() -> DaemonSnapshot:
    # an idle channel: one transaction applied, none queued yet (MySQL's zero timestamps)
    applied = StageTrx("g:1", 1_000_000, 1_000_000, 2_000_000, 3_000_000)
    lag = MemberLag(4_000_000, (ChannelLag("group_replication_applier", True, True,
                                           last_applied=applied),))  # fmt: skip
    rows = tuple(lag_rows(LOCAL, lag, offset_s=0.0, spread_s=0.0))
    return with_tables(snapshot(), {"grstats_member_lag": rows})


def test_the_zero_timestamp_comes_back_as_mysql_prints_it() -> None:
    options = SqlOptions(port=0, password_hash=native_password_hash(PASSWORD))
    for running in serve(options, _lag_snapshot):
        conn = pymysql.connect(
            host="127.0.0.1", port=running.port, user="grstats", password=PASSWORD
        )
        with conn, conn.cursor() as cur:
            cur.execute(
                "SELECT LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP IS NULL,"
                " CAST(LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP AS CHAR)"
                " FROM grstats.member_lag"
            )
            got = cur.fetchall()
            cur.execute(
                "SELECT LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP FROM grstats.member_lag"
            )
            shown = cur.fetchall()  # PyMySQL gives an invalid date back as its text
    assert shown == (("0000-00-00 00:00:00.000000",),)
    assert got == ((0, "1970-01-01 00:00:03"),)  # MySQL's zero timestamp is not NULL
