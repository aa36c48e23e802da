"""What the daemon's readers see: the shared snapshot, /healthz's status, sd_notify's STATUS=.

Strategy: the API, the SQL endpoint's feed and sd_notify read the daemon
through this one object. A snapshot is built from the tables and the daemon's
parts (`daemon.health.assemble_snapshot`) only when `snapcache` says so; the
status is assembled without building a table, and a status other than the
current snapshot's makes the next reader's snapshot fresh. After each tick
`refreshed` hands the SQL endpoint a fresh snapshot, or leaves it to the next
reader (none is built for nobody).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from grstats.core.snapshot import DaemonSnapshot, DaemonStatus
from grstats.core.tables import MemberTables
from grstats.daemon.health import DaemonParts, assemble_snapshot, assemble_status
from grstats.daemon.notify import notifying, sd_notify, status_text
from grstats.daemon.snapcache import SnapshotCache

if TYPE_CHECKING:  # imported with [sql] only (its process, its limits)
    from grstats.daemon.sqlchild import SqlChild

__all__ = ["DaemonView"]


class DaemonView:
    """The daemon as its readers see it.

    Args:
        tables: the daemon's current tables (they are replaced once the mysql
            source told the member's identity).
        parts: the daemon's parts now (bus, source, history, publisher, checks).
        connected: whether the bus is connected now.
        max_age_s: the oldest snapshot a reader gets.
    """

    def __init__(
        self,
        tables: Callable[[], MemberTables],
        parts: Callable[[], DaemonParts],
        connected: Callable[[], bool],
        max_age_s: float,
    ) -> None:
        self._tables = tables
        self._parts = parts
        self._connected = connected
        self._cache = SnapshotCache(self._build, max_age_s)
        self._status_text = ""

    @property
    def builds(self) -> int:
        """Snapshots built since start (each builds every table of every member)."""
        return self._cache.builds

    def snapshot(self, *, fresh: bool = False) -> DaemonSnapshot:
        """The current snapshot, at most `max_age_s` old (`SnapshotCache`).

        The tick asks for a `fresh` one (its own sample included) whenever the
        tables changed; other readers share the last one.
        """
        return self._cache.get(
            version=self._tables().version,
            connected=self._connected(),
            fresh=fresh,
            now=time.monotonic(),
        )

    def status(self) -> DaemonStatus:
        """What /healthz and STATUS= show, now: the counters and checks, no table built.

        Counters or a health other than the current snapshot's make the next
        reader's snapshot fresh (built then: none is built here), so /metrics and
        /v1/tables say at least what /healthz has just said.
        """
        status = assemble_status(self._tables(), self._parts())
        shown = self._cache.current
        if shown is not None and (shown.health, shown.counters) != (status.health, status.counters):
            self._cache.invalidate()
        return status

    def refreshed(self, sql: SqlChild | None) -> None:
        """After a tick: the SQL endpoint gets a fresh snapshot (else the next reader builds
        it), and systemd the status line when it changed."""
        offered = False
        if sql is not None and sql.running:  # a child exists (it starts on a connection)
            sql.offer(self.snapshot(fresh=True))
            offered = True
        if not notifying():
            # No systemd to tell: no status is assembled each tick for nobody (~6 % of a
            # member's tick loop in Python). What comparing it with the snapshot did, a
            # snapshot built by the next reader, is what invalidating does.
            if not offered:
                self._cache.invalidate()
            return
        if not offered:
            self._cache.want_fresh()
        text = status_text(self.status())
        if text != self._status_text:
            self._status_text = text
            sd_notify(f"STATUS={text}")

    def _build(self) -> DaemonSnapshot:
        return assemble_snapshot(self._tables(), self._parts())
