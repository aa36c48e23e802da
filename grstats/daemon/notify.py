"""systemd notification protocol (sd_notify) with the standard library only.

`NOTIFY_SOCKET` names a datagram socket, abstract when it starts with '@';
`WATCHDOG_USEC` (and `WATCHDOG_PID`, when set, must be ours) asks for a
WATCHDOG=1 ping at least that often — we ping at half the interval. Without
NOTIFY_SOCKET everything here is a no-op.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

import structlog

from grstats.core.snapshot import DaemonStatus

log = structlog.get_logger("grstats.daemon")


def notifying() -> bool:
    """Whether sd_notify sends anything (NOTIFY_SOCKET is set)."""
    return bool(os.environ.get("NOTIFY_SOCKET"))


def sd_notify(state: str) -> bool:
    """Send one sd_notify datagram if NOTIFY_SOCKET is set (abstract '@' sockets too).

    Args:
        state: newline-separated assignments, e.g. "READY=1".

    Returns:
        True if a datagram was sent.
    """
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK) as sock:
            sock.sendto(state.encode(), address)
    except OSError as exc:
        log.warning("sd_notify.failed", error=str(exc))
        return False
    return True


def watchdog_interval_s() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WATCHDOG_USEC), or None if not asked."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or not usec.isdigit() or int(usec) == 0:
        return None
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    return int(usec) / 2 / 1_000_000


def status_text(status: DaemonStatus) -> str:
    """The one-line STATUS= systemd shows for the daemon."""
    connected = bool(status.gauges.get("bus_connected"))
    text = f"bus={'connected' if connected else 'disconnected'} members={status.members}"
    if not status.health.ok:
        text += f" degraded: {'; '.join(status.health.details())}"
    return text


async def watchdog_loop(interval: float, stalled: Callable[[], str] = lambda: "") -> None:
    """Ping systemd's watchdog every `interval` seconds while `stalled()` is "" (alive).

    The same test as /livez: a daemon whose tick loop stopped is not pinged
    for, so systemd restarts it; an SQL child or a bus problem never stops
    the pings (those are /healthz's, readiness).
    """
    while True:
        if not stalled():
            sd_notify("WATCHDOG=1")
        await asyncio.sleep(interval)
