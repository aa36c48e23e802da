"""The MQTT bus: the only module that imports aiomqtt (and, through it, paho).

Strategy: `Bus.run()` is a reconnect loop that lives as long as the daemon.
Each round opens one `aiomqtt.Client` (MQTT 5), subscribes to every topic
filter, sets `connected`, calls the `on_connect` hook (the daemon publishes
`online` there) and then waits for the connection to end. Every message is
handed to a synchronous handler straight from paho's read callback (see
`_DirectClient`) — the handler must be quick (decode and apply), so we drain
the socket as fast as it fills and Mosquitto never drops messages for us
(it silently does beyond `max_queued_messages`). When the connection fails the
loop waits a capped, jittered backoff (0.1 s doubling to 5 s) and starts
again, forever, until `close()`.

Invariants:
- aiomqtt/paho exceptions never leave this module: `publish()` returns False
  when the message could not be handed to the broker, `run()` only returns.
- The Will (`offline`, retained, QoS 1) carries an MQTT 5 Will Delay and the
  session outlives the socket by the same time, so a crashed member first
  goes silent (receivers show UNREACHABLE) and is announced `offline` only
  after the delay — MySQL's "suspected, then expelled". A clean `close()`
  sends DISCONNECT, so the broker drops the Will; the daemon publishes
  `offline` itself before that.
- Publishes are awaited one at a time; aiomqtt's pending-calls warning
  threshold is raised past anything a healthy daemon reaches, so the warning
  only fires if publishes really pile up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiomqtt
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from grstats.bus.options import BusOptions

log = structlog.get_logger("grstats.bus")

BACKOFF_INITIAL_S = 0.1
BACKOFF_MAX_S = 5.0
# A healthy daemon has at most a handful of publishes in flight; far above that
# something is wrong and one warning per publish is then deserved.
PENDING_CALLS_THRESHOLD = 1000
_QUEUE_LIMIT = 100_000  # messages buffered for messages() consumers before dropping

MessageHandler = Callable[[str, bytes, bool], None]


class BusError(Exception):
    """A bus operation that cannot succeed (reported by our own code, never aiomqtt's)."""


@dataclass(frozen=True, slots=True)
class LastWill:
    """The message the broker publishes for us if we vanish, after `delay_s`."""

    topic: str
    payload: bytes
    delay_s: int = 0


class _DirectClient(aiomqtt.Client):
    """An aiomqtt.Client that hands each message straight to a handler.

    aiomqtt's iterator costs a queue put, a task and an `asyncio.wait` per
    message and lets an unbounded backlog grow in our memory when we fall
    behind; calling the (quick, synchronous) handler from paho's read callback
    instead roughly halves the receive cost and leaves any backlog in the
    kernel socket buffer and the broker's bounded queue. Pinned to aiomqtt 2.x
    (pyproject), whose `_on_message` is the paho callback.
    """

    def __init__(self, *args: Any, handler: MessageHandler, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._grstats_handler = handler

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        try:
            topic = message.topic
        except UnicodeDecodeError:  # brokers validate topics; never trust it anyway
            return
        self._grstats_handler(topic, bytes(message.payload), bool(message.retain))


class Bus:
    """One logical connection to the broker that survives broker restarts.

    Args:
        options: broker address, credentials, TLS.
        subscriptions: topic filters to (re-)subscribe on every connect.
        handler: called with (topic, payload, retained) for every message; when
            None, messages are queued for `messages()`.
        will: the Last Will, or None.
        on_connect: awaited after each successful connect and subscribe.
    """

    def __init__(
        self,
        options: BusOptions,
        *,
        subscriptions: Sequence[str] = (),
        handler: MessageHandler | None = None,
        will: LastWill | None = None,
        on_connect: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._options = options
        self._subscriptions = tuple(subscriptions)
        self._handler = handler
        self._will = will
        self._on_connect = on_connect
        self._client: aiomqtt.Client | None = None
        self._closing = asyncio.Event()
        self._queue: asyncio.Queue[tuple[str, bytes, bool]] | None = (
            asyncio.Queue(_QUEUE_LIMIT) if handler is None else None
        )
        self.connected = asyncio.Event()
        self.ever_connected = asyncio.Event()
        self.connects = 0
        self.reconnects = 0
        self.published = 0
        self.publish_failures = 0
        self.dropped = 0

    # -- connection loop ------------------------------------------------------

    async def run(self) -> None:
        """Connect, subscribe, drain; reconnect forever until `close()` is called."""
        delay = BACKOFF_INITIAL_S
        while not self._closing.is_set():
            try:
                await self._session()
                delay = BACKOFF_INITIAL_S
            except aiomqtt.MqttError as exc:
                if self.connected.is_set():
                    delay = BACKOFF_INITIAL_S
                log.warning(
                    "bus.disconnected",
                    broker=f"{self._options.host}:{self._options.port}",
                    error=str(exc),
                    retry_in_s=round(delay, 3),
                )
            finally:
                self._client = None
                self.connected.clear()
            if self._closing.is_set():
                break
            jittered = delay * random.uniform(0.5, 1.0)  # jitter, not crypto
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), jittered)
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def _session(self) -> None:
        client = self._make_client()
        client.pending_calls_threshold = PENDING_CALLS_THRESHOLD
        async with client:
            for topic_filter in self._subscriptions:
                await client.subscribe(topic_filter, qos=1)
            self._client = client
            self.connects += 1
            if self.connects > 1:
                self.reconnects += 1
            self.connected.set()
            self.ever_connected.set()
            log.info(
                "bus.connected",
                broker=f"{self._options.host}:{self._options.port}",
                connects=self.connects,
            )
            if self._on_connect is not None:
                await self._on_connect()
            drain = asyncio.create_task(self._wait_disconnect(client), name="bus-drain")
            closing = asyncio.create_task(self._closing.wait(), name="bus-closing")
            try:
                await asyncio.wait({drain, closing}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (drain, closing):
                    task.cancel()
                await asyncio.gather(drain, closing, return_exceptions=True)
            if drain.done() and not drain.cancelled() and drain.exception() is not None:
                raise drain.exception()  # type: ignore[misc]  # MqttError, handled by run()

    async def _wait_disconnect(self, client: aiomqtt.Client) -> None:
        # Messages go to the handler from paho's read callback (_DirectClient);
        # this only waits for the connection to end. aiomqtt raises MqttError
        # from its message iterator when the connection is lost.
        async for _ in client.messages:
            pass

    def _dispatch(self, topic: str, payload: bytes, retained: bool) -> None:
        if self._handler is not None:
            self._handler(topic, payload, retained)
        elif self._queue is not None:
            try:
                self._queue.put_nowait((topic, payload, retained))
            except asyncio.QueueFull:
                self.dropped += 1

    def _make_client(self) -> aiomqtt.Client:
        o = self._options
        will = None
        connect_props = None
        if self._will is not None:
            will_props = Properties(PacketTypes.WILLMESSAGE)  # type: ignore[no-untyped-call]  # paho ships no hints here
            if self._will.delay_s > 0:
                will_props.WillDelayInterval = self._will.delay_s
                # The Will waits for the session to end: keep it alive as long.
                connect_props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]  # paho ships no hints here
                connect_props.SessionExpiryInterval = self._will.delay_s
            will = aiomqtt.Will(
                self._will.topic, self._will.payload, qos=1, retain=True, properties=will_props
            )
        tls_params = None
        if o.tls:
            tls_params = aiomqtt.TLSParameters(
                ca_certs=o.ca_file,
                certfile=o.cert_file,
                keyfile=o.key_file,
                cert_reqs=ssl.CERT_REQUIRED,
            )
        return _DirectClient(
            o.host,
            o.port,
            username=o.username,
            password=o.password,
            identifier=o.client_id or None,
            protocol=aiomqtt.ProtocolVersion.V5,
            will=will,
            keepalive=o.keepalive,
            timeout=max(5.0, float(o.keepalive)),
            properties=connect_props,
            # Resume our own session after a blip: a session taken over before the
            # Will Delay expires cancels the Will, so receivers see no false `offline`.
            clean_start=self.connects == 0,
            tls_params=tls_params,
            logger=logging.getLogger("grstats.bus.mqtt"),
            handler=self._dispatch,
        )

    # -- use ------------------------------------------------------------------

    async def publish(
        self,
        topic: str,
        payload: bytes,
        *,
        qos: int = 0,
        retain: bool = False,
        timeout: float | None = None,  # noqa: ASYNC109 - aiomqtt's own per-call timeout
    ) -> bool:
        """Hand one message to the broker.

        Args:
            topic: the topic name.
            payload: the message bytes (empty + retain deletes the retained message).
            qos: 0 or 1.
            retain: ask the broker to keep it for later subscribers.
            timeout: seconds to wait for the hand-over (default: the client's).

        Returns:
            True if the message was handed over; False while disconnected or on failure.
        """
        client = self._client
        if client is None:
            self.publish_failures += 1
            return False
        try:
            await client.publish(topic, payload, qos=qos, retain=retain, timeout=timeout)
        except aiomqtt.MqttError as exc:
            self.publish_failures += 1
            log.debug("bus.publish_failed", topic=topic, error=str(exc))
            return False
        self.published += 1
        return True

    async def messages(self) -> AsyncIterator[tuple[str, bytes, bool]]:
        """(topic, payload, retained) for every message, across reconnects.

        Raises:
            BusError: when the bus was built with a handler (messages go there).
        """
        if self._queue is None:
            raise BusError("messages() is not available when a handler is set")
        while True:
            yield await self._queue.get()

    async def close(self) -> None:
        """Leave cleanly: DISCONNECT (the broker drops the Will) and stop reconnecting."""
        self._closing.set()
