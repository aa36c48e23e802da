"""One asyncmy connection to the local server: connect, back off, query, drop.

Strategy: the connection is opened lazily by `ensure()` and dropped by `lost()`
after any failure; a reconnect waits a capped, jittered exponential backoff
(``retry_initial`` doubling up to ``retry_max``), except right after a working
session broke (killed, recycled), when one immediate retry is allowed. There
is no background task: the source's `sample()` drives everything.

A query the server rejects (missing table or variable, missing privilege) is
None, logged once per connection; a client-side error or a session-ending
server error raises `PollFailed` (the connection is gone).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import asyncmy  # the only asyncmy importers: this package (STYLE.md §4)
import asyncmy.errors
import structlog

from grstats.sources.mysql.settings import MySQLSettings, parse_dsn
from grstats.sources.mysql.values import PollFailed, Result, errno_of

log = structlog.get_logger("grstats.sources.mysql")

# MySQL client-side error numbers (CR_*) live in 2000-2999: the connection is gone.
# These server errors also end the session (shutdown, KILL, wait_timeout expiry).
_CONNECTION_ENDING_ERRORS = frozenset({1053, 1927, 3169, 4031})
_ER_UNKNOWN_SYSTEM_VARIABLE = 1193
_ER_NO_SUCH_TABLE = 1146  # expected for WL#15620's tables before 9.7: not logged


class Connection:
    """The source's connection to its server.

    Args:
        settings: DSN, password, timeouts and backoff.
    """

    def __init__(self, settings: MySQLSettings) -> None:
        self._settings = settings
        self.user, self.host, self.port, self._params = parse_dsn(settings.dsn)
        self.conn: asyncmy.Connection | None = None
        self.closed = False
        self._ever_connected = False
        self._failures = 0  # consecutive failed connect attempts (backoff exponent)
        self._next_attempt = 0.0  # loop time before which no connect is tried
        self._logged_errors: set[tuple[str, int]] = set()
        self.utc_session = False  # the session's time_zone is '+00:00'

    @property
    def connected(self) -> bool:
        """True while a connection to the server is open."""
        return self.conn is not None and bool(self.conn.connected)

    async def ensure(self) -> asyncmy.Connection | None:
        """The open connection, a new one if the backoff allows, else None (logged)."""
        if self.connected:
            return self.conn
        loop = asyncio.get_running_loop()
        if self.closed or loop.time() < self._next_attempt:
            return None
        s = self._settings
        try:
            async with asyncio.timeout(s.connect_timeout):
                conn = await asyncmy.connect(
                    host=self.host,
                    port=self.port,
                    user=self.user,
                    password=s.password,
                    unix_socket=self._params.get("unix_socket"),
                    charset=self._params.get("charset", "utf8mb4"),
                    connect_timeout=s.connect_timeout,
                    autocommit=True,
                    program_name="grstats",
                )
        except (TimeoutError, OSError, asyncmy.errors.MySQLError) as exc:
            self._log_connect_failed(
                self._schedule_retry(), errno_of(exc), str(exc) or type(exc).__name__
            )
            return None
        self.conn = conn
        self._logged_errors.clear()
        self.utc_session = False
        event = "mysql.reconnected" if self._ever_connected else "mysql.connected"
        log.info(event, host=self.host, port=self.port, attempts=self._failures + 1)
        self._ever_connected = True
        self._failures = 0
        return conn

    def _schedule_retry(self) -> float:
        """Count a failure; the next connect waits a capped, jittered exponential delay."""
        self._failures += 1
        s = self._settings
        ceiling = min(s.retry_max, s.retry_initial * 2 ** min(self._failures - 1, 32))
        delay = float(ceiling * random.uniform(0.5, 1.0))
        self._next_attempt = asyncio.get_running_loop().time() + delay
        return delay

    def _log_connect_failed(self, delay: float, errno: int | None, error: str) -> None:
        log.warning(
            "mysql.connect_failed",
            host=self.host,
            port=self.port,
            attempt=self._failures,
            retry_in=round(delay, 3),
            errno=errno,
            error=error,
        )

    def lost(self, reason: str, exc: BaseException | None, *, retry_now: bool) -> None:
        """Drop the connection after a failure; reconnect at once or after the backoff."""
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()  # a timed-out or broken stream cannot be reused
        delay = 0.0
        if retry_now:
            self._next_attempt = 0.0
        else:
            delay = self._schedule_retry()
        if conn is None:  # the deadline hit while connecting
            self._log_connect_failed(delay, None, reason)
            return
        log.warning(
            "mysql.disconnected",
            host=self.host,
            port=self.port,
            reason=reason,
            error=None if exc is None else str(exc.__cause__ or exc),
        )

    async def close(self) -> None:
        """Close the connection (QUIT, bounded by ``connect_timeout``); idempotent."""
        self.closed = True
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            async with asyncio.timeout(self._settings.connect_timeout):
                await conn.ensure_closed()
        except (TimeoutError, OSError, asyncmy.errors.MySQLError):
            conn.close()
        log.info("mysql.closed", host=self.host, port=self.port)

    async def query(
        self, conn: asyncmy.Connection, what: str, sql: str, *, missing_ok: bool = False
    ) -> Result | None:
        """Run one SELECT; None when the server rejected it (logged once per connection).

        Raises:
            PollFailed: the connection is broken or ending.
        """
        out: list[Result | None] = []
        await self.batch(conn, ((what, sql),), out, missing_ok=what if missing_ok else "")
        return out[0]

    async def batch(
        self,
        conn: asyncmy.Connection,
        queries: Sequence[tuple[str, str]],
        out: list[Result | None],
        *,
        missing_ok: str = "",
    ) -> None:
        """Run `queries` (what, SQL) in one round trip; their results appended to `out`.

        The statements go in one COM_QUERY joined by ';' (asyncmy always asks
        for CLIENT_MULTI_STATEMENTS), and the server sends one result set per
        statement, in order, SERVER_MORE_RESULTS_EXISTS on all but the last
        (MySQL's C API manual, "Multiple Statement Execution Support"). A
        statement the server rejects ends the sequence with its error packet
        and the statements after it are not executed: its result is None (as
        `query`'s: logged once per connection) and the rest are sent again in
        the next round trip, so every statement gets the answer it would have
        had alone. Each result is appended as soon as it is read: a deadline
        that fires in the middle keeps what was read before it. The statement
        named `missing_ok` may find no table (ER_NO_SUCH_TABLE: None, not logged).

        Raises:
            PollFailed: the connection is broken or ending.
        """
        end = len(out) + len(queries)
        while len(out) < end:
            todo = queries[len(queries) - (end - len(out)) :]
            try:
                async with conn.cursor() as cur:
                    await cur.execute(";".join(sql for _, sql in todo))
                    while True:
                        rows: list[Sequence[Any]] = list(await cur.fetchall())
                        names = [str(d[0]).upper() for d in (cur.description or ())]
                        out.append((names, rows))
                        if len(out) == end or not await cur.nextset():
                            break
            except asyncmy.errors.MySQLError as exc:
                what = _what(queries, out, end)
                self._rejected(what, exc, missing_ok=bool(missing_ok) and what == missing_ok)
                out.append(None)
            except OSError as exc:
                raise PollFailed(_what(queries, out, end)) from exc
            else:
                if len(out) < end:  # fewer result sets than statements: cannot happen
                    raise PollFailed(_what(queries, out, end))

    def _rejected(self, what: str, exc: asyncmy.errors.MySQLError, missing_ok: bool) -> None:
        """Log a rejected statement once per connection; raise `PollFailed` when
        the error ends the session or comes from the client."""
        code = errno_of(exc)
        if code is None or 2000 <= code < 3000 or code in _CONNECTION_ENDING_ERRORS:
            raise PollFailed(what) from exc
        if missing_ok and code == _ER_NO_SUCH_TABLE:
            return
        if (what, code) not in self._logged_errors:
            self._logged_errors.add((what, code))
            level = log.info if code == _ER_UNKNOWN_SYSTEM_VARIABLE else log.warning
            level("mysql.query_rejected", query=what, errno=code, error=str(exc))


def _what(queries: Sequence[tuple[str, str]], out: list[Result | None], end: int) -> str:
    """The name of the statement whose result `out` waits for."""
    return queries[len(queries) - (end - len(out))][0]
