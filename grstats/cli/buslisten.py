"""The one bus-listen harness of the `--bus` readers: connect, listen, close.

Strategy: a reader subscribes to `core.topics.reader_filter(prefix, group)`
through `grstats.bus.client.Bus` (the only aiomqtt user), hands every message
to its handler and runs its own `body` while connected (busread waits for
the retained messages to stop, busflow steps its replays for a while).

Invariants: the bus task is owned by a TaskGroup and closed before
returning; a broker that refuses (login, TLS, protocol) is a `ReadError`
with its reason as soon as it refuses, one that does not answer within
`deadline_s` is one then, never a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from grstats.bus.client import Bus
from grstats.bus.options import BusOptions
from grstats.bus.probe import explain, first_connect
from grstats.cli.errors import ReadError
from grstats.core.topics import reader_filter

__all__ = ["Handler", "listen"]

Handler = Callable[[str, bytes, bool], None]  # topic, payload, retained


async def listen(
    options: BusOptions,
    *,
    prefix: str,
    group: str | None,
    handler: Handler,
    body: Callable[[], Awaitable[None]],
    deadline_s: float,
    name: str,
) -> None:
    """Subscribe, run `body` once connected, close.

    Args:
        options: the MQTT broker, credentials and TLS.
        prefix: topic prefix (`[bus] prefix`).
        group: only this group; None for every group on the broker.
        handler: called with every message (topic, payload, retained).
        body: what to do while connected; the bus closes when it returns.
        deadline_s: give up connecting after this many seconds.
        name: the bus task's name.

    Raises:
        ReadError: the broker did not accept a connection before the deadline.
    """
    bus = Bus(options, subscriptions=[reader_filter(prefix, group)], handler=handler)
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(bus.run(), name=name)
        error = await first_connect(bus, deadline_s)
        if error is None:
            await body()
        await bus.close()
    if error is not None:  # the broker's (or TLS library's) own words, as soon as known
        raise ReadError(f"MQTT broker at {options.host}:{options.port}: {explain(error, options)}")
