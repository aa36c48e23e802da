"""One-shot read of the retained topics: the tables without a daemon (`--bus`).

Strategy: every member's last stats envelope, its last GTID-bearing envelope
and its `online`/`offline` status are retained on the broker, so a client that
subscribes sees the whole group at once. `read_snapshot` connects through
`grstats.bus.client.Bus` (the only aiomqtt user), subscribes to
`<prefix>/<group or +>/+/+`, feeds every message to a collector-mode
`grstats.core.tables.MemberTables` (the daemon's own validation and mapping, no
local member), and stops once the broker has been quiet for `quiet_s` after
the subscribe — retained messages arrive right after it — or at the deadline.

Invariants: the event loop is private to the call (`asyncio.run`); the bus
task is owned by a TaskGroup and closed before returning; a broker that
refuses (login, TLS, protocol) is a `ReadError` with its reason as soon as it
refuses, one that does not answer before the deadline is one then, never a hang.
"""

from __future__ import annotations

import asyncio
import time

from grstats.bus.client import Bus
from grstats.bus.options import BusOptions
from grstats.bus.probe import explain, first_connect
from grstats.cli.errors import ReadError
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

    topic_filter = f"{prefix.rstrip('/')}/{group or '+'}/+/+"
    bus = Bus(options, subscriptions=[topic_filter], handler=handle)
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(bus.run(), name="busread")
        error = await first_connect(bus, deadline_s)
        connected = error is None
        while connected:
            arrived.clear()
            remaining = end - loop.time()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(arrived.wait(), min(quiet_s, remaining))
            except TimeoutError:
                break
        await bus.close()
    if error is not None:  # the broker's (or TLS library's) own words, as soon as known
        raise ReadError(f"MQTT broker at {options.host}:{options.port}: {explain(error, options)}")
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
