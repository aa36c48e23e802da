"""One-shot questions to the broker for `grstats check` and the `--bus` readers.

Strategy: everything goes through `Bus` (the only aiomqtt user). `first_connect`
waits for the first connect OR the first failure, so a refused login, a TLS
verification error or a wrong protocol is reported with the broker's (or the
TLS library's) own words as soon as it is known, not after a deadline.
`round_trip` publishes a test message under the member's own topic and waits
for it to come back through a subscription: the broker let us write there and
read it (the ACL), which a successful CONNECT alone does not prove (Mosquitto
drops a denied publish silently). The test topic is one level deeper than the
member filters (`<prefix>/<group>/+/+`), so no daemon ever receives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass, field

from grstats.bus.client import Bus
from grstats.bus.options import BusOptions

__all__ = ["ProbeResult", "explain", "first_connect", "round_trip"]


async def first_connect(bus: Bus, timeout: float) -> str | None:  # noqa: ASYNC109 - a deadline, not a per-call timeout
    """Wait until `bus` (already running) connects or fails once.

    Args:
        bus: a Bus whose `run()` is running.
        timeout: seconds to wait at most.

    Returns:
        None once connected; else why not, in the broker's or TLS library's words.
    """
    waits = {
        asyncio.ensure_future(bus.connected.wait()),
        asyncio.ensure_future(bus.failed.wait()),
    }
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    if bus.connected.is_set():
        return None
    return bus.last_error or f"no answer within {timeout:g} s"


def explain(error: str, options: BusOptions) -> str:
    """`error` with a hint where the words alone mislead.

    A plain-text client on a TLS port gets its connection reset before any
    MQTT answer, which the MQTT library reports only as a time-out.

    Args:
        error: a connect failure as `first_connect` returned it.
        options: the options the connect used.

    Returns:
        The error, with the hint appended when one applies.
    """
    if not options.tls and "timed out" in error.lower():
        return f"{error} (no MQTT answer: a TLS port? try TLS, e.g. --bus-tls / [bus] tls = true)"
    return error


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a round trip showed.

    Attributes:
        error: why the connection failed ("" when it worked).
        echoed: our test message came back (write and read allowed).
        received: (topic, payload, receive time in µs) of the live messages
            seen on `watch` while waiting, for clock offsets.
    """

    error: str = ""
    echoed: bool = False
    received: list[tuple[str, bytes, int]] = field(default_factory=list)


async def round_trip(
    options: BusOptions,
    own_prefix: str,
    watch: str,
    *,
    timeout: float = 5.0,  # noqa: ASYNC109 - a deadline for each step, not one call's
    listen: float = 2.0,
) -> ProbeResult:
    """Connect, publish a test message under `own_prefix`, wait for it to come back.

    Args:
        options: broker, credentials, TLS.
        own_prefix: a topic prefix this account may write (`<prefix>/<group>/<member>`).
        watch: a topic filter whose live (not retained) messages are collected.
        timeout: seconds for the connect and for the echo.
        listen: seconds to keep collecting from `watch` after the echo.

    Returns:
        The result; a failed connect is `error`, never an exception.
    """
    test_topic = f"{own_prefix}/check/{secrets.token_hex(8)}"
    payload = b"grstats check " + secrets.token_hex(8).encode()
    echoed = asyncio.Event()
    received: list[tuple[str, bytes, int]] = []

    def handle(topic: str, data: bytes, retained: bool) -> None:
        if topic == test_topic and data == payload:
            echoed.set()
        elif not retained and len(received) < 1000:
            received.append((topic, data, time.time_ns() // 1000))

    bus = Bus(options, subscriptions=[test_topic, watch], handler=handle)
    result = ProbeResult()
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(bus.run(), name="probe")
        error = await first_connect(bus, timeout)
        if error is not None:
            result = ProbeResult(error=explain(error, options))
        else:
            await bus.publish(test_topic, payload, qos=1, timeout=timeout)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(echoed.wait(), timeout)
            if echoed.is_set():
                await asyncio.sleep(listen)  # collecting live messages for this long
            result = ProbeResult(echoed=echoed.is_set(), received=list(received))
        await bus.close()
    return result
