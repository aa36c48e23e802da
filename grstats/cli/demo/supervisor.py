"""A small process supervisor: children started, recorded and stopped by their id.

Strategy: every child is started in its own process group (so a child's own
children, such as Spark's JVM, are stopped with it), recorded in a pid file
(`pid name` lines), and stopped by that id: SIGTERM to the group, SIGKILL after
a grace period. Children also get SIGTERM from the kernel if the supervising
process dies without cleaning up (PR_SET_PDEATHSIG). A child may instead stay
in the terminal's process group (`own_group=False`) so that Ctrl-C reaches it.

Invariants: nothing is ever signalled by name; `stop_all` stops the newest
first; a child's output is either a log file, a pipe (`forward_output`), or
the terminal.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = [
    "HEARTBEAT_S",
    "STOP_GRACE_S",
    "Processes",
    "forward_output",
    "free_port",
    "grstats_argv",
    "port_accepts",
]

STOP_GRACE_S = 6.0
HEARTBEAT_S = 10.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:`port`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _libc_prctl() -> Callable[..., int] | None:
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


# Looked up once in the parent: the child between fork and exec only calls it.
_PRCTL = _libc_prctl()
_PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> None:
    # Runs in the child between fork and exec: if the demo dies abruptly the
    # kernel sends SIGTERM to the child, so no member outlives the demo.
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


@dataclass
class _Child:
    name: str
    process: subprocess.Popen[bytes]
    own_group: bool
    log: Path | None


class Processes:
    """Every child the demo starts, stopped by its id (never by name).

    Args:
        pid_file: where `pid name` lines are appended as children start.
    """

    def __init__(self, pid_file: Path) -> None:
        self.pid_file = pid_file
        self.children: list[_Child] = []
        pid_file.write_text(f"{os.getpid()} demo\n", encoding="utf-8")

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: Path | None = None,
        env: Mapping[str, str] | None = None,
        own_group: bool = True,
        pipe: bool = False,
        detach: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start one child; its output goes to `log`, a pipe, or the terminal.

        Args:
            name: for messages and the pid file.
            argv: the command.
            log: file for stdout+stderr (None: inherit, unless `pipe`).
            env: the environment (None: ours).
            own_group: start it in a new process group (stopped as a group).
            pipe: give the caller stdout+stderr as one pipe.
            detach: outlive this process (`grstats demo --keep`): a session of its
                own, no SIGTERM from the kernel when we exit; stopped later by the
                pid it was recorded with.

        Returns:
            The process.
        """
        stdout: int | IO[bytes] | None = None
        handle: IO[bytes] | None = None
        if pipe:
            stdout = subprocess.PIPE
        elif log is not None:
            handle = log.open("ab")
            stdout = handle
        try:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT if stdout is not None else None,
                env=dict(env) if env is not None else None,
                process_group=0 if own_group and not detach else None,
                start_new_session=detach,
                preexec_fn=None if detach else _set_pdeathsig,  # noqa: PLW1509 - only prctl
            )
        finally:
            if handle is not None:
                handle.close()
        self.children.append(_Child(name, process, own_group or detach, log))
        with self.pid_file.open("a", encoding="utf-8") as file:
            file.write(f"{process.pid} {name}\n")
        return process

    def stop(self, process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM (to its group if it has one), SIGKILL after `grace_s`, reap."""
        child = next((c for c in self.children if c.process is process), None)
        if child is None:
            return
        own_group = child.own_group
        if process.poll() is None:
            self._signal(process, signal.SIGTERM, own_group)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._signal(process, signal.SIGKILL, own_group)
                process.wait(timeout=10)
        if own_group:
            # Grandchildren (Spark's JVM) share the group; make sure none is left.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        self.children.remove(child)

    @staticmethod
    def _signal(process: subprocess.Popen[bytes], sig: int, own_group: bool) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if own_group:
                os.killpg(process.pid, sig)
            else:
                process.send_signal(sig)

    def stop_all(self) -> None:
        """Stop every child still known, newest first (members before the broker)."""
        for child in reversed(list(self.children)):
            self.stop(child.process)


def forward_output(
    process: subprocess.Popen[bytes],
    name: str,
    log: Path,
    on_line: Callable[[str], None],
    on_quiet: Callable[[float], None],
) -> int:
    """Copy a child's output to `log` and `on_line`; call `on_quiet(seconds)` while quiet.

    Args:
        process: a child started with `pipe=True`.
        name: for the reader thread's name.
        log: file the output is appended to.
        on_line: called with each output line (decoded, without the line end).
        on_quiet: called with the seconds since the start after HEARTBEAT_S without output.

    Returns:
        The exit status.
    """
    assert process.stdout is not None
    last = [time.monotonic()]
    started = time.monotonic()

    def pump() -> None:
        assert process.stdout is not None
        with log.open("ab") as file:
            for raw in iter(process.stdout.readline, b""):
                file.write(raw)
                file.flush()
                last[0] = time.monotonic()
                on_line(raw.decode("utf-8", "replace").rstrip())

    reader = threading.Thread(target=pump, name=f"demo-{name}", daemon=True)
    reader.start()
    while process.poll() is None:
        reader.join(timeout=1.0)
        if time.monotonic() - last[0] >= HEARTBEAT_S:
            on_quiet(time.monotonic() - started)
            last[0] = time.monotonic()
    reader.join(timeout=5.0)
    return process.wait()


def grstats_argv() -> list[str]:
    """The command line that runs this installation's `grstats`."""
    script = Path(sys.executable).with_name("grstats")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from grstats.cli.main import main; main()"]
