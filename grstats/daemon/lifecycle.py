"""Lifecycle of the member daemon and of the collector.

Strategy: phases as in uvicorn's server.py, and `run` reads as them —
`start` (source, history, API, the SQL endpoint's process, the bus), `serve`
(a TaskGroup owning the bus loop, the tick loop, the watchdog and the SQL
endpoint's supervisor until the stop event is set), `drain` (withdraw from
the bus and disconnect, under one deadline) and `stop` (the SQL endpoint,
history, source, API). Signals only set the stop event; a second SIGINT exits
at once (`stopping`). Readers share one snapshot, rebuilt only when it must
be (`views`: the snapshot, /healthz's status, STATUS=).

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

from grstats.api.live import PageOptions
from grstats.api.server import ApiServer
from grstats.bus.client import Bus
from grstats.config import Settings
from grstats.core.recent import RecentSeries, points_of
from grstats.core.snapshot import DaemonSnapshot, DaemonStatus
from grstats.core.tables import MemberTables
from grstats.daemon.health import DaemonParts, EchoWatch, HistorySink, now_us
from grstats.daemon.notify import sd_notify, watchdog_interval_s, watchdog_loop
from grstats.daemon.publisher import Publisher
from grstats.daemon.receiver import Receiver
from grstats.daemon.stopping import StopRequest
from grstats.daemon.ticks import TickSchedule
from grstats.daemon.views import DaemonView
from grstats.daemon.wiring import make_bus, make_sql, make_tables
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
        # the live page's last 15 minutes: a point a step from a snapshot (`_tick_loop`)
        self.recent = RecentSeries(
            step_s=max(5.0, settings.publish.period), max_bytes=settings.api.page_series_bytes
        )
        page = PageOptions(period_s=settings.publish.period, recent=self.recent)
        # built here, bound at start: /healthz reads `get_status`, no table is built for it
        self.api = ApiServer(
            settings.api, self.get_snapshot, self.get_status, self.stalled, page=page
        )
        self._last_tick = time.monotonic()  # liveness: the tick loop's last pass
        self.sql: SqlChild | None = None  # [sql]: the MySQL-protocol endpoint's process
        self._echo = EchoWatch()
        max_age = min(0.25, settings.publish.period / 2)  # the oldest a reader gets
        self.view = DaemonView(lambda: self.tables, self._parts, self._connected, max_age)

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

    # -- what readers see (views.DaemonView) -----------------------------------

    def get_snapshot(self, *, fresh: bool = False) -> DaemonSnapshot:
        """The current snapshot (`DaemonView.snapshot`)."""
        return self.view.snapshot(fresh=fresh)

    def get_status(self) -> DaemonStatus:
        """What /healthz and STATUS= show, now (`DaemonView.status`)."""
        return self.view.status()

    @property
    def snapshots_built(self) -> int:
        """Snapshots built since start (each builds every table of every member)."""
        return self.view.builds

    def _parts(self) -> DaemonParts:
        sql = self.sql.figures() if self.sql is not None else None
        return DaemonParts(self.bus, self.source, self.history, self.publisher, self._echo, sql)

    def _connected(self) -> bool:
        return self.bus is not None and self.bus.connected.is_set()

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
            wall = time.time()
            if self.recent.due(wall):  # after publishing; one snapshot a step at most
                self.recent.observe(wall, points_of(self.get_snapshot(fresh=True)))
            self.view.refreshed(self.sql)
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
        await self.start()
        try:
            await self.serve()
        finally:
            await self.stop()
        return 0

    async def start(self) -> None:
        """Start the source, the history, the API, the SQL endpoint and (not yet run) the bus.

        Raises:
            StartupError: the API cannot listen, or the history cannot start.
        """
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
        # not fatal: /healthz says "sql_down" meanwhile; its process starts on the
        # first connection
        self.sql = make_sql(self.settings, lambda: self.get_snapshot(fresh=True))
        if self.sql is not None:
            await self.sql.start()
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

    async def serve(self) -> None:
        """Run the bus, the ticks, the watchdog and the SQL endpoint until asked to stop;
        then drain, within `DRAIN_TIMEOUT_S`."""
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
            await self.drain(bus_task, deadline)
            if wd_task is not None:
                wd_task.cancel()

    async def drain(self, bus_task: asyncio.Task[None], deadline: float) -> None:
        """Withdraw our retained messages and disconnect, by `deadline` (loop time)."""
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

    async def stop(self) -> None:
        """Stop the SQL endpoint, flush the history, close the source and the API."""
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
