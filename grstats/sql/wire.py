"""The wire side of the endpoint: mysql-mimic's server and connection with grstats' policy.

Strategy: mysql-mimic's `MysqlServer` accepts, `Connection` speaks the
protocol; the subclasses here add what the endpoint promises and the library
leaves out, each at the one place the library funnels it through:
- every error packet goes through `Connection.error`: the packet carries the
  `MysqlError`'s own code (the library sends 1043 for any failed handshake)
  and is counted by MySQL error number (`WireStats.errors`);
- `authenticate` refuses a plain-text client when TLS is required, before
  any password is checked, with MySQL's 3159 (`require_secure_transport`);
- result column definitions carry MySQL's UNSIGNED flag for unsigned
  integer columns (`column(..., unsigned=True)`), in the text and the binary
  protocol;
- the accept callback counts connections (open, accepted, refused at the
  cap, failed TLS handshakes) and ends a connection that failed its
  handshake quietly (a client's bad certificate is not a daemon traceback);
- the upgrade to TLS keeps the bytes the client sent right after its
  SSLRequest (`_TlsStream.start_tls`). mysql-mimic's upgrade loses them: a
  client sends its TLS ClientHello without waiting, so when both arrive
  together the StreamReader has already buffered the ClientHello as plain
  data and the server waits for it until the handshake times out (seen
  with PyMySQL, the mariadb client and openssl s_client whenever the loop
  was a little late).

Invariants: `WireStats` is only touched on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from asyncio import sslproto
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import structlog
from mysql_mimic import MysqlServer, packets, types
from mysql_mimic.connection import Connection
from mysql_mimic.control import TooManyConnections
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.results import ResultColumn, ResultSet
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import ConnectionClosed, MysqlStream
from mysql_mimic.types import Capabilities, ColumnDefinition
from mysql_mimic.utils import aiterate, cooperative_iterate

from grstats.sql.errors import INSECURE_TRANSPORT, INSECURE_TRANSPORT_MESSAGE, TOO_MANY_CONNECTIONS

HANDSHAKE_TIMEOUT_S = 10  # a TLS handshake not done by then ends the connection

log = structlog.get_logger("grstats.sql")


@dataclass
class WireStats:
    """The endpoint's connection counters (event loop only)."""

    open: int = 0
    accepted: int = 0
    refused: int = 0
    tls_failures: int = 0
    errors: Counter[int] = field(default_factory=Counter)


def column(name: str, kind: types.ColumnType, *, unsigned: bool = False) -> ResultColumn:
    """A result column; an unsigned one is sent with MySQL's UNSIGNED flag.

    (mysql-mimic's ResultColumn is a compiled class: no subclass, no extra
    attribute. Its binary encoder is what marks it unsigned: `_flags`.)
    """
    return ResultColumn(name, kind, binary_encoder=_binary_unsigned if unsigned else None)


def _binary_unsigned(col: ResultColumn, val: Any) -> bytes:
    return int(val).to_bytes(8, "little", signed=False)


def _flags(col: ResultColumn) -> ColumnDefinition:
    unsigned = col.binary_encoder is _binary_unsigned
    return ColumnDefinition.UNSIGNED_FLAG if unsigned else ColumnDefinition(0)


# what a handshake fails with when the client has gone or broke off TLS
_GONE = (ssl.SSLError, ConnectionError, ConnectionClosed)


class GrstatsConnection(Connection):
    """A client connection with the endpoint's error codes, TLS rule and column flags."""

    def __init__(self, *args: Any, stats: WireStats, require_tls: bool, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._stats = stats
        self._require_tls = require_tls

    def error(self, **kwargs: Any) -> bytes:
        msg = kwargs.get("msg")
        if isinstance(msg, MysqlError):  # keep the error's own number, not 1043
            kwargs["code"] = msg.code
            kwargs["msg"] = msg.msg
        if not isinstance(msg, _GONE):  # a client gone mid-handshake is sent nothing
            self._stats.errors[int(kwargs.get("code", ErrorCode.UNKNOWN_ERROR))] += 1
        packet: bytes = super().error(**kwargs)
        return packet

    async def connection_phase(self) -> None:
        try:
            await super().connection_phase()
        except ssl.SSLError:
            self._stats.tls_failures += 1
            raise

    async def authenticate(self, *args: Any, **kwargs: Any) -> None:
        if self._require_tls and Capabilities.CLIENT_SSL not in self.capabilities:
            raise MysqlError(INSECURE_TRANSPORT_MESSAGE, code=cast(ErrorCode, INSECURE_TRANSPORT))
        await super().authenticate(*args, **kwargs)

    def _definition(self, column: ResultColumn) -> bytes:
        packet: bytes = packets.make_column_definition_41(
            server_charset=self.server_charset,
            name=column.name,
            column_type=column.type,
            character_set=column.character_set,
            flags=_flags(column),
        )
        return packet

    async def write_text_resultset(self, result_set: ResultSet) -> None:
        # the library's, with the columns' flags in their definitions
        header = [
            packets.make_column_count(
                capabilities=self.capabilities, column_count=len(result_set.columns)
            ),
            *(self._definition(c) for c in result_set.columns),
        ]
        if not self.deprecate_eof():
            header.append(self.eof())
        self.stream.write_many(header)
        cols = result_set.columns
        count = 0
        if isinstance(result_set.rows, (list, tuple)):
            count = len(result_set.rows)
            for i in range(0, count, 10_000):
                self.stream.write_text_rows(result_set.rows[i : i + 10_000], cols)
                await asyncio.sleep(0)
        else:
            batch: list[bytes] = []
            async for row in cooperative_iterate(aiterate(result_set.rows)):
                count += 1
                batch.append(packets.make_text_resultset_row(row, cols))
                if len(batch) >= 1000:
                    self.stream.write_many(batch)
                    batch = []
            self.stream.write_many(batch)
        await self.stream.write(self.ok_or_eof(affected_rows=count), drain=False)
        await self.stream.drain()

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
            await self.stream.write(self._definition(column))

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


class _TlsStream:
    """A MysqlStream whose TLS upgrade keeps what the client sent ahead (see the module doc).

    Everything else is the wrapped stream's (mysql-mimic's stream is a
    compiled class: it cannot be subclassed).
    """

    def __init__(
        self, stream: MysqlStream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._stream = stream
        self._reader = reader
        self._writer = writer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def start_tls(self, context: ssl.SSLContext) -> None:
        # asyncio's loop.start_tls, plus the bytes already read past the SSLRequest
        # (the StreamReader's buffer) fed to the TLS protocol before the socket's next ones
        loop = asyncio.get_running_loop()
        transport = cast(asyncio.Transport, self._writer.transport)
        buffered: bytearray = self._reader._buffer  # type: ignore[attr-defined]
        ahead = bytes(buffered)  # no public way to take them back
        buffered.clear()
        waiter: asyncio.Future[None] = loop.create_future()
        tls = sslproto.SSLProtocol(
            loop,
            transport.get_protocol(),
            context,
            waiter,
            server_side=True,
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
            call_connection_made=False,
        )
        transport.pause_reading()
        transport.set_protocol(tls)
        tls.connection_made(transport)
        view = memoryview(ahead)
        while view:
            buffer = tls.get_buffer(len(view))
            n = min(len(buffer), len(view))
            buffer[:n] = view[:n]
            tls.buffer_updated(n)
            view = view[n:]
        transport.resume_reading()
        try:
            await waiter
        except BaseException:
            transport.close()
            raise
        app = tls._app_transport  # what loop.start_tls returns
        # mysql-mimic's own way to move its reader and writer onto the TLS transport
        self._writer._transport = app  # type: ignore[attr-defined]
        self._reader._transport = app  # type: ignore[attr-defined]


class GrstatsMysqlServer(MysqlServer):
    """mysql-mimic's server accepting `GrstatsConnection`s, counted in `stats`."""

    def __init__(
        self,
        *,
        session_factory: Callable[[], BaseSession],
        require_tls: bool,
        stats: WireStats,
        **kw: Any,
    ) -> None:
        super().__init__(session_factory=session_factory, **kw)
        self._require_tls = require_tls
        self.stats = stats

    def serving(self) -> bool:
        """True while the listening socket accepts connections."""
        return self._server is not None and self._server.is_serving()

    async def _client_connected_cb(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        stream = MysqlStream(reader, writer)
        connection = GrstatsConnection(
            stream=_TlsStream(stream, reader, writer),
            session=self.session_factory(),
            control=self.control,
            server_capabilities=self.capabilities,
            identity_provider=self.identity_provider,
            ssl=self.ssl,
            stats=self.stats,
            require_tls=self._require_tls,
        )
        try:
            connection.connection_id = await self.control.add(connection)
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
