"""Local HTTP API: the three tables as JSON, /healthz and /metrics.

Strategy: a deliberately tiny HTTP/1.1 server on asyncio streams — GET only,
one request per connection (`Connection: close`), request head capped at
8 KiB and 5 s — because the API is local, read-only and scraped a few times a
minute; a framework would cost more memory than the whole daemon. Handlers
only read the current immutable `DaemonSnapshot` through `get_snapshot`, so a
request can never observe a half-applied message.

Routes:
- `GET /v1/tables/<name>`: JSON array of rows keyed by column name; 404 JSON
  for an unknown table.
- `GET /healthz`: 200 when the bus is connected, else 503; JSON body with
  status, bus_connected, members, uptime_s.
- `GET /metrics`: Prometheus text exposition (`grstats.api.metrics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from grstats.api.metrics import build_registry
from grstats.core.snapshot import TABLE_NAMES, DaemonSnapshot

log = structlog.get_logger("grstats.api")

_MAX_HEAD = 8192
_READ_TIMEOUT_S = 5.0
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
_REASONS[503] = "Service Unavailable"

Response = tuple[int, str, bytes]


class ApiServer:
    """Serve the snapshot over HTTP.

    Args:
        host: address to bind (127.0.0.1 by default configuration).
        port: TCP port; 0 binds an ephemeral port (see `port` after `start()`).
        get_snapshot: returns the current snapshot; never blocks.
    """

    def __init__(self, host: str, port: int, get_snapshot: Callable[[], DaemonSnapshot]) -> None:
        self._host = host
        self._requested_port = port
        self._get_snapshot = get_snapshot
        self._registry = build_registry(get_snapshot)
        self._server: asyncio.Server | None = None
        self._started = time.monotonic()
        self.port = port

    async def start(self) -> None:
        """Bind and start accepting connections.

        Raises:
            OSError: the address cannot be bound.
        """
        self._server = await asyncio.start_server(
            self._serve, self._host, self._requested_port, limit=_MAX_HEAD
        )
        sockets = self._server.sockets
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        self._started = time.monotonic()
        log.info("api.listening", host=self._host, port=self.port)

    async def close(self) -> None:
        """Stop accepting and close the listening socket."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, body = await asyncio.wait_for(self._handle(reader), _READ_TIMEOUT_S)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            status, ctype, body = _json(400, {"error": "bad request"})
        except ConnectionError:
            writer.close()
            return
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
            f"Content-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode("ascii")
        try:
            writer.write(head + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader) -> Response:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return _json(400, {"error": "bad request line"})
        method, target = parts[0], parts[1]
        if method != "GET":
            return _json(405, {"error": "only GET"})
        path = target.split("?", 1)[0]
        return self.route(path)

    def route(self, path: str) -> Response:
        """Answer one GET for `path` (also used directly by tests)."""
        snapshot = self._get_snapshot()
        if path.startswith("/v1/tables/"):
            name = path.removeprefix("/v1/tables/").strip("/")
            if name not in TABLE_NAMES:
                return _json(404, {"error": "unknown table", "table": name, "tables": TABLE_NAMES})
            return _json(200, [dict(row) for row in snapshot.table(name)])
        if path in ("/healthz", "/health"):
            connected = bool(snapshot.gauges.get("bus_connected", 0))
            body = {
                "status": "ok" if connected else "degraded",
                "bus_connected": connected,
                "members": len(snapshot.members),
                "uptime_s": round(time.monotonic() - self._started, 3),
                "group": snapshot.group_name,
                "member_id": snapshot.local_member_id,
                "counters": dict(snapshot.counters),
            }
            return _json(200 if connected else 503, body)
        if path == "/metrics":
            return 200, CONTENT_TYPE_PLAIN_0_0_4, generate_latest(self._registry)
        if path == "/v1/tables":
            return _json(200, list(TABLE_NAMES))
        return _json(404, {"error": "not found", "path": path})


def _json(status: int, payload: Any) -> Response:
    return status, "application/json", json.dumps(payload, separators=(",", ":")).encode()
