"""Wiring and lifecycle of the member daemon (and of the collector).

Strategy: phases as in uvicorn's server.py — start (source, history, API),
serve (a TaskGroup owning the bus loop, the tick loop and the watchdog until
the stop event is set), drain (publish `offline`, disconnect, flush history —
all under one deadline) and stop. Signals only set the stop event; a second
SIGINT exits at once.

The tick loop runs on the loop clock: tick k is due at start + k x period, a
late tick is not caught up (missed ticks are skipped), so timing never drifts.
Each tick samples the local source (the local row stays live even while the
broker is away), publishes one envelope when connected and the member is
ONLINE or RECOVERING, expires silent members and refreshes the snapshot.
`seq` counts ticks of this incarnation, published or not, so history rows
are never duplicates. Flag '1' (GTID sets present) is set every
`gtid_interval` worth of ticks and after every (re)connect, and stays set
until a message is actually sent — MySQL's "send identifiers" flag. A flag-'1'
envelope is also published, retained, on `<prefix>/<group>/<member>/gtids` so
that a receiver starting later shows our GTID columns at once.

Received messages are applied synchronously inside the bus's drain loop
(`MemberTables.receive` is pure and fast); nothing slow runs there.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any, Protocol

import structlog

from grstats.api.server import ApiServer
from grstats.bus.client import Bus, LastWill
from grstats.config import ConfigError, Settings, load_config
from grstats.core.records import HistoryRow
from grstats.core.rows import history_row
from grstats.core.sample import LocalSample
from grstats.core.snapshot import DaemonSnapshot
from grstats.core.tables import GTIDS_KIND, STATS_KIND, Accepted, MemberTables, Rejected
from grstats.daemon.notify import sd_notify, watchdog_interval_s
from grstats.logs import configure_logging
from grstats.sources.base import Source
from protocol import (
    Envelope,
    MemberInfo,
    encode_envelope,
    encode_pipeline_stats,
)

log = structlog.get_logger("grstats.daemon")


class HistorySink(Protocol):
    """What the daemon needs of grstats.history.writer.HistoryWriter."""

    async def start(self) -> None: ...

    def record(self, row: HistoryRow) -> None: ...

    async def close(self) -> None: ...


class StartupError(Exception):
    """The daemon cannot start (address in use, unusable history directory)."""


DRAIN_TIMEOUT_S = 4.0  # SIGTERM -> exit within 5 s, with margin
_REJECT_LOG_INTERVAL_S = 10.0
_PUBLISHING_STATES = ("ONLINE", "RECOVERING")


def now_us() -> int:
    """Wall clock in microseconds since the epoch (UTC)."""
    return time.time_ns() // 1000


class Daemon:
    """One member daemon (`source` given) or one collector (`source` None).

    Args:
        settings: the validated configuration.
        source: the local member's source; None runs the collector (every
            group, no publishing, history scope "all").
        history: a HistoryWriter-like object (start/record/close) or None.
    """

    def __init__(
        self, settings: Settings, source: Source | None, history: HistorySink | None = None
    ) -> None:
        self.settings = settings
        self.source = source
        self.history = history
        self.collector = source is None
        self.incarnation = random.getrandbits(64)
        self.seq = 0
        self.stop_event = asyncio.Event()
        self._sigint_count = 0
        self._group = settings.member.group
        self._member_id = settings.member.id
        self.tables = self._make_tables()
        self.bus: Bus | None = None
        self.api: ApiServer | None = None
        self._snapshot: DaemonSnapshot | None = None
        self._snapshot_version = -1
        self._snapshot_connected = False
        self._snapshot_at = 0.0
        self._send_gtids = True
        self._last_reject_log = 0.0
        self._suppressed_rejects = 0
        self._status_text = ""
        self._record_remote = self.collector or settings.history.scope == "all"
        self.published = 0

    # -- wiring ---------------------------------------------------------------

    def _make_tables(self) -> MemberTables:
        p = self.settings.publish
        return MemberTables(
            group=None if self.collector else self._group,
            local_member_id=None if self.collector else self._member_id,
            period_s=p.period,
            unreachable_after=p.unreachable_after,
            forget_after_s=p.forget_after,
            max_envelope_size=self.settings.limits.max_envelope_size,
        )

    def _topic(self, kind: str) -> str:
        return f"{self.settings.bus.prefix}/{self._group}/{self._member_id}/{kind}"

    def _make_bus(self) -> Bus:
        b = self.settings.bus
        options = dataclasses.replace(
            b,
            client_id=b.client_id or (f"grstats-{self._member_id}" if not self.collector else ""),
        )
        if self.collector:
            return Bus(
                options,
                subscriptions=[f"{b.prefix}/+/+/+"],
                handler=self._on_message,
                on_connect=self._on_connect,
            )
        will = LastWill(
            self._topic("status"),
            b"offline",
            delay_s=max(1, round(self.settings.publish.forget_after)),
        )
        return Bus(
            options,
            subscriptions=[f"{b.prefix}/{self._group}/+/+"],
            handler=self._on_message,
            will=will,
            on_connect=self._on_connect,
        )

    # -- snapshot -------------------------------------------------------------

    def get_snapshot(self) -> DaemonSnapshot:
        """The current snapshot, rebuilt when the tables changed or time moved on."""
        mono = time.monotonic()
        connected = self.bus is not None and self.bus.connected.is_set()
        if (
            self._snapshot is None
            or self._snapshot_version != self.tables.version
            or self._snapshot_connected != connected
            or mono - self._snapshot_at > min(0.25, self.settings.publish.period / 2)
        ):
            self._snapshot = self._build_snapshot()
            self._snapshot_version = self.tables.version
            self._snapshot_connected = connected
            self._snapshot_at = mono
        return self._snapshot

    def _build_snapshot(self) -> DaemonSnapshot:
        bus = self.bus
        counters = {
            "bus_reconnects": bus.reconnects if bus else 0,
            "messages_published": self.published,
        }
        gauges = {"bus_connected": 1.0 if bus is not None and bus.connected.is_set() else 0.0}
        return self.tables.snapshot(now_us(), counters=counters, gauges=gauges)

    # -- receive path ---------------------------------------------------------

    def _on_message(self, topic: str, payload: bytes, retained: bool) -> None:
        received = now_us()
        result = self.tables.receive(topic, payload, received, retained=retained)
        if isinstance(result, Accepted):
            if self._record_remote and self.history is not None and result.kind == STATS_KIND:
                env = result.envelope
                self.history.record(history_row(env, result.stats, min(env.sent_us, received)))
        elif isinstance(result, Rejected):
            self._log_reject(topic, result)

    def _log_reject(self, topic: str, result: Rejected) -> None:
        mono = time.monotonic()
        if mono - self._last_reject_log < _REJECT_LOG_INTERVAL_S:
            self._suppressed_rejects += 1
            return
        log.warning(
            "envelope.rejected",
            reason=result.reason,
            topic=topic,
            detail=result.detail[:200],
            suppressed=self._suppressed_rejects,
        )
        self._last_reject_log = mono
        self._suppressed_rejects = 0

    async def _on_connect(self) -> None:
        assert self.bus is not None
        if not self.collector:
            self._send_gtids = True  # the broker may have lost our retained messages
            await self.bus.publish(self._topic("status"), b"online", qos=1, retain=True)
        if self.bus.connects == 1:
            sd_notify("READY=1\nSTATUS=connected to the bus")
            log.info("daemon.ready", group=self._group, member=self._member_id)

    # -- tick loop ------------------------------------------------------------

    async def _tick_loop(self) -> None:
        loop = asyncio.get_running_loop()
        period = self.settings.publish.period
        gtid_every = max(1, round(self.settings.publish.gtid_interval / period))
        start = loop.time()
        tick = 0
        next_gtid_tick = 0  # robust to skipped ticks, unlike tick % gtid_every
        while not self.stop_event.is_set():
            if tick >= next_gtid_tick:
                self._send_gtids = True
                next_gtid_tick = tick + gtid_every
            try:
                await self._tick()
            except Exception:  # a bug in one tick must not stop the member's broadcast
                log.exception("daemon.tick_failed")
            self.get_snapshot()
            self._update_status()
            tick += 1
            due = start + tick * period
            now = loop.time()
            if due < now:  # late: skip the missed ticks instead of bursting
                tick = int((now - start) / period) + 1
                due = start + tick * period
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), due - now)

    async def _tick(self) -> None:
        if self.source is None:
            self.tables.expire(now_us())
            return
        sample = await self.source.sample(now_us())
        self.seq += 1
        self.tables.set_local(sample, incarnation=self.incarnation, seq=self.seq)
        member = sample.member
        publishing = member.state in _PUBLISHING_STATES
        sent_gtids = False
        if publishing:
            sent_gtids = await self._publish(sample)
        if self.history is not None and publishing:
            self._record_local(sample, gtids=sent_gtids)
        self.tables.expire(now_us())

    async def _publish(self, sample: LocalSample) -> bool:
        """Publish one envelope; returns whether it carried the GTID sets."""
        bus = self.bus
        gtids = self._send_gtids
        if bus is None or not bus.connected.is_set():
            return gtids  # history still records the live GTIDs on a due tick
        m = sample.member
        stats = dataclasses.replace(
            sample.stats,
            transaction_gtids_present=gtids,
            transactions_committed_all_members=(
                sample.stats.transactions_committed_all_members if gtids else b""
            ),
            transaction_last_conflict_free=(
                sample.stats.transaction_last_conflict_free if gtids else b""
            ),
            sent_timestamp=now_us(),
        )
        envelope = self._local_envelope(
            sample,
            sent_us=now_us(),
            stats=encode_pipeline_stats(stats),
            ext={"communication_stack": m.communication_stack},
        )
        payload = encode_envelope(envelope)
        # A stalled broker must not hold the tick loop longer than about a period.
        wait = max(1.0, self.settings.publish.period)
        stats_topic = self._topic(STATS_KIND)
        if not await bus.publish(stats_topic, payload, qos=0, retain=True, timeout=wait):
            return False
        self.published += 1
        if gtids:
            self._send_gtids = False
            await bus.publish(self._topic(GTIDS_KIND), payload, qos=0, retain=True, timeout=wait)
        return gtids

    def _record_local(self, sample: LocalSample, *, gtids: bool) -> None:
        if self.history is None:
            return
        stats = dataclasses.replace(sample.stats, transaction_gtids_present=gtids)
        envelope = self._local_envelope(sample, sent_us=sample.sampled_at_us, stats=b"")
        self.history.record(history_row(envelope, stats, sample.sampled_at_us))

    def _local_envelope(
        self,
        sample: LocalSample,
        *,
        sent_us: int,
        stats: bytes,
        ext: dict[str, Any] | None = None,
    ) -> Envelope:
        """The envelope for the local member: what is published and what history records."""
        m = sample.member
        return Envelope(
            group=self._group,
            member=MemberInfo(
                id=self._member_id,
                host=m.host,
                # published only ONLINE/RECOVERING, when the server shows a port
                port=m.port or 0,
                state=m.state,
                role=m.role,
                version=m.version,
                gcs_id=m.gcs_id,
            ),
            view_id=m.view_id,
            incarnation=self.incarnation,
            seq=self.seq,
            sent_us=sent_us,
            stats=stats,
            ext={} if ext is None else ext,
        )

    def _update_status(self) -> None:
        snap = self.get_snapshot()
        connected = bool(snap.gauges.get("bus_connected"))
        text = f"bus={'connected' if connected else 'disconnected'} members={len(snap.members)}"
        if text != self._status_text:
            self._status_text = text
            sd_notify(f"STATUS={text}")

    async def _watchdog(self, interval: float) -> None:
        while True:
            sd_notify("WATCHDOG=1")
            await asyncio.sleep(interval)

    # -- lifecycle ------------------------------------------------------------

    def request_stop(self, signum: int | None = None) -> None:
        """Ask the daemon to drain and stop; a second SIGINT exits immediately."""
        if signum == signal.SIGINT:
            self._sigint_count += 1
            if self._sigint_count > 1:
                log.warning("daemon.forced_exit")
                os._exit(130)
        log.info("daemon.stopping", signal=signal.Signals(signum).name if signum else None)
        self.stop_event.set()

    def install_signal_handlers(self) -> None:
        """Route SIGTERM/SIGINT to `request_stop` (the loop's own handlers)."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request_stop, signum)

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
            from grstats.history.writer import HistoryError  # noqa: PLC0415 - pyarrow only when used

            try:
                await self.history.start()
            except (HistoryError, OSError) as exc:
                raise StartupError(f"history: {exc}") from exc
        self.api = ApiServer(self.settings.api.host, self.settings.api.port, self.get_snapshot)
        try:
            await self.api.start()
        except OSError as exc:
            raise StartupError(
                f"api: cannot listen on {self.settings.api.host}:{self.settings.api.port}: "
                f"{exc.strerror or exc}"
            ) from exc
        if not self.collector and not (self._group and self._member_id):
            await self._wait_for_identity()
        self.bus = self._make_bus()
        log.info(
            "daemon.started",
            mode="collector" if self.collector else "member",
            group=self._group or "*",
            member=self._member_id or None,
            incarnation=self.incarnation,
            api_port=self.api.port,
        )

    async def _wait_for_identity(self) -> None:
        """The mysql source may leave [member] group/id to the server: learn them first."""
        assert self.source is not None
        while not self.stop_event.is_set():
            sample = await self.source.sample(now_us())
            self.tables.set_local(sample, incarnation=self.incarnation, seq=0)
            if sample.member.group_name and sample.member.member_id:
                self._group = sample.member.group_name
                self._member_id = sample.member.member_id
                self.tables = self._make_tables()
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), self.settings.publish.period)

    async def _serve(self) -> None:
        assert self.bus is not None
        watchdog = watchdog_interval_s()
        async with asyncio.TaskGroup() as tg:
            bus_task = tg.create_task(self.bus.run(), name="bus")
            tick_task = tg.create_task(self._tick_loop(), name="tick")
            wd_task = tg.create_task(self._watchdog(watchdog), name="wd") if watchdog else None
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
        if not self.collector and self.bus.connected.is_set():
            try:
                async with asyncio.timeout_at(deadline - 1.0):
                    # Clear our retained stats so that later receivers do not see a ghost.
                    await self.bus.publish(self._topic(STATS_KIND), b"", retain=True)
                    await self.bus.publish(self._topic(GTIDS_KIND), b"", retain=True)
                    await self.bus.publish(self._topic("status"), b"offline", qos=1, retain=True)
            except TimeoutError:
                log.warning("daemon.offline_not_published")
        await self.bus.close()
        try:
            await asyncio.wait_for(asyncio.shield(bus_task), max(0.1, deadline - loop.time()))
        except TimeoutError:
            bus_task.cancel()

    async def _shutdown(self) -> None:
        if self.history is not None:
            try:
                await asyncio.wait_for(self.history.close(), 3.0)
            except TimeoutError:
                log.warning("history.close_timeout")
        if self.source is not None:
            await self.source.close()
        if self.api is not None:
            await self.api.close()
        log.info("daemon.stopped", published=self.published)


# -- process entry (used by `grstats run` and `grstats collect`) ---------------


def _make_source(settings: Settings) -> Source:
    if settings.source_kind == "mysql":
        from grstats.sources.mysql import (  # noqa: PLC0415 - asyncmy only when used
            MySQLSettings,
            MySQLSource,
        )

        assert isinstance(settings.source_settings, MySQLSettings)
        return MySQLSource(settings.source_settings)
    from grstats.sources.simulated.model import (  # noqa: PLC0415 - numpy only when used
        GroupModel,
        SimulatedSource,
        SimulationSettings,
    )

    assert isinstance(settings.source_settings, SimulationSettings)
    return SimulatedSource(GroupModel(settings.source_settings), settings.member.id)


def _make_history(settings: Settings, *, collector: bool) -> HistorySink | None:
    h = settings.history
    if not h.dir:
        return None
    from grstats.history.writer import HistoryWriter  # noqa: PLC0415 - pyarrow only when used

    return HistoryWriter(
        Path(h.dir),
        scope="all" if collector else h.scope,
        retention_days=h.retention_days,
        flush_interval_s=h.flush_interval,
    )


async def _async_main(daemon: Daemon) -> int:
    daemon.install_signal_handlers()
    return await daemon.run()


def run_process(
    config_path: str,
    *,
    collector: bool,
    log_format: str | None = None,
    log_level: str | None = None,
) -> int:
    """Load the configuration, configure logging once, run the daemon to completion.

    Args:
        config_path: the TOML file.
        collector: run the collector instead of a member daemon.
        log_format: overrides [log] format.
        log_level: overrides [log] level.

    Returns:
        The exit status: 0 after a clean stop, 2 for a configuration error,
        1 when the daemon cannot start (address in use, unusable history dir).
    """
    try:
        settings = load_config(config_path, require_member=not collector)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    configure_logging(log_level or settings.log.level, log_format or settings.log.format)
    try:
        source = None if collector else _make_source(settings)
        history = _make_history(settings, collector=collector)
        daemon = Daemon(settings, source, history)
        return asyncio.run(_async_main(daemon))
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except StartupError as exc:
        log.error("daemon.start_failed", error=str(exc))
        print(f"grstats: {exc}", file=sys.stderr)
        return 1
