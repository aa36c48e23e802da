"""What `/healthz` and the systemd status say: each degraded part with its reason.

Strategy: health is derived, never stored: every snapshot asks the bus, the
source and the history writer how they are, so a fault shows within one
snapshot and clears as soon as the part recovers. "ok" means no reason.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Protocol

from grstats.bus.client import Bus
from grstats.core import health as h
from grstats.core.health import Health
from grstats.core.history_figures import HistoryFigures, HistoryHealth
from grstats.core.records import HistoryRow
from grstats.core.snapshot import DaemonFigures, DaemonSnapshot, DaemonStatus, SqlFigures
from grstats.core.tables import MemberTables
from grstats.sources.base import Source


class HistorySink(Protocol):
    """What the daemon needs of grstats.history's writer."""

    @property
    def stats(self) -> HistoryFigures: ...

    async def start(self) -> None: ...

    def record(self, row: HistoryRow) -> None: ...

    async def close(self) -> None: ...

    def health(self) -> HistoryHealth: ...


def now_us() -> int:
    """Wall clock in microseconds since the epoch (UTC)."""
    return time.time_ns() // 1000


def source_up(source: Source | None) -> bool:
    """Whether the source reaches its server (a simulated source always does)."""
    return source is None or bool(getattr(source, "connected", True))


def health_gauges(source: Source | None, history: HistorySink | None) -> dict[str, float]:
    """`source_up` and `history_healthy` as 0/1 gauges (absent when the part is)."""
    gauges: dict[str, float] = {}
    if source is not None:
        gauges["source_up"] = 1.0 if source_up(source) else 0.0
    if history is not None:
        gauges["history_healthy"] = 1.0 if history.health().ok else 0.0
    return gauges


def _on(failing: bool, detail: str) -> tuple[str, ...]:
    """The details of a check: `detail` while failing, none while ok."""
    return (detail,) if failing else ()


def part_health(bus: Bus | None, source: Source | None, history: HistorySink | None) -> Health:
    """How the bus, the source and the history writer are.

    `history_data` is degraded while the history writer reports recent data
    faults (rows dropped, values stored NULL, files quarantined): it writes,
    but not everything it was given.
    """
    last = getattr(bus, "last_error", "") if bus is not None else ""
    down = bus is None or not bus.connected.is_set()
    detail = f"bus: disconnected ({last})" if last else "bus: disconnected"
    health = Health().check(h.BUS_DISCONNECTED, *_on(down, detail))
    if source is not None:
        health = health.check(h.SOURCE_DOWN, *_on(not source_up(source), "source: not connected"))
    if history is not None:
        state = history.health()
        detail = f"history: {state.reason or 'degraded'}"
        health = health.check(h.HISTORY_DEGRADED, *_on(not state.ok, detail))
        health = health.check(h.HISTORY_DATA, *(f"history: {fault}" for fault in state.faults))
    return health


def daemon_health(
    health: Health, publisher: Publishing | None, echo: EchoWatch, sql: SqlFigures | None, own: int
) -> Health:
    """`health` with the publisher's and the SQL endpoint's checks added.

    `sql` is the SQL endpoint's figures when [sql] is on: an endpoint not
    serving degrades health ("sql_down", with its reason), and so do live
    tables the daemon cannot send to the endpoint's process ("sql_stale").
    """
    if publisher is not None:
        silent = echo.silent(published=publisher.published, own=own)
        health = health.check(
            h.BUS_ECHO, *_on(silent, "bus: our own envelopes do not come back (broker ACL?)")
        )
        health = health.check(  # the others cannot judge this member's GTIDs
            h.GTIDS_UNSENDABLE,
            *_on(
                publisher.gtids_unsendable,
                "gtids: local GTID state over the ext.gtids bound, not sent",
            ),
        )
    if sql is not None:
        health = health.check(h.SQL_DOWN, *_on(not sql.serving, f"sql: not serving ({sql.reason})"))
        health = health.check(
            h.SQL_TAIL_SKIPPED,
            *_on(
                bool(sql.tail_skipped_files),
                f"sql: {sql.tail_skipped_files} unflushed write-ahead log files left out of "
                "grstats.history (past its bound; [history] flush_bytes)",
            ),
        )
        if sql.process_state:
            health = health.check(
                h.SQL_STALE, *_on(bool(sql.snapshot_unsent), f"sql: {sql.snapshot_unsent}")
            )
            health = health.check(
                h.SQL_LIMITS,
                *_on(bool(sql.limits_unset), f"sql: process limits not set ({sql.limits_unset})"),
            )
    return health


class EchoWatch:
    """Our own envelopes must come back from the broker (we subscribe to our group).

    A broker ACL that refuses our writes drops them without a word (MQTT 5
    reports it only in a QoS 1 acknowledgement aiomqtt ignores), so "published"
    alone would say ok while every other member sees nothing of us. After
    `patience` envelopes published with none of ours heard back, the daemon is
    degraded ("bus: own messages do not come back").
    """

    def __init__(self, patience: int = 10) -> None:
        self.patience = patience
        self._last_own = 0
        self._published_at_echo = 0

    def silent(self, *, published: int, own: int) -> bool:
        """Whether our envelopes have stopped coming back."""
        if own != self._last_own:
            self._last_own = own
            self._published_at_echo = published
        return published - self._published_at_echo > self.patience


@dataclasses.dataclass(frozen=True, slots=True)
class DaemonParts:
    """The daemon's parts a snapshot or a status reads (None: not running)."""

    bus: Bus | None = None
    source: Source | None = None
    history: HistorySink | None = None
    publisher: Publishing | None = None
    echo: EchoWatch = dataclasses.field(default_factory=EchoWatch)
    sql: SqlFigures | None = None


def _daemon_figures(tables: MemberTables, parts: DaemonParts) -> DaemonFigures:
    """The daemon's counters, gauges and health, as `MemberTables.snapshot` takes them."""
    bus, source, history, publisher = parts.bus, parts.source, parts.history, parts.publisher
    gauges = {
        "bus_connected": 1.0 if bus is not None and bus.connected.is_set() else 0.0,
        **health_gauges(source, history),
    }
    health = daemon_health(
        part_health(bus, source, history), publisher, parts.echo, parts.sql, own=tables.received.own
    )
    return DaemonFigures(
        bus_reconnects=bus.reconnects if bus else 0,
        messages_published=publisher.published if publisher else 0,
        left_out=dict(publisher.left_out) if publisher else {},
        sections_unsendable=dict(publisher.sections_unsendable) if publisher else {},
        gauges=gauges,
        health=health,
    )


def assemble_snapshot(tables: MemberTables, parts: DaemonParts) -> DaemonSnapshot:
    """The tables frozen with the daemon's counters, gauges, health and history figures."""
    snapshot = tables.snapshot(now_us(), _daemon_figures(tables, parts))
    history = parts.history
    return dataclasses.replace(
        snapshot, history=history.stats if history is not None else None, sql=parts.sql
    )


def assemble_status(tables: MemberTables, parts: DaemonParts) -> DaemonStatus:
    """What `assemble_snapshot` would show now but the tables (none is built): /healthz."""
    status = tables.status_view(now_us(), _daemon_figures(tables, parts))
    return dataclasses.replace(status, sql=parts.sql)


class Publishing(Protocol):
    """What the snapshot needs of the publisher."""

    @property
    def published(self) -> int: ...

    @property
    def left_out(self) -> Mapping[str, int]: ...

    @property
    def sections_unsendable(self) -> Mapping[str, int]: ...

    @property
    def gtids_unsendable(self) -> bool: ...
