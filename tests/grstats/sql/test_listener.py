"""The endpoint's listening sockets handed from owner to owner, no connection lost (issue 44).

Real loopback sockets. The daemon waits for a pending connection without
taking it; a child accepts; a child that stops accepting leaves whatever
arrives next in the kernel's queue for the next child. Expected values are
the bytes the test's own clients sent.
"""

from __future__ import annotations

import asyncio
import socket
import time

from grstats.sql.listener import Acceptor, bind, port_of, wait_pending


class Served:
    """A handler that records the first line of each connection and answers it."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.release = asyncio.Event()
        self.read = asyncio.Event()

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.lines.append(await reader.readline())
        self.read.set()
        await self.release.wait()
        writer.write(b"ok\n")
        await writer.drain()
        writer.close()


async def _client(port: int, line: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(line)
    await writer.drain()
    answer = await reader.readline()
    writer.close()
    return answer


async def test_a_pending_connection_wakes_the_watcher_and_is_accepted_by_the_next_owner() -> None:
    sockets = bind("127.0.0.1", 0)
    port = port_of(sockets)
    client = asyncio.create_task(_client(port, b"first\n"))
    await asyncio.wait_for(wait_pending(sockets), 10)  # woken, nothing accepted
    served = Served()
    served.release.set()
    child = Acceptor(sockets, served)
    child.start()
    assert await asyncio.wait_for(client, 10) == b"ok\n"
    assert served.lines == [b"first\n"]
    child.close()


async def test_a_connection_after_stop_waits_for_the_next_owner_and_is_served() -> None:
    sockets = bind("127.0.0.1", 0)
    port = port_of(sockets)
    first_owner = Acceptor(sockets, Served())
    first_owner.start()
    first_owner.stop()  # as a child ending idle: synchronous
    late = asyncio.create_task(_client(port, b"late\n"))
    await asyncio.sleep(0.2)  # the client is connected (in the kernel's queue), unserved
    assert not late.done() and first_owner.pending == 0
    served = Served()
    served.release.set()
    next_owner = Acceptor(sockets, served)
    next_owner.start()
    assert await asyncio.wait_for(late, 10) == b"ok\n"
    assert served.lines == [b"late\n"]
    next_owner.close()


async def test_idle_time_counts_from_the_last_connection_end_never_during_one() -> None:
    sockets = bind("127.0.0.1", 0)
    served = Served()
    acceptor = Acceptor(sockets, served)
    acceptor.start()
    client = asyncio.create_task(_client(port_of(sockets), b"x\n"))
    await asyncio.wait_for(served.read.wait(), 10)
    assert acceptor.pending == 1
    assert acceptor.idle_s(time.monotonic() + 3600) == 0.0  # an hour later, still in use
    served.release.set()
    await asyncio.wait_for(client, 10)
    await acceptor.wait_served(10)
    assert acceptor.pending == 0
    assert 0.0 <= acceptor.idle_s(time.monotonic()) < 5.0
    assert acceptor.idle_s(time.monotonic() + 60) >= 60.0
    acceptor.close()


def test_port_zero_gives_every_address_of_a_name_the_same_port() -> None:
    sockets = bind("localhost", 0)
    try:
        ports = {s.getsockname()[1] for s in sockets}
        assert len(ports) == 1 and ports != {0}
        assert all(s.type == socket.SOCK_STREAM for s in sockets)
    finally:
        for s in sockets:
            s.close()
