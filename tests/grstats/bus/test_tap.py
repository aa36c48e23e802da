"""grstats.bus.tap: what a Bus receives through its socket tap is what paho would deliver.

Against a real Mosquitto, one Bus (the tap) and one plain aiomqtt subscriber
(paho's own reader: the reference) subscribe to the same topics while a
publisher sends, back to back so that many packets share a read and some
span two: QoS 0 messages of 1 byte to 60 KiB, with and without an MQTT 5
message expiry (a property the broker forwards), a QoS 1 message (paho must
acknowledge it: the broker sends it once), a retained one read on subscribe.
Both must see the same (topic, payload, retained) in the same order.

Without a broker, a scripted socket feeds the tap byte sequences split at
every offset: a QoS 0 PUBLISH is handed to the handler only once whole, any
other packet is let through to its reader whole and in order, never mixed
with a PUBLISH's bytes, and the end of the stream comes after everything
before it.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time

import aiomqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from grstats.bus.client import Bus, BusOptions
from grstats.bus.tap import PublishTap
from tests.fixtures.broker import Broker
from tests.fixtures.bus_helpers import running, until

Message = tuple[str, bytes, bool]


def _expiring(seconds: int) -> Properties:
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.MessageExpiryInterval = seconds
    return props


async def _reference(broker: Broker, topic: str, out: list[Message], ready: asyncio.Event) -> None:
    async with aiomqtt.Client(
        broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5
    ) as client:
        await client.subscribe(topic, qos=1)
        ready.set()
        async for m in client.messages:
            assert isinstance(m.payload, bytes | bytearray)
            out.append((m.topic.value, bytes(m.payload), bool(m.retain)))


async def test_the_tap_delivers_what_paho_delivers_in_the_same_order(broker: Broker) -> None:
    rng = random.Random(44)
    async with aiomqtt.Client(broker.host, broker.port, protocol=aiomqtt.ProtocolVersion.V5) as pub:
        await pub.publish("tap/kept", b"retained before", qos=1, retain=True)
        tapped: list[Message] = []
        bus = Bus(
            BusOptions(host=broker.host, port=broker.port),
            subscriptions=["tap/#"],
            handler=lambda t, p, r: tapped.append((t, p, r)),
        )
        plain: list[Message] = []
        ready = asyncio.Event()
        reference = asyncio.create_task(_reference(broker, "tap/#", plain, ready))
        async with running(bus):
            await asyncio.wait_for(bus.connected.wait(), 10)
            await asyncio.wait_for(ready.wait(), 10)
            await until(lambda: len(tapped) == 1 and len(plain) == 1)
            sent = 0
            for i in range(2000):
                size = rng.choice((1, 40, 300, 1500, 9000, 60_000)) if i % 50 else 60_000
                payload = rng.randbytes(size)
                if i % 97 == 5:
                    await pub.publish(f"tap/q1/{i}", payload, qos=1)
                elif i % 3:
                    await pub.publish(f"tap/e/{i}", payload, qos=0, properties=_expiring(60))
                else:
                    await pub.publish(f"tap/p/{i}", payload, qos=0)
                sent += 1
            await until(lambda: len(tapped) == 1 + sent and len(plain) == 1 + sent, within=60)
            await asyncio.sleep(0.5)  # nothing more comes (a QoS 1 message acked once)
        reference.cancel()
    assert tapped == plain
    assert tapped[0] == ("tap/kept", b"retained before", True)
    assert sum(1 for t, _, _ in tapped if t.startswith("tap/q1/")) == len(range(5, 2000, 97))


class _Script:
    """A socket whose recv returns the given chunks, then BlockingIOError, then EOF."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)

    def recv(self, n: int) -> bytes:
        if not self.chunks:
            return b""
        chunk = self.chunks[0]
        if chunk == b"wait":
            self.chunks.pop(0)
            raise BlockingIOError
        out, rest = chunk[:n], chunk[n:]
        if rest:
            self.chunks[0] = rest
        else:
            self.chunks.pop(0)
        return out


def _publish(topic: str, payload: bytes, *, qos: int = 0, props: bytes = b"\x00") -> bytes:
    name = topic.encode()
    body = len(name).to_bytes(2, "big") + name + (b"\x00\x07" if qos else b"") + props + payload
    return bytes([0x30 | qos << 1]) + _length(len(body)) + body


def _length(n: int) -> bytes:
    out = bytearray()
    while True:
        n, byte = divmod(n, 128)
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_like_paho(tap: PublishTap) -> list[bytes] | None:
    """One packet as paho reads it (type byte, length bytes, body), or None (would block)."""
    try:
        first = tap.recv(1)
    except BlockingIOError:
        return None
    if not first:
        return [b""]
    length, mult, raw = 0, 1, b""
    while True:
        byte = tap.recv(1)
        raw += byte
        length += (byte[0] & 0x7F) * mult
        mult *= 128
        if not byte[0] & 0x80:
            break
    body = b""
    while len(body) < length:
        body += tap.recv(length - len(body))
    return [first + raw + body]


@pytest.mark.parametrize("split", range(1, 40))
def test_packets_split_anywhere_come_out_whole_and_in_order(split: int) -> None:
    stream = (
        _publish("a/1", b"x" * 200)
        + b"\x90\x03\x00\x01\x00"  # SUBACK: paho's
        + _publish("a/2", b"", props=b"\x05\x02\x00\x00\x00\x3c")  # message expiry 60 s
        + _publish("a/3", b"q1", qos=1)  # paho's: it acks
        + _publish("a/4", b"y" * 3000)
        + b"\xd0\x00"  # PINGRESP: paho's
    )
    chunks = [stream[i : i + split] for i in range(0, len(stream), split)]
    script = [c for chunk in chunks for c in (chunk, b"wait")]
    handed: list[tuple[str, bytes, bool]] = []
    tap = PublishTap(_Script(script), lambda t, p, r: handed.append((t, p, r)), 1 << 16)
    order: list[object] = []
    for _ in range(len(script) * 4):
        got = _read_like_paho(tap)
        order.extend(handed)
        handed.clear()
        if got == [b""]:
            break
        if got:
            order.extend(got)
    assert order == [
        ("a/1", b"x" * 200, False),
        b"\x90\x03\x00\x01\x00",
        ("a/2", b"", False),
        _publish("a/3", b"q1", qos=1),
        ("a/4", b"y" * 3000, False),
        b"\xd0\x00",
    ]


def test_a_read_error_reaches_the_reader_after_the_packets_before_it() -> None:
    class _Broken(_Script):
        def recv(self, n: int) -> bytes:
            if not self.chunks:
                raise ConnectionResetError
            return super().recv(n)

    handed: list[object] = []
    tap = PublishTap(_Broken([b"\x90\x03\x00\x01\x00"]), lambda *m: handed.append(m), 1 << 16)
    assert _read_like_paho(tap) == [b"\x90\x03\x00\x01\x00"]
    with pytest.raises(ConnectionResetError):
        tap.recv(1)


def test_the_tap_speaks_for_the_socket_it_wraps() -> None:
    a, b = socket.socketpair()
    with a, b:
        tap = PublishTap(a, lambda *m: None, 1 << 16)
        assert tap.fileno() == a.fileno()
        assert tap.send(b"ping") == 4
        assert b.recv(4) == b"ping"
        assert tap.pending() == 0


def _flood(broker: Broker, count: int) -> None:
    """Publish `count` QoS 0 messages over a raw MQTT 3.1.1 socket, as fast as it goes
    (another thread: the broker queues them while the subscriber is busy)."""
    client_id = b"tap-flood"
    connect = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(client_id).to_bytes(2, "big") + client_id
    packets = []
    for i in range(count):
        name = f"flood/{i % 7}".encode()
        body = len(name).to_bytes(2, "big") + name + i.to_bytes(4, "big") + bytes(200)
        packets.append(b"\x30" + _length(len(body)) + body)
    with socket.create_connection((broker.host, broker.port)) as sock:
        sock.sendall(b"\x10" + _length(len(connect)) + connect)
        assert sock.recv(4)[:1] == b"\x20"  # CONNACK
        sock.sendall(b"".join(packets))
        sock.sendall(b"\xe0\x00")  # DISCONNECT


async def test_a_flood_longer_than_the_keepalive_keeps_the_session(broker: Broker) -> None:
    """The PINGRESP waits behind the flood: paho must still know the broker is talking."""
    received: list[bytes] = []

    def slow(topic: str, payload: bytes, retained: bool) -> None:
        time.sleep(0.001)  # a collector's work per message, on the loop
        received.append(payload)

    bus = Bus(
        BusOptions(host=broker.host, port=broker.port, keepalive=1),
        subscriptions=["flood/#"],
        handler=slow,
    )
    async with running(bus):
        await asyncio.wait_for(bus.connected.wait(), 10)
        # about 4 s of handling (four keepalives), queued at the broker meanwhile
        await asyncio.to_thread(_flood, broker, 4000)
        await until(lambda: len(received) == 4000, within=60)
        assert bus.connects == 1 and bus.reconnects == 0
    assert [int.from_bytes(p[:4], "big") for p in received] == list(range(4000))
