"""Lifecycle of the member daemon and of the collector.

Strategy: phases as in uvicorn's server.py — start (source, history, API),
serve (a TaskGroup owning the bus loop, the tick loop and the watchdog until
the stop event is set), drain (withdraw from the bus, disconnect, flush
history — all under one deadline) and stop. Signals only set the stop event;
a second SIGINT exits at once (`stopping`). Readers share one snapshot,
rebuilt only when it must be (`snapcache`).

The tick loop runs on the loop clock: tick k is due at start + k x period, a
late tick is not caught up (missed ticks are skipped), so timing never drifts
(`ticks`).
Each tick lets the publisher sample and publish (member daemon only), expires
silent members and refreshes the snapshot. The collector is this daemon
without a publisher: it subscribes to every group and records every member.

Scale-out (`[bus] shared_group`): collectors of one shared group split the
stats among them (MQTT 5 `$share/<name>/<prefix>/+/+/stats`), so each envelope
is recorded by one of them. Each one's tables still hold every member: the
retained stats are read on every connect by a plain subscription dropped at
once (a broker sends no retained messages to a share), and `status` and
`gtids` (low rate) are subscribed unshared. A member's stats then reach a
collector at about 1/N of its rate, so silence is judged over
`SHARED_SILENCE_FACTOR` x `unreachable_after` periods; a member that leaves
or dies is still removed at once by its `offline` status (its Will).

Health: `/healthz` is "ok" only while nothing is degraded; each degraded part
adds a reason (bus disconnected with its last error, history not writing,
source down), so a fault shows instead of being hidden behind "ok".
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import structlog

from grstats.api.server import ApiServer
from grstats.bus.client import Bus
from grstats.config import Settings
from grstats.core.snapshot import DaemonSnapshot, DaemonStatus
from grstats.core.tables import MemberTables
from grstats.daemon.health import (
    DaemonParts,
    EchoWatch,
    HistorySink,
    assemble_snapshot,
    assemble_status,
    now_us,
)
from grstats.daemon.notify import sd_notify, status_text, watchdog_interval_s, watchdog_loop
from grstats.daemon.publisher import Publisher
from grstats.daemon.receiver import Receiver
from grstats.daemon.snapcache import SnapshotCache
from grstats.daemon.stopping import StopRequest
from grstats.daemon.ticks import TickSchedule
from grstats.daemon.wiring import make_bus, make_tables
from grstats.sources.base import Source

if TYPE_CHECKING:
    from grstats.daemon.sqlchild import SqlChild

log = structlog.get_logger("grstats.daemon")


class StartupError(Exception):
    """The daemon cannot start (address in use, unusable history directory)."""


DRAIN_TIMEOUT_S = 4.0  # SIGTERM -> exit within 5 s, with margin
# not alive past this without a tick (the shipped unit's WatchdogSec=30 then restarts it)
LIVE_STALL_S = 20.0


class Daemon:
    """One member daemon (`source` given) or one collector (`source` None).

    Args:
        settings: the validated configuration.
        source: the local member's source; None runs the collector (every
            group, no publishing, history scope "all").
        history: a history writer (start/record/close) or None.
    """

    def __init__(
        self, settings: Settings, source: Source | None, history: HistorySink | None = None
    ) -> None:
        self.settings = settings
        self.source = source
        self.history = history
        self.stopping = StopRequest()
        self.stop_event = self.stopping.event
        self.tables = self._make_tables(settings.member.group, settings.member.id)
        self.publisher = (
            None if source is None else Publisher(settings, source, self.tables, history)
        )
        record_remote = source is None or settings.history.scope == "all"
        self.receiver = Receiver(self.tables, history if record_remote else None)
        self.bus: Bus | None = None
        # built here, bound at start: /healthz reads `get_status`, no table is built for it
        self.api = ApiServer(settings.api, self.get_snapshot, self.get_status, self.stalled)
        self._last_tick = time.monotonic()  # liveness: the tick loop's last pass
        self.sql: SqlChild | None = None  # [sql]: the MySQL-protocol endpoint's process
        max_age = min(0.25, settings.publish.period / 2)  # the oldest a reader gets
        self._snapshots = SnapshotCache(self._build_snapshot, max_age)
        self._status_text = ""
        self._echo = EchoWatch()

    @property
    def collector(self) -> bool:
        """True for the collector (no local member, every group)."""
        return self.source is None

    # -- wiring ---------------------------------------------------------------

    def _make_tables(self, group: str, member_id: str) -> MemberTables:
        if self.collector:
            return make_tables(self.settings, group=None, member_id=None)
        return make_tables(self.settings, group=group, member_id=member_id)

    def _make_bus(self) -> Bus:
        return make_bus(self.settings, self.publisher, self.receiver.on_message, self._on_connect)

    async def _on_connect(self) -> None:
        assert self.bus is not None
        if self.publisher is not None:
            await self.publisher.on_connect(self.bus)
        if self.bus.connects == 1:
            sd_notify("READY=1\nSTATUS=connected to the bus")
            log.info(
                "daemon.ready",
                group=self.tables.group,
                member=self.tables.local_member_id,
            )

    # -- snapshot and health ----------------------------------------------------

    def get_snapshot(self, *, fresh: bool = False) -> DaemonSnapshot:
        """The current snapshot, at most `min(0.25, period / 2)` s old (`SnapshotCache`).

        The tick asks for a `fresh` one (its own sample included) whenever the
        tables changed; other readers share the last one.
        """
        connected = self.bus is not None and self.bus.connected.is_set()
        return self._snapshots.get(
            version=self.tables.version, connected=connected, fresh=fresh, now=time.monotonic()
        )

    @property
    def snapshots_built(self) -> int:
        """Snapshots built since start (each builds every table of every member)."""
        return self._snapshots.builds

    def get_status(self) -> DaemonStatus:
        """What /healthz and STATUS= show, now: the counters and checks, no table built.

        Counters or a health other than the current snapshot's make the next
        reader's snapshot fresh (built then: none is built here), so /metrics and
        /v1/tables say at least what /healthz has just said.
        """
        status = assemble_status(self.tables, self._parts())
        shown = self._snapshots.current
        if shown is not None and (shown.health, shown.counters) != (status.health, status.counters):
            self._snapshots.invalidate()
        return status

    def _build_snapshot(self) -> DaemonSnapshot:
        return assemble_snapshot(self.tables, self._parts())

    def _parts(self) -> DaemonParts:
        sql = self.sql.figures() if self.sql is not None else None
        return DaemonParts(self.bus, self.source, self.history, self.publisher, self._echo, sql)

    def _update_status(self) -> None:
        text = status_text(self.get_status())
        if text != self._status_text:
            self._status_text = text
            sd_notify(f"STATUS={text}")

    # -- tick loop ------------------------------------------------------------

    def stalled(self) -> str:
        """Liveness (/livez, the watchdog): "" while the tick loop passes at least
        every `LIVE_STALL_S` (or 5 periods), else how long it has not."""
        bound = max(LIVE_STALL_S, 5 * self.settings.publish.period)
        quiet = time.monotonic() - self._last_tick
        return (
            f"tick loop stalled for {quiet:.1f} s (at most {bound:.1f} s)" if quiet > bound else ""
        )

    async def _tick_loop(self) -> None:
        loop = asyncio.get_running_loop()
        schedule = TickSchedule(loop.time(), self.settings.publish.period)
        while not self.stop_event.is_set():
            try:
                if self.publisher is not None:
                    await self.publisher.tick(schedule.tick, self.bus)
                self.tables.tick(now_us())
            except Exception:  # a bug in one tick must not stop the member's broadcast
                log.exception("daemon.tick_failed")
            if self.sql is not None and self.sql.running:
                self.sql.offer(self.get_snapshot(fresh=True))
            else:  # the next reader of the tables builds it (its own sample included)
                self._snapshots.want_fresh()
            self._update_status()
            self._last_tick = time.monotonic()
            now = loop.time()
            due = schedule.next_due(now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), due - now)

    # -- lifecycle ------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT ask the daemon to stop; a second SIGINT exits at once."""
        self.stopping.install()

    async def run(self) -> int:
        """Start, serve until stopped, drain, stop.

        Returns:
            The process exit status (0 after a clean stop).
        """
        await self._startup()
        try:
            await self._serve()
        finally:
            await self._shutdown()
        return 0

    async def _startup(self) -> None:
        if self.source is not None:
            await self.source.start()
        if self.history is not None:
            from grstats.history.writer import HistoryError  # noqa: PLC0415 - pyarrow when used

            try:
                await self.history.start()
            except (HistoryError, OSError) as exc:
                raise StartupError(f"history: {exc}") from exc
        api = self.settings.api
        try:
            await self.api.start()
        except OSError as exc:
            raise StartupError(
                f"api: cannot listen on {api.host}:{api.port}: {exc.strerror or exc}"
            ) from exc
        await self._start_sql()
        pub = self.publisher
        if pub is not None and not (pub.group and pub.member_id):
            await self._wait_for_identity(pub)
        self.bus = self._make_bus()
        log.info(
            "daemon.started",
            mode="collector" if self.collector else "member",
            shared_group=(self.settings.bus.shared_group or None) if self.collector else None,
            group=self.tables.group or "*",
            member=self.tables.local_member_id,
            incarnation=pub.incarnation if pub else None,
            api_port=self.api.port,
            sql_port=self.sql.port if self.sql else None,
        )

    async def _start_sql(self) -> None:
        sql = self.settings.sql
        if not sql.enabled:
            return
        from grstats.daemon.sqlchild import SqlChild, child_config  # noqa: PLC0415 - with [sql]

        # its own process (DESIGN.md: nothing a client does reaches the loop), started
        # by the first connection. Not fatal: the daemon serves its other duties and
        # /healthz says "sql_down" while the address cannot be bound (tried again) or
        # the child is restarted.
        self.sql = SqlChild(
            child_config(self.settings),
            lambda: self.get_snapshot(fresh=True),
            child_timeout=self.settings.sql.child_timeout,
        )
        await self.sql.start()

    async def _wait_for_identity(self, pub: Publisher) -> None:
        """The mysql source may leave [member] group/id to the server: learn them first."""
        assert self.source is not None
        while not self.stop_event.is_set():
            sample = await self.source.sample(now_us())
            self.tables.set_local(sample, incarnation=pub.incarnation, seq=0)
            if pub.adopt_identity(sample):
                self.tables = self._make_tables(pub.group, pub.member_id)
                pub.tables = self.tables
                self.receiver.tables = self.tables
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), self.settings.publish.period)

    async def _serve(self) -> None:
        assert self.bus is not None
        watchdog = watchdog_interval_s()
        async with asyncio.TaskGroup() as tg:
            bus_task = tg.create_task(self.bus.run(), name="bus")
            tick_task = tg.create_task(self._tick_loop(), name="tick")
            wd = watchdog_loop(watchdog, self.stalled) if watchdog else None
            wd_task = tg.create_task(wd, name="wd") if wd else None
            if self.sql is not None:
                tg.create_task(self.sql.run(self.stop_event), name="sql")
            await self.stop_event.wait()
            sd_notify("STOPPING=1")
            deadline = asyncio.get_running_loop().time() + DRAIN_TIMEOUT_S
            await tick_task
            await self._drain_bus(bus_task, deadline)
            if wd_task is not None:
                wd_task.cancel()

    async def _drain_bus(self, bus_task: asyncio.Task[None], deadline: float) -> None:
        assert self.bus is not None
        loop = asyncio.get_running_loop()
        if self.publisher is not None and self.bus.connected.is_set():
            try:
                async with asyncio.timeout_at(deadline - 1.0):
                    # Clear our retained stats so that later receivers do not see a ghost.
                    await self.publisher.withdraw(self.bus)
            except TimeoutError:
                log.warning("daemon.offline_not_published")
        await self.bus.close()
        try:
            await asyncio.wait_for(asyncio.shield(bus_task), max(0.1, deadline - loop.time()))
        except TimeoutError:
            bus_task.cancel()

    async def _shutdown(self) -> None:
        # the SQL child stops (<= sqlchild.STOP_WAIT_S) while the history flushes
        sql_closed = asyncio.create_task(self.sql.close()) if self.sql is not None else None
        if self.history is not None:
            try:
                await asyncio.wait_for(self.history.close(), 3.0)
            except TimeoutError:
                log.warning("history.close_timeout")
        if self.source is not None:
            await self.source.close()
        await self.api.close()
        if sql_closed is not None:
            await sql_closed
        log.info("daemon.stopped", published=self.publisher.published if self.publisher else 0)
