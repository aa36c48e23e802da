"""Issue 22's attack table as functions run against a real daemon's SQL endpoint at once.

Each attack takes the `Target` and a monotonic deadline, returns by it
whatever the endpoint does, and records what it got (an error number, an
answer, a count) in `Target.outcomes` for the test to assert afterwards.
The endpoint requires TLS (`tls_required`), so clients that log in verify
the server against the test CA; attackers that never log in need no TLS.
A slot refused with 1040 (the idle sockets hold them until the handshake
timeout) is tried again until the deadline, as a real client would.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql

from tests.faults import mysqlwire

MiB = 1 << 20
TOO_MANY_CONNECTIONS = 1040
MEMBERS = "performance_schema.replication_group_members"
GUESSER = "127.0.0.2"  # its own loopback address: the throttle is per client address
IDLER = "127.0.0.3"  # the idle sockets' (logins are capped per client address)
PACKER = "127.0.0.4"  # the big packets'


@dataclass
class Target:
    """The endpoint under attack and what each attack got."""

    port: int
    password: str
    ca: Path
    secret_file: Path  # a file the endpoint's process can read, never to be served
    outcomes: dict[str, list[Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, name: str, value: Any) -> None:
        with self._lock:
            self.outcomes.setdefault(name, []).append(value)

    def connect(self, until: float, **kw: Any) -> pymysql.Connection:  # type: ignore[type-arg]
        """A TLS client connection, tried again on 1040 until the deadline."""
        password = kw.pop("password", self.password)
        while True:
            left = max(1, int(until - time.monotonic()))
            try:
                return pymysql.connect(
                    host="127.0.0.1", port=self.port, user="grstats",
                    password=password, ssl={"ca": str(self.ca)},
                    connect_timeout=left, read_timeout=left, write_timeout=left, **kw,
                )  # fmt: skip
            except pymysql.MySQLError as exc:
                if exc.args[0] != TOO_MANY_CONNECTIONS or time.monotonic() >= until:
                    raise
                time.sleep(0.2)

    def query(self, until: float, sql: str, *before: str) -> tuple[int, Any]:
        """(0, rows) or (MySQL error number, message); 2013 when the deadline ended it, -1
        when the client itself broke on the reply."""
        try:
            with self.connect(until) as conn, conn.cursor() as cur:
                for statement in before:
                    cur.execute(statement)
                cur.execute(sql)
                return 0, cur.fetchall()
        except pymysql.MySQLError as exc:
            return int(exc.args[0]), str(exc.args[1] if len(exc.args) > 1 else exc)
        except OSError as exc:
            return 2013, repr(exc)
        except Exception as exc:  # a client that broke on the reply (it was: 2027)
            return -1, repr(exc)[:200]


def information_schema_join(t: Target, until: float) -> None:
    sql = (
        "SELECT count(*) FROM information_schema.columns a, information_schema.columns b, "
        "information_schema.tables c"
    )
    t.record("information_schema_join", t.query(until, sql))
    for table in ("columns", "tables"):  # the factors, each counted on its own
        t.record(table, t.query(until, f"SELECT count(*) FROM information_schema.{table}"))


def range_per_row(t: Target, until: float) -> None:
    t.record("range_per_row", t.query(until, f"SELECT range(0,1000000) FROM {MEMBERS}"))


def long_statement(t: Target, until: float) -> None:
    values = ", ".join(f"'{i:08d}'" for i in range(200_000 // 12))  # ~200 KB
    sql = f"SELECT MEMBER_ID FROM {MEMBERS} WHERE MEMBER_ID IN ({values})"
    t.record("long_statement", t.query(until, sql))


def table_functions(t: Target, until: float) -> None:
    """LATERAL read_blob, CROSS/OUTER APPLY and a path-named CTE, aimed at the password file."""
    path = str(t.secret_file)
    for sql in (
        f"SELECT * FROM {MEMBERS}, LATERAL read_blob('{path}')",
        f"SELECT * FROM {MEMBERS} CROSS APPLY read_text('{path}')",
        f"SELECT * FROM {MEMBERS} OUTER APPLY read_blob('{path}')",
        f"WITH `{path}` AS (SELECT 1) SELECT * FROM `{path}`",
    ):
        t.record("table_functions", t.query(until, sql))


def big_row(t: Target, until: float) -> None:
    """A 20 MB row: split into 16 MiB packets, read back whole by PyMySQL."""
    code, rows = t.query(until, "SELECT REPEAT('x', 20000000) AS big, 7 AS n")
    if code == 0:
        rows = [(len(rows[0][0]), rows[0][0].strip("x"), rows[0][1])]
    t.record("big_row", (code, rows))


def describe_after_use(t: Target, until: float) -> None:
    columns = t.query(until, "SELECT * FROM grstats.history LIMIT 0")  # for the names
    with contextlib.suppress(pymysql.MySQLError, OSError), t.connect(until) as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM grstats.history LIMIT 0")
            names = [d[0] for d in cur.description]
        t.record("history_columns", (columns[0], names))
    t.record("describe_after_use", t.query(until, "DESCRIBE history", "USE grstats"))


def before_first_segment(t: Target, until: float) -> None:
    """The history directory has no Parquet file yet (flush_interval past the test): WAL only."""
    t.record("before_first_segment", t.query(until, "SELECT 1"))
    t.record("before_first_segment", t.query(until, "SELECT COUNT(*) FROM grstats.history"))


def ssl_claimed_without_tls(t: Target, until: float) -> None:
    """A full login packet with CLIENT_SSL set and no TLS started: 3159 under tls_required."""
    while time.monotonic() < until:
        raw = mysqlwire.connect(t.port)
        try:
            first = raw.read_packet()
            if mysqlwire.error_code(first) == TOO_MANY_CONNECTIONS:
                time.sleep(0.2)
                continue
            raw.handshake(first)
            caps = mysqlwire.BASE_CAPABILITIES | mysqlwire.CLIENT_SSL
            reply = raw.login("grstats", t.password, caps)
            t.record("ssl_claimed_without_tls", mysqlwire.error_code(reply))
            return
        except (mysqlwire.Closed, OSError) as exc:
            t.record("ssl_claimed_without_tls", repr(exc))
            return
        finally:
            raw.close()


def password_guessing(t: Target, until: float) -> None:
    """Wrong passwords over TLS from one address, one after another, for the whole attack."""
    attempts = 0
    while time.monotonic() < until:
        try:
            t.connect(until, password=f"guess{attempts}", bind_address=GUESSER).close()
            code: int | str = 0
        except pymysql.MySQLError as exc:
            code = int(exc.args[0])
        except OSError as exc:
            code = repr(exc)
        attempts += 1
        t.record("password_guessing", code)


def big_packets_before_login(t: Target, until: float) -> None:
    """16 MiB packets (length 0xFFFFFF: "more follows") instead of a login, 32 MiB a socket."""
    while time.monotonic() < until:
        raw = mysqlwire.connect(t.port, timeout=5, source=PACKER)
        try:
            first = raw.read_packet()
            if mysqlwire.error_code(first) == TOO_MANY_CONNECTIONS:
                time.sleep(0.2)
                continue
            raw.handshake(first)
            chunk = bytes(MiB)
            with contextlib.suppress(OSError):  # refused and closed while still sending
                for seq in (1, 2):
                    raw.sock.sendall(b"\xff\xff\xff" + bytes([seq]))
                    left = 0xFFFFFF
                    while left and time.monotonic() < until:
                        raw.sock.sendall(chunk[: min(left, MiB)])
                        left -= min(left, MiB)
            try:
                code: int | str | None = mysqlwire.error_code(raw.read_packet())
            except (mysqlwire.Closed, OSError) as exc:
                code = type(exc).__name__
            t.record("big_packets_before_login", (code, mysqlwire.wait_closed(raw, 5.0)))
            return
        finally:
            raw.close()


def idle_sockets(t: Target, until: float) -> None:
    """16 sockets that connect and say nothing: each ended by the endpoint, by the deadline."""
    socks = []
    for _ in range(16):
        with contextlib.suppress(OSError):
            socks.append(mysqlwire.connect(t.port, timeout=5, source=IDLER))
    try:
        closed = [mysqlwire.wait_closed(r, max(0.1, until - time.monotonic())) for r in socks]
        t.record("idle_sockets", (len(socks), sum(closed)))
    finally:
        for r in socks:
            r.close()


def assert_outcomes(t: Target) -> None:
    """What each attack of issue 22's table got (the issue's measurement in the comments)."""
    got = t.outcomes
    # 3-way information_schema join (was: the loop frozen 39 s): counted off the loop under
    # the limits, equal to the product of its factors, or stopped by query_timeout
    ((code, answer),) = got["information_schema_join"]
    factors = got["columns"] + got["tables"]
    assert [c for c, _ in factors] == [0, 0], factors
    columns, tables = [rows[0][0] for _, rows in factors]
    assert (code, answer) in ((0, ((columns**2 * tables,),)), (3024, answer)), answer
    # 16 MiB packets before login (was: joined uncapped, +1.3 GB a socket): 1153, closed
    packets = got["big_packets_before_login"]
    assert len(packets) == 4 and all(closed for _, closed in packets), packets
    assert {c for c, _ in packets} <= {1153, "Closed", "ConnectionResetError"}, packets
    assert any(c == 1153 for c, _ in packets), packets
    # range() per row (was: 315 MB sent past a 64 MiB cap): not an allowed function
    assert [c for c, _ in got["range_per_row"]] == [1305], got["range_per_row"]
    # a 200 KB statement (was: parsed on the loop, 5-6 s stall): refused before parsing
    assert [c for c, _ in got["long_statement"]] == [1153], got["long_statement"]
    # LATERAL read_blob, CROSS/OUTER APPLY, a path-named CTE (was: files read): refused
    functions = got["table_functions"]
    assert len(functions) == 4 and {c for c, _ in functions} <= {1064, 1305}, functions
    assert t.password not in repr(functions)
    # CLIENT_SSL in the login packet, no TLS started (was: tls_required passed): 3159
    assert got["ssl_claimed_without_tls"] == [3159], got["ssl_claimed_without_tls"]
    # 16 idle sockets (was: every slot held for minutes): each ended by handshake_timeout
    assert got["idle_sockets"] == [(16, 16)], got["idle_sockets"]
    # password guessing (was: 2,600-3,200 a second): 3 free, then 0.25 s doubling to
    # handshake_timeout / 2 = 2 s: 3 + 0.25 + 0.5 + 1 + 2 * 8 <= 20 s, so at most 3 + 4 + 8
    # answered plus one cut by the deadline (2013)
    guesses = got["password_guessing"]
    assert set(guesses) <= {1045, 2013} and guesses.count(1045) >= 4, guesses[:20]
    assert len(guesses) <= 3 + 4 + 8 + 1, f"{len(guesses)} guesses: {guesses[:20]}"
    # a 20 MB row (was: ERROR 2027 malformed packet): read back whole, the next column too
    assert got["big_row"] == [(0, [(20_000_000, "", 7)])], got["big_row"]
    # DESCRIBE history after USE grstats (was: 1064 with a parser dump): the table's columns
    ((code, names),) = got["history_columns"]
    ((described, rows),) = got["describe_after_use"]
    assert code == described == 0 and [r[0] for r in rows] == names and names, rows
    # before the first history segment (was: every statement 1105): answered; the rows
    # recorded so far are read from the write-ahead log (how many depends on the timing)
    ((one, first), (code, ((count,),))) = got["before_first_segment"]
    assert (one, first, code) == (0, ((1,),), 0) and isinstance(count, int), got
