"""Decoding MySQL's Pipeline_stats_member_message (cargo type 6) as MySQL does.

Strategy: `decode_pipeline_stats` implements the bounds-checked decoder of
PROTOCOL.md section 6.1 (header check, five positional items, then a loop over
optional items) plus MySQL's separate timestamp scanner for item 13. Nearly
every message has the encoder's layout (`protocol.pipeline_stats`), so two
fast paths come first: the 212-byte message with empty strings (sent every
second) is checked -- cargo type, every item type and length -- with one
precompiled `struct.Struct` and read with a second; the same layout with
strings of any length (sent every 30 s, and by 8.0 members without item 13)
takes four unpacks. Anything else goes through the general loop. All paths
return identical results (the tests and the fuzzer compare them with the
general decoder).

Invariants:
* Only `ProtocolError` leaves the decoder. Every read is preceded by a check
  that the bytes exist, and a length field is compared with the bytes left
  before anything is sliced, so a length of 2^64-1 never allocates.
* Error reasons are MySQL's (`Malformed fixed header`, `Malformed payload
  item`, `Malformed payload length`); the offset is where the failing element
  starts: 0 for a short buffer, 14 for a bad cargo type, else the first byte
  of the item header being decoded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from protocol.errors import ProtocolError
from protocol.frozen import builder
from protocol.pipeline_stats import (
    CARGO_TYPE_MAX,
    CARGO_TYPE_PIPELINE_STATS,
    FIXED_HEADER_SIZE,
    FLOW_CONTROL_QUOTA,
    GTIDS_PRESENT_TRUE,
    ITEM_FLOW_CONTROL_MODE,
    ITEM_HEADER,
    ITEM_HEADER_SIZE,
    ITEM_SENT_TIMESTAMP,
    ITEM_TRANSACTION_LAST_CONFLICT_FREE,
    ITEM_TRANSACTIONS_APPLIED,
    ITEM_TRANSACTIONS_CERTIFIED,
    ITEM_TRANSACTIONS_COMMITTED_ALL_MEMBERS,
    ITEM_TRANSACTIONS_LOCAL,
    ITEM_TRANSACTIONS_NEGATIVE_CERTIFIED,
    ITEM_TRANSACTIONS_ROWS_VALIDATING,
    ITEM_TRANSACTIONS_WAITING_APPLY,
    ITEM_TRANSACTIONS_WAITING_CERTIFICATION,
    ITEMS_10_TO_12,
    PipelineStats,
)

MALFORMED_FIXED_HEADER: Final = "Malformed fixed header"
MALFORMED_PAYLOAD_ITEM: Final = "Malformed payload item"
MALFORMED_PAYLOAD_LENGTH: Final = "Malformed payload length"


@dataclass(frozen=True, slots=True)
class FixedHeader:
    """The four fields of the 16-byte plugin message header, as read (never validated
    by MySQL except the cargo type)."""

    version: int
    fixed_header_len: int
    message_len: int
    cargo_type: int


BytesLike = bytes | bytearray | memoryview

_HEADER = struct.Struct("<IHQH")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")

# Fast paths (see the module docstring). Tier 1: the exact 212-byte message
# with both strings empty. _SHAPE_13 reads the cargo type and every item
# type/length, _VALUES_13 every value.
_SHAPE_13 = struct.Struct(
    "<14xH" + "HQ4x" * 2 + "HQ8x" * 5 + "HQ" * 2 + "HQ8x" + "HQx" * 2 + "HQ8x"
)
_VALUES_13 = struct.Struct("<16x" + "10xi" * 2 + "10xq" * 5 + "20x" + "10xq" + "10xB" * 2 + "10xQ")
# (type, length) of items 1..13 as the encoder writes them with empty strings.
_CANONICAL_ITEMS: Final = (
    (1, 4), (2, 4), (3, 8), (4, 8), (5, 8), (6, 8), (7, 8),
    (8, 0), (9, 0), (10, 8), (11, 1), (12, 1), (13, 8),
)  # fmt: skip
_CANONICAL_SHAPE_13: Final = (
    CARGO_TYPE_PIPELINE_STATS,
    *(number for item in _CANONICAL_ITEMS for number in item),
)
_CANONICAL_SIZE_13: Final = _SHAPE_13.size  # 212

# Tier 2: the encoder's layout with strings of any length, with or without item
# 13. _HEAD: cargo type, then (type, length, value) of items 1..7, then item 8's
# type and length: 24 numbers, 144 bytes. Then item 9's header, then a tail.
_HEAD = struct.Struct("<14xH" + "HQi" * 2 + "HQq" * 5 + "HQ")
_HEAD_SHAPE: Final = (1, 2, 3, 4, 5, 6, 7, 8, 4, 4, 8, 8, 8, 8, 8, CARGO_TYPE_PIPELINE_STATS)
_TAIL_12 = ITEMS_10_TO_12  # items 10, 11, 12: (type, length, value) each
_TAIL_13 = struct.Struct("<HQqHQBHQBHQQ")  # items 10..13
_TAIL_12_SHAPE: Final = (10, 11, 12, 8, 1, 1)
_TAIL_13_SHAPE: Final = (10, 11, 12, 13, 8, 1, 1, 8)

_POSITIONAL: Final = (
    (ITEM_TRANSACTIONS_WAITING_CERTIFICATION, _I32),
    (ITEM_TRANSACTIONS_WAITING_APPLY, _I32),
    (ITEM_TRANSACTIONS_CERTIFIED, _I64),
    (ITEM_TRANSACTIONS_APPLIED, _I64),
    (ITEM_TRANSACTIONS_LOCAL, _I64),
)

# Building the frozen dataclass through its generated __init__ costs about as
# much as the whole rest of the decode; decode is the hot path of every
# receiver, so the instance is built as protocol.frozen does (the same object).
_build = builder(PipelineStats)


def decode_fixed_header(data: BytesLike) -> FixedHeader:
    """Read the 16-byte fixed header, with the hardened decoder's checks.

    Args:
        data: a plugin message.

    Returns:
        The four header fields as found on the wire.

    Raises:
        ProtocolError: "Malformed fixed header" when fewer than 16 bytes (offset 0)
            or the cargo type is not 1..14 (offset 14).
    """
    if len(data) < FIXED_HEADER_SIZE:
        raise ProtocolError(MALFORMED_FIXED_HEADER, 0)
    header = FixedHeader(*_HEADER.unpack_from(data))
    if not 0 < header.cargo_type < CARGO_TYPE_MAX:
        raise ProtocolError(MALFORMED_FIXED_HEADER, 14)
    return header


def decode_pipeline_stats(data: BytesLike) -> PipelineStats:
    """Decode a stats message like MySQL's bounds-checked decoder (PROTOCOL.md section 6.1).

    Fields never seen keep their defaults (counters 0, strings empty, flag
    false, mode QUOTA). `sent_timestamp` is what MySQL's timestamp scanner
    returns (the first item 13 if it is exactly 8 bytes), with 0 reported as
    None.

    Args:
        data: the plugin message (bytes, bytearray or memoryview).

    Returns:
        The decoded fields.

    Raises:
        ProtocolError: with MySQL's reason ("Malformed fixed header", "Malformed
            payload item" or "Malformed payload length") and the offset of the
            element that failed. MySQL drops such a message entirely.
    """
    if type(data) is not bytes:
        data = bytes(data)
    if len(data) == _CANONICAL_SIZE_13 and _SHAPE_13.unpack_from(data) == _CANONICAL_SHAPE_13:
        v = _VALUES_13.unpack_from(data)
        return _build(
            v[0],
            v[1],
            v[2],
            v[3],
            v[4],
            v[5],
            v[6],
            v[9] == GTIDS_PRESENT_TRUE,
            b"",
            b"",
            v[7],
            v[8],
            v[10] or None,
        )
    return _decode_encoder_layout(data) or decode_pipeline_stats_general(data)


def _decode_encoder_layout(data: bytes) -> PipelineStats | None:
    """Tier-2 fast path: items 1..12 (or 1..13) in the encoder's order and sizes.

    Returns None for anything else, including trailing bytes; the general
    decoder then gives the answer (or the error). For a message this accepts,
    the general decoder would return the same fields, and the timestamp
    scanner would find the final item 13.
    """
    size = len(data)
    if size < _HEAD.size + ITEM_HEADER_SIZE + _TAIL_12.size:
        return None
    head = _HEAD.unpack_from(data)
    # head[1::3] are the item types, head[2::3] the lengths, head[3::3] the values.
    if head[1:24:3] + head[2:22:3] + head[:1] != _HEAD_SHAPE:
        return None
    committed_end = _HEAD.size + head[23]
    if size - committed_end < ITEM_HEADER_SIZE + _TAIL_12.size:
        return None
    item_type, length = ITEM_HEADER.unpack_from(data, committed_end)
    tail_start = committed_end + ITEM_HEADER_SIZE + length
    rest = size - tail_start
    if item_type != ITEM_TRANSACTION_LAST_CONFLICT_FREE:
        return None
    if rest == _TAIL_13.size:
        tail = _TAIL_13.unpack_from(data, tail_start)
        if tail[0:12:3] + tail[1:12:3] != _TAIL_13_SHAPE:
            return None
        sent_timestamp = tail[11] or None
    elif rest == _TAIL_12.size:
        tail = _TAIL_12.unpack_from(data, tail_start)
        if tail[0:9:3] + tail[1:9:3] != _TAIL_12_SHAPE:
            return None
        sent_timestamp = None
    else:
        return None
    return _build(
        head[3],
        head[6],
        head[9],
        head[12],
        head[15],
        head[18],
        head[21],
        tail[8] == GTIDS_PRESENT_TRUE,
        data[_HEAD.size : committed_end],
        data[committed_end + ITEM_HEADER_SIZE : tail_start],
        tail[2],
        tail[5],
        sent_timestamp,
    )


def decode_pipeline_stats_general(data: BytesLike) -> PipelineStats:
    """The general decoder behind `decode_pipeline_stats`, without the fast path.

    Public so that tests can check the fast path against it; same contract as
    `decode_pipeline_stats`.

    Args:
        data: the plugin message.

    Returns:
        The decoded fields.

    Raises:
        ProtocolError: as `decode_pipeline_stats`.
    """
    if type(data) is not bytes:
        data = bytes(data)
    size = len(data)
    if size < FIXED_HEADER_SIZE:
        raise ProtocolError(MALFORMED_FIXED_HEADER, 0)
    cargo_type = data[14] | data[15] << 8
    if not 0 < cargo_type < CARGO_TYPE_MAX:
        raise ProtocolError(MALFORMED_FIXED_HEADER, 14)

    item_header = ITEM_HEADER.unpack_from
    pos = FIXED_HEADER_SIZE
    positional: list[int] = []
    for code, value_struct in _POSITIONAL:
        width = value_struct.size
        if size - pos < ITEM_HEADER_SIZE + width:
            raise ProtocolError(MALFORMED_PAYLOAD_ITEM, pos)
        item_type, length = item_header(data, pos)
        if length != width or item_type != code:
            raise ProtocolError(MALFORMED_PAYLOAD_ITEM, pos)
        positional.append(value_struct.unpack_from(data, pos + ITEM_HEADER_SIZE)[0])
        pos += ITEM_HEADER_SIZE + width

    negative_certified = 0
    rows_validating = 0
    local_rollback = 0
    committed = b""
    last_conflict_free = b""
    flow_control_mode = FLOW_CONTROL_QUOTA
    gtids_present = False
    # Fewer than ITEM_HEADER_SIZE leftover bytes are ignored, as MySQL does.
    while size - pos >= ITEM_HEADER_SIZE:
        item_type, length = item_header(data, pos)
        start = pos + ITEM_HEADER_SIZE
        if length > size - start:
            raise ProtocolError(MALFORMED_PAYLOAD_LENGTH, pos)
        if item_type in (6, 7, 10):
            if length != 8:
                raise ProtocolError(MALFORMED_PAYLOAD_ITEM, pos)
            value = _I64.unpack_from(data, start)[0]
            if item_type == ITEM_TRANSACTIONS_NEGATIVE_CERTIFIED:
                negative_certified = value
            elif item_type == ITEM_TRANSACTIONS_ROWS_VALIDATING:
                rows_validating = value
            else:
                local_rollback = value
        elif item_type in (11, 12):
            if length != 1:
                raise ProtocolError(MALFORMED_PAYLOAD_ITEM, pos)
            if item_type == ITEM_FLOW_CONTROL_MODE:
                flow_control_mode = data[start]
            else:
                gtids_present = data[start] == GTIDS_PRESENT_TRUE
        elif item_type == ITEM_TRANSACTIONS_COMMITTED_ALL_MEMBERS:
            committed = data[start : start + length]
        elif item_type == ITEM_TRANSACTION_LAST_CONFLICT_FREE:
            last_conflict_free = data[start : start + length]
        # Any other type (0, 13, 14+) is skipped by its length.
        pos = start + length

    return _build(
        positional[0],
        positional[1],
        positional[2],
        positional[3],
        positional[4],
        negative_certified,
        rows_validating,
        gtids_present,
        committed,
        last_conflict_free,
        local_rollback,
        flow_control_mode,
        scan_sent_timestamp(data) or None,
    )


def scan_sent_timestamp(data: BytesLike) -> int:
    """MySQL's separate timestamp scanner (Plugin_gcs_message::get_sent_timestamp).

    Walks the items from byte 16 by their declared lengths and returns the
    value of the first item 13. Independent of the decoder: it does not check
    the header or the positional items.

    Args:
        data: a plugin message.

    Returns:
        The first item 13's value (uint64), or 0 for a buffer shorter than the
        header, a length running past the end before item 13 is found, no item
        13, or a first item 13 whose length is not 8.
    """
    size = len(data)
    if size < FIXED_HEADER_SIZE:
        return 0
    pos = FIXED_HEADER_SIZE
    while size - pos >= ITEM_HEADER_SIZE:
        item_type, length = ITEM_HEADER.unpack_from(data, pos)
        pos += ITEM_HEADER_SIZE
        if length > size - pos:
            return 0
        if item_type == ITEM_SENT_TIMESTAMP:
            if length != 8:
                return 0
            result: int = _U64.unpack_from(data, pos)[0]
            return result
        pos += length
    return 0
