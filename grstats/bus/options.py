"""How to reach the MQTT broker: one plain dataclass, no aiomqtt.

`grstats.config` builds it (its `BusSettings` extends it with the topic
prefix) and `grstats.bus.client` connects with it; it lives here so the config can
share the definition without importing aiomqtt.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import DEFAULT_MAX_ENVELOPE_SIZE

# Room for everything in a PUBLISH packet besides the envelope: fixed header
# (<= 5 bytes), topic (2 + ~100 bytes for `<prefix>/<group>/<member>/<kind>`),
# packet id and MQTT 5 properties (message expiry, anything a broker adds).
PACKET_HEADROOM = 4096


def max_packet_size_for(max_envelope_size: int) -> int:
    """The MQTT Maximum Packet Size that still admits every envelope up to a limit.

    Args:
        max_envelope_size: the largest envelope (payload) the receiver accepts.

    Returns:
        That size plus `PACKET_HEADROOM` bytes for the packet's header, topic and properties.
    """
    return max_envelope_size + PACKET_HEADROOM


DEFAULT_MAX_PACKET_SIZE = max_packet_size_for(DEFAULT_MAX_ENVELOPE_SIZE)


@dataclass(frozen=True, slots=True)
class BusOptions:
    """How to reach the broker.

    Attributes:
        host, port: the broker.
        username, password: credentials (None for anonymous). With the shipped
            ACL a member's username is its server UUID.
        tls: connect with TLS; ca_file/cert_file/key_file as for any TLS client.
        keepalive: MQTT keepalive in seconds.
        client_id: MQTT client identifier ("" lets the library choose).
        max_packet_size: the MQTT 5 Maximum Packet Size we announce on CONNECT
            (bytes, whole packet): a compliant broker drops larger messages for
            us instead of sending them, so an oversized publish never reaches
            (or is buffered by) this process. Use `max_packet_size_for()` when
            the envelope limit is raised.
    """

    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    keepalive: int = 10
    client_id: str = ""
    max_packet_size: int = DEFAULT_MAX_PACKET_SIZE
