"""The msgpack envelope that carries one stats message on the bus (DESIGN.md section 3).

CONTRACT STUB: the dataclasses are final; encode/decode are being implemented.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ENVELOPE_VERSION = 1
DEFAULT_MAX_ENVELOPE_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class MemberInfo:
    id: str
    host: str
    port: int
    state: str
    role: str
    version: str
    gcs_id: str


@dataclass(frozen=True, slots=True)
class Envelope:
    group: str
    member: MemberInfo
    view_id: str
    incarnation: int
    seq: int
    sent_us: int
    stats: bytes
    ext: Mapping[str, Any] = field(default_factory=dict)
    v: int = ENVELOPE_VERSION


def encode_envelope(envelope: Envelope) -> bytes:
    raise NotImplementedError


def decode_envelope(data: bytes, *, max_size: int = DEFAULT_MAX_ENVELOPE_SIZE) -> Envelope:
    raise NotImplementedError
