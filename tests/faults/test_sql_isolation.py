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
+50 MB of its idle figure). Killing the child by its PID shows in /healthz
and the child is started again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shutil
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pymysql
import pytest

from protocol import decode_envelope
from tests.faults import sqlattacks
from tests.fixtures.broker import Broker, make_test_ca
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    DaemonProc,
    daemon_config,
    spawn_daemon,
    wait_for,
    wait_started,
)

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # bounds a delay: run alone

PASSWORD = "s3cret"
PERIOD = 1.0
WATCHDOG_S = 2.0  # WATCHDOG_USEC: the daemon pings every WATCHDOG_S / 2
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


@contextlib.contextmanager
def _sql_daemon(
    broker: Broker,
    tmp_path: Path,
    period: float = PERIOD,
    history: dict[str, object] | None = None,
    **sql: object,
) -> Iterator[tuple[DaemonProc, socket.socket]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    config = daemon_config(broker.port, M1, [M1, M2], period=period)
    if history:
        config["history"] = history
    # a 2 GiB address space keeps the shared test machine safe from the attacks
    config["sql"] = {
        "listen": "127.0.0.1:0",
        "password_file": str(secret),
        "max_address_space": 2 << 30,
        **sql,
    }
    name = f"grstats-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind("\0" + name)
        env = {"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))}
        daemon = wait_started(spawn_daemon(tmp_path / "d", config, env=env))
        try:
            wait_for(lambda: _health(daemon).get("sql", {}).get("serving"), 60, "SQL serving")
            yield daemon, notify
        finally:
            child = 0
            with contextlib.suppress(OSError, ValueError, KeyError, AssertionError):
                child = int(_health(daemon)["sql"]["pid"])
            daemon.kill9()
            if child:  # no endpoint outlives its daemon, whatever state it was in
                wait_for(lambda: _gone(child), 10, f"the SQL child {child} to end with the daemon")


def _health(daemon: DaemonProc) -> dict[str, Any]:
    _, body = daemon.get("/healthz")
    assert isinstance(body, dict)
    return body


def _sql_port(daemon: DaemonProc) -> int:
    for event in daemon.events():
        if event.get("event") == "daemon.started":
            return int(event["sql_port"])
    raise AssertionError("no daemon.started event")


# -- the attacks (each returns by `until`, whatever the endpoint does) -----------


def _query(port: int, until: float, sql: str) -> None:
    left = max(1, int(until - time.monotonic()))
    with contextlib.suppress(pymysql.MySQLError, OSError):
        conn = pymysql.connect(
            host="127.0.0.1",
            port=port,
            user="grstats",
            password=PASSWORD,
            connect_timeout=left,
            read_timeout=left,
            write_timeout=left,
        )
        with conn, conn.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()


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
    with _sql_daemon(broker, tmp_path, history=hist, handshake_timeout=HANDSHAKE_S, **tls) as (
        daemon,
        notify,
    ):
        target = sqlattacks.Target(_sql_port(daemon), PASSWORD, ca[0], tmp_path / "sql.password")
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


def test_a_killed_sql_child_is_restarted_and_healthz_says_so(
    broker: Broker, tmp_path: Path
) -> None:
    with _sql_daemon(broker, tmp_path) as (daemon, _):
        port = _sql_port(daemon)
        first = _health(daemon)["sql"]
        assert first["process"] == "up" and first["restarts"] == 0, first
        child = int(first["pid"])
        assert child != daemon.process.pid
        limits = Path(f"/proc/{child}/limits").read_text()
        assert re.search(rf"Max address space\s+{2 << 30}\s+{2 << 30}\s", limits), limits
        assert re.search(r"Max cpu time\s+\d+\s+\d+\s", limits), limits  # the default 3600 s
        assert int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[16]) == 10
        _select_server_uuid(port)  # one query before: the daemon's total must keep it
        queries = "grstats_sql_queries_total"
        wait_for(lambda: _metric(daemon, queries) == 1, 30, "the first child's query in /metrics")
        os.kill(child, signal.SIGKILL)

        def restarted() -> dict[str, Any] | None:
            sql = _health(daemon)["sql"]
            return sql if sql["restarts"] == 1 and sql["serving"] else None

        sql = wait_for(restarted, 60, "the SQL child to be started again")
        assert sql["last_exit"] == "killed by SIGKILL", sql
        assert sql["pid"] not in (0, child), sql
        _select_server_uuid(port)  # the same port, served by the new child
        wait_for(lambda: _metric(daemon, queries) == 2, 30, "both children's queries in /metrics")
        assert _metric(daemon, "grstats_sql_process_restarts_total") == 1
        assert daemon.alive()


def _select_server_uuid(port: int) -> None:
    with (
        pymysql.connect(
            host="127.0.0.1", port=port, user="grstats", password=PASSWORD, connect_timeout=10
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute("SELECT @@server_uuid")
        assert cur.fetchone() == (M1,)


def test_a_child_past_its_cpu_limit_is_restarted_with_the_reason(
    broker: Broker, tmp_path: Path
) -> None:
    endless = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
        "WHERE n < 1000000000000) SELECT COUNT(*) FROM r"
    )
    with _sql_daemon(broker, tmp_path, max_cpu_seconds=3, query_timeout=120) as (daemon, _):
        port = _sql_port(daemon)
        child = int(_health(daemon)["sql"]["pid"])
        thread = threading.Thread(
            target=_query, args=(port, time.monotonic() + 60, endless), daemon=True
        )
        thread.start()

        def restarted() -> dict[str, Any] | None:
            sql = _health(daemon)["sql"]
            return sql if sql["restarts"] >= 1 and sql["pid"] not in (0, child) else None

        sql = wait_for(restarted, 90, "the SQL child to pass its CPU limit and start again")
        assert sql["last_exit"] == "CPU time limit reached (max_cpu_seconds)", sql
        thread.join(70)
        assert daemon.alive()


def _metric(daemon: DaemonProc, sample: str) -> float:
    _, body = daemon.get("/metrics")
    for line in body.decode().splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0


def test_a_stopped_child_costs_dropped_snapshots_then_a_restart_never_a_blocked_loop(
    broker: Broker, tmp_path: Path
) -> None:
    with _sql_daemon(broker, tmp_path, period=0.25, child_timeout=20) as (daemon, _):
        child = int(_health(daemon)["sql"]["pid"])
        os.kill(child, signal.SIGSTOP)  # alive, reads nothing: the pipe fills
        try:

            def unresponsive() -> list[str] | None:
                details = _health(daemon)["details"]
                return details if any("process unresponsive" in d for d in details) else None

            wait_for(unresponsive, 30, "/healthz to call the stopped child unresponsive")
            assert _metric(daemon, 'grstats_sql_process_state{state="unresponsive"}') == 1
            dropped = 'grstats_sql_snapshots_dropped_total{reason="child_slow"}'
            wait_for(lambda: _metric(daemon, dropped) >= 1, 30, "a snapshot dropped, child slow")
            # and the daemon goes on publishing (0.25 s period: 8 in 2 s)
            published = daemon.counters()["messages_published"]
            wait_for(
                lambda: daemon.counters()["messages_published"] >= published + 8,
                10,
                "the daemon to publish while the child is stopped",
            )

            def restarted() -> dict[str, Any] | None:
                sql = _health(daemon)["sql"]
                return sql if sql["restarts"] == 1 and sql["serving"] else None

            sql = wait_for(restarted, 60, "the silent child to be killed and started again")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        assert sql["last_exit"].startswith("killed by SIGKILL (no figures for "), sql


def test_live_tables_past_the_snapshot_cap_are_refused_counted_and_degrade_health(
    broker: Broker, tmp_path: Path
) -> None:
    with _sql_daemon(broker, tmp_path, max_snapshot_bytes=1024) as (daemon, _):

        def stale() -> dict[str, Any] | None:
            health = _health(daemon)
            return health if "sql_stale" in health["reasons"] else None

        health = wait_for(stale, 30, "/healthz to report sql_stale")
        assert any(
            d.startswith("sql: the live tables are not sent (too_large: ")
            for d in health["details"]
        ), health
        assert health["sql"]["serving"], health  # the history side still serves
        too_large = 'grstats_sql_snapshots_dropped_total{reason="too_large"}'
        assert _metric(daemon, too_large) >= 1


def test_the_child_ends_with_the_daemon_on_sigterm_and_on_sigkill(
    broker: Broker, tmp_path: Path
) -> None:
    for stop in ("terminate", "kill9"):
        with _sql_daemon(broker, tmp_path / stop) as (daemon, _):
            child = int(_health(daemon)["sql"]["pid"])
            started = time.monotonic()
            if stop == "terminate":
                assert daemon.terminate() == 0
                assert time.monotonic() - started < 6.0  # the unit's TimeoutStopSec margin
            else:
                daemon.kill9()  # the child asked the kernel for SIGKILL when its parent dies
            wait_for(lambda pid=child: _gone(pid), 10, "the child gone")


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie not yet reaped by init)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
