"""grstats.bus.client against a real Mosquitto: delivery, retain, reconnect, clean close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from grstats.bus.client import Bus, BusOptions, LastWill
from tests.fixtures.broker import Broker

Message = tuple[str, bytes, bool]


async def until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    """Wait for predicate() with a deadline, yielding to the loop between checks."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        assert loop.time() < deadline, "condition not met before the deadline"
        await asyncio.sleep(0.02)


@asynccontextmanager
async def running(bus: Bus) -> AsyncIterator[Bus]:
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(bus.run())
        try:
            yield bus
        finally:
            await bus.close()
            await asyncio.wait_for(task, 10)


def collecting(broker: Broker, topic_filter: str, **kwargs: object) -> tuple[Bus, list[Message]]:
    received: list[Message] = []
    bus = Bus(
        BusOptions(host=broker.host, port=broker.port),
        subscriptions=[topic_filter],
        handler=lambda t, p, r: received.append((t, p, r)),
        **kwargs,  # type: ignore[arg-type]
    )
    return bus, received


async def test_published_message_reaches_subscriber_handler(broker: Broker) -> None:
    sub, received = collecting(broker, "t/#")
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(sub), running(pub):
        await asyncio.wait_for(sub.connected.wait(), 10)
        await asyncio.wait_for(pub.connected.wait(), 10)
        assert await pub.publish("t/a", b"\x00\x01payload")
        await until(lambda: len(received) == 1)
    assert received == [("t/a", b"\x00\x01payload", False)]


async def test_retained_message_is_delivered_to_a_later_subscriber_flagged_retained(
    broker: Broker,
) -> None:
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(pub):
        await asyncio.wait_for(pub.connected.wait(), 10)
        assert await pub.publish("t/r", b"kept", qos=1, retain=True)
    sub, received = collecting(broker, "t/#")
    async with running(sub):
        await until(lambda: len(received) == 1)
    assert received == [("t/r", b"kept", True)]


async def test_publish_while_disconnected_returns_false(broker: Broker) -> None:
    broker.stop()
    bus = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(bus):
        assert await bus.publish("t/x", b"x") is False
        assert bus.publish_failures == 1
        assert not bus.connected.is_set()


async def test_reconnects_and_resubscribes_after_broker_restart(broker: Broker) -> None:
    sub, received = collecting(broker, "t/#")
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(sub), running(pub):
        await asyncio.wait_for(sub.connected.wait(), 10)
        await asyncio.wait_for(pub.connected.wait(), 10)
        broker.stop()
        await until(lambda: not sub.connected.is_set() and not pub.connected.is_set())
        await asyncio.to_thread(broker.start)
        await until(lambda: sub.connected.is_set() and pub.connected.is_set(), within=20)
        assert await pub.publish("t/after", b"1")
        await until(lambda: any(t == "t/after" for t, _, _ in received))
        assert sub.reconnects == 1
        assert pub.reconnects == 1


async def test_on_connect_hook_runs_on_every_connect(broker: Broker) -> None:
    calls: list[int] = []

    async def hook() -> None:
        calls.append(1)

    bus = Bus(BusOptions(host=broker.host, port=broker.port), on_connect=hook)
    async with running(bus):
        await until(lambda: len(calls) == 1)
        broker.stop()
        await until(lambda: not bus.connected.is_set())
        await asyncio.to_thread(broker.start)
        await until(lambda: len(calls) == 2, within=20)


async def test_clean_close_does_not_publish_the_will(broker: Broker) -> None:
    watcher, received = collecting(broker, "w/#")
    member = Bus(
        BusOptions(host=broker.host, port=broker.port, client_id="member-w"),
        will=LastWill("w/status", b"offline", delay_s=0),
    )
    async with running(watcher):
        await asyncio.wait_for(watcher.connected.wait(), 10)
        async with running(member):
            await asyncio.wait_for(member.connected.wait(), 10)
            assert await member.publish("w/status", b"online", qos=1)
        # A marker published after the close arrives after any Will would have.
        marker = Bus(BusOptions(host=broker.host, port=broker.port))
        async with running(marker):
            await asyncio.wait_for(marker.connected.wait(), 10)
            await marker.publish("w/marker", b"m", qos=1)
        await until(lambda: any(t == "w/marker" for t, _, _ in received))
    assert [p for t, p, _ in received if t == "w/status"] == [b"online"]


async def test_messages_iterator_yields_topic_payload_retained(broker: Broker) -> None:
    sub = Bus(BusOptions(host=broker.host, port=broker.port), subscriptions=["i/#"])
    pub = Bus(BusOptions(host=broker.host, port=broker.port))

    async def first(iterator: AsyncIterator[Message]) -> Message:
        return await anext(iterator)

    async with running(sub), running(pub):
        await asyncio.wait_for(sub.connected.wait(), 10)
        await asyncio.wait_for(pub.connected.wait(), 10)
        waiter: Awaitable[Message] = first(sub.messages())
        task = asyncio.ensure_future(waiter)
        await pub.publish("i/1", b"one")
        assert await asyncio.wait_for(task, 10) == ("i/1", b"one", False)
