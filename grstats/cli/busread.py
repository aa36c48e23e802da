"""One-shot read of the retained topics: the tables without a daemon (`--bus`).

Strategy: every member's last stats envelope, its last GTID-bearing envelope
and its `online`/`offline` status are retained on the broker, so a client that
subscribes sees the whole group at once. `read_snapshot` listens through
`grstats.cli.buslisten` (one group, or every group), feeds every message to a collector-mode
`grstats.core.tables.MemberTables` (the daemon's own validation and mapping, no
local member), and stops once the broker has been quiet for `quiet_s` after
the subscribe — retained messages arrive right after it — or at the deadline.

Invariants: the event loop is private to the call (`asyncio.run`); the bus
is closed before returning; a broker that refuses is a `ReadError`
(`buslisten`), never a hang.
"""

from __future__ import annotations

import asyncio
import time

from grstats.bus.options import BusOptions
from grstats.cli.buslisten import listen
from grstats.core.snapshot import DaemonSnapshot
from grstats.core.tables import MemberTables

__all__ = ["read_snapshot", "read_snapshot_async"]


def _now_us() -> int:
    return time.time_ns() // 1000


async def read_snapshot_async(
    options: BusOptions,
    *,
    prefix: str = "grstats/v1",
    group: str | None = None,
    deadline_s: float = 5.0,
    quiet_s: float = 0.3,
) -> DaemonSnapshot:
    """Collect the retained messages under `prefix` and build the tables.

    Args:
        options: the MQTT broker, credentials and TLS.
        prefix: topic prefix (`[bus] prefix`).
        group: only this group; None for every group on the broker.
        deadline_s: give up connecting after this many seconds; also bounds
            the whole read.
        quiet_s: the read ends after this long without a message.

    Returns:
        A snapshot in collector mode (no local member; every member seen).

    Raises:
        ReadError: the broker did not accept a connection before the deadline.
    """
    tables = MemberTables(group=None, local_member_id=None)
    arrived = asyncio.Event()

    def handle(topic: str, payload: bytes, retained: bool) -> None:
        tables.receive(topic, payload, _now_us(), retained=retained)
        arrived.set()

    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s

    async def until_quiet() -> None:
        while (remaining := end - loop.time()) > 0:
            arrived.clear()
            try:
                await asyncio.wait_for(arrived.wait(), min(quiet_s, remaining))
            except TimeoutError:
                return

    await listen(
        options,
        prefix=prefix,
        group=group,
        handler=handle,
        body=until_quiet,
        deadline_s=deadline_s,
        name="busread",
    )
    return tables.snapshot(_now_us())


def read_snapshot(
    options: BusOptions,
    *,
    prefix: str = "grstats/v1",
    group: str | None = None,
    deadline_s: float = 5.0,
    quiet_s: float = 0.3,
) -> DaemonSnapshot:
    """Synchronous `read_snapshot_async` for the CLI (runs its own event loop).

    Args:
        options, prefix, group, deadline_s, quiet_s: as `read_snapshot_async`.

    Returns:
        The snapshot.

    Raises:
        ReadError: the broker did not accept a connection before the deadline.
    """
    return asyncio.run(
        read_snapshot_async(
            options, prefix=prefix, group=group, deadline_s=deadline_s, quiet_s=quiet_s
        )
    )
