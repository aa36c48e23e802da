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
from grstats.core.records import HistoryRow
from grstats.core.snapshot import DaemonSnapshot, HistoryFigures, SqlFigures
from grstats.core.tables import MemberTables
from grstats.sources.base import Source


class PartHealth(Protocol):
    """How one part is: ok, or not with a reason."""

    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...


class HistoryHealthLike(PartHealth, Protocol):
    """grstats.history's HistoryHealth: also the recent data faults."""

    @property
    def faults(self) -> tuple[str, ...]: ...


class DropsLike(Protocol):
    """grstats.history's DropCounts, as the daemon reads it."""

    @property
    def buffer_full(self) -> int: ...

    @property
    def disk_full(self) -> int: ...

    @property
    def invalid(self) -> int: ...

    @property
    def duplicate(self) -> int: ...

    @property
    def corrupt(self) -> int: ...


class HistoryStatsLike(Protocol):
    """grstats.history's HistoryStats, as the daemon reads it."""

    @property
    def rows_written(self) -> int: ...

    @property
    def rows_buffered(self) -> int: ...

    @property
    def dropped(self) -> DropsLike: ...

    @property
    def wal_bytes(self) -> int: ...

    @property
    def segments_written(self) -> int: ...

    @property
    def fsyncs(self) -> int: ...

    @property
    def fsync_seconds_sum(self) -> float: ...

    @property
    def fsync_seconds_max(self) -> float: ...

    @property
    def errors(self) -> int: ...

    @property
    def values_nulled(self) -> Mapping[str, int]: ...

    @property
    def files_quarantined(self) -> int: ...


class HistorySink(Protocol):
    """What the daemon needs of grstats.history's writer."""

    @property
    def stats(self) -> HistoryStatsLike: ...

    async def start(self) -> None: ...

    def record(self, row: HistoryRow) -> None: ...

    async def close(self) -> None: ...

    def health(self) -> HistoryHealthLike: ...


def now_us() -> int:
    """Wall clock in microseconds since the epoch (UTC)."""
    return time.time_ns() // 1000


def history_figures(stats: HistoryStatsLike) -> HistoryFigures:
    """The writer's counters as the snapshot carries them."""
    d = stats.dropped
    return HistoryFigures(
        rows_written=stats.rows_written,
        rows_buffered=stats.rows_buffered,
        dropped={
            "buffer_full": d.buffer_full,
            "disk_full": d.disk_full,
            "invalid": d.invalid,
            "duplicate": d.duplicate,
            "corrupt": d.corrupt,
        },
        wal_bytes=stats.wal_bytes,
        segments_written=stats.segments_written,
        fsyncs=stats.fsyncs,
        fsync_seconds_sum=stats.fsync_seconds_sum,
        fsync_seconds_max=stats.fsync_seconds_max,
        errors=stats.errors,
        values_nulled=dict(stats.values_nulled),
        files_quarantined=stats.files_quarantined,
    )


def source_up(source: Source | None) -> bool:
    """Whether the source reaches its server (a simulated source always does)."""
    return source is None or bool(getattr(source, "connected", True))


def health_gauges(source: Source | None, history: HistorySink | None) -> dict[str, float]:
    """`source_up`, `history_healthy` and `degraded_history_data` as 0/1 gauges.

    `degraded_history_data` is 1 while the history writer reports recent data
    faults (rows dropped, values stored NULL, files quarantined): it writes,
    but not everything it was given.
    """
    gauges: dict[str, float] = {}
    if source is not None:
        gauges["source_up"] = 1.0 if source_up(source) else 0.0
    if history is not None:
        state = history.health()
        gauges["history_healthy"] = 1.0 if state.ok else 0.0
        gauges["degraded_history_data"] = 1.0 if state.faults else 0.0
    return gauges


def health_reasons(
    bus: Bus | None, source: Source | None, history: HistorySink | None
) -> tuple[str, ...]:
    """Why the daemon is degraded; empty when it is healthy."""
    reasons: list[str] = []
    if bus is None or not bus.connected.is_set():
        last = getattr(bus, "last_error", "") if bus is not None else ""
        reasons.append(f"bus: disconnected ({last})" if last else "bus: disconnected")
    if not source_up(source):
        reasons.append("source: not connected")
    if history is not None:
        state = history.health()
        if not state.ok:
            reasons.append(f"history: {state.reason or 'degraded'}")
        reasons.extend(f"history: {fault}" for fault in state.faults)
    return tuple(reasons)


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


def assemble_snapshot(
    tables: MemberTables,
    *,
    bus: Bus | None,
    source: Source | None,
    history: HistorySink | None,
    publisher: Publishing | None,
    echo: EchoWatch,
    sql: SqlFigures | None = None,
) -> DaemonSnapshot:
    """The tables frozen with the daemon's counters, gauges, health and history figures.

    `sql` is the SQL endpoint's figures when [sql] is on: an endpoint not
    serving degrades health ("sql_down", with its reason), and so do live
    tables the daemon cannot send to the endpoint's process ("sql_stale").
    """
    gauges = {
        "bus_connected": 1.0 if bus is not None and bus.connected.is_set() else 0.0,
        **health_gauges(source, history),
    }
    reasons = health_reasons(bus, source, history)
    if publisher is not None:
        silent = echo.silent(published=publisher.published, own=tables.own_total)
        gauges["degraded_bus_echo"] = 1.0 if silent else 0.0
        if silent:
            reasons = (*reasons, "bus: our own envelopes do not come back (broker ACL?)")
        gauges["degraded_gtids_unsendable"] = 1.0 if publisher.gtids_unsendable else 0.0
        if publisher.gtids_unsendable:  # the others cannot judge this member's GTIDs
            reasons = (*reasons, "gtids: local GTID state over the ext.gtids bound, not sent")
    if sql is not None:
        gauges["degraded_sql_down"] = 0.0 if sql.serving else 1.0
        if not sql.serving:
            reasons = (*reasons, f"sql: not serving ({sql.reason})")
        if sql.process_state:
            gauges["degraded_sql_stale"] = 1.0 if sql.snapshot_unsent else 0.0
            if sql.snapshot_unsent:
                reasons = (*reasons, f"sql: {sql.snapshot_unsent}")
            gauges["degraded_sql_limits"] = 1.0 if sql.limits_unset else 0.0
            if sql.limits_unset:
                reasons = (*reasons, f"sql: process limits not set ({sql.limits_unset})")
    snapshot = tables.snapshot(
        now_us(),
        bus_reconnects=bus.reconnects if bus else 0,
        messages_published=publisher.published if publisher else 0,
        applier_workers_dropped=publisher.applier_workers_dropped if publisher else 0,
        sections_unsendable=publisher.sections_unsendable if publisher else None,
        gauges=gauges,
        health=reasons,
    )
    return dataclasses.replace(
        snapshot,
        history=history_figures(history.stats) if history is not None else None,
        sql=sql,
    )


class Publishing(Protocol):
    """What the snapshot needs of the publisher."""

    @property
    def published(self) -> int: ...

    @property
    def applier_workers_dropped(self) -> int: ...

    @property
    def sections_unsendable(self) -> Mapping[str, int]: ...

    @property
    def gtids_unsendable(self) -> bool: ...
