"""Whatever a SQL client does, the member daemon keeps publishing on time (issue 22).

One real daemon (simulated source, real Mosquitto) with [sql] on, TLS
required and an empty history, and every row of issue 22's attack table run
against its endpoint at once (`sqlattacks`), each bounded in time and each
checked for the refusal or answer it got: the 3-way information_schema join,
16 MiB packets before login from several sockets, `range(0,1000000)` per
row, a 200 KB statement, LATERAL/APPLY table functions and a path-named CTE,
a login claiming CLIENT_SSL without TLS, 16 idle sockets, password guessing
for the whole run, a 20 MB row, DESCRIBE after USE and queries before the
first history segment. Meanwhile the test measures, independently of the
daemon's own figures: the gaps between the member's stats envelopes on the
broker (their `sent_us`, <= 1.5 periods), the sd_notify WATCHDOG=1 pings on
a datagram socket of its own (never more than 1.5 ping intervals apart),
and the daemon's (not the SQL child's) resident memory from /proc (within
+50 MB of its idle figure). The endpoint's process itself, its restarts
and limits: test_sql_child_restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from protocol import decode_envelope
from tests.faults import sqlattacks
from tests.fixtures.broker import Broker, make_test_ca
from tests.fixtures.daemons import GROUP, M1
from tests.fixtures.sql_daemon import PASSWORD, PERIOD, WATCHDOG_S, sql_daemon, sql_port, wake

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # bounds a delay: run alone

ATTACK_S = 20.0  # how long the attacks last (each bounded by it)
RSS_MARGIN = 50 << 20
MiB = 1 << 20
HANDSHAKE_S = 4.0  # the idle sockets' slots come back by then; a slowed login waits <= 2 s
Attack = Callable[[sqlattacks.Target, float], None]


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    return make_test_ca(tmp_path_factory.mktemp("ca"))


# -- measuring -----------------------------------------------------------------


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


class Measure:
    """Envelope times, watchdog ping times and the daemon's RSS, each in its own thread."""

    def __init__(self, broker: Broker, notify: socket.socket, pid: int, seconds: float) -> None:
        self.seconds = seconds
        self.subscribed = threading.Event()
        self.stop = threading.Event()
        self.sent_us: list[int] = []
        self.seqs: list[int] = []
        self.pings: list[float] = []
        self.rss: list[int] = []
        topic = f"grstats/v1/{GROUP}/{M1}/stats"
        self._threads = [
            threading.Thread(target=lambda: asyncio.run(self._envelopes(broker, topic))),
            threading.Thread(target=self._watchdog, args=(notify,)),
            threading.Thread(target=self._memory, args=(pid,)),
        ]

    def __enter__(self) -> Measure:
        for t in self._threads:
            t.start()
        assert self.subscribed.wait(10), "no subscription"
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(timeout=self.seconds + 10)

    async def _envelopes(self, broker: Broker, topic: str) -> None:
        # one deadline for the whole iteration: aiomqtt's iterator can lose a
        # message when a wait on it times out, so it is never cancelled midway
        async with aiomqtt.Client(broker.host, broker.port) as client:
            await client.subscribe(topic)
            self.subscribed.set()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.seconds):
                    async for message in client.messages:
                        payload = message.payload
                        if not message.retain and isinstance(payload, bytes) and payload:
                            envelope = decode_envelope(payload)
                            self.sent_us.append(envelope.sent_us)
                            self.seqs.append(envelope.seq)

    def _watchdog(self, sock: socket.socket) -> None:
        sock.settimeout(0.2)
        while not self.stop.is_set():
            with contextlib.suppress(TimeoutError):
                if b"WATCHDOG=1" in sock.recv(4096):
                    self.pings.append(time.monotonic())

    def _memory(self, pid: int) -> None:
        while not self.stop.wait(0.1):
            with contextlib.suppress(OSError):
                self.rss.append(_rss(pid))

    def max_envelope_gap(self) -> float:
        return max((b - a) / 1e6 for a, b in itertools.pairwise(self.sent_us))

    def max_ping_gap(self) -> float:
        return max(b - a for a, b in itertools.pairwise(self.pings))


# -- the daemon ------------------------------------------------------------------


# -- the attacks (each returns by `until`, whatever the endpoint does) -----------


def _run_attacks(target: sqlattacks.Target, attacks: list[Attack]) -> None:
    until = time.monotonic() + ATTACK_S
    threads = [threading.Thread(target=a, args=(target, until), daemon=True) for a in attacks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=ATTACK_S + 30)
    assert not any(t.is_alive() for t in threads), "an attack outlived its bound"


# -- tests -----------------------------------------------------------------------


def test_the_daemon_publishes_on_time_under_every_sql_attack_at_once(
    broker: Broker, tmp_path: Path, ca: tuple[Path, Path, Path]
) -> None:
    history = tmp_path / "history"
    tls: dict[str, Any] = {
        "tls_cert_file": str(ca[1]),
        "tls_key_file": str(ca[2]),
        "tls_required": True,
    }
    # no history segment is written while the attacks last: the first comes at flush_interval
    hist = {"dir": str(history), "flush_interval": 600.0}
    with sql_daemon(broker, tmp_path, history=hist, handshake_timeout=HANDSHAKE_S, **tls) as (
        daemon,
        notify,
    ):
        target = sqlattacks.Target(sql_port(daemon), PASSWORD, ca[0], tmp_path / "sql.password")
        wake(daemon, ca[0])  # the endpoint's process runs (it starts on the first connection)
        pid = daemon.process.pid
        idle = max(_rss(pid) for _ in range(5) if time.sleep(0.2) is None)
        attacks: list[Attack] = [
            sqlattacks.idle_sockets,  # first: they take the slots the others then wait for
            sqlattacks.information_schema_join,
            sqlattacks.range_per_row,
            sqlattacks.long_statement,
            *[sqlattacks.big_packets_before_login] * 4,
            sqlattacks.table_functions,
            sqlattacks.ssl_claimed_without_tls,
            sqlattacks.password_guessing,
            sqlattacks.big_row,
            sqlattacks.describe_after_use,
            sqlattacks.before_first_segment,
        ]
        with Measure(broker, notify, pid, ATTACK_S) as measured:
            _run_attacks(target, attacks)
        assert daemon.alive()
        assert not list(history.rglob("*.parquet"))  # every query ran before the first segment
        sqlattacks.assert_outcomes(target)
        print(  # the figures for the record (pytest -s)
            f"envelope gap {measured.max_envelope_gap() / PERIOD:.2f} periods, watchdog gap "
            f"{measured.max_ping_gap() / (WATCHDOG_S / 2):.2f} intervals, daemon RSS "
            f"{idle / MiB:.1f} -> {max(measured.rss) / MiB:.1f} MiB"
        )
        assert len(measured.sent_us) >= ATTACK_S / PERIOD - 3, measured.sent_us
        assert measured.max_envelope_gap() <= 1.5 * PERIOD, measured.sent_us
        assert len(measured.pings) >= ATTACK_S / (WATCHDOG_S / 2) - 3, measured.pings
        assert measured.max_ping_gap() <= 1.5 * WATCHDOG_S / 2, measured.pings
        assert max(measured.rss) <= idle + RSS_MARGIN, (idle, max(measured.rss))
        assert any(e.get("event") == "sql.login_failed" for e in daemon.events())
