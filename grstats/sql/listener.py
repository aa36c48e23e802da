"""The SQL endpoint's listening sockets: bound by the daemon, accepted from by its child.

Strategy: a daemon with [sql] on binds the endpoint's address itself
(`bind`) and starts no endpoint process until a connection is pending
(`wait_pending`: the socket readable, nothing accepted). The child it then
starts inherits the sockets (their fd numbers in its "config" message) and
accepts from them (`Acceptor`); the connection that woke it waits in the
kernel's accept queue meanwhile, so a child that fails to start loses no
client: the next one accepts it. A child with no connection for [sql]
child_idle_stop stops accepting and ends; the daemon watches the sockets again.

Invariants: stopping an `Acceptor` is synchronous (the readers are removed
at once), so once `stop()` returned no connection can be accepted by this
process: whatever arrives later stays queued for the next owner. `pending`
counts every connection from its accept to its handler's end, so "no
connection" is never decided while one is being set up.
The daemon imports this module: it holds nothing but the standard library
and structlog, never the endpoint's query libraries.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger("grstats.sql")

BACKLOG = 100  # asyncio's default for a server
_ACCEPTS_PER_WAKE = 64  # one readable event accepts at most this many, then yields


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for `host`:`port` (one per address `host` resolves to), non-blocking.

    As asyncio's `create_server`: SO_REUSEADDR, IPv6 sockets IPv6-only. With
    port 0 every socket gets the port the first one was given.

    Raises:
        OSError: the address cannot be resolved or bound (no socket is left open).
    """
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    bound: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _, given in infos:
            if (family, given) in seen:
                continue
            seen.add((family, given))
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            address = given
            if port == 0 and len(bound) > 1:
                address = (given[0], bound[0].getsockname()[1], *given[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound


def port_of(sockets: list[socket.socket]) -> int:
    """The port `sockets` listen on (0 when there are none)."""
    return int(sockets[0].getsockname()[1]) if sockets else 0


def inherited(fds: list[int]) -> list[socket.socket]:
    """The listening sockets a child was given (by fd number), non-blocking."""
    out = []
    for fd in fds:
        sock = socket.socket(fileno=fd)
        sock.setblocking(False)
        out.append(sock)
    return out


def tls_failure(cert_file: str, key_file: str) -> str:
    """Why the endpoint's TLS files cannot be loaded ("" when they can, or TLS is off)."""
    if not (cert_file and key_file):
        return ""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_file, key_file)
    except OSError as exc:  # ssl.SSLError too
        return f"cannot load tls_cert_file / tls_key_file: {exc.strerror or exc}"
    return ""


async def wait_pending(sockets: list[socket.socket]) -> None:
    """Return once a connection is pending on one of `sockets` (none is accepted)."""
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    for sock in sockets:
        loop.add_reader(sock.fileno(), wake)
    try:
        await woken
    finally:
        for sock in sockets:
            loop.remove_reader(sock.fileno())


class Acceptor:
    """Accepts connections from listening sockets and runs a handler for each.

    Args:
        sockets: the listening sockets (non-blocking).
        handler: called with each accepted connection's (reader, writer).
    """

    def __init__(
        self,
        sockets: list[socket.socket],
        handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    ) -> None:
        self.sockets = sockets
        self._handler = handler
        self.pending = 0  # accepted and not yet ended (being set up or served)
        self.accepting = False
        self._last_end = time.monotonic()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Accept from every socket (on the running loop)."""
        loop = asyncio.get_running_loop()
        for sock in self.sockets:
            loop.add_reader(sock.fileno(), self._accept, sock)
        self.accepting = True
        self._last_end = time.monotonic()

    def stop(self) -> None:
        """Accept no more (at once); the connections accepted go on being served."""
        if not self.accepting:
            return
        loop = asyncio.get_running_loop()
        for sock in self.sockets:
            loop.remove_reader(sock.fileno())
        self.accepting = False

    def idle_s(self, now: float) -> float:
        """Seconds without any connection (0 while one is open or being set up)."""
        return 0.0 if self.pending else now - self._last_end

    def close(self) -> None:
        """Stop accepting and close this process's copies of the sockets."""
        self.stop()
        for sock in self.sockets:
            sock.close()

    async def wait_served(self, within: float) -> None:
        """Wait up to `within` seconds for the connections accepted to end."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=within)

    def _accept(self, sock: socket.socket) -> None:
        for _ in range(_ACCEPTS_PER_WAKE):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # ECONNABORTED, EMFILE: this one is lost, the next may not be
                return
            self.pending += 1
            task = asyncio.get_running_loop().create_task(self._serve(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _serve(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            conn.setblocking(False)
            reader = asyncio.StreamReader(limit=1 << 16, loop=loop)
            protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
            try:
                transport, _ = await loop.connect_accepted_socket(lambda: protocol, conn)
            except OSError:  # the client went away before its transport was made
                conn.close()
                return
            # from here the transport owns the socket (and flushes it before closing it)
            writer = asyncio.StreamWriter(transport, protocol, reader, loop)
            try:
                await self._handler(reader, writer)
            except Exception:  # a bug in one connection's handling ends only that connection
                log.exception("sql.connection_failed")
                transport.abort()
        finally:
            self.pending -= 1
            self._last_end = time.monotonic()
