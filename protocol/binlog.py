"""MySQL binary/relay log events: file magic, v4 header, format description, CRC32.

Strategy: every decoder takes one event (or one event body) as bytes and
returns a frozen dataclass; nothing here reads files or the clock. GTID and
previous-GTIDs bodies are decoded in `protocol.binlog_gtid`; the streaming
side (`protocol.binlog_stream`) cuts a byte stream into events and calls
these decoders for the few types it reads, skipping every other event by
its size.

Invariants: all reads are bounds-checked against the event (or body) length
first, so the only exception out of a decoder is `ProtocolError`, whose
offset counts from the start of the bytes passed in.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass
from typing import Final, NoReturn

from protocol.binlog_gtid import (
    ANONYMOUS_GTID_LOG_EVENT,
    GTID_EVENT_TYPES,
    GTID_LOG_EVENT,
    GTID_TAGGED_LOG_EVENT,
    PREVIOUS_GTIDS_LOG_EVENT,
    GtidEvent,
    decode_gtid_body,
    decode_previous_gtids,
)
from protocol.errors import ProtocolError
from protocol.gtid import GtidSet

__all__ = [
    "ANONYMOUS_GTID_LOG_EVENT",
    "BAD_MAGIC",
    "BINLOG_MAGIC",
    "CHECKSUM_CRC32",
    "CHECKSUM_LEN",
    "CHECKSUM_OFF",
    "COMMON_HEADER_LEN",
    "CRC_FAILED",
    "EVENT_TOO_SMALL",
    "EVENT_TRUNCATED",
    "EVENT_TYPE_NAMES",
    "FORMAT_DESCRIPTION_EVENT",
    "GTID_EVENT_TYPES",
    "GTID_LOG_EVENT",
    "GTID_TAGGED_LOG_EVENT",
    "HEARTBEAT_LOG_EVENT",
    "HEARTBEAT_LOG_EVENT_V2",
    "PREVIOUS_GTIDS_LOG_EVENT",
    "ROTATE_EVENT",
    "STOP_EVENT",
    "DecodedEvent",
    "EventHeader",
    "FormatDescription",
    "GtidEvent",
    "check_magic",
    "checksum_matches",
    "decode_body",
    "decode_event",
    "decode_event_header",
    "decode_format_description",
    "decode_gtid_body",
    "decode_previous_gtids",
    "event_crc",
    "server_version_tuple",
]

BINLOG_MAGIC: Final = b"\xfebin"
COMMON_HEADER_LEN: Final = 19
CHECKSUM_LEN: Final = 4

STOP_EVENT: Final = 3
ROTATE_EVENT: Final = 4
FORMAT_DESCRIPTION_EVENT: Final = 15
XID_EVENT: Final = 16
HEARTBEAT_LOG_EVENT: Final = 27
TRANSACTION_PAYLOAD_EVENT: Final = 40
HEARTBEAT_LOG_EVENT_V2: Final = 41

CHECKSUM_OFF: Final = 0
CHECKSUM_CRC32: Final = 1

EVENT_TYPE_NAMES: Final = {
    1: "Start_v3",
    2: "Query",
    3: "Stop",
    4: "Rotate",
    5: "Intvar",
    7: "Slave",
    9: "Append_block",
    11: "Delete_file",
    13: "Rand",
    14: "User_var",
    15: "Format_desc",
    16: "Xid",
    17: "Begin_load_query",
    18: "Execute_load_query",
    19: "Table_map",
    23: "Write_rows_v1",
    24: "Update_rows_v1",
    25: "Delete_rows_v1",
    26: "Incident",
    27: "Heartbeat",
    28: "Ignorable",
    29: "Rows_query",
    30: "Write_rows",
    31: "Update_rows",
    32: "Delete_rows",
    33: "Gtid",
    34: "Anonymous_Gtid",
    35: "Previous_gtids",
    36: "Transaction_context",
    37: "View_change",
    38: "XA_prepare",
    39: "Update_rows_partial",
    40: "Transaction_payload",
    41: "Heartbeat_v2",
    42: "Gtid_tagged_log_event",
}

# MySQL's own wording (binlog_event.h / log_event.cc) where one exists.
EVENT_TOO_SMALL: Final = "Event too small"
EVENT_TRUNCATED: Final = "Event truncated"
BAD_MAGIC: Final = "File is not a binary log file"
CRC_FAILED: Final = "Event crc check failed"
INVALID_FDE: Final = "Invalid Format_description log event"

_HEADER = struct.Struct("<IBIIIH")
_U32 = struct.Struct("<I")
_BINLOG_IN_USE_F: Final = 0x1
_FDE_SERVER_VERSION_LEN: Final = 50
_FDE_FIXED_LEN: Final = 2 + _FDE_SERVER_VERSION_LEN + 4 + 1  # up to the post-header lengths
_CHECKSUM_VERSION: Final = (5, 6, 1)  # first server version writing the algorithm byte
_VERSION_PREFIX = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})")


def _fail(reason: str, offset: int | None) -> NoReturn:
    raise ProtocolError(reason, offset)


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The 19-byte v4 common header of every event.

    Attributes:
        timestamp: seconds since the epoch when the statement started.
        event_type: the type code (see `EVENT_TYPE_NAMES`).
        server_id: server that originated the event.
        event_size: whole event length, header and checksum included.
        next_position: position of the next event in the log writer's file
            (0 in events a relay log copied from an artificial source).
        flags: LOG_EVENT_*_F flags.
    """

    timestamp: int
    event_type: int
    server_id: int
    event_size: int
    next_position: int
    flags: int

    @property
    def event_type_name(self) -> str:
        return EVENT_TYPE_NAMES.get(self.event_type, f"Unknown({self.event_type})")


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """FORMAT_DESCRIPTION_EVENT: what the rest of the log looks like.

    Attributes:
        binlog_version: 4 for every server since 5.0.
        server_version: the writer's version string ("8.0.40", "5.7.21-log").
        create_timestamp: seconds since the epoch, 0 unless the log was opened at startup.
        header_length: common header length (19).
        post_header_lengths: per event type (index type - 1).
        checksum_alg: 0 off, 1 CRC32; None for servers older than 5.6.1,
            which never wrote checksums.
    """

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int | None


@dataclass(frozen=True, slots=True)
class DecodedEvent:
    """One event decoded whole.

    Attributes:
        header: the common header (None when only a body was decoded).
        checksum_ok: True when a CRC32 was present and matched; None when
            the event carries no checksum.
        body: the decoded body for the types read here, else None.
    """

    header: EventHeader | None
    checksum_ok: bool | None
    body: GtidEvent | FormatDescription | GtidSet | None


def check_magic(data: bytes | bytearray | memoryview) -> None:
    """Check the 4-byte magic that opens every binary and relay log.

    Raises:
        ProtocolError: fewer than 4 bytes or a different magic.
    """
    if len(data) < len(BINLOG_MAGIC):
        _fail(BAD_MAGIC, len(data))
    if bytes(data[:4]) != BINLOG_MAGIC:
        _fail(BAD_MAGIC, 0)


def decode_event_header(data: bytes | bytearray | memoryview, offset: int = 0) -> EventHeader:
    """Decode the common header at ``offset``.

    Raises:
        ProtocolError: fewer than 19 bytes, or an event_size below 19.
    """
    if len(data) - offset < COMMON_HEADER_LEN:
        _fail(EVENT_TOO_SMALL, len(data))
    header = EventHeader(*_HEADER.unpack_from(data, offset))
    if header.event_size < COMMON_HEADER_LEN:
        _fail(f"{EVENT_TOO_SMALL}: event_size {header.event_size}", offset + 9)
    return header


def checksum_matches(event: bytes | bytearray | memoryview) -> bool:
    """True when the last 4 bytes are the CRC32 of the rest of the event.

    A FORMAT_DESCRIPTION_EVENT is summed with LOG_EVENT_BINLOG_IN_USE_F
    cleared: the server clears that flag in place when it closes the log,
    without rewriting the checksum.
    """
    if len(event) < COMMON_HEADER_LEN + CHECKSUM_LEN:
        return False
    end = len(event) - CHECKSUM_LEN
    return event_crc(event) == int(_U32.unpack_from(event, end)[0])


def event_crc(event: bytes | bytearray | memoryview) -> int:
    """CRC32 of an event without its last 4 bytes, as MySQL computes it."""
    end = len(event) - CHECKSUM_LEN
    if event[4] == FORMAT_DESCRIPTION_EVENT and event[17] & _BINLOG_IN_USE_F:
        crc = zlib.crc32(event[:17])
        crc = zlib.crc32(bytes((event[17] & ~_BINLOG_IN_USE_F,)), crc)
        return zlib.crc32(event[18:end], crc)
    return zlib.crc32(event[:end])


def server_version_tuple(version: str) -> tuple[int, int, int]:
    """The leading ``x.y.z`` of a server version string, (0, 0, 0) if none."""
    m = _VERSION_PREFIX.match(version)
    return (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)


def decode_format_description(body: bytes | bytearray | memoryview) -> FormatDescription:
    """Decode a FORMAT_DESCRIPTION_EVENT body (everything after the common header).

    For servers from 5.6.1 on, the body ends with the checksum algorithm byte
    and a 4-byte checksum slot, present whatever the algorithm.

    Raises:
        ProtocolError: a body too short, a header length below 19 or an
            unknown checksum algorithm.
    """
    if len(body) < _FDE_FIXED_LEN:
        _fail(f"{INVALID_FDE}: body of {len(body)} bytes", len(body))
    binlog_version = int.from_bytes(body[0:2], "little")
    raw_version = bytes(body[2 : 2 + _FDE_SERVER_VERSION_LEN]).split(b"\0", 1)[0]
    server_version = raw_version.decode("ascii", "replace")
    create_timestamp = _U32.unpack_from(body, 52)[0]
    header_length = body[56]
    if header_length < COMMON_HEADER_LEN:
        _fail(f"{INVALID_FDE}: common header length {header_length}", 56)
    end = len(body)
    checksum_alg: int | None = None
    if server_version_tuple(server_version) >= _CHECKSUM_VERSION:
        if end < _FDE_FIXED_LEN + 1 + CHECKSUM_LEN:
            _fail(f"{INVALID_FDE}: no checksum algorithm", end)
        end -= 1 + CHECKSUM_LEN
        checksum_alg = body[end]
        if checksum_alg not in (CHECKSUM_OFF, CHECKSUM_CRC32):
            _fail(f"{INVALID_FDE}: unknown checksum algorithm {checksum_alg}", end)
    return FormatDescription(
        binlog_version=binlog_version,
        server_version=server_version,
        create_timestamp=create_timestamp,
        header_length=header_length,
        post_header_lengths=bytes(body[_FDE_FIXED_LEN:end]),
        checksum_alg=checksum_alg,
    )


def decode_body(
    event_type: int, body: bytes | bytearray | memoryview
) -> GtidEvent | FormatDescription | GtidSet | None:
    """Decode an event body of a type read here; None for any other type."""
    if event_type in GTID_EVENT_TYPES:
        return decode_gtid_body(event_type, body)
    if event_type == FORMAT_DESCRIPTION_EVENT:
        return decode_format_description(body)
    if event_type == PREVIOUS_GTIDS_LOG_EVENT:
        return decode_previous_gtids(body)
    return None


def decode_event(data: bytes | bytearray | memoryview, checksum: str = "auto") -> DecodedEvent:
    """Decode one whole event: common header, body and optional CRC32.

    Args:
        data: exactly one event.
        checksum: "crc32" (the last 4 bytes are a CRC32 and must match),
            "none" (no checksum), or "auto": a FORMAT_DESCRIPTION_EVENT says
            itself; for other events the last 4 bytes count as a checksum
            when they match.

    Returns:
        The decoded event.

    Raises:
        ProtocolError: wrong size, a checksum mismatch, or a malformed body.
    """
    header = decode_event_header(data)
    if header.event_size != len(data):
        reason = EVENT_TRUNCATED if header.event_size > len(data) else "Trailing bytes after event"
        _fail(f"{reason}: event_size {header.event_size}, {len(data)} bytes given", 9)
    if checksum not in ("auto", "crc32", "none"):
        _fail(f"unknown checksum mode {checksum!r}", None)
    end = len(data)
    checksum_ok: bool | None = None
    if header.event_type == FORMAT_DESCRIPTION_EVENT:
        # The body ends with the algorithm byte and a checksum slot whatever the mode.
        fde = _with_offset(header.event_type, memoryview(data)[COMMON_HEADER_LEN:])
        assert isinstance(fde, FormatDescription)
        if checksum == "crc32" or (checksum == "auto" and fde.checksum_alg == CHECKSUM_CRC32):
            if not checksum_matches(data):
                _fail(CRC_FAILED, end - CHECKSUM_LEN)
            checksum_ok = True
        return DecodedEvent(header, checksum_ok, fde)
    if checksum == "crc32" or (checksum == "auto" and checksum_matches(data)):
        if end - COMMON_HEADER_LEN < CHECKSUM_LEN:
            _fail(f"{EVENT_TOO_SMALL}: no room for a checksum", end)
        if not checksum_matches(data):
            _fail(CRC_FAILED, end - CHECKSUM_LEN)
        checksum_ok = True
        end -= CHECKSUM_LEN
    body = memoryview(data)[COMMON_HEADER_LEN:end]
    return DecodedEvent(header, checksum_ok, _with_offset(header.event_type, body))


def _with_offset(
    event_type: int, body: memoryview
) -> GtidEvent | FormatDescription | GtidSet | None:
    """Decode a body; error offsets become offsets in the whole event."""
    try:
        return decode_body(event_type, body)
    except ProtocolError as exc:
        offset = None if exc.offset is None else exc.offset + COMMON_HEADER_LEN
        raise ProtocolError(exc.reason, offset) from None
