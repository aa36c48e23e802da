"""What each path of the local HTTP API answers, from the current snapshot.

Strategy: answers are built from one immutable `DaemonSnapshot` read per
request (`get_snapshot`), never from live state, and know nothing of
sockets: the server (`grstats.api.server`) frames and sends them within its
bounds. /livez is liveness (the daemon's own loop runs and ticks: what a
restart policy and systemd's watchdog go by), /healthz readiness (every
degraded part with its reason: what a person or a load balancer goes by).
/healthz reads only a `DaemonStatus` (`get_status`: the daemon's
counters and checks now, no table built, so polling it costs a busy
collector nothing of its tables). The snapshot's part of /metrics is rendered once per snapshot and
shared by every scraper of that snapshot; only the small process/API part
is rendered per request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from grstats.api.health import ApiStats
from grstats.api.live import LivePage, PageOptions
from grstats.api.metrics import snapshot_registry
from grstats.api.self_metrics import PageCollector, process_registry
from grstats.core.columns import table_names
from grstats.core.snapshot import DaemonSnapshot, DaemonStatus, status_of

# status, content type, body as parts sent one after the other (shared bodies).
Response = tuple[int, str, tuple[bytes, ...]]


def json_response(status: int, payload: Any) -> Response:
    """`payload` as compact JSON with `status`."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    return status, "application/json", (body,)


class Routes:
    """Answers GET requests by path.

    Args:
        get_snapshot: returns the current snapshot; never blocks.
        api_stats: the server's own counters now (for /healthz and /metrics).
        get_status: returns /healthz's figures now; never blocks (default: those
            of the current snapshot).
        get_liveness: "" while the daemon's own loop ticks, else why not (/livez).
        page: what the live page needs of the daemon (`grstats.api.live`).
    """

    def __init__(
        self,
        get_snapshot: Callable[[], DaemonSnapshot],
        api_stats: Callable[[], ApiStats],
        get_status: Callable[[], DaemonStatus] | None = None,
        get_liveness: Callable[[], str] | None = None,
        page: PageOptions | None = None,
    ) -> None:
        self._get_snapshot = get_snapshot
        self._get_liveness = get_liveness or (lambda: "")
        self._get_status = get_status or (lambda: status_of(get_snapshot()))
        self._api_stats = api_stats
        self._snapshot_registry = snapshot_registry(get_snapshot)
        self._process_registry = process_registry(api_stats)
        # (snapshot, its rendering): see "rendered once per snapshot".
        self._metrics_cache: tuple[DaemonSnapshot, bytes] | None = None
        # (snapshot, table name -> its JSON): the page's script polls every table each period
        self._tables_cache: tuple[DaemonSnapshot | None, dict[str, bytes]] = (None, {})
        self.page = LivePage(get_snapshot, page or PageOptions())
        self._process_registry.register(PageCollector(self.page))
        self.started = time.monotonic()  # /healthz uptime_s counts from here

    def answer(self, path: str) -> Response:
        """Answer one GET for `path` (its query string already removed)."""
        if path == "/metrics":
            return 200, CONTENT_TYPE_PLAIN_0_0_4, self._metrics_body()
        if path == "/livez":  # answered on the daemon's loop: an answer is itself a sign
            stalled = self._get_liveness()
            if stalled:
                return json_response(503, {"status": "stalled", "reason": stalled})
            return json_response(200, {"status": "alive"})
        if path in ("/healthz", "/health"):
            return self._health(self._get_status())
        if path.startswith("/v1/tables/"):
            name = path.removeprefix("/v1/tables/").strip("/")
            names = table_names()
            if name not in names:
                return json_response(
                    404, {"error": "unknown table", "table": name, "tables": names}
                )
            return 200, "application/json", (self._table_body(name),)
        if path == "/v1/tables":
            return json_response(200, list(table_names()))
        page = self.page.answer(path)
        if page is not None:
            return page
        return json_response(404, {"error": "not found", "path": path})

    def _table_body(self, name: str) -> bytes:
        """A table's JSON, made once per snapshot (see `_metrics_body`)."""
        snapshot = self._get_snapshot()
        held, bodies = self._tables_cache
        if held is not snapshot:
            bodies = {}
            self._tables_cache = (snapshot, bodies)
        body = bodies.get(name)
        if body is None:
            rows = [dict(row) for row in snapshot.table(name)]
            body = bodies[name] = json.dumps(rows, separators=(",", ":")).encode()
        return body

    def _health(self, status: DaemonStatus) -> Response:
        reasons = status.health.codes()
        api = self._api_stats()
        body = {
            "status": "degraded" if reasons else "ok",
            "reasons": list(reasons),
            "details": list(status.health.details()),
            "bus_connected": bool(status.gauges.get("bus_connected", 0)),
            "members": status.members,
            "pending_gtids_bytes": int(status.gauges.get("pending_gtids_bytes", 0)),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "group": status.group_name,
            "member_id": status.local_member_id,
            "counters": status.counters.as_dict(),
            "api": {
                "open": api.open,
                "max_connections": api.max_connections,
                "refused": dict(api.refused),
                "timed_out": dict(api.timed_out),
            },
        }
        if status.sql is not None and status.sql.process_state:
            q = status.sql
            body["sql"] = {
                "serving": q.serving,
                "process": q.process_state,
                "pid": q.process_pid,
                "restarts": q.process_restarts,
                "last_exit": q.process_last_exit,
            }
        return json_response(503 if reasons else 200, body)

    def _metrics_body(self) -> tuple[bytes, ...]:
        snapshot = self._get_snapshot()
        cached = self._metrics_cache
        if cached is None or cached[0] is not snapshot:
            cached = (snapshot, generate_latest(self._snapshot_registry))
            self._metrics_cache = cached
        return cached[1], generate_latest(self._process_registry)
