"""bench_daemon's child roles: bare aiomqtt, the I/O floor, the Bus floor, the publishers."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from _bench_procs import GROUP, PREFIX, envelope_bytes, member_uuid


async def role_bare_steady(port: int, member: str, seconds: float) -> None:
    import aiomqtt  # noqa: PLC0415 - benchmark child process only

    topic = f"{PREFIX}/{GROUP}/{member}/stats"
    received = 0
    async with aiomqtt.Client("127.0.0.1", port) as client:
        await client.subscribe(f"{PREFIX}/{GROUP}/+/+")

        async def drain() -> None:
            nonlocal received
            async for _ in client.messages:
                received += 1

        task = asyncio.create_task(drain())
        loop = asyncio.get_running_loop()
        start = loop.time()
        seq = 0
        while loop.time() - start < seconds:
            seq += 1
            await client.publish(topic, envelope_bytes(member, seq), qos=0, retain=True)
            await asyncio.sleep(start + seq - loop.time())
        task.cancel()
    print(json.dumps({"received": received}))


async def role_bare_sub(port: int, idle_s: float, deadline_s: float, ready: str) -> None:
    import aiomqtt  # noqa: PLC0415 - benchmark child process only

    count = 0
    first = last = 0.0
    v5 = os.environ.get("BENCH_BARE_V5") == "1"
    protocol = aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311
    async with aiomqtt.Client("127.0.0.1", port, protocol=protocol) as client:
        await client.subscribe(f"{PREFIX}/{GROUP}/+/+", qos=1 if v5 else 0)
        Path(ready).touch()  # noqa: ASYNC240 - one tiny file before the measurement starts
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        iterator = client.messages.__aiter__()
        while loop.time() < end:
            try:
                await asyncio.wait_for(iterator.__anext__(), idle_s if count else end - loop.time())
            except TimeoutError:
                break
            now = time.monotonic()
            if count == 0:
                first = now
            last = now
            count += 1
    print(json.dumps({"count": count, "seconds": last - first}))


async def role_bus_sub(
    port: int, idle_s: float, deadline_s: float, ready: str, *, paho: bool = False
) -> None:
    """grstats' own Bus (MQTT 5, hand-over to a handler) that only counts: the MQTT floor.

    With `paho`, every message is read by paho as before the socket tap
    (grstats.bus.tap): the floor issue 44 was filed against."""
    from grstats.bus import mqtt5  # noqa: PLC0415 - benchmark child only
    from grstats.bus.client import Bus, BusOptions  # noqa: PLC0415

    if paho:
        mqtt5.install = lambda *_: None  # type: ignore[assignment]  # this child only

    count = 0
    first = last = 0.0

    def handler(topic: str, payload: bytes, retained: bool) -> None:
        nonlocal count, first, last
        last = time.monotonic()
        if not count:
            first = last
        count += 1

    bus = Bus(BusOptions(port=port), subscriptions=[f"{PREFIX}/{GROUP}/+/+"], handler=handler)
    task = asyncio.create_task(bus.run())
    await bus.connected.wait()
    Path(ready).touch()  # noqa: ASYNC240 - one tiny file before the measurement starts
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    # idle is "no message for idle_s": a deadline, not an event; 0.1 s polls are cheap
    while loop.time() < end and not (count and time.monotonic() - last > idle_s):  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    cpu = time.process_time()
    await bus.close()
    await task
    print(json.dumps({"count": count, "seconds": last - first, "cpu": cpu}))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _publish_packet(topic: str, payload: bytes) -> bytes:
    name = topic.encode()
    body = len(name).to_bytes(2, "big") + name + payload
    return b"\x30" + _varint(len(body)) + body  # PUBLISH, QoS 0, no retain


def role_publisher(port: int, family: int, members: int, per_member: int, seconds: float) -> None:
    """Blast pre-built MQTT 3.1.1 QoS 0 PUBLISH packets over a raw socket.

    A raw socket publishes far faster than any Python MQTT client can receive,
    so the subscriber under test (not the publisher) sets the pace.
    """
    ids = [member_uuid(i, family) for i in range(members)]
    now_us = time.time_ns() // 1000 - per_member  # today's partition, within the clock-skew limit
    packets = [
        _publish_packet(f"{PREFIX}/{GROUP}/{m}/stats", envelope_bytes(m, seq, sent_us=now_us))
        for seq in range(1, per_member + 1)
        for m in ids
    ]
    client_id = f"bench-pub-{family}".encode()
    connect_body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(client_id).to_bytes(2, "big") + client_id
    sent = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"\x10" + _varint(len(connect_body)) + connect_body)
        if sock.recv(4)[:1] != b"\x20":
            raise RuntimeError("no CONNACK")
        deadline = time.monotonic() + seconds
        for start in range(0, len(packets), 500):
            chunk = packets[start : start + 500]
            sock.sendall(b"".join(chunk))
            sent += len(chunk)
            if time.monotonic() > deadline:
                break
        sock.sendall(b"\xe0\x00")  # DISCONNECT
    print(json.dumps({"sent": sent}))


# -- the I/O floor ---------------------------------------------------------------


def _wal_loop(path: Path, size: int, stop: threading.Event) -> None:
    """Append `size` bytes and fsync once a second, as the history writer's thread does."""
    record = os.urandom(size)
    with path.open("ab", buffering=0) as wal:
        next_due = time.monotonic()
        while not stop.is_set():
            next_due += 1.0
            if stop.wait(max(0.0, next_due - time.monotonic())):
                return
            wal.write(record)
            os.fsync(wal.fileno())


async def _poll_mysql(mysql_port: int, texts: dict[str, Any], seconds: float) -> None:
    """The daemon's statements over asyncmy, each period: every result set read, nothing built."""
    import asyncmy  # noqa: PLC0415 - benchmark child process only

    async def run(cur: Any, sql: str) -> None:
        try:
            await cur.execute(sql)
            while True:
                await cur.fetchall()
                if not await cur.nextset():
                    return
        except asyncmy.errors.MySQLError:  # a probe the server refuses (9.x's tables on 8.4)
            return

    conn = await asyncmy.connect(
        host="127.0.0.1", port=mysql_port, user="grstats", password=texts["password"]
    )
    loop = asyncio.get_running_loop()
    start = loop.time()
    polls, cadence = 0, texts["cadence_s"]
    next_cadence = start
    async with conn.cursor() as cur:
        await run(cur, texts["first"])
        while loop.time() - start < seconds:
            polls += 1
            await asyncio.sleep(start + polls - loop.time())
            await run(cur, texts["every"])
            if loop.time() >= next_cadence:
                next_cadence += cadence
                for sql in texts["cadence"]:
                    await run(cur, sql)
    conn.close()


async def role_floor(port: int, member: str, seconds: float, floor: dict[str, Any]) -> None:
    """What any daemon doing grstats' job must do, and nothing else: the I/O floor.

    Each period, as a member daemon: one stats envelope of a real daemon's size
    published (MQTT 5, retained, QoS 0, message expiry; its gtids envelope every
    gtid_interval), every message of the group received, the daemon's exact
    MySQL statements sent over asyncmy to a fake server of the same kind (its
    every-poll batch each period, its cadence reads every cadence.REREAD_S) with
    every result set read, and a WAL append of the daemon's bytes per second
    fsynced in a thread. It reads MQTT as the daemon's Bus does (paho through
    grstats.bus.tap: the cheapest reading we have). The payloads are a
    daemon's own envelopes, taken from the broker's retained copies, published
    under a topic outside the group (`grstats/v1/floor/...`) so that the
    daemons never receive them; the floor subscribes to it as well, so it
    receives its own as a daemon does.
    """
    import aiomqtt  # noqa: PLC0415 - benchmark child process only
    from paho.mqtt.packettypes import PacketTypes  # noqa: PLC0415
    from paho.mqtt.properties import Properties  # noqa: PLC0415

    from grstats.bus.tap import install  # noqa: PLC0415 - stdlib and paho only

    group = f"{PREFIX}/{GROUP}/+/+"
    own = f"{PREFIX}/floor/{member}"
    received = 0
    templates: dict[str, bytes] = {}  # kind -> a daemon's retained payload
    got_templates = asyncio.Event()
    skip = member_uuid(99, 1)  # the bare reference's member

    def handler(topic: str, payload: bytes, retained: bool) -> None:
        nonlocal received
        received += 1
        kind = topic.rsplit("/", 1)[-1]
        ours = topic.startswith(f"{PREFIX}/{GROUP}/") and skip not in topic and payload
        if ours and kind in ("stats", "gtids") and kind not in templates:
            templates[kind] = payload
            if len(templates) == 2:
                got_templates.set()

    stop = threading.Event()
    wal = threading.Thread(
        target=_wal_loop, args=(Path(floor["wal"]), floor["wal_bytes"], stop), daemon=True
    )
    client = aiomqtt.Client("127.0.0.1", port, protocol=aiomqtt.ProtocolVersion.V5)
    install(client, handler, 1 << 20)  # read as a daemon's Bus reads (grstats.bus.tap)
    async with client:
        await client.subscribe(group, qos=1)
        await got_templates.wait()
        stats, gtids = templates["stats"], templates["gtids"]
        await client.subscribe(f"{own}/+", qos=1)

        async def drain() -> None:  # what does not come through the tap (none expected)
            nonlocal received
            async for _ in client.messages:
                received += 1

        def expiring(seconds: int) -> Any:
            properties = Properties(PacketTypes.PUBLISH)
            properties.MessageExpiryInterval = seconds
            return properties

        task = asyncio.create_task(drain())
        poller = asyncio.create_task(_poll_mysql(floor["mysql_port"], floor, seconds))
        wal.start()
        loop = asyncio.get_running_loop()
        start = loop.time()
        seq = 0
        gtid_every = round(floor["gtid_interval_s"])
        while loop.time() - start < seconds:
            await client.publish(f"{own}/stats", stats, qos=0, retain=True, properties=expiring(60))
            if seq % gtid_every == 0:
                await client.publish(
                    f"{own}/gtids", gtids, qos=0, retain=True, properties=expiring(60)
                )
            seq += 1
            await asyncio.sleep(start + seq - loop.time())
        stop.set()
        failed = repr(poller.exception()) if poller.done() else ""
        poller.cancel()
        task.cancel()
    print(json.dumps({"received": received, "mysql_failed": failed}))
