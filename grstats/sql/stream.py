"""The endpoint's packet stream: mysql-mimic's `MysqlStream` with bounds on what a client sends.

Strategy: mysql-mimic's stream is a compiled class (no subclass), so
`GuardedStream` wraps it and replaces the pieces that need a bound:
- `read` joins a packet's 16 MiB continuation frames only up to
  `max_packet` bytes: before login a handshake's worth (`PRE_AUTH_MAX_PACKET`),
  after it the statement size limit plus room for query attributes. A
  longer packet is refused before its payload is read (MySQL's 1153,
  ER_NET_PACKET_TOO_LARGE) and the connection ends, as MySQL ends it.
  (mysql-mimic's own read joins frames without a cap: an unauthenticated
  socket could grow the daemon by 16 MiB per frame.)
- `read` waits for a client's next packet at most `read_timeout` seconds
  (`[sql] idle_timeout` once logged in); then it sends MySQL's 4031
  (ER_CLIENT_INTERACTION_TIMEOUT) and ends the connection.
- `start_tls` keeps the bytes the client sent right after its SSLRequest
  (mysql-mimic's upgrade loses them: a client sends its TLS ClientHello
  without waiting, so when both arrive together the StreamReader has
  already buffered the ClientHello as plain data and the server waits for
  it until the handshake times out); `tls` records that the upgrade
  happened, which is what `tls_required` checks.
- `write_row` frames one row payload of any size in 16 MiB packets, as the
  protocol requires (mysql-mimic's `write_text_rows` writes one frame whose
  3-byte length overflows past 16 MiB).

Invariants: at most `max_packet` bytes of one client packet are held.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from asyncio import sslproto
from collections.abc import Callable
from typing import Any, cast

from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.stream import ConnectionClosed, MysqlStream

from grstats.sql.errors import IDLE_TIMEOUT, PACKET_TOO_LARGE

HANDSHAKE_TIMEOUT_S = 10  # a TLS handshake not done by then ends the connection
PRE_AUTH_MAX_PACKET = 64 << 10  # a login packet: name, auth data, database, connect attributes
MAX_FRAME = 0xFFFFFF  # the protocol's largest frame payload (16 MiB - 1)


class GuardedStream:
    """A MysqlStream with capped reads, an idle timeout and TLS that keeps early bytes."""

    def __init__(
        self,
        stream: MysqlStream,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_refusal: Callable[[int, str], bytes],
    ) -> None:
        self._stream = stream
        self._reader = reader
        self._writer = writer
        self._on_refusal = on_refusal  # (code, message) -> the error packet to send
        self.max_packet = PRE_AUTH_MAX_PACKET
        self.read_timeout: float | None = None
        self.tls = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def _end(self, code: int, message: str) -> None:
        # the client is told why, then the connection ends (MySQL does the same)
        with contextlib.suppress(ConnectionError, ConnectionClosed):
            await self._stream.write(self._on_refusal(code, message))
        raise ConnectionClosed(message)

    async def read(self) -> bytes:
        """One client packet, its continuation frames joined (at most `max_packet` bytes).

        Raises:
            ConnectionClosed: the client went, sent a longer packet or was idle
                past `read_timeout` (the refusal is sent first).
            MysqlError: a frame out of sequence.
        """
        try:
            async with asyncio.timeout(self.read_timeout):
                header = await self._reader.readexactly(4)
        except TimeoutError:
            await self._end(
                IDLE_TIMEOUT,
                "The client was disconnected by the server because of inactivity.",
            )
        except (asyncio.IncompleteReadError, ConnectionError):
            raise ConnectionClosed() from None
        data = bytearray()
        while True:
            (word,) = struct.unpack("<I", header)
            length, sequence = word & MAX_FRAME, word >> 24
            expected = next(self._stream.seq)
            if sequence != expected:
                raise MysqlError(
                    f"Expected seq({expected}) got seq({sequence})", ErrorCode.MALFORMED_PACKET
                )
            if len(data) + length > self.max_packet:
                await self._end(
                    PACKET_TOO_LARGE, "Got a packet bigger than 'max_allowed_packet' bytes"
                )
            try:
                data += await self._reader.readexactly(length)
                if length < MAX_FRAME:
                    return bytes(data)
                header = await self._reader.readexactly(4)
            except (asyncio.IncompleteReadError, ConnectionError):
                raise ConnectionClosed() from None

    def close(self) -> None:
        """End the connection (the command loop then reads its end)."""
        self._writer.close()

    async def write_row(self, payload: bytes) -> None:
        """One packet of any size, framed in 16 MiB pieces (an empty last one if needed)."""
        view = memoryview(payload)
        while True:
            piece = view[:MAX_FRAME]
            view = view[MAX_FRAME:]
            self._stream.write_many([bytes(piece)])
            if len(piece) < MAX_FRAME:
                return
            await self._stream.drain()

    async def start_tls(self, context: Any) -> None:
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
        self.tls = True
