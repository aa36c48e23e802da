"""The SQL endpoint's wire against hostile clients (issue 22's attack table, the wire rows).

Strategy: the endpoint runs in this process on its own loop
(`tests/fixtures/sql_inprocess.py`); attackers are raw loopback sockets
speaking MySQL's framing (`mysqlwire`), real clients are PyMySQL. Each test
measures what the issue measured (bytes held, slots held, attempts per
second, the loop's longest stall) with short, configured timeouts; every
wait is for a condition with a deadline.
"""

from __future__ import annotations

import shutil
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from grstats.sql import SqlOptions, native_password_hash
from tests.faults import mysqlwire
from tests.fixtures.broker import make_test_ca
from tests.fixtures.sql_inprocess import Running, serve

pytestmark = [pytest.mark.faults, pytest.mark.timing]  # bounds a delay: run alone

PASSWORD = "s3cret"
MIB = 1 << 20


def _options(**kw: object) -> SqlOptions:
    return SqlOptions(port=0, password_hash=native_password_hash(PASSWORD), **kw)  # type: ignore[arg-type]


def _pymysql(port: int, password: str = PASSWORD, **kw: object) -> pymysql.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host="127.0.0.1", port=port, user="grstats", password=password, connect_timeout=10, **kw
    )


@pytest.fixture
def running() -> Iterator[Running]:
    yield from serve(_options(max_connections=16, handshake_timeout=2.0))


def test_continuation_packets_before_login_are_capped(running: Running) -> None:
    # 16 sockets each send one full 16 MiB frame and announce another, before any login:
    # the endpoint refuses at the first frame's header (1153) and holds none of it.
    frame = b"\0" * 0xFFFFFF
    before = mysqlwire.rss()
    results: list[tuple[int | None, bool]] = []

    def attack(n: int) -> None:
        # each on its own address: logins are capped per client address (issue 39 row 4)
        raw = mysqlwire.connect(running.port, source=f"127.0.0.{10 + n}")
        raw.handshake()
        try:
            raw.sock.sendall(struct.pack("<I", 0xFFFFFF | (1 << 24)))
            raw.sock.sendall(frame)  # one shared buffer: the client side holds no copies
            raw.sock.sendall(struct.pack("<I", 0xFFFFFF | (2 << 24)))
            raw.sock.sendall(frame)
        except OSError:
            pass  # refused and closed while we were still sending: the point
        try:
            code = mysqlwire.error_code(raw.read_packet())
        except (mysqlwire.Closed, TimeoutError):
            code = None
        results.append((code, mysqlwire.wait_closed(raw, 5.0)))
        raw.close()

    threads = [threading.Thread(target=attack, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    grown = mysqlwire.rss() - before
    assert len(results) == 16
    assert all(closed for _, closed in results), results
    assert {code for code, _ in results} <= {1153, None}
    assert any(code == 1153 for code, _ in results), results
    assert grown < 50 * MIB, f"RSS grew {grown / MIB:.0f} MiB"
    assert running.figures().errors.get(1153, 0) >= 1


def test_statement_past_the_size_limit_is_refused_before_parsing(running: Running) -> None:
    watch = mysqlwire.LoopWatch(running.loop)
    with (
        _pymysql(running.port) as conn,
        conn.cursor() as cur,
        pytest.raises(pymysql.MySQLError) as info,
    ):
        cur.execute("SELECT '" + "x" * 200_000 + "' AS a, 1 + " + " + ".join(["1"] * 2000))
    assert info.value.args[0] == 1153
    gap = watch.stop()
    assert gap < mysqlwire.STALL_BOUND_S, f"the server's loop stalled {gap:.2f} s"
    # just over the limit but within the packet cap: refused, the connection stays
    with _pymysql(running.port) as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.MySQLError) as info:
            cur.execute("SELECT '" + "y" * (70 << 10) + "'")
        assert info.value.args[0] == 1153
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)


def test_failed_login_ends_the_connection(running: Running) -> None:
    raw = mysqlwire.connect(running.port)
    raw.handshake()
    assert mysqlwire.error_code(raw.login("grstats", "wrong")) == 1045
    try:
        reply = raw.query("SELECT 1")
    except mysqlwire.Closed:
        reply = b""
    assert reply == b"" or mysqlwire.error_code(reply) is not None, "a query ran without login"
    assert mysqlwire.wait_closed(raw, 5.0)
    raw.close()


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    return make_test_ca(tmp_path_factory.mktemp("ca"))


def test_tls_required_refuses_a_login_claiming_ssl_without_tls(
    ca: tuple[Path, Path, Path],
) -> None:
    options = _options(tls_cert_file=str(ca[1]), tls_key_file=str(ca[2]), tls_required=True)
    for running in serve(options):
        raw = mysqlwire.connect(running.port)
        raw.handshake()
        caps = mysqlwire.BASE_CAPABILITIES | mysqlwire.CLIENT_SSL
        reply = raw.login("grstats", PASSWORD, caps)  # the full login packet, no SSLRequest
        assert mysqlwire.error_code(reply) == 3159
        raw.close()


def test_idle_plain_sockets_do_not_hold_every_slot() -> None:
    for running in serve(_options(max_connections=4, handshake_timeout=0.5, idle_timeout=1.0)):
        idle = [mysqlwire.connect(running.port) for _ in range(16)]  # connect, say nothing
        deadline = time.monotonic() + 10
        conn = None
        while conn is None and time.monotonic() < deadline:
            try:
                conn = _pymysql(running.port)
            except pymysql.MySQLError as exc:
                assert exc.args[0] in (1040, 2013), exc
        assert conn is not None, "every slot still held by idle sockets"
        # a logged-in client silent past idle_timeout is ended with 4031
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            deadline = time.monotonic() + 10
            while running.figures().errors.get(4031, 0) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            with pytest.raises(pymysql.MySQLError):
                cur.execute("SELECT 1")
        conn.close()
        assert running.figures().errors.get(4031, 0) >= 1
        assert running.figures().errors.get(1043, 0) >= 4  # the silent handshakes
        assert running.figures().handshake_timeouts >= 4
        for s in idle:
            s.close()


def test_password_guessing_is_slowed_per_address(running: Running) -> None:
    attempts = 0
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        raw = mysqlwire.connect(running.port)
        raw.handshake()
        try:
            code = mysqlwire.error_code(raw.login("grstats", f"guess{attempts}"))
        except (TimeoutError, mysqlwire.Closed):
            code = None  # the deadline ended a delayed attempt
        raw.close()
        assert code in (1045, None)
        attempts += 1
    # unthrottled this loop makes hundreds of attempts; 3 free, then 0.25 s doubling
    assert attempts <= 10, f"{attempts} guesses in 3 s"
    assert running.figures().logins_delayed >= 1
    assert running.figures().errors.get(1045, 0) == attempts
    with _pymysql(running.port) as conn, conn.cursor() as cur:  # the password still works
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)
    assert len(running.server._server.throttle) == 0  # type: ignore[union-attr]


def test_a_row_past_16_mib_reads_back(running: Running) -> None:
    with _pymysql(running.port) as conn, conn.cursor() as cur:
        cur.execute("SELECT REPEAT('x', 20000000) AS big, 7 AS n")
        rows = cur.fetchall()
        assert len(rows) == 1 and len(rows[0][0]) == 20_000_000 and rows[0][1] == 7
        cur.execute("SELECT 1")  # the stream is still in step
        assert cur.fetchall() == ((1,),)


def test_prepared_statements_and_their_long_data_are_bounded(running: Running) -> None:
    raw = mysqlwire.connect(running.port)
    raw.handshake()
    assert mysqlwire.error_code(raw.login("grstats", PASSWORD)) is None
    replies = []
    for _ in range(65):  # COM_STMT_PREPARE: 64 per connection
        raw.seq = 0
        raw.send_packet(b"\x16SELECT ?")
        reply = raw.read_packet()
        replies.append(mysqlwire.error_code(reply))
        if replies[-1] is None:
            raw.read_packet()  # the parameter's definition
            raw.read_packet()  # EOF
    assert replies[:64] == [None] * 64
    assert replies[64] == 1461
    # COM_STMT_SEND_LONG_DATA has no reply; past the packet cap in all: 1153
    for _ in range(2):
        raw.seq = 0
        raw.send_packet(b"\x18" + struct.pack("<IH", 1, 0) + b"x" * (60 << 10))
    assert mysqlwire.error_code(raw.read_packet()) == 1153
    raw.close()
