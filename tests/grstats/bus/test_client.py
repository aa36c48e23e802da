"""grstats.bus.client against a real Mosquitto: delivery, retain, reconnect, clean close,
connection faults, the Maximum Packet Size and message expiry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiomqtt
import pytest
from structlog.testing import capture_logs

from grstats.bus.client import Bus, BusOptions, LastWill
from tests.fixtures.broker import Broker
from tests.fixtures.bus_helpers import running, until

Message = tuple[str, bytes, bool]


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


async def test_handler_gets_topic_payload_retained_for_each_message_in_order(
    broker: Broker,
) -> None:
    sub, received = collecting(broker, "i/#")
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(sub), running(pub):
        await asyncio.wait_for(sub.connected.wait(), 10)
        await asyncio.wait_for(pub.connected.wait(), 10)
        for n in range(50):
            await pub.publish(f"i/{n}", str(n).encode(), qos=1)
        await until(lambda: len(received) == 50)
    assert received == [(f"i/{n}", str(n).encode(), False) for n in range(50)]


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def test_message_above_max_packet_size_is_not_delivered_but_smaller_ones_are(
    broker: Broker,
) -> None:
    # The loopback broker has no size limit of its own: only the Maximum Packet
    # Size the Bus announces on CONNECT keeps the 5 MB message away from it.
    sub, received = collecting(broker, "big/#")
    rss_before = rss_kib()
    async with (
        running(sub),
        aiomqtt.Client(broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5) as attacker,
    ):
        await asyncio.wait_for(sub.connected.wait(), 10)
        await attacker.publish("big/huge", b"x" * (5 * 1024 * 1024), qos=1)
        await attacker.publish("big/small", b"y" * 1000, qos=1)
        # Delivery to one subscriber is in order: once the small one is here,
        # the huge one was dropped, not delayed.
        await until(lambda: any(t == "big/small" for t, _, _ in received))
    print(f"subscriber RSS {rss_before} KiB -> {rss_kib()} KiB after a 5 MB publish")
    assert [t for t, _, _ in received] == ["big/small"]


async def test_message_up_to_max_packet_size_is_delivered(broker: Broker) -> None:
    sub, received = collecting(broker, "fit/#")
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    envelope = b"e" * (64 * 1024)  # protocol.DEFAULT_MAX_ENVELOPE_SIZE, the largest valid envelope
    async with running(sub), running(pub):
        await asyncio.wait_for(sub.connected.wait(), 10)
        await asyncio.wait_for(pub.connected.wait(), 10)
        assert await pub.publish("fit/a/much/longer/topic/than/grstats/uses", envelope, qos=1)
        await until(lambda: len(received) == 1)
    assert received[0][1] == envelope


async def probe_retained(broker: Broker, topic: str) -> bool:
    """Whether a new subscriber to `topic`'s parent gets `topic`'s retained message."""
    parent = topic.rsplit("/", 1)[0]
    sub, received = collecting(broker, f"{parent}/#")
    async with running(sub):
        await asyncio.wait_for(sub.connected.wait(), 10)
        # Retained messages are queued at SUBSCRIBE, before this marker arrives.
        assert await sub.publish(f"{parent}/marker", b"m", qos=1)
        await until(lambda: any(t == f"{parent}/marker" for t, _, _ in received))
    return any(t == topic and r for t, _, r in received)


async def test_retained_message_with_expiry_is_not_delivered_after_it_expired(
    broker: Broker,
) -> None:
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(pub):
        await asyncio.wait_for(pub.connected.wait(), 10)
        assert await pub.publish("x/expiring", b"old", qos=1, retain=True, expiry_s=1)
        assert await pub.publish("x/kept", b"kept", qos=1, retain=True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while await probe_retained(broker, "x/expiring"):
        assert loop.time() < deadline, "the retained message outlived its expiry"
        await asyncio.sleep(0.2)
    assert await probe_retained(broker, "x/kept")


@pytest.mark.parametrize(
    "options",
    [
        BusOptions(host=""),
        BusOptions(host="127.0.0.1", port=70000),
        BusOptions(host="bad..host"),
        BusOptions(host="127.0.0.1", tls=True, ca_file="/nonexistent/ca.pem"),
    ],
    ids=["empty-host", "port-out-of-range", "bad-host-label", "missing-ca-file"],
)
async def test_connection_errors_never_end_run_and_are_reported_in_last_error(
    options: BusOptions,
) -> None:
    bus = Bus(options)
    async with running(bus):
        await until(lambda: bus.connect_failures >= 3)
        assert bus.last_error
        assert not bus.connected.is_set()


async def test_repeated_connect_failures_log_one_warning_per_interval(broker: Broker) -> None:
    broker.stop()
    bus = Bus(BusOptions(host=broker.host, port=broker.port))
    with capture_logs() as logs:
        async with running(bus):
            await until(lambda: bus.connect_failures >= 4)
    warnings = [e for e in logs if e["event"] == "bus.connect_failed"]
    assert len(warnings) == 1
    assert warnings[0]["error"] == bus.last_error


async def test_last_error_clears_when_the_broker_comes_back(broker: Broker) -> None:
    broker.stop()
    bus = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(bus):
        await until(lambda: bus.last_error != "")
        await asyncio.to_thread(broker.start)
        await until(bus.connected.is_set, within=20)
        assert bus.last_error == ""


async def test_snapshot_filters_deliver_the_retained_state_once_then_nothing_live(
    broker: Broker,
) -> None:
    pub = Bus(BusOptions(host=broker.host, port=broker.port))
    async with running(pub):
        await asyncio.wait_for(pub.connected.wait(), 10)
        assert await pub.publish("s/a/stats", b"kept-a", retain=True)
        assert await pub.publish("s/b/stats", b"kept-b", qos=1, retain=True)
        # nothing but the retained state: a share gets the live ones
        sub, received = collecting(broker, "other/#", snapshot_filters=["s/+/stats"])
        async with running(sub):
            await asyncio.wait_for(sub.connected.wait(), 10)
            # the retained copies arrived before the connect completed
            assert sorted(received) == [
                ("s/a/stats", b"kept-a", True),
                ("s/b/stats", b"kept-b", True),
            ]
            assert await pub.publish("s/a/stats", b"live")
            assert await pub.publish("other/x", b"marker")  # after "live" on the same path
            await until(lambda: ("other/x", b"marker", False) in received)
    assert ("s/a/stats", b"live", False) not in received
