"""How to reach the MQTT broker: one plain dataclass, no aiomqtt.

`grstats.config` builds it (its `BusSettings` extends it with the topic
prefix) and `grstats.bus.client` connects with it; it lives here so the config can
share the definition without importing aiomqtt.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BusOptions:
    """How to reach the broker.

    Attributes:
        host, port: the broker.
        username, password: credentials (None for anonymous).
        tls: connect with TLS; ca_file/cert_file/key_file as for any TLS client.
        keepalive: MQTT keepalive in seconds.
        client_id: MQTT client identifier ("" lets the library choose).
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
