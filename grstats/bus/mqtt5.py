"""How `BusOptions` and a Last Will become one aiomqtt client speaking MQTT 5.

Strategy: everything a connection announces to the broker is decided here,
once per connection attempt, from the options alone: the Maximum Packet Size
(a compliant broker drops a larger message for us instead of sending it),
the Will with its delay and a session that outlives the socket as long (a
crashed member goes silent first, `offline` follows the delay), TLS, and
whether the session starts clean (only the first connect: a session resumed
after a blip cancels a pending Will, so receivers see no false `offline`).
The client hands each message to `queue_type` (grstats.bus.client's hand-over);
with a handler, QoS 0 PUBLISH packets go to it from the socket (grstats.bus.tap).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from grstats.bus.options import BusOptions
from grstats.bus.tap import MessageHandler, install

# A healthy daemon has at most a handful of publishes in flight; far above that
# something is wrong and one warning per publish is then deserved.
PENDING_CALLS_THRESHOLD = 1000


@dataclass(frozen=True, slots=True)
class LastWill:
    """The message the broker publishes for us if we vanish, after `delay_s`."""

    topic: str
    payload: bytes
    delay_s: int = 0


def make_client(
    options: BusOptions,
    will: LastWill | None,
    *,
    clean_start: bool,
    queue_type: type[asyncio.Queue[aiomqtt.Message]],
    handler: MessageHandler | None = None,
) -> aiomqtt.Client:
    """One MQTT 5 client for one connection attempt (not yet connected).

    Args:
        options: broker address, credentials, TLS, keepalive, maximum packet size.
        will: the Last Will, or None.
        clean_start: start a new session (the first connect) instead of resuming ours.
        queue_type: the queue class aiomqtt puts every received message in.
        handler: if given, QoS 0 PUBLISH packets go to it straight from the socket
            (`grstats.bus.tap`), the others through paho to `queue_type`.

    Returns:
        The client; entering it (`async with`) connects.
    """
    o = options
    connect_props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]  # paho ships no hints here
    # A compliant broker never sends us a packet larger than this (MQTT 5
    # §3.1.2.11.4): it drops the message for this client instead.
    connect_props.MaximumPacketSize = o.max_packet_size
    mqtt_will = None
    if will is not None:
        will_props = Properties(PacketTypes.WILLMESSAGE)  # type: ignore[no-untyped-call]  # paho ships no hints here
        if will.delay_s > 0:
            will_props.WillDelayInterval = will.delay_s
            # The Will waits for the session to end: keep it alive as long.
            connect_props.SessionExpiryInterval = will.delay_s
        mqtt_will = aiomqtt.Will(
            will.topic, will.payload, qos=1, retain=True, properties=will_props
        )
    tls_params = None
    if o.tls:
        tls_params = aiomqtt.TLSParameters(
            ca_certs=o.ca_file,
            certfile=o.cert_file,
            keyfile=o.key_file,
            cert_reqs=ssl.CERT_REQUIRED,
        )
    client = aiomqtt.Client(
        o.host,
        o.port,
        username=o.username,
        password=o.password,
        identifier=o.client_id or None,
        protocol=aiomqtt.ProtocolVersion.V5,
        will=mqtt_will,
        keepalive=o.keepalive,
        timeout=max(5.0, float(o.keepalive)),
        properties=connect_props,
        clean_start=clean_start,
        tls_params=tls_params,
        logger=logging.getLogger("grstats.bus.mqtt"),
        queue_type=queue_type,
    )
    client.pending_calls_threshold = PENDING_CALLS_THRESHOLD
    if handler is not None:
        install(client, handler, o.max_packet_size)
    return client
