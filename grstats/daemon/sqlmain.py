"""Entry of the SQL endpoint's child process (`python -m grstats.daemon.sqlmain`).

Strategy: the daemon's `SqlChild` starts this when a client connects, with
two pipes and the daemon's listening sockets (inherited at the fd numbers
the "config" message names: the child accepts that client and the next ones
from them): the channel's frames come in on stdin and the figures go out on
stdout; stderr is the daemon's, so the child's log lines land where the daemon's do. The channel
gets its own copy of stdout and fd 1 then points at stderr, so that a stray
print of a library cannot break the frames. The process asks the kernel to
SIGKILL it when the daemon dies (Linux), so a child stuck in a query never
outlives it; it reads the "config" message, configures logging, imports the query
libraries, sets its own limits (`grstats.sql.child.apply_limits`; the CPU
budget counts from there) and serves until its input ends, SIGTERM, or no
client for [sql] child_idle_stop (exit status `grstats.sql.child.EXIT_IDLE`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys

import structlog

from grstats.logs import configure_logging
from grstats.sql.channel import ChannelError, config_from, read_frame

log = structlog.get_logger("grstats.sql")

PARENT_ENV = "GRSTATS_SQL_PARENT"  # the daemon's pid, set by grstats.daemon.sqlchild
CONFIG_MAX_BYTES = 1 << 16
EXIT_BAD_CONFIG = 2
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # the daemon may have died before the request took effect (we were re-parented)
    expected = os.environ.get(PARENT_ENV, "")
    if expected.isdigit() and os.getppid() != int(expected):
        os._exit(1)


async def _pipes(channel_out: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(channel_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer


async def _main(channel_out: int) -> int:
    reader, writer = await _pipes(channel_out)
    try:
        message = await read_frame(reader, CONFIG_MAX_BYTES)
        if message is None:
            return 0  # the daemon went away before it said anything
        if message["kind"] != "config":
            raise ChannelError("malformed", f"kind {message['kind']!r}, expected config")
        config = config_from(message)
    except ChannelError as exc:
        print(f"grstats sql child: bad config message: {exc}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    configure_logging(config.log_level, config.log_format)
    from grstats.history.tail import tail_of  # noqa: PLC0415 - heavy
    from grstats.sql.child import EXIT_MEMORY, Child, apply_limits  # noqa: PLC0415
    from grstats.sql.statements import warm  # noqa: PLC0415

    try:
        child = Child(config, reader, writer, tail_of(config.options.history_dir))
        warm()  # what the first statement loads, before the priority drops (its first client waits)
        child.limits_unset = apply_limits(config)  # the CPU budget: serving, not the imports
        log.info("sql.child_started", pid=os.getpid())
        return await child.run()
    except MemoryError:
        os._exit(EXIT_MEMORY)  # no room left to unwind or log


def main() -> int:
    """Run the child until its input ends or SIGTERM, then exit at once.

    The exit does not wait for the query threads: one may still be inside a
    statement (its interruption is asked for, not awaited), and a child that
    outlives its daemon would hold its port and memory.
    """
    _die_with_parent()
    channel_out = os.dup(1)
    os.dup2(2, 1)
    status = asyncio.run(_main(channel_out))
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    main()
