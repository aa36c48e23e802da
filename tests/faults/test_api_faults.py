"""The HTTP API against hostile clients: memory and fds stay bounded, it keeps answering.

Strategy: a real `ApiServer` in this process on 127.0.0.1 serves a hand-built
snapshot of 1000 members (a /metrics body of a few MB). Attackers are raw
loopback sockets: some send `GET /metrics` with a 4 KiB receive buffer and
never read, some connect and send nothing. The process's RSS (VmRSS in
/proc/self/status) and open fds (/proc/self/fd) are compared with a baseline
taken after a warm-up scrape. Timeouts are short so the test is quick; no
assertion is about time: every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.options import ApiOptions
from grstats.api.server import ApiServer
from grstats.core.snapshot import DaemonSnapshot
from tests.fixtures.http import api_server as _server
from tests.fixtures.http import raw_get, raw_request
from tests.fixtures.metrics_snapshot import member_row, stats_row, status_row

pytestmark = pytest.mark.faults

MEMBERS = 2000
NEVER_READING = 24
SILENT = 10
RSS_GROWTH_BOUND = 60 * 1024 * 1024
DEADLINE_S = 60.0


def _big_snapshot() -> DaemonSnapshot:
    ids = [str(uuid.UUID(int=i + 1)) for i in range(MEMBERS)]
    return DaemonSnapshot(
        taken_at_us=1_700_000_000_000_000,
        group_name="aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
        local_member_id=ids[0],
        tables={
            "replication_group_member_stats": tuple(stats_row(m, i) for i, m in enumerate(ids)),
            "replication_group_members": tuple(
                member_row(m, 3306, "ONLINE", "SECONDARY") for m in ids
            ),
            "grstats_member_status": tuple(status_row(m, 1.5, i, 0) for i, m in enumerate(ids)),
        },
        gauges={"bus_connected": 1},
    )


def _rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _wait_until(condition: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"gave up after {DEADLINE_S}s waiting for {what}")
        await asyncio.sleep(0.02)


async def _attacker(port: int, request: bytes) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    if request:
        sock.send(request)
    return sock


@contextmanager
def _closing_all(socks: list[socket.socket]) -> Iterator[list[socket.socket]]:
    try:
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _metric(text: bytes, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise AssertionError(f"{name}{labels} not exposed")


async def test_clients_that_never_read_or_never_send_cost_bounded_memory_and_fds() -> None:
    async with _server(_big_snapshot(), head_timeout=0.5, write_timeout=1.0) as server:
        status, _, body = await raw_get(server.port, "/metrics")  # warm-up: render once
        assert status == 200
        assert len(body) > 2_000_000  # far more than a socket's kernel buffers absorb
        gc.collect()
        base_rss, base_fds = _rss_bytes(), _open_fds()

        get_metrics = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        with _closing_all([]) as socks:
            socks += [await _attacker(server.port, get_metrics) for _ in range(NEVER_READING)]
            socks += [await _attacker(server.port, b"") for _ in range(SILENT)]
            await _wait_until(
                lambda: server.stats().accepted >= NEVER_READING + SILENT, "all accepted"
            )

            status, _, _ = await raw_get(server.port, "/healthz")
            assert status == 200
            status, _, metrics = await raw_get(server.port, "/metrics")
            assert status == 200
            assert _metric(metrics, "grstats_api_connections_open") >= NEVER_READING + SILENT
            assert _rss_bytes() - base_rss < RSS_GROWTH_BOUND

            await _wait_until(lambda: server.stats().open == 0, "every connection timed out")
            stats = server.stats()
            assert stats.timed_out["read"] == SILENT
            assert stats.timed_out["write"] == NEVER_READING
            assert _open_fds() == base_fds + len(socks)  # the server closed its ends
            assert _rss_bytes() - base_rss < RSS_GROWTH_BOUND

            status, _, metrics = await raw_get(server.port, "/metrics")
            assert status == 200
            timed_out = "grstats_api_connections_timed_out_total"
            assert _metric(metrics, timed_out, phase="write") == NEVER_READING
            assert _metric(metrics, timed_out, phase="read") == SILENT
        await _wait_until(lambda: _open_fds() == base_fds, "fds back to the baseline")


async def test_connections_over_the_cap_are_refused_with_503_and_counted() -> None:
    snapshot = DaemonSnapshot(
        taken_at_us=0, group_name="g", local_member_id="m", gauges={"bus_connected": 1}
    )
    async with _server(snapshot, max_connections=4, head_timeout=DEADLINE_S) as server:
        with _closing_all([]) as socks:
            socks += [await _attacker(server.port, b"") for _ in range(4)]
            await _wait_until(lambda: server.stats().open == 4, "the cap is reached")
            status, headers, _ = await raw_get(server.port, "/healthz")
            assert status == 503
            assert headers["retry-after"]
            assert server.stats().refused["limit"] == 1
        await _wait_until(lambda: server.stats().open == 0, "the silent clients are gone")
        status, _, metrics = await raw_get(server.port, "/metrics")
        assert status == 200
        assert _metric(metrics, "grstats_api_connections_refused_total", reason="limit") == 1


async def test_an_oversized_request_head_is_refused_with_431_and_counted() -> None:
    snapshot = DaemonSnapshot(taken_at_us=0, group_name="g", local_member_id="m")
    async with _server(snapshot, max_request_bytes=1024) as server:
        raw = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 4096 + b"\r\n\r\n"
        status, _, _ = await raw_request(server.port, raw)
        assert status == 431
        assert server.stats().refused["too_large"] == 1
        status, _, _ = await raw_get(server.port, "/metrics")
        assert status == 200


async def test_close_drops_every_open_connection() -> None:
    snapshot = DaemonSnapshot(taken_at_us=0, group_name="g", local_member_id="m")
    server = ApiServer(ApiOptions(port=0, head_timeout=DEADLINE_S), lambda: snapshot)
    await server.start()
    base_fds = _open_fds()
    with _closing_all([]) as socks:
        socks += [await _attacker(server.port, b"") for _ in range(3)]
        await _wait_until(lambda: server.stats().open == 3, "three silent clients")
        await server.close()
        await _wait_until(lambda: server.stats().open == 0, "their handlers returned")
        assert _open_fds() <= base_fds + len(socks) - 1  # the listener and the 3 server ends
