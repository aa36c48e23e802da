"""Issue 39 row 4: a persistent slowloris cannot keep the SQL endpoint's slots from logins.

Strategy: the endpoint runs in this process (`sql_inprocess`, 16 slots, a 1 s
handshake deadline). An attacker on its own loopback address (127.0.0.2)
keeps 16 sockets open that never log in, reopening each as soon as the
endpoint ends it -- the attack that, before, took every slot and refused 10 of
10 logins (1040). Meanwhile 10 legitimate clients (127.0.0.1) log in one
after the other; each must get in. A second attacker spread over 16
addresses holds every slot before login: a new connection then ends the
oldest one still logging in (never a logged-in session), so logins get in
there too. The refusals and evictions are counted.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pymysql
import pytest

from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.sql_inprocess import Running, serve

pytestmark = pytest.mark.faults

PASSWORD = "s3cret"
SLOTS = 16


@pytest.fixture
def running() -> Iterator[Running]:
    yield from serve(
        SqlOptions(
            port=0,
            password_hash=native_password_hash(PASSWORD),
            max_connections=SLOTS,
            handshake_timeout=1.0,
        )
    )


class Slowloris:
    """`count` silent sockets from `addresses` (round robin), each reopened once ended."""

    def __init__(self, port: int, addresses: list[str], count: int = SLOTS) -> None:
        self.port, self.addresses, self.count = port, addresses, count
        self.stop = threading.Event()
        self.opened = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Slowloris:
        self._thread.start()
        time.sleep(0.5)  # its sockets are in before the first login
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(10)

    def _open(self, n: int) -> socket.socket | None:
        with contextlib.suppress(OSError):
            sock = socket.create_connection(
                ("127.0.0.1", self.port),
                timeout=2,
                source_address=(self.addresses[n % len(self.addresses)], 0),
            )
            sock.setblocking(False)
            self.opened += 1
            return sock
        return None

    def _run(self) -> None:
        socks: list[socket.socket | None] = [self._open(n) for n in range(self.count)]
        while not self.stop.is_set():
            for n, sock in enumerate(socks):
                ended = sock is None
                if sock is not None:
                    try:
                        ended = sock.recv(4096) == b""  # the greeting, then the end
                    except BlockingIOError:
                        ended = False
                    except OSError:
                        ended = True
                if ended:
                    if sock is not None:
                        sock.close()
                    socks[n] = self._open(n)
            time.sleep(0.02)
        for sock in socks:
            if sock is not None:
                sock.close()


def _logins(port: int, count: int = 10) -> list[int]:
    codes = []
    for _ in range(count):
        try:
            with (
                pymysql.connect(
                    host="127.0.0.1", port=port, user="grstats", password=PASSWORD,
                    connect_timeout=5, read_timeout=5,
                ) as conn,
                conn.cursor() as cur,
            ):  # fmt: skip
                cur.execute("SELECT 1")
                codes.append(0)
        except pymysql.MySQLError as exc:
            codes.append(int(exc.args[0]))
    return codes


def test_a_slowloris_on_one_address_does_not_deny_logins(running: Running) -> None:
    with Slowloris(running.port, ["127.0.0.2"]) as attack:
        codes = _logins(running.port)
    assert codes == [0] * 10, codes
    assert attack.opened >= SLOTS
    figures = running.figures()
    assert figures.connections_refused >= 1  # past 4 logins at once from 127.0.0.2


def test_a_slowloris_over_many_addresses_gives_way_to_logins(running: Running) -> None:
    addresses = [f"127.0.0.{n}" for n in range(2, 2 + SLOTS)]  # 1 each: no address cap
    with Slowloris(running.port, addresses) as attack:
        codes = _logins(running.port)
    assert codes == [0] * 10, codes
    assert attack.opened >= SLOTS
    assert running.figures().connections_evicted >= 10  # one attacker's socket per login
