"""The SQL endpoint inside a daemon's child process: live tables over a pipe, limits of its own.

Strategy: the daemon (`grstats.daemon.sqlchild`) starts this process and
talks to it over two pipes (`channel` frames): it sends one "config" message,
then a "snapshot" of the live tables every period; the child serves the
endpoint (`SqlServer`) over the latest snapshot it decoded and reads the
history and rollups itself. Every `report_interval` it sends its "figures"
(the endpoint's counters, its port, the snapshots it refused), which the
daemon shows in /metrics and /healthz.

Invariants: the child sets its own RLIMIT_AS and RLIMIT_CPU and niceness
(`apply_limits`) before it serves a client; past RLIMIT_CPU it
exits with EXIT_CPU, on a MemoryError at the top with EXIT_MEMORY, so the
daemon names why it restarted it. It ends when its input ends (the daemon
went away) or on SIGTERM; SIGINT is the daemon's to handle. It listens on
the daemon's sockets when it inherited them (`listen_fds`, `listener`), and
after `idle_stop` seconds without a client it stops accepting (at once: a
connection arriving then waits for the daemon's next child) and ends with
EXIT_IDLE, its last figures sent. A snapshot
frame past `max_snapshot_bytes`, of another version or malformed is refused
and counted; the previous snapshot stays. A figures message is skipped while
the daemon has not read the previous ones (never buffered without bound).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import resource
import signal
import time
from types import FrameType
from typing import TYPE_CHECKING

import structlog

from grstats.core.snapshot import DaemonSnapshot
from grstats.sql.channel import (
    REFUSALS,
    ChannelError,
    ChildConfig,
    encode_frame,
    figures_message,
    read_frame,
    snapshot_from,
)
from grstats.sql.listener import inherited

if TYPE_CHECKING:
    from grstats.sql.engine import HistoryTail

log = structlog.get_logger("grstats.sql")

EXIT_MEMORY = 3  # the address-space limit was reached (MemoryError)
EXIT_CPU = 4  # the CPU-time limit was reached (SIGXCPU)
EXIT_IDLE = 5  # no client for idle_stop seconds: a normal end, started again on a connection
EXIT_REASONS = {
    EXIT_MEMORY: "address space limit reached (max_address_space)",
    EXIT_CPU: "CPU time limit reached (max_cpu_seconds)",
    EXIT_IDLE: "no client for child_idle_stop seconds",
}
CPU_GRACE_S = 5  # the hard RLIMIT_CPU (SIGKILL) this long after the soft one (SIGXCPU)
RETRY_S = 5.0  # an endpoint that cannot listen tries again this often
FIRST_SNAPSHOT_WAIT_S = 5.0  # @@server_uuid comes from it: wait a little before listening
REPLY_MAX_BYTES = 1 << 20  # a figures message is far smaller
STOP_DEADLINE_S = 5.0  # told to stop, the process is gone within this, whatever it runs
_UNREAD_MAX = 1 << 20  # figures the daemon has not read yet: skip the next ones


def _on_sigxcpu(signum: int, frame: FrameType | None) -> None:
    os._exit(EXIT_CPU)


def apply_limits(config: ChildConfig) -> str:
    """Set this process's RLIMIT_AS, RLIMIT_CPU and niceness from `config` (0: leave as is).

    A limit above the hard limit the process was given (a systemd unit's
    LimitAS=, LimitCPU=) is lowered to it: the unit's limits stay in force.

    Returns:
        "" when every limit asked for is set, else which could not be and why
        (a seccomp filter without setrlimit / setpriority): the child serves on,
        and the daemon's /healthz says so.
    """
    failed: list[str] = []
    if config.max_address_space:
        n = _within_hard(resource.RLIMIT_AS, config.max_address_space)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (n, n))  # for good: the child cannot raise it
        except (OSError, ValueError) as exc:
            failed.append(f"max_address_space: {exc}")
    if config.max_cpu_seconds:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = _within_hard(
            resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime) + config.max_cpu_seconds
        )
        hard = _within_hard(resource.RLIMIT_CPU, soft + CPU_GRACE_S)
        signal.signal(signal.SIGXCPU, _on_sigxcpu)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        except (OSError, ValueError) as exc:
            failed.append(f"max_cpu_seconds: {exc}")
    if config.nice:
        try:
            os.nice(config.nice)
        except OSError as exc:
            failed.append(f"nice: {exc}")
    if failed:
        log.error("sql.limits_not_set", failed=failed)
    return "; ".join(failed)


def _within_hard(which: int, value: int) -> int:
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


class Child:
    """The endpoint of one child process, fed by the daemon's snapshots.

    Args:
        config: the "config" message's settings.
        reader: the daemon's frames.
        writer: where figures go.
    """

    def __init__(
        self,
        config: ChildConfig,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        tail: HistoryTail | None = None,
    ) -> None:
        from grstats.sql.server import SqlServer  # noqa: PLC0415 - DuckDB & co.: in the child

        self.config = config
        self._reader = reader
        self._writer = writer
        self._snapshot = DaemonSnapshot(taken_at_us=0, group_name="", local_member_id="")
        self._first = asyncio.Event()
        self._tried = asyncio.Event()  # the first figures follow the first try to listen
        self.stop = asyncio.Event()
        self.received = 0
        self.refused = dict.fromkeys(REFUSALS, 0)
        self.server = SqlServer(config.options, lambda: self._snapshot, tail)
        self.limits_unset = ""  # what `apply_limits` could not set
        self.status = 0  # the exit status `run` returns
        self._sockets = inherited(list(config.listen_fds)) or None

    async def run(self) -> int:
        """Serve until the input ends or SIGTERM; returns the exit status."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.stop.set)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            async with asyncio.TaskGroup() as tg:
                tasks = [
                    tg.create_task(self._read_loop(), name="sql-read"),
                    tg.create_task(self._listen_loop(), name="sql-listen"),
                    tg.create_task(self._report_loop(), name="sql-report"),
                ]
                if self.config.idle_stop:
                    tasks.append(tg.create_task(self._idle_loop(), name="sql-idle"))
                await self.stop.wait()
                # a backstop: a library that swallows the cancellation below must
                # not keep an orphaned endpoint listening
                loop.call_later(STOP_DEADLINE_S, os._exit, 0)
                for task in tasks:
                    task.cancel()
        finally:
            await self.server.close()
        return self.status

    async def _read_loop(self) -> None:
        cap = self.config.max_snapshot_bytes
        while True:
            try:
                message = await read_frame(self._reader, cap)
                if message is None:
                    log.info("sql.child_input_closed")
                    self.stop.set()
                    return
                if message["kind"] != "snapshot":
                    raise ChannelError("malformed", f"kind {message['kind']!r}")
                self._snapshot = await asyncio.to_thread(snapshot_from, message)
            except ChannelError as exc:
                self.refused[exc.reason] += 1
                log.warning("sql.snapshot_refused", reason=exc.reason, error=str(exc))
                continue
            self.received += 1
            self._first.set()

    async def _listen_loop(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first.wait(), FIRST_SNAPSHOT_WAIT_S)
        failure = ""
        while not self.stop.is_set():
            if not self.server.serving:
                try:
                    await self.server.start(self._sockets)
                except OSError:
                    if self.server.failure != failure:  # once per reason, not every retry
                        failure = self.server.failure
                        log.error("sql.not_serving", reason=failure, retry_s=RETRY_S)
                else:
                    failure = ""
                self._tried.set()
                self._report()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), RETRY_S)

    async def _idle_loop(self) -> None:
        """End the child once no client came for `idle_stop` seconds while it served."""
        idle_stop = self.config.idle_stop
        await self._tried.wait()
        while not self.stop.is_set():
            if self.server.serving and self.server.idle_s(time.monotonic()) >= idle_stop:
                # the last figures (the daemon keeps this child's counters), still serving,
                # then no more accepting: both at once, so no client comes in between
                self._report()
                self.server.stop_accepting()
                log.info("sql.child_idle", idle_stop_s=idle_stop)
                self.status = EXIT_IDLE
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._writer.drain(), STOP_DEADLINE_S)
                self.stop.set()
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), min(1.0, idle_stop / 4))

    async def _report_loop(self) -> None:
        await self._tried.wait()
        while not self.stop.is_set():
            self._report()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), self.config.report_interval)

    def _report(self) -> None:
        if self._writer.transport.get_write_buffer_size() > _UNREAD_MAX:
            return
        figures = dataclasses.replace(self.server.figures(), limits_unset=self.limits_unset)
        message = figures_message(figures, port=self.server.port, refused=self.refused)
        try:
            self._writer.write(encode_frame(message, REPLY_MAX_BYTES))
        except ChannelError as exc:  # the daemon keeps the previous figures
            log.warning("sql.figures_unsendable", error=str(exc))
