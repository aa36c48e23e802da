"""The shipped broker config as an attack surface (issue 15), against a real Mosquitto.

The broker runs config/mosquitto.conf and config/mosquitto.acl.example as
shipped (only the listener and file paths moved; `secure_broker` fixture). The
grstats side is `grstats.bus.client.Bus`, configured the way the example
config tells an operator to; the attacker side is a plain aiomqtt client.
"Not delivered" is proven with a marker: delivery to one subscriber is in
order, so once a marker published after the attack has arrived, the attack
message would have arrived before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiomqtt
import pytest

from grstats.bus.client import Bus, BusOptions
from tests.fixtures.broker import (
    ACCOUNTS,
    COLLECTOR,
    MEMBER_A,
    MEMBER_B,
    READER,
    SecureBroker,
)
from tests.fixtures.bus_helpers import running, until

pytestmark = pytest.mark.faults

GROUP = "99999999-0000-4000-8000-000000000000"
PREFIX = "grstats/v1"
Message = tuple[str, bytes, bool]


def topic(member: str, kind: str = "stats") -> str:
    return f"{PREFIX}/{GROUP}/{member}/{kind}"


@asynccontextmanager
async def watching(options: BusOptions) -> AsyncIterator[list[Message]]:
    """A connected Bus subscribed to the group, collecting what it receives."""
    received: list[Message] = []
    bus = Bus(
        options,
        subscriptions=[f"{PREFIX}/{GROUP}/+/+"],
        handler=lambda t, p, r: received.append((t, p, r)),
    )
    async with running(bus):
        await asyncio.wait_for(bus.connected.wait(), 10)
        yield received


@asynccontextmanager
async def attacker(
    broker: SecureBroker, username: str | None, reply_timeout_s: float = 10.0
) -> AsyncIterator[aiomqtt.Client]:
    tls = aiomqtt.TLSParameters(ca_certs=broker.ca_file, cert_reqs=ssl.CERT_REQUIRED)
    async with aiomqtt.Client(
        broker.host,
        broker.port,
        username=username,
        password=ACCOUNTS.get(username or ""),
        protocol=aiomqtt.ProtocolVersion.V5,
        tls_params=tls,
        timeout=reply_timeout_s,
    ) as client:
        yield client


async def send_marker(broker: SecureBroker, received: list[Message]) -> None:
    """Publish on member A's own topic and wait until the watcher has it."""
    marker = topic(MEMBER_A, "status")
    async with running(Bus(broker.options(MEMBER_A))) as bus:
        await asyncio.wait_for(bus.connected.wait(), 10)
        assert await bus.publish(marker, b"marker", qos=1)
        await until(lambda: any(t == marker and p == b"marker" for t, p, _ in received))


async def test_member_configured_per_example_is_visible_to_another_member(
    secure_broker: SecureBroker,
) -> None:
    async with watching(secure_broker.options(MEMBER_B)) as received:
        member_a = Bus(secure_broker.options(MEMBER_A, client_id=f"grstats-{MEMBER_A}"))
        async with running(member_a):
            await asyncio.wait_for(member_a.connected.wait(), 10)
            assert await member_a.publish(topic(MEMBER_A), b"envelope", retain=True)
            await until(lambda: (topic(MEMBER_A), b"envelope", False) in received)


async def test_read_only_accounts_receive_member_messages(secure_broker: SecureBroker) -> None:
    member_a = Bus(secure_broker.options(MEMBER_A))
    async with running(member_a):
        await asyncio.wait_for(member_a.connected.wait(), 10)
        assert await member_a.publish(topic(MEMBER_A), b"retained", qos=1, retain=True)
    for account in (READER, COLLECTOR):
        async with watching(secure_broker.options(account)) as received:
            await until(lambda: (topic(MEMBER_A), b"retained", True) in received)


async def test_anonymous_client_is_refused(secure_broker: SecureBroker) -> None:
    bus = Bus(secure_broker.options(None))
    async with running(bus):
        await until(lambda: bus.connect_failures >= 2)
        assert not bus.ever_connected.is_set()
        assert "authori" in bus.last_error.lower()


async def test_wrong_password_is_refused(secure_broker: SecureBroker) -> None:
    bus = Bus(dataclasses.replace(secure_broker.options(MEMBER_A), password="guess"))
    async with running(bus):
        await until(lambda: bus.connect_failures >= 2)
        assert not bus.ever_connected.is_set()


@pytest.mark.parametrize("qos", [0, 1])
async def test_member_cannot_publish_under_another_members_topic(
    secure_broker: SecureBroker, qos: int
) -> None:
    async with watching(secure_broker.options(READER)) as received:
        async with attacker(secure_broker, MEMBER_A) as client:
            for kind in ("stats", "status", "gtids"):
                await client.publish(topic(MEMBER_B, kind), b"forged", qos=qos, retain=True)
        await send_marker(secure_broker, received)
    assert not [m for m in received if m[1] == b"forged"]


@pytest.mark.parametrize("account", [READER, COLLECTOR])
async def test_read_only_account_cannot_inject_anywhere(
    secure_broker: SecureBroker, account: str
) -> None:
    targets = [topic(MEMBER_A), topic(MEMBER_A, "status"), topic(account), f"{PREFIX}/x"]
    async with watching(secure_broker.options(MEMBER_B)) as received:
        async with attacker(secure_broker, account) as client:
            for target in targets:
                await client.publish(target, b"injected", qos=1, retain=True)
        await send_marker(secure_broker, received)
    assert not [m for m in received if m[1] == b"injected"]
    # Nor was anything retained for a later subscriber.
    async with watching(secure_broker.options(MEMBER_B)) as later:
        await send_marker(secure_broker, later)
    assert not [m for m in later if m[1] == b"injected"]


async def test_tls_with_the_ca_connects(secure_broker: SecureBroker) -> None:
    bus = Bus(secure_broker.options(MEMBER_A))
    async with running(bus):
        await asyncio.wait_for(bus.connected.wait(), 10)
        assert bus.last_error == ""


async def test_plain_text_to_the_tls_port_fails(secure_broker: SecureBroker) -> None:
    # Mosquitto waits for a TLS ClientHello that never comes; the client
    # gives up on its CONNACK after max(5 s, keepalive).
    bus = Bus(secure_broker.options(MEMBER_A, tls=False, keepalive=2))
    async with running(bus):
        await until(lambda: bus.connect_failures >= 1, within=30)
        assert not bus.ever_connected.is_set()
        assert bus.last_error


async def test_tls_with_an_untrusted_ca_fails(
    secure_broker: SecureBroker, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tests.fixtures.broker import make_test_ca  # noqa: PLC0415 - only this test needs a second CA

    other_ca, _, _ = make_test_ca(tmp_path_factory.mktemp("other-ca"))
    bus = Bus(dataclasses.replace(secure_broker.options(MEMBER_A), ca_file=str(other_ca)))
    async with running(bus):
        await until(lambda: bus.connect_failures >= 2)
        assert not bus.ever_connected.is_set()
        assert "certificate" in bus.last_error.lower()


async def test_broker_drops_a_publish_above_the_size_limit(secure_broker: SecureBroker) -> None:
    async with watching(secure_broker.options(MEMBER_B)) as received:
        # A member's own topic, its own credentials: only the size is wrong.
        # Past max_packet_size the broker disconnects the sender (from the
        # packet's length header); past message_size_limit it drops the message.
        with contextlib.suppress(aiomqtt.MqttError):
            # (kicked: its clean DISCONNECT is never answered, hence the short timeout)
            async with attacker(secure_broker, MEMBER_A, reply_timeout_s=1.0) as client:
                await client.publish(topic(MEMBER_A), b"x" * (5 * 1024 * 1024), qos=0)
        async with attacker(secure_broker, MEMBER_A) as client:
            await client.publish(topic(MEMBER_A), b"y" * (64 * 1024 + 1), qos=0)
        await send_marker(secure_broker, received)
    assert not [m for m in received if len(m[1]) > 64 * 1024]


async def test_shared_collector_account_reads_the_share_and_the_retained_snapshot(
    secure_broker: SecureBroker,
) -> None:
    # A shared-subscription collector under the shipped ACL: the broker checks
    # the filter inside `$share/<name>/`, so the read-only account may use it.
    async with running(Bus(secure_broker.options(MEMBER_A))) as member:
        await asyncio.wait_for(member.connected.wait(), 10)
        assert await member.publish(topic(MEMBER_A), b"retained", retain=True)
        received: list[Message] = []
        collector = Bus(
            secure_broker.options(COLLECTOR, client_id="collector-1"),
            subscriptions=[f"$share/collectors/{PREFIX}/+/+/stats"],
            snapshot_filters=[f"{PREFIX}/+/+/stats"],
            handler=lambda t, p, r: received.append((t, p, r)),
        )
        async with running(collector):
            await asyncio.wait_for(collector.connected.wait(), 10)
            assert (topic(MEMBER_A), b"retained", True) in received
            assert await member.publish(topic(MEMBER_A), b"live")
            await until(lambda: (topic(MEMBER_A), b"live", False) in received)
