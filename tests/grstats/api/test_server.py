"""grstats.api.server over real loopback connections: methods, routes, health reasons."""

from __future__ import annotations

import json

import pytest

from grstats.core.health import Health
from grstats.core.snapshot import DaemonSnapshot
from tests.fixtures.http import api_server as _server
from tests.fixtures.http import raw_get as _get
from tests.fixtures.http import raw_request as _request
from tests.fixtures.metrics_snapshot import M1, sample_snapshot


def _head(path: str) -> bytes:
    return f"HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


@pytest.mark.parametrize(
    "path", ["/metrics", "/healthz", "/v1/tables", "/v1/tables/replication_group_members"]
)
async def test_head_answers_every_route_like_get_without_a_body(path: str) -> None:
    async with _server(sample_snapshot()) as server:
        got_status, got_headers, _ = await _get(server.port, path)
        status, headers, body = await _request(server.port, _head(path))
    assert (status, body) == (got_status, b"")
    assert headers["content-type"] == got_headers["content-type"]
    assert int(headers["content-length"]) > 0


async def test_head_announces_the_exact_length_get_sends() -> None:
    path = "/v1/tables/replication_group_members"
    async with _server(sample_snapshot()) as server:
        _, _, body = await _get(server.port, path)
        _, headers, _ = await _request(server.port, _head(path))
    assert int(headers["content-length"]) == len(body)


async def test_other_methods_are_405_with_allow() -> None:
    async with _server(sample_snapshot()) as server:
        status, headers, _ = await _request(
            server.port, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
        )
    assert status == 405
    assert headers["allow"] == "GET, HEAD"


async def test_healthz_is_503_with_every_active_reason() -> None:
    snapshot = DaemonSnapshot(
        taken_at_us=0,
        group_name="g",
        local_member_id=M1,
        gauges={"bus_connected": 1, "history_healthy": 0},
        health=Health(("bus_disconnected", "history_degraded", "clock"))
        .check("history_degraded", "history: disk full")
        .check("clock", "clock: stepped back", "clock: stepped again"),
    )
    async with _server(snapshot) as server:
        status, _, body = await _get(server.port, "/healthz")
    health = json.loads(body)
    assert status == 503
    assert health["status"] == "degraded"
    assert health["reasons"] == ["history_degraded", "clock"]  # each code once
    assert health["details"] == [
        "history: disk full",
        "clock: stepped back",
        "clock: stepped again",
    ]


async def test_healthz_is_200_and_reports_the_api_counters() -> None:
    async with _server(sample_snapshot(), max_connections=7) as server:
        status, _, body = await _get(server.port, "/healthz")
    health = json.loads(body)
    assert status == 200
    assert health["reasons"] == []
    assert health["api"]["max_connections"] == 7
    assert health["api"]["open"] == 1  # this request
