"""The wire side of the endpoint: mysql-mimic's server and connection with grstats' policy.

Strategy: mysql-mimic's `MysqlServer` accepts, `Connection` speaks the
protocol; the subclasses here add what the endpoint promises and the library
leaves out, each at the one place the library funnels it through:
- every error packet goes through `Connection.error`: the packet carries the
  `MysqlError`'s own code (the library sends 1043 for any failed handshake)
  and is counted by MySQL error number (`WireStats.errors`);
- the login (`_start`, the library's with a deadline): the whole
  handshake must finish within `handshake_timeout` (1043, counted); a failed
  login ends the connection (the library went on to the command phase, where
  an unauthenticated client could run queries); after login the stream's
  packet cap and idle timeout switch to the command phase's
  (`stream.GuardedStream`);
- `authenticate` refuses a client that did not start TLS when TLS is
  required, before any password is checked, with MySQL's 3159
  (`require_secure_transport`) -- whatever CLIENT_SSL its login packet
  claims; it slows failed logins per client address (`logins.LoginThrottle`)
  and logs them rate-limited;
- prepared statements and their long data are bounded per connection;
- result column definitions carry MySQL's UNSIGNED flag for unsigned
  integer columns (`results.column(..., unsigned=True)`), in the text and the
  binary protocol; a `values.LargeRow` is framed in 16 MiB packets
  (`results.write_text_resultset`);
- the accept callback counts connections (open, accepted, refused at the
  cap, failed TLS handshakes) and ends a connection that failed its
  handshake quietly (a client's bad certificate is not a daemon traceback).

mysql-mimic pieces replaced rather than wrapped: `Connection._start`, the
text result writer (in `results`), `MysqlStream.read` / `start_tls` (in
`stream`), and the session's `handle_query` / information_schema (in `session`).

Invariants: `WireStats` is only touched on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import structlog
from mysql_mimic import MysqlServer, context, packets, types
from mysql_mimic.connection import Connection
from mysql_mimic.constants import KillKind
from mysql_mimic.control import TooManyConnections
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.results import ResultSet
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import ConnectionClosed, MysqlStream
from mysql_mimic.utils import aiterate, cooperative_iterate

from grstats.core.ratelimit import RateLimit
from grstats.sql.errors import (
    HANDSHAKE_ERROR,
    INSECURE_TRANSPORT,
    INSECURE_TRANSPORT_MESSAGE,
    PACKET_TOO_LARGE,
    TOO_MANY_CONNECTIONS,
    TOO_MANY_PREPARED,
)
from grstats.sql.logins import LoginThrottle
from grstats.sql.results import column_definition, write_text_resultset
from grstats.sql.stream import GuardedStream

log = structlog.get_logger("grstats.sql")


@dataclass
class WireStats:
    """The endpoint's connection counters (event loop only)."""

    open: int = 0
    accepted: int = 0
    refused: int = 0
    tls_failures: int = 0
    handshake_timeouts: int = 0
    logins_delayed: int = 0
    evicted: int = 0  # connections still logging in, ended to give a new one their slot
    errors: Counter[int] = field(default_factory=Counter)


# what a handshake fails with when the client has gone or broke off TLS
_GONE = (ssl.SSLError, ConnectionError, ConnectionClosed)


@dataclass(frozen=True, slots=True)
class WireLimits:
    """The per-connection bounds ([sql] settings).

    Attributes:
        handshake_timeout: seconds from accept to a finished login.
        idle_timeout: seconds a logged-in client may stay silent.
        max_packet: the largest client packet after login (bytes).
        max_prepared: prepared statements a connection may hold.
        max_logins_per_address: connections one client address may have logging in
            at once (more: 1040 at once).
    """

    handshake_timeout: float = 10.0
    idle_timeout: float = 600.0
    max_packet: int = (64 << 10) + (16 << 10)
    max_prepared: int = 64
    max_logins_per_address: int = 4


class _LoginRefused(ConnectionClosed):
    """A failed login: its 1045 is sent, the connection ends (MySQL ends it too)."""


class _FailureLog:
    """`sql.login_failed` at most once per interval, with the count held back."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self._limit = RateLimit(interval_s)

    def emit(self, address: str, failures: int, delay_s: float) -> None:
        held = self._limit.admit(time.monotonic())
        if held is None:
            return
        log.warning(
            "sql.login_failed", address=address, failures=failures, delay_s=delay_s, suppressed=held
        )


class GrstatsConnection(Connection):
    """A client connection with the endpoint's error codes, bounds, TLS rule and column flags."""

    def __init__(
        self,
        *args: Any,
        stats: WireStats,
        require_tls: bool,
        limits: WireLimits,
        throttle: LoginThrottle,
        failures: _FailureLog,
        address: str,
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self._stats = stats
        self._require_tls = require_tls
        self._limits = limits
        self._throttle = throttle
        self._failures = failures
        self._address = address
        self.since = time.monotonic()
        self.logged_in = False  # past its login: never ended for a new connection's slot

    @property
    def address(self) -> str:
        """The client's address."""
        return self._address

    def evict(self) -> None:
        """End this connection while it is logging in (its slot is given to a new one)."""
        cast(GuardedStream, self.stream).close()

    def error(self, **kwargs: Any) -> bytes:
        msg = kwargs.get("msg")
        if isinstance(msg, MysqlError):  # keep the error's own number, not 1043
            kwargs["code"] = msg.code
            kwargs["msg"] = msg.msg
        if not isinstance(msg, _GONE):  # a client gone mid-handshake is sent nothing
            self._stats.errors[int(kwargs.get("code", ErrorCode.UNKNOWN_ERROR))] += 1
        packet: bytes = super().error(**kwargs)
        return packet

    async def _start(self) -> None:
        # the library's, with a deadline on the whole login, a failed login ending the
        # connection (the library went on to the command phase), and the post-login bounds
        context.connection_id.set(self.connection_id)
        stream = cast(GuardedStream, self.stream)
        try:
            async with asyncio.timeout(self._limits.handshake_timeout):
                await self.connection_phase()
            await self.session.init(self)
        except TimeoutError:
            self._stats.handshake_timeouts += 1
            await self.stream.write(self.error(msg="Bad handshake", code=HANDSHAKE_ERROR))
            raise ConnectionClosed("handshake timeout") from None
        except _LoginRefused:
            raise
        except Exception as e:
            await self.stream.write(self.error(msg=e, code=ErrorCode.HANDSHAKE_ERROR))
            raise
        self.logged_in = True
        stream.max_packet = self._limits.max_packet
        stream.read_timeout = self._limits.idle_timeout
        try:
            await self.command_phase()
        except asyncio.CancelledError:
            if self._kill != KillKind.CONNECTION:  # type: ignore[has-type] # the library's
                raise
            await self.stream.write(
                self.error(msg="Session was killed", code=ErrorCode.SESSION_WAS_KILLED)
            )
            self._kill = None
        finally:
            await self.session.close()

    async def connection_phase(self) -> None:
        try:
            await super().connection_phase()
        except ssl.SSLError:
            self._stats.tls_failures += 1
            raise

    async def authenticate(self, *args: Any, **kwargs: Any) -> None:
        # TLS is what the stream did, not the CLIENT_SSL bit a login packet claims
        if self._require_tls and not cast(GuardedStream, self.stream).tls:
            raise MysqlError(INSECURE_TRANSPORT_MESSAGE, code=cast(ErrorCode, INSECURE_TRANSPORT))
        # at most half the login deadline: a slowed login can still succeed
        delay = min(self._throttle.delay(self._address), self._limits.handshake_timeout / 2)
        if delay:
            self._stats.logins_delayed += 1
            await asyncio.sleep(delay)
        self.session.username = None
        await super().authenticate(*args, **kwargs)  # sends the OK or the 1045
        if self.session.username is None:
            failures = self._throttle.failed(self._address)
            self._failures.emit(self._address, failures, self._throttle.delay(self._address))
            raise _LoginRefused("access denied")
        self._throttle.succeeded(self._address)

    async def handle_stmt_prepare(self, data: bytes) -> None:
        if len(self.prepared_stmts) >= self._limits.max_prepared:
            raise MysqlError(
                f"Can't create more than max_prepared_stmt_count statements "
                f"(current value: {self._limits.max_prepared})",
                code=cast(ErrorCode, TOO_MANY_PREPARED),
            )
        await super().handle_stmt_prepare(data)

    async def handle_stmt_send_long_data(self, data: bytes) -> None:
        # the library joins a parameter's pieces without a bound: at most max_packet in all
        await super().handle_stmt_send_long_data(data)
        statements = self.prepared_stmts.values()
        held = sum(len(b) for st in statements for b in (st.param_buffers or {}).values())
        if held > self._limits.max_packet:
            for st in statements:
                st.param_buffers = None
            raise MysqlError(
                "Parameter data bigger than 'max_allowed_packet' bytes",
                code=cast(ErrorCode, PACKET_TOO_LARGE),
            )

    async def handle_change_user(self, data: bytes) -> None:
        try:
            await super().handle_change_user(data)
        except _LoginRefused:  # its 1045 is sent; the connection ends like a failed login
            cast(GuardedStream, self.stream).close()

    async def write_text_resultset(self, result_set: ResultSet) -> None:
        # the library's, with the columns' flags in their definitions (`results`)
        await write_text_resultset(self, result_set)

    async def handle_stmt_execute(self, data: bytes) -> None:
        # the library's, with the columns' flags in their definitions
        execute = packets.parse_com_stmt_execute(
            capabilities=self.capabilities,
            client_charset=self.client_charset,
            data=data,
            get_stmt=self.get_stmt,
        )
        execute.stmt.param_buffers = None
        result_set = await self.query(execute.sql, execute.query_attrs)
        if not result_set:
            await self.stream.write(self.ok())
            return
        await self.stream.write(types.uint_len(len(result_set.columns)))
        for column in result_set.columns:
            await self.stream.write(column_definition(self, column))

        async def gen_rows() -> AsyncIterator[bytes]:
            async for r in cooperative_iterate(aiterate(result_set.rows)):
                yield packets.make_binary_resultrow(r, result_set.columns)

        rows = gen_rows()
        if execute.use_cursor:
            execute.stmt.cursor = rows
            await self.stream.write(
                self.ok_or_eof(flags=types.ServerStatus.SERVER_STATUS_CURSOR_EXISTS)
            )
            return
        if not self.deprecate_eof():
            await self.stream.write(self.eof())
        async for row in rows:
            await self.stream.write(row)
        await self.stream.write(self.ok_or_eof())


class GrstatsMysqlServer(MysqlServer):
    """mysql-mimic's server accepting `GrstatsConnection`s, counted in `stats`."""

    def __init__(
        self,
        *,
        session_factory: Callable[[], BaseSession],
        require_tls: bool,
        stats: WireStats,
        limits: WireLimits,
        **kw: Any,
    ) -> None:
        super().__init__(session_factory=session_factory, **kw)
        self._require_tls = require_tls
        self.stats = stats
        self.limits = limits
        self.throttle = LoginThrottle()
        self._failures = _FailureLog()

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one accepted connection (`listener.Acceptor`'s handler) until it ends."""
        await self._client_connected_cb(reader, writer)

    async def _admit(self, connection: GrstatsConnection) -> int:
        """A slot for `connection`, or TooManyConnections.

        A client address may have `max_logins_per_address` connections logging in
        at once; when every slot is taken, the connection logging in for the
        longest is ended for the new one (a slow or silent login gives way; a
        logged-in session never does), so sockets that never log in cannot keep
        logins out, from one address or many.
        """
        logging_in = [
            c
            for c in cast(Any, self.control).connections()
            if isinstance(c, GrstatsConnection) and not c.logged_in
        ]
        mine = sum(c.address == connection.address for c in logging_in)
        if mine >= self.limits.max_logins_per_address:
            raise TooManyConnections()
        try:
            return cast(int, await self.control.add(connection))
        except TooManyConnections:
            if not logging_in:
                raise
        oldest = min(logging_in, key=lambda c: c.since)
        oldest.evict()
        await self.control.remove(oldest.connection_id)
        self.stats.evicted += 1
        return cast(int, await self.control.add(connection))

    async def _client_connected_cb(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        stream = MysqlStream(reader, writer)

        def refusal(code: int, message: str) -> bytes:
            return connection.error(msg=message, code=code)

        peer = writer.get_extra_info("peername")
        connection = GrstatsConnection(
            stream=GuardedStream(stream, reader, writer, refusal),
            session=self.session_factory(),
            control=self.control,
            server_capabilities=self.capabilities,
            identity_provider=self.identity_provider,
            ssl=self.ssl,
            stats=self.stats,
            require_tls=self._require_tls,
            limits=self.limits,
            throttle=self.throttle,
            failures=self._failures,
            address=str(peer[0]) if isinstance(peer, tuple) and peer else "",
        )
        try:
            connection.connection_id = await self._admit(connection)
        except TooManyConnections:
            self.stats.refused += 1
            await _quietly(
                stream.write(
                    connection.error(msg="Too many connections", code=TOO_MANY_CONNECTIONS)
                )
            )
            writer.close()
            return
        self.stats.accepted += 1
        self.stats.open += 1
        try:
            await connection.start()
        except (MysqlError, ssl.SSLError, ConnectionError, ConnectionClosed) as exc:
            # a failed handshake or a client gone: its error packet, if any, is sent
            log.debug("sql.connection_ended", reason=f"{type(exc).__name__}: {exc}")
        finally:
            self.stats.open -= 1
            writer.close()
            await self.control.remove(connection.connection_id)


async def _quietly(write: Awaitable[None]) -> None:
    with contextlib.suppress(ConnectionError, ConnectionClosed):
        await write
