"""The MQTT bus: with its `mqtt5` helper, the only module that imports aiomqtt (and paho).

Strategy: `Bus.run()` is a reconnect loop that lives as long as the daemon.
Each round opens one `aiomqtt.Client` (MQTT 5), subscribes to every topic
filter, sets `connected`, calls the `on_connect` hook (the daemon publishes
`online` there) and then waits for the connection to end. When the connection
fails — refused, unreachable, TLS, bad options — the loop records the reason in
`last_error`, logs it (rate-limited) and waits a capped, jittered backoff
(0.1 s doubling to 5 s) before it tries again, forever, until `close()`.

Receive path: a QoS 0 PUBLISH (every stats, gtids and status message) is
handed to the synchronous handler by the socket tap paho reads through
(`grstats.bus.tap`: one read of up to 64 KiB, every complete PUBLISH in it,
no paho decoding); any other message (a QoS 1 Will, which paho acknowledges)
goes through paho and aiomqtt's public `queue_type` parameter (a queue whose
`put_nowait` calls the handler and stores nothing, `_HandOverQueue`).
The handler must be quick (decode and apply): we drain the socket as fast as it
fills, any backlog stays in the kernel socket buffer and the broker's bounded
queue, never in our memory.

Why not the plain public iterator, and why no private override: measured with
`benchmarks/bench_daemon.py --skip-steady --fanin-seconds 8` (2 publishers x
300 members, 120 000 envelopes; daemon accepted/s as a ratio of a bare aiomqtt
subscriber in the same run, and daemon CPU per accepted envelope; 2 shared
cores at load ~8, so single runs vary by 2x):

    receive path                      ratio (runs)            CPU/envelope  RSS
    public iterator + handler         0.36 0.28               ~110 us       ~500 MB
    override of aiomqtt._on_message   1.41 1.01 0.55 0.73     ~51 us        53 MB
    queue_type hand-over (this)       0.57 0.87 0.54 0.58     ~55 us        53 MB

The iterator costs a queue put, a task and an `asyncio.wait` per message and
its queue grows without bound when we fall behind (RSS 500 MB, ~5% lost at
the broker). The hand-over and the override are within the noise of each
other (the hand-over adds aiomqtt's `Message` wrapper, ~0.9 us a message in
isolation), so we keep the one that uses only aiomqtt's documented API.

Where a collector's time goes (`bench_daemon.py --fanin`, 2 cores at load ~1,
CPU per envelope, before the tap): this Bus counting only 28 us (of which ~10
us is paho building an MQTT 5 `Properties` object for every PUBLISH, even an
empty one: the same Bus on MQTT 3.1.1 measured 18 us), the collector with
history 72 us (decode, admit, apply and history row ~17 us on the loop; WAL,
dedupe and Parquet ~12 us on the history thread; the rest snapshots, GIL
hand-offs). With the tap the Bus counting only measured 8 us where paho's
reading measured 80 us (load ~5, one run): docs/collector-profile.md.

Shared subscriptions (`$share/<name>/<filter>`, MQTT 5): the broker hands
each matching message to one subscriber of the group and never sends retained
messages to them. A Bus given `snapshot_filters` reads the retained state on
every connect through a plain subscription it drops again at once.

Invariants:
- aiomqtt/paho exceptions never leave this module: `publish()` returns False
  when the message could not be handed to the broker, `run()` only returns.
- We announce an MQTT 5 Maximum Packet Size (`BusOptions.max_packet_size`):
  a compliant broker drops a larger message for us rather than sending it, so
  an oversized publish costs this process nothing.
- The Will (`offline`, retained, QoS 1) carries an MQTT 5 Will Delay and the
  session outlives the socket by the same time, so a crashed member first
  goes silent (receivers show UNREACHABLE) and is announced `offline` only
  after the delay — MySQL's "suspected, then expelled". A clean `close()`
  sends DISCONNECT, so the broker drops the Will; the daemon publishes
  `offline` itself before that.
- Publishes are awaited one at a time; aiomqtt's pending-calls warning
  threshold is raised past anything a healthy daemon reaches, so the warning
  only fires if publishes really pile up.

What each connection announces (packet size, Will, session, TLS) is made in
`grstats.bus.mqtt5`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Sequence

import aiomqtt
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from grstats.bus.mqtt5 import LastWill, make_client
from grstats.bus.options import BusOptions
from grstats.core.ratelimit import RateLimit

__all__ = ["Bus", "BusOptions", "LastWill", "MessageHandler"]

log = structlog.get_logger("grstats.bus")

BACKOFF_INITIAL_S = 0.1
BACKOFF_MAX_S = 5.0
# A session shorter than this does not reset the backoff: a broker that accepts
# and then drops us at once (a client-id fight, an ACL kick) must not make us
# reconnect ten times a second.
STABLE_SESSION_S = BACKOFF_MAX_S
# At most one connection warning per this many seconds; the rest are counted.
WARN_INTERVAL_S = 10.0

# What a connection attempt or a live connection can fail with. aiomqtt wraps
# socket and TLS errors in MqttError, but paho raises ValueError for an empty
# or malformed host (UnicodeError for bad IDNA labels is a ValueError too),
# OverflowError for a port outside 0-65535, and OSError/ssl.SSLError from
# loading TLS files. None of these may end the reconnect loop.
_CONNECTION_ERRORS = (aiomqtt.MqttError, OSError, ValueError, OverflowError)

MessageHandler = Callable[[str, bytes, bool], None]


class _HandOverQueue(asyncio.Queue[aiomqtt.Message]):
    """The "queue" given to aiomqtt (`queue_type`): hands each message on, stores none.

    aiomqtt puts every message it receives with `put_nowait` from paho's read
    callback; we call the handler right there. `get()` is never satisfied, so
    aiomqtt's message iterator only ever ends with the disconnect MqttError —
    which is all `Bus` uses it for.
    """

    handler: MessageHandler  # set on the per-Bus subclass made by `_hand_over_to`

    def put_nowait(self, item: aiomqtt.Message) -> None:
        self.handler(item.topic.value, bytes(item.payload), bool(item.retain))


def _hand_over_to(handler: MessageHandler) -> type[asyncio.Queue[aiomqtt.Message]]:
    # aiomqtt instantiates `queue_type(maxsize=...)` itself, so the handler
    # travels on a class made for this Bus.
    return type("_BusHandOverQueue", (_HandOverQueue,), {"handler": staticmethod(handler)})


def _describe(exc: BaseException) -> str:
    """One line for logs and /healthz: the error and, if wrapped, what caused it."""
    text = str(exc) or type(exc).__name__
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text}: {cause}"
    return text


def _ignore(topic: str, payload: bytes, retained: bool) -> None:
    """The handler of a publish-only Bus (it subscribes to nothing)."""


class Bus:
    """One logical connection to the broker that survives broker restarts.

    Args:
        options: broker address, credentials, TLS, maximum packet size.
        subscriptions: topic filters to (re-)subscribe on every connect.
        snapshot_filters: topic filters subscribed and at once unsubscribed on
            every connect, after `subscriptions`: the broker sends their retained
            messages (to the handler, flagged retained) and nothing more. How a
            shared-subscription collector, to which a broker never sends
            retained messages, learns the current state.
        handler: called with (topic, payload, retained) for every message, from
            the socket's read callback: it must be quick and must not block.
            None for a Bus that only publishes.
        will: the Last Will, or None.
        on_connect: awaited after each successful connect and subscribe.

    Attributes:
        connected: set while a connection is up and subscribed.
        failed: set when a connection attempt fails (cleared by the next
            connect): a one-shot client reports `last_error` at once instead
            of waiting out its deadline.
        last_error: why the latest connection attempt failed or the latest
            connection ended ("" before any failure and after each successful
            connect) — for `/healthz` ("degraded: bus: <last_error>").
        connects, reconnects, connect_failures, published, publish_failures: counters.
    """

    def __init__(
        self,
        options: BusOptions,
        *,
        subscriptions: Sequence[str] = (),
        snapshot_filters: Sequence[str] = (),
        handler: MessageHandler | None = None,
        will: LastWill | None = None,
        on_connect: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._options = options
        self._subscriptions = tuple(subscriptions)
        self._snapshot_filters = tuple(snapshot_filters)
        self._queue_type = _hand_over_to(handler or _ignore)
        self._handler = handler
        self._will = will
        self._on_connect = on_connect
        self._client: aiomqtt.Client | None = None
        self._closing = asyncio.Event()
        self._warnings = RateLimit(WARN_INTERVAL_S)
        self.connected = asyncio.Event()
        self.failed = asyncio.Event()
        self.ever_connected = asyncio.Event()
        self.last_error = ""
        self.connects = 0
        self.reconnects = 0
        self.connect_failures = 0
        self.published = 0
        self.publish_failures = 0

    # -- connection loop ------------------------------------------------------

    async def run(self) -> None:
        """Connect, subscribe, drain; reconnect forever until `close()` is called.

        Never raises for a connection problem: each failure lands in
        `last_error` and a rate-limited warning, then the next attempt follows.
        """
        loop = asyncio.get_running_loop()
        delay = BACKOFF_INITIAL_S
        failures = 0
        while not self._closing.is_set():
            started = loop.time()
            try:
                await self._session()
            except _CONNECTION_ERRORS as exc:
                self.last_error = _describe(exc)
                was_connected = self.connected.is_set()
                if was_connected:
                    failures = 0
                else:
                    failures += 1
                    self.connect_failures += 1
                    self.failed.set()
                if was_connected and loop.time() - started >= STABLE_SESSION_S:
                    delay = BACKOFF_INITIAL_S
                self._warn(
                    "bus.disconnected" if was_connected else "bus.connect_failed",
                    loop.time(),
                    error=self.last_error,
                    attempt=failures,
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

    def _warn(self, event: str, now: float, **context: object) -> None:
        suppressed = self._warnings.admit(now)
        if suppressed is None:
            return
        log.warning(
            event,
            broker=f"{self._options.host}:{self._options.port}",
            suppressed=suppressed,
            **context,
        )

    async def _session(self) -> None:
        # Resume our own session after a blip: a session taken over before the
        # Will Delay expires cancels the Will, so receivers see no false `offline`.
        client = make_client(
            self._options,
            self._will,
            clean_start=self.connects == 0,
            queue_type=self._queue_type,
            handler=self._handler,
        )
        async with client:
            for topic_filter in self._subscriptions:
                await client.subscribe(topic_filter, qos=1)
            for topic_filter in self._snapshot_filters:
                # The retained copies follow the SUBACK; live messages that slip
                # in before the UNSUBACK are copies of what a subscription above
                # also gets (rejected as not newer, or applied once if it is a share).
                await client.subscribe(topic_filter, qos=0)
                await client.unsubscribe(topic_filter)
            self._client = client
            self.connects += 1
            if self.connects > 1:
                self.reconnects += 1
            self.last_error = ""
            self.failed.clear()
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
        # Messages go to the handler from paho's read callback (_HandOverQueue);
        # the public iterator then only ends, with MqttError, when the
        # connection is lost.
        async for _ in client.messages:
            pass

    # -- use ------------------------------------------------------------------

    async def publish(
        self,
        topic: str,
        payload: bytes,
        *,
        qos: int = 0,
        retain: bool = False,
        expiry_s: int | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - aiomqtt's own per-call timeout
    ) -> bool:
        """Hand one message to the broker.

        Args:
            topic: the topic name.
            payload: the message bytes (empty + retain deletes the retained message).
            qos: 0 or 1.
            retain: ask the broker to keep it for later subscribers.
            expiry_s: MQTT 5 Message Expiry Interval in seconds: the broker
                discards the message (retained copy included) once it is this
                old, so a dead member's retained stats do not live forever.
                None for no expiry.
            timeout: seconds to wait for the hand-over (default: the client's).

        Returns:
            True if the message was handed over; False while disconnected or on
            failure (including a message larger than the broker's Maximum
            Packet Size).
        """
        client = self._client
        if client is None:
            self.publish_failures += 1
            return False
        properties = None
        if expiry_s is not None:
            properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]  # paho ships no hints here
            properties.MessageExpiryInterval = max(1, int(expiry_s))
        try:
            await client.publish(
                topic, payload, qos=qos, retain=retain, properties=properties, timeout=timeout
            )
        except aiomqtt.MqttError as exc:
            self.publish_failures += 1
            log.debug("bus.publish_failed", topic=topic, error=_describe(exc))
            return False
        self.published += 1
        return True

    async def close(self) -> None:
        """Leave cleanly: DISCONNECT (the broker drops the Will) and stop reconnecting."""
        self._closing.set()
