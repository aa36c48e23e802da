"""Local HTTP API: the live tables as JSON, /healthz and /metrics.

Strategy: a deliberately tiny HTTP/1.1 server on asyncio streams — GET and
HEAD only, one request per connection (`Connection: close`) — because the API
is local, read-only and scraped a few times a minute; a framework would cost
more memory than the whole daemon. Handlers only read the current immutable
`DaemonSnapshot` through `get_snapshot`, so a request can never observe a
half-applied message.

Invariants (every bound has a counter, see `ApiStats`, exported on /metrics):
- at most `max_connections` connections are served at once; one more is
  answered 503 with `Retry-After` and closed at once (refused "limit");
- the request head must arrive within `head_timeout` (else the connection is
  dropped, timed out "read") and fit in `max_request_bytes` (else 431,
  refused "too_large");
- the whole answer must be taken by the client within `write_timeout`, else
  the connection is aborted and its buffers freed (timed out "write");
- a connection buffers at most `write_buffer_bytes` in user space (the
  answer is written in slices of that size, draining between them) and asks
  the kernel for a send buffer of the same size, so a client that never reads
  pins neither process nor socket memory;
- /metrics bodies are shared: the snapshot's part of the exposition is
  rendered once per snapshot and sent as is to every scraper of that
  snapshot (only the small process/API part is rendered per request), so N
  slow scrapers hold one body, not N (`grstats.api.routes` makes the answers).

Routes (GET; HEAD answers the same head without the body):
- `/v1/tables/<name>`: JSON array of rows keyed by column name; 404 JSON for
  an unknown table. `/v1/tables`: the table names.
- `/healthz`: 200 when no fault degrades the daemon, else 503; JSON body
  (from `get_status`: counters and checks of now, no table built) with
  status, reasons (the daemon's `core.health` codes, each once), details
  (each reason's text), bus_connected, members, uptime_s, counters and the
  API's own counters.
- `/metrics`: Prometheus text exposition (`grstats.api.metrics`).
- `/`: the live page of the daemon's group (a collector's: its groups, each
  linking to `/group/<name>`), `/v1/live/<name>` what its script adds to the
  tables, `/static/...` its CSS and script (`grstats.api.live`). Every answer
  carries a strict Content-Security-Policy and `X-Content-Type-Options:
  nosniff`; nothing anywhere changes state (GET and HEAD only).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable

import structlog

from grstats.api.health import API_REFUSE_REASONS, API_TIMEOUT_PHASES, ApiStats
from grstats.api.live import LivePage, PageOptions
from grstats.api.options import ApiOptions
from grstats.api.routes import Response, Routes, json_response
from grstats.core.ratelimit import RateLimit
from grstats.core.snapshot import DaemonSnapshot, DaemonStatus

__all__ = ["ApiServer"]

log = structlog.get_logger("grstats.api")

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
_METHODS = ("GET", "HEAD")
# How long a refused or unread connection may take to close its side.
_LINGER_S = 1.0
# A client misbehaving in a loop must not flood the log (STYLE 13).
_DROP_LOG_EVERY_S = 60.0
_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)


class ApiServer:
    """Serve the snapshot over HTTP, within stated bounds.

    Args:
        options: where to listen and the bounds (`ApiOptions`); port 0 binds
            an ephemeral port (see `port` after `start()`).
        get_snapshot: returns the current snapshot; never blocks.
        get_status: returns /healthz's figures now, no table built; never
            blocks (default: those of the current snapshot).
        get_liveness: "" while the daemon's own loop ticks, else why not (/livez).
        page: what the live page needs of the daemon (`grstats.api.live`).
    """

    def __init__(
        self,
        options: ApiOptions,
        get_snapshot: Callable[[], DaemonSnapshot],
        get_status: Callable[[], DaemonStatus] | None = None,
        get_liveness: Callable[[], str] | None = None,
        page: PageOptions | None = None,
    ) -> None:
        self._host = options.host
        self._requested_port = port = options.port
        self._max_connections = options.max_connections
        self._head_timeout_s = options.head_timeout
        self._write_timeout_s = options.write_timeout
        self._max_request_bytes = options.max_request_bytes
        self._write_buffer_bytes = options.write_buffer_bytes
        self._routes = Routes(get_snapshot, self.stats, get_status, get_liveness, page)
        self._server: asyncio.Server | None = None
        self._open = 0
        self._refusing = 0
        self._transports: set[asyncio.WriteTransport] = set()
        self._drop_log = RateLimit(_DROP_LOG_EVERY_S)
        self._accepted = 0
        self._refused = dict.fromkeys(API_REFUSE_REASONS, 0)
        self._timed_out = dict.fromkeys(API_TIMEOUT_PHASES, 0)
        self.port = port

    @property
    def page(self) -> LivePage:
        """The live page's routes (their `renders`, the recent series they draw)."""
        return self._routes.page

    def stats(self) -> ApiStats:
        """The API's own counters now (a frozen copy)."""
        return ApiStats(
            open=self._open,
            accepted=self._accepted,
            max_connections=self._max_connections,
            refused=dict(self._refused),
            timed_out=dict(self._timed_out),
        )

    async def start(self) -> None:
        """Bind and start accepting connections.

        Raises:
            OSError: the address cannot be bound.
        """
        self._server = await asyncio.start_server(
            self._serve, self._host, self._requested_port, limit=self._max_request_bytes
        )
        sockets = self._server.sockets
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        self._routes.started = time.monotonic()
        log.info("api.listening", host=self._host, port=self.port)

    async def close(self) -> None:
        """Stop accepting, close the listening socket and drop every open connection."""
        for transport in list(self._transports):
            transport.abort()  # its handler sees the connection lost and returns
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None

    # -- one connection -------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= self._max_connections:
            await self._refuse(reader, writer)
            return
        self._open += 1
        self._accepted += 1
        self._transports.add(writer.transport)
        try:
            self._bound_buffers(writer)
            answer = await self._read_request(reader)
            if answer is None:
                writer.transport.abort()
                return
            head, body, unread = answer
            if not await self._write(writer, head, body):
                return
            if unread:
                await self._linger(reader, writer)
            else:
                await self._close(writer)
        finally:
            self._open -= 1
            self._transports.discard(writer.transport)

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._count(self._refused, "limit")
        if self._refusing >= self._max_connections:
            writer.transport.abort()  # a flood: refuse without the courtesy
            return
        self._refusing += 1
        try:
            writer.write(_REFUSED)  # fits any fresh socket's send buffer
            await self._linger(reader, writer)
        finally:
            self._refusing -= 1

    async def _linger(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Close a connection whose request was not read, without a reset.

        Closing a socket with unread input sends RST, which can destroy the
        answer before the client reads it. So: end our side, read and discard
        until the client closes (bounded in time and per read), then close.
        """
        transport = writer.transport
        try:
            async with asyncio.timeout(min(self._head_timeout_s, _LINGER_S)):
                if transport.can_write_eof():
                    transport.write_eof()
                while await reader.read(self._max_request_bytes):
                    pass
                writer.close()
                await writer.wait_closed()
        except (TimeoutError, ConnectionError):
            transport.abort()

    def _count(self, counters: dict[str, int], key: str) -> None:
        """Count a refused or dropped connection; log the totals at most once a minute."""
        counters[key] += 1
        suppressed = self._drop_log.admit(time.monotonic())
        if suppressed is not None:
            log.warning(
                "api.connections_dropped",
                last=key,
                suppressed=suppressed,
                refused=dict(self._refused),
                timed_out=dict(self._timed_out),
                open=self._open,
            )

    def _bound_buffers(self, writer: asyncio.StreamWriter) -> None:
        writer.transport.set_write_buffer_limits(high=self._write_buffer_bytes)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._write_buffer_bytes)

    async def _read_request(
        self, reader: asyncio.StreamReader
    ) -> tuple[bytes, tuple[bytes, ...], bool] | None:
        """-> (head, body parts, request left unread) to answer, or None to drop."""
        try:
            async with asyncio.timeout(self._head_timeout_s):
                head = await reader.readuntil(b"\r\n\r\n")
        except TimeoutError:
            self._count(self._timed_out, "read")
            return None
        except asyncio.LimitOverrunError:
            self._count(self._refused, "too_large")
            return (*_encode(json_response(431, {"error": "request head too large"})), True)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None  # the client went away before asking anything
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            self._count(self._refused, "bad_request")
            return (*_encode(json_response(400, {"error": "bad request line"})), False)
        method, target = parts[0], parts[1]
        if method not in _METHODS:
            return (*_encode(json_response(405, {"error": "only GET and HEAD"}), allow=True), False)
        head_bytes, body = _encode(self.route(target.split("?", 1)[0]))
        return head_bytes, (() if method == "HEAD" else body), False

    async def _write(
        self, writer: asyncio.StreamWriter, head: bytes, body: tuple[bytes, ...]
    ) -> bool:
        """Send the answer within the write deadline; False if the connection was dropped."""
        transport = writer.transport
        step = max(self._write_buffer_bytes, 1)
        try:
            async with asyncio.timeout(self._write_timeout_s):
                writer.write(head)
                for part in body:
                    view = memoryview(part)
                    for start in range(0, len(view), step):
                        writer.write(view[start : start + step])
                        await writer.drain()
                # drain() now returns only once the buffer is empty, so closing
                # cannot leave a socket lingering on unsent bytes.
                transport.set_write_buffer_limits(high=0)
                await writer.drain()
        except TimeoutError:
            self._count(self._timed_out, "write")
            transport.abort()
            return False
        except ConnectionError:
            transport.abort()
            return False
        return True

    @staticmethod
    async def _close(writer: asyncio.StreamWriter) -> None:
        writer.close()  # nothing is buffered any more: closes at once
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    def route(self, path: str) -> Response:
        """Answer one GET for `path` (also used directly by tests)."""
        return self._routes.answer(path)


# Every answer: what a browser may do with it. The page loads only its own
# script, style and JSON (no inline script or style, no other origin), is
# framed by no one, sends no Referer, and no body is sniffed as another type.
_SECURITY = (
    "Content-Security-Policy: default-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "X-Frame-Options: DENY\r\n"
    "Referrer-Policy: no-referrer\r\n"
)
# The static files' URLs carry a hash of their bytes (grstats.api.live): cached
# for good; everything else is live.
_STATIC_TYPES = ("text/css", "text/javascript", "image/svg+xml")


def _encode(response: Response, *, allow: bool = False) -> tuple[bytes, tuple[bytes, ...]]:
    status, ctype, body = response
    cache = "max-age=31536000, immutable" if ctype.startswith(_STATIC_TYPES) else "no-store"
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: {ctype}\r\n"
        f"Content-Length: {sum(len(part) for part in body)}\r\n"
        f"Cache-Control: {cache}\r\n"
        + _SECURITY
        + ("Allow: GET, HEAD\r\n" if allow else "")
        + "Connection: close\r\n\r\n"
    ).encode("ascii")
    return head, body
