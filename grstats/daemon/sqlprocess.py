"""The SQL endpoint's process as the daemon handles it: its sockets, its start, its end.

Strategy: the daemon binds the endpoint's address itself (`Listening`), so
the port is known before any child runs and no connection is lost between
two children; `start_process` starts `python -m grstats.daemon.sqlmain`
holding those sockets under the same descriptor numbers, with the daemon's
environment without the systemd notify and socket-activation variables (only
the daemon pings the watchdog), and writes it its config first;
`stop_process` closes its input (it stops serving) and kills it when it has
not ended within the wait. `SqlChild` (sqlchild.py) decides when.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import sys

import structlog

from grstats.daemon.sqlmain import PARENT_ENV
from grstats.sql.channel import ChildConfig, config_message, encode_frame
from grstats.sql.listener import bind, port_of, tls_failure

__all__ = ["CONFIG_MAX_BYTES", "RETRY_S", "Listening", "start_process", "stop_process"]

log = structlog.get_logger("grstats.daemon")

RETRY_S = 5.0  # an address that cannot be bound (or TLS files not loaded) is tried again
CONFIG_MAX_BYTES = 1 << 16
_DAEMON_ONLY_ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID")


class Listening:
    """The endpoint's listening sockets, held by the daemon for every child it starts.

    Args:
        config: the endpoint's address and TLS files.
    """

    def __init__(self, config: ChildConfig) -> None:
        self.options = config.options
        self.sockets: list[socket.socket] = []
        self.failure = ""  # why the endpoint cannot answer now ("" when it can)
        self.port = config.options.port

    def ready(self) -> bool:
        """True once the sockets are bound; else try (TLS files first, as the child loads them)."""
        if self.sockets:
            return True
        o = self.options
        failure = tls_failure(o.tls_cert_file, o.tls_key_file)
        if not failure:
            try:
                self.sockets = bind(o.host, o.port)
            except OSError as exc:
                failure = f"cannot listen on {o.host}:{o.port}: {exc.strerror or exc}"
        if failure != self.failure and failure:  # once per reason, not every retry
            log.error("sql.not_serving", reason=failure, retry_s=RETRY_S)
        self.failure = failure
        if self.sockets:
            self.port = port_of(self.sockets)
            log.info("sql.listening", host=o.host, port=self.port, process="on first connection")
        return bool(self.sockets)

    def close(self) -> None:
        """Close the daemon's sockets (the endpoint no longer listens once no child holds them)."""
        for sock in self.sockets:
            sock.close()
        self.sockets = []


async def start_process(config: ChildConfig, listening: Listening) -> asyncio.subprocess.Process:
    """Start the endpoint's process on `listening`'s sockets and write it its config.

    Args:
        config: what the child is told; its port and descriptors are `listening`'s.
        listening: the bound sockets, passed to the child under the same numbers.

    Returns:
        The process, its config written to its input, its output a pipe.

    Raises:
        OSError: the process could not be started.
    """
    fds = tuple(sock.fileno() for sock in listening.sockets)
    options = dataclasses.replace(config.options, port=listening.port)
    config = dataclasses.replace(config, options=options, listen_fds=fds)
    frame = encode_frame(config_message(config), CONFIG_MAX_BYTES)
    env = {k: v for k, v in os.environ.items() if k not in _DAEMON_ONLY_ENV}
    env[PARENT_ENV] = str(os.getpid())
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "grstats.daemon.sqlmain",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        pass_fds=fds,  # the same numbers in the child
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(frame)
    return proc


async def stop_process(proc: asyncio.subprocess.Process, wait_s: float) -> None:
    """End `proc` if it runs: its input closed (it stops serving), SIGKILL after `wait_s`."""
    if proc.returncode is not None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), wait_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
