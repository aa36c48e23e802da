"""The socket paho reads: many packets per read, QoS 0 PUBLISH handed straight on.

Strategy: paho reads each packet with three `recv` calls (its type byte, its
length, its body) and one event-loop wake-up, then decodes it into an MQTT 5
`Properties`, an `MQTTMessage` and aiomqtt's `Message` before our handler
sees it: about two thirds of a collector's per-message cost outside grstats
(`docs/collector-profile.md`). `PublishTap` stands in for the socket paho
was given (`install`: at `on_socket_open`, before any packet is read). It
reads what the kernel holds (up to READ_BYTES a read, one read per call: a
flood still gives the event loop its turns; from a TLS socket also what it
already decrypted of the record), and hands every complete QoS 0 PUBLISH at
the head of its buffer to the handler itself: topic, payload and retain
flag, the message properties skipped (grstats reads none). Any other packet
(CONNACK, SUBACK, PINGRESP, a QoS 1 PUBLISH -- the Will -- that paho must
acknowledge, one whose topic is an alias or not UTF-8) is let through to
paho whole, as if the socket held only it: paho never sees part of a packet
that the tap has not checked, so the two never read the same bytes.

aiomqtt's reader calls `loop_read()` again while the socket's `pending()` is
non-zero (for TLS); `pending()` here also counts the bytes let through to
paho and a complete packet still buffered, so one readable event drains
everything read.

Invariants: bytes are delivered in order, each once, to the tap's handler or
to paho; the buffer holds at most one incomplete packet plus one read
(a packet is at most the Maximum Packet Size the broker was told, MQTT 5
§3.1.2.11.4; one announcing more than `max_packet` is left to paho, as
before); an end of stream or a socket error reaches paho once every packet
before it has; each read tells paho's keepalive that the broker talks. The
private names used (aiomqtt's `Client._client`, paho's `Client._sock`,
`_last_bytes_received` and its mutex) are of the pinned versions; tests/grstats/bus/test_tap.py
checks the delivery against a plain aiomqtt subscriber on a real broker.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any

from paho.mqtt.client import time_func as paho_time

MessageHandler = Callable[[str, bytes, bool], None]

READ_BYTES = 1 << 16
_PUBLISH = 3


def _header(buf: bytearray | memoryview, at: int) -> tuple[int, int] | None:
    """(the packet's total length, its body's offset) at `at`, or None if incomplete."""
    end = len(buf)
    length, mult, i = 0, 1, at + 1
    while True:
        if i >= end:
            return None
        byte = buf[i]
        length += (byte & 0x7F) * mult
        i += 1
        if not byte & 0x80:
            break
        if i - at > 4:  # a malformed length: paho says so
            return (end - at, i)
        mult *= 128
    total = i - at + length
    return (total, i) if at + total <= end else None


def _varint(buf: bytearray | memoryview, i: int) -> tuple[int, int]:
    """(value, next offset) of an MQTT variable byte integer at i."""
    value, mult = 0, 1
    while True:
        byte = buf[i]
        value += (byte & 0x7F) * mult
        i += 1
        if not byte & 0x80 or mult > 128**3:
            return value, i
        mult *= 128


class PublishTap:
    """paho's socket: reads in large chunks and delivers QoS 0 PUBLISH packets itself.

    Args:
        sock: the connected socket paho opened (plain or TLS, non-blocking).
        handler: called with (topic, payload, retained) for each QoS 0 PUBLISH.
        max_packet: the largest packet the broker may send us; a larger one is
            left to paho.
        received: called after each read that got bytes (paho's keepalive must
            know the broker is talking even when paho reads nothing itself).
    """

    def __init__(
        self,
        sock: Any,
        handler: MessageHandler,
        max_packet: int,
        received: Callable[[], None] = lambda: None,
    ) -> None:
        self._sock = sock
        self._handler = handler
        self._max = max_packet
        self._received = received
        self._buf = bytearray()
        self._through = 0  # bytes at the head of `_buf` paho may read now
        self._ended = False  # the peer closed the stream
        self._error: BaseException | None = None  # a read error, raised once the buffer is empty
        self.handed = 0  # PUBLISH packets delivered here rather than by paho

    # -- what paho calls --------------------------------------------------------

    def recv(self, bufsize: int) -> bytes:
        """Up to `bufsize` bytes of the next packet paho is to read."""
        if not self._through:
            self._fill()
            self._deliver()
        if self._through:
            n = min(bufsize, self._through)
            out = bytes(self._buf[:n])
            del self._buf[:n]
            self._through -= n
            return out
        if self._error is not None and not self._buf:
            error, self._error = self._error, None
            raise error
        if self._ended and not self._buf:
            return b""
        raise BlockingIOError

    def pending(self) -> int:
        """Bytes to read without waiting for the socket (aiomqtt reads again while > 0)."""
        ssl_pending = self._sock.pending() if isinstance(self._sock, ssl.SSLSocket) else 0
        complete = _header(self._buf, 0) is not None if self._buf else False
        ended = (self._ended or self._error is not None) and not self._buf
        return self._through + ssl_pending + int(complete) + int(ended)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)  # send, fileno, close, setblocking, ...

    # -- reading and delivering --------------------------------------------------

    def _fill(self) -> None:
        """One read of what the socket holds now (at most READ_BYTES, and what a TLS
        socket already decrypted of its record): the loop gets a turn between reads."""
        if self._ended or self._error is not None:
            return
        try:
            data = self._sock.recv(READ_BYTES)
            if isinstance(self._sock, ssl.SSLSocket) and self._sock.pending():
                data += self._sock.recv(self._sock.pending())
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return
        except ssl.SSLWantWriteError:
            if not self._buf:
                raise  # paho registers for writing, as with its own socket
            return
        except OSError as exc:
            self._error = exc
            return
        if not data:
            self._ended = True
            return
        self._buf += data
        self._received()

    def _deliver(self) -> None:
        """Hand the complete QoS 0 PUBLISH packets at the head of the buffer to the
        handler; stop at the first other packet (let through to paho) or an incomplete one."""
        buf = self._buf
        at = 0
        try:
            while at < len(buf):
                header = _header(buf, at)
                if header is None:
                    if self._ended or self._error is not None:
                        self._through = len(buf) - at  # paho reads the rest and the end
                    break
                total, body = header
                if total > self._max + 8 or not self._handed(buf, at, body, at + total):
                    self._through = total
                    break
                at += total
        finally:
            if at:
                del buf[:at]

    def _handed(self, buf: bytearray, at: int, body: int, end: int) -> bool:
        """Deliver the packet [at, end) if it is a QoS 0 PUBLISH we can read; else False."""
        first = buf[at]
        if first >> 4 != _PUBLISH or first & 0x06:  # not PUBLISH, or QoS 1/2 (paho acks)
            return False
        if body + 2 > end:
            return False
        size = (buf[body] << 8) | buf[body + 1]
        topic_end = body + 2 + size
        if size == 0 or topic_end >= end:  # a topic alias, or no room for properties
            return False
        try:
            topic = bytes(buf[body + 2 : topic_end]).decode("utf-8")
        except UnicodeDecodeError:
            return False
        props, start = _varint(buf, topic_end)
        payload_at = start + props
        if payload_at > end:
            return False
        self.handed += 1
        self._handler(topic, bytes(buf[payload_at:end]), bool(first & 0x01))
        return True


def install(client: Any, handler: MessageHandler, max_packet: int) -> None:
    """Make `client` (an aiomqtt.Client) read through a `PublishTap` on every socket it opens.

    The tap replaces the socket before paho reads from it: in paho's
    `on_socket_open`, before aiomqtt's own (which registers the reader).
    """
    paho = client._client  # aiomqtt 2.x keeps its paho client here (pinned versions)
    opened = paho.on_socket_open

    def on_socket_open(mqtt: Any, userdata: Any, sock: socket.socket) -> None:
        def received() -> None:
            # paho ends a session whose broker sent nothing for a keepalive while a
            # ping is unanswered; during a flood the PINGRESP waits behind the
            # PUBLISHes the tap reads, so the tap says when bytes came
            with mqtt._msgtime_mutex:
                mqtt._last_bytes_received = paho_time()

        tap = PublishTap(sock, handler, max_packet, received)
        mqtt._sock = tap  # paho reads and writes through `_sock` only
        if opened is not None:
            opened(mqtt, userdata, tap)

    paho.on_socket_open = on_socket_open
