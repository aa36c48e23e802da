"""The daemon's SQL endpoint as a supervised child process, started when a client comes.

Strategy: whatever a SQL client does (a query that freezes mysql-mimic's
own executor, megabytes of packets before login, a huge result), it happens
in another process, with its own address-space and CPU limits, at a lower
priority; the daemon's event loop only hands it the live tables and reads
its figures. That process (DuckDB, sqlglot, mysql-mimic: over 100 MB) runs
only while someone uses it: `SqlChild.start` binds the endpoint's address in
the daemon (`grstats.sql.listener`), so the port is known when the daemon
logs `daemon.started`, and `run` waits for a pending connection (nothing
accepted) before it spawns `python -m grstats.daemon.sqlmain`, which
inherits the listening sockets and accepts from them. A child with no client
for [sql] child_idle_stop seconds stops accepting and ends (EXIT_IDLE); the
daemon watches the sockets again. A child that ends otherwise (killed,
past its limits, silent past child_timeout; a child still starting has
START_WAIT_S) is started again after a backoff doubling from
BACKOFF_INITIAL_S up to BACKOFF_MAX_S (back to the start once a child ran
STABLE_AFTER_S), as issue 22 had it, and /healthz says "sql_down" until it
reports: a restart is proven, not assumed; it then ends idle as any.

Invariants: `offer` is O(1) on the event loop and the loop never waits for
the child (`SnapshotFeed`, grstats.daemon.sqlfeed: at most one snapshot
buffered, the rest dropped and counted in `snapshots_dropped`); no snapshot
is built for it while no child runs (`running`). Counters of the child
survive its ends (the ended child's totals are kept and added). The daemon
never accepts a connection: only a child does, so none is lost between two
children. The child gets the daemon's environment without the systemd
notify and socket-activation variables: only the daemon pings the watchdog
(the sockets, the process's start and end: `grstats.daemon.sqlprocess`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from grstats.config import Settings
from grstats.core.snapshot import DAEMON_SQL_FIELDS, DaemonSnapshot, SqlFigures
from grstats.daemon.sqlfeed import SnapshotFeed
from grstats.daemon.sqlprocess import RETRY_S, Listening, start_process, stop_process
from grstats.sql.channel import ChannelError, ChildConfig, figures_from, read_frame
from grstats.sql.child import EXIT_IDLE, EXIT_REASONS, REPLY_MAX_BYTES
from grstats.sql.listener import wait_pending

log = structlog.get_logger("grstats.daemon")

BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 30.0
STABLE_AFTER_S = 60.0
START_WAIT_S = 30.0  # a child's first figures (it imports DuckDB & co. first), before SIGKILL
STOP_WAIT_S = 2.0  # after its input closes, before SIGKILL
CHECK_S = 0.5  # how often the supervisor looks at the child's silence
CHILD_REFUSALS = ("too_large", "version", "malformed")  # snapshots the child refused
_GAUGES = ("serving", "reason", "connections_open", "max_connections")


def exit_reason(returncode: int) -> str:
    """Why a child ended, from its exit status (negative: the signal that killed it)."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return EXIT_REASONS.get(returncode, f"exited with status {returncode}")


def backoff_s(failures: int) -> float:
    """The wait before the next start after `failures` quick ends in a row (0: a stable run)."""
    return float(min(BACKOFF_MAX_S, BACKOFF_INITIAL_S * 2 ** max(0, failures - 1)))


def add_counts(base: SqlFigures, last: SqlFigures) -> SqlFigures:
    """`last` with `base`'s counters added to its own (its gauges and texts as they are)."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(SqlFigures):
        if f.name in _GAUGES or f.name in DAEMON_SQL_FIELDS:
            continue
        a, b = getattr(base, f.name), getattr(last, f.name)
        if isinstance(a, Mapping):
            changes[f.name] = {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}
        elif isinstance(a, int) and not isinstance(a, bool):
            changes[f.name] = a + b
    return dataclasses.replace(last, **changes)


class SqlChild:
    """Holds the endpoint's sockets; spawns, feeds and restarts its process when clients come.

    Args:
        config: what the child is told (its port is replaced by the one bound).
        snapshot: the daemon's current live tables (built when a child starts).
    """

    def __init__(
        self,
        config: ChildConfig,
        snapshot: Callable[[], DaemonSnapshot],
        *,
        child_timeout: float = 30.0,
    ) -> None:
        self.config = config
        self.child_timeout = child_timeout
        self.listening = Listening(config)
        self.state = "stopped"
        self.pid = 0
        self.restarts = 0
        self.last_exit = ""
        self.feed = SnapshotFeed(config.max_snapshot_bytes)  # the live tables, to the child
        self.replies_refused = 0
        self._snapshot = snapshot
        self._base = SqlFigures()
        self._current = SqlFigures(max_connections=config.options.max_connections)
        self._proc: asyncio.subprocess.Process | None = None
        self._replies: asyncio.Task[None] | None = None
        self._child_refused: dict[str, int] = {}
        self._child_refused_base: dict[str, int] = {}
        self._started_at = 0.0
        self._heard = 0.0  # when the child last reported (or was started)
        self._killed_for = ""  # why the daemon killed the current child ("" if it did not)
        self._again = False  # the child starting follows one that ended abnormally

    @property
    def port(self) -> int:
        """The endpoint's port (the configured one until the sockets are bound)."""
        return self.listening.port

    @property
    def running(self) -> bool:
        """True while a child process exists (and so wants the live tables)."""
        return self._proc is not None

    # -- what the daemon reads ---------------------------------------------------

    def figures(self) -> SqlFigures:
        """The endpoint's figures: the child's, its process's state, the snapshots sent."""
        up = self.state == "up"
        current = self._current
        if up:
            serving, reason = current.serving, current.reason
        elif self.listening.sockets and (
            self.state == "idle" or (self.state == "starting" and not self._again)
        ):
            serving, reason = True, ""  # a connection is answered by the child it starts
        else:
            serving = False
            last = f", last {self.last_exit}" if self.last_exit else ""
            reason = self.listening.failure or f"process {self.state}{last}"
            if self.state == "unresponsive":
                silence = time.monotonic() - self._heard
                reason = f"process unresponsive (no figures for {silence:.0f} s)"
        totals = add_counts(self._base, current)
        return dataclasses.replace(
            totals,
            serving=serving,
            reason="" if serving else reason,
            connections_open=current.connections_open if up else 0,
            max_connections=self.config.options.max_connections,
            process_state=self.state,
            process_pid=self.pid,
            process_restarts=self.restarts,
            process_last_exit=self.last_exit,
            snapshots_sent=self.feed.sent,
            snapshots_dropped=self._drops(),
            snapshot_unsent=self.feed.unsent,
        )

    def _check_silence(self, proc: asyncio.subprocess.Process, now: float) -> None:
        """A child whose figures stop coming is unresponsive, and killed past child_timeout."""
        silence = now - self._heard
        if self.state == "up" and silence > max(3.0, 3 * self.config.report_interval):
            self.state = "unresponsive"
            log.warning("sql.child_unresponsive", pid=proc.pid, silence_s=round(silence, 1))
        # a child still starting (its imports: seconds on a busy node) has START_WAIT_S
        timeout = self.child_timeout if self.state != "starting" else START_WAIT_S
        if silence > timeout and proc.returncode is None and not self._killed_for:
            self._killed_for = f"no figures for {silence:.0f} s"
            log.error("sql.child_killed", pid=proc.pid, reason=self._killed_for)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def _drops(self) -> dict[str, int]:
        """Snapshots dropped by the daemon, and refused by the child (`child_<reason>`)."""
        out = dict(self.feed.dropped)
        for reason in CHILD_REFUSALS:
            count = self._child_refused_base.get(reason, 0) + self._child_refused.get(reason, 0)
            out[f"child_{reason}"] = count
        return out

    def offer(self, snapshot: DaemonSnapshot) -> None:
        """Hand the child the latest live tables (O(1): the sending is `run`'s)."""
        self.feed.offer(snapshot)

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Bind the endpoint's address (no process: the first connection starts one)."""
        self.listening.ready()
        self.state = "idle"

    async def run(self, stop: asyncio.Event) -> None:
        """Start a child on a first connection (again after an abnormal end, once the
        backoff passed), feed it, follow its end, until `stop` is set."""
        failures = 0
        async with asyncio.TaskGroup() as tg:
            sender = tg.create_task(self.feed.run(self._child_input), name="sql-send")
            stopped = tg.create_task(stop.wait(), name="sql-stop")
            while not stop.is_set():
                if not self.listening.ready():
                    await asyncio.wait({stopped}, timeout=RETRY_S)
                    continue
                if self._again:
                    self.restarts += 1
                else:
                    self.state = "idle"
                    pending = tg.create_task(wait_pending(self.listening.sockets), name="sql-wait")
                    await asyncio.wait({pending, stopped}, return_when=asyncio.FIRST_COMPLETED)
                    if not pending.done():
                        pending.cancel()
                        break
                await self._spawn()
                proc = self._proc
                if proc is None:  # it could not even be started
                    failures += 1
                else:
                    ended = tg.create_task(proc.wait(), name="sql-wait")
                    while not (ended.done() or stop.is_set()):
                        await asyncio.wait(
                            {ended, stopped}, timeout=CHECK_S, return_when=asyncio.FIRST_COMPLETED
                        )
                        self._check_silence(proc, time.monotonic())
                    if not ended.done():
                        ended.cancel()
                        break
                    await self._reap(proc)
                    if proc.returncode == EXIT_IDLE:
                        log.info("sql.child_idle_ended", pid=proc.pid)
                        failures, self._again = 0, False
                        continue
                    lived = time.monotonic() - self._started_at
                    failures = 0 if lived >= STABLE_AFTER_S else failures + 1
                self._again = True
                delay = backoff_s(failures)
                self.state = "restarting"
                log.error("sql.child_ended", reason=self.last_exit, restart_in_s=delay)
                await asyncio.wait({stopped}, timeout=delay)
            sender.cancel()
            stopped.cancel()

    async def close(self) -> None:
        """End the child: its input closed (it stops serving), SIGKILL after STOP_WAIT_S."""
        proc = self._proc
        if proc is not None:
            await stop_process(proc, STOP_WAIT_S)
            await self._reap(proc)
        self.listening.close()
        self.state = "stopped"

    # -- the child process -------------------------------------------------------

    async def _spawn(self) -> None:
        self.state = "starting"
        self._current = SqlFigures(max_connections=self.config.options.max_connections)
        try:
            proc = await start_process(self.config, self.listening)
        except OSError as exc:
            self.last_exit = f"cannot start: {exc.strerror or exc}"
            self.state = "restarting"
            log.error("sql.child_not_started", reason=self.last_exit)
            return
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self.pid = proc.pid
        self._started_at = self._heard = time.monotonic()
        self._killed_for = ""
        self.feed.latest = self._snapshot()  # none was built while no child ran
        self.feed.send_latest(proc.stdin)  # at once: @@server_uuid comes from it
        self._replies = asyncio.create_task(self._read_replies(proc.stdout), name="sql-replies")
        log.info("sql.child_spawned", pid=proc.pid, restarts=self.restarts)

    async def _reap(self, proc: asyncio.subprocess.Process) -> None:
        """Record how a child ended and finish reading its last figures."""
        if self._replies is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._replies), 1.0)
            self._replies.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._replies
            self._replies = None
        if proc.stdin is not None:
            proc.stdin.close()
        if self._proc is proc:
            self._base = add_counts(self._base, self._current)
            for reason, count in self._child_refused.items():
                self._child_refused_base[reason] = self._child_refused_base.get(reason, 0) + count
            self._child_refused = {}
            self._current = SqlFigures(max_connections=self.config.options.max_connections)
            self.last_exit = exit_reason(proc.returncode if proc.returncode is not None else 0)
            if self._killed_for:
                self.last_exit += f" ({self._killed_for})"
            self._proc = None
            self.pid = 0

    async def _read_replies(self, stdout: asyncio.StreamReader) -> None:
        while True:
            try:
                message = await read_frame(stdout, REPLY_MAX_BYTES)
                if message is None:
                    return
                if message["kind"] != "figures":
                    raise ChannelError("malformed", f"kind {message['kind']!r}")
                figures, _, refused = figures_from(message)
            except ChannelError as exc:
                self.replies_refused += 1
                log.warning("sql.child_reply_refused", reason=exc.reason, error=str(exc))
                continue
            self._current = figures
            self._child_refused = refused
            self.state = "up"
            self._heard = time.monotonic()

    def _child_input(self) -> asyncio.StreamWriter | None:
        return self._proc.stdin if self._proc is not None else None


def child_config(settings: Settings) -> ChildConfig:
    """What the child is told, from [sql], [log] and [publish] (figures once a period, <= 1 s)."""
    sql = settings.sql
    return ChildConfig(
        options=sql.options(),
        max_snapshot_bytes=sql.max_snapshot_bytes,
        report_interval=min(1.0, settings.publish.period),
        max_address_space=sql.max_address_space,
        max_cpu_seconds=sql.max_cpu_seconds,
        nice=sql.nice,
        log_level=settings.log.level,
        log_format=settings.log.format,
        idle_stop=sql.child_idle_stop,
    )
