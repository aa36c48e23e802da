"""MySQL Group Replication Pipeline_stats_member_message (cargo type 6): fields and encoder.

Wire format (PROTOCOL.md sections 2-6): a 16-byte fixed header
`01000000 1000 1000000000000000 0600` followed by items, each a u16 type, a
u64 length and the value, all little-endian. Counters are signed two's
complement; item 11 is a raw byte, item 12 an ASCII '1'/'0'.

Strategy: `encode_pipeline_stats` writes exactly what MySQL writes: all items
1..13 in order (item 13 only when `sent_timestamp` is not None), `message_len`
16. What MySQL accepts is the other half, `protocol.pipeline_stats_decode`;
this module holds what the two share: the message's fields, the item codes
and the encoder's layouts.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from protocol.errors import ProtocolError

FLOW_CONTROL_DISABLED = 0
FLOW_CONTROL_QUOTA = 1

PLUGIN_MESSAGE_VERSION: Final = 1
FIXED_HEADER_SIZE: Final = 16
ITEM_HEADER_SIZE: Final = 10
CARGO_TYPE_PIPELINE_STATS: Final = 6
# CT_MAX: the first invalid cargo type; the hardened decoder accepts 1..CT_MAX-1.
CARGO_TYPE_MAX: Final = 15

# Payload item codes (pipeline_stats.h).
ITEM_TRANSACTIONS_WAITING_CERTIFICATION: Final = 1
ITEM_TRANSACTIONS_WAITING_APPLY: Final = 2
ITEM_TRANSACTIONS_CERTIFIED: Final = 3
ITEM_TRANSACTIONS_APPLIED: Final = 4
ITEM_TRANSACTIONS_LOCAL: Final = 5
ITEM_TRANSACTIONS_NEGATIVE_CERTIFIED: Final = 6
ITEM_TRANSACTIONS_ROWS_VALIDATING: Final = 7
ITEM_TRANSACTIONS_COMMITTED_ALL_MEMBERS: Final = 8
ITEM_TRANSACTION_LAST_CONFLICT_FREE: Final = 9
ITEM_TRANSACTIONS_LOCAL_ROLLBACK: Final = 10
ITEM_FLOW_CONTROL_MODE: Final = 11
ITEM_TRANSACTION_GTIDS_PRESENT: Final = 12
ITEM_SENT_TIMESTAMP: Final = 13

GTIDS_PRESENT_TRUE: Final = 0x31  # ASCII '1'; every other byte decodes as false
_GTIDS_PRESENT_FALSE: Final = 0x30  # ASCII '0', what the encoder writes for false


@dataclass(frozen=True, slots=True)
class PipelineStats:
    """The twelve message fields (vector names) plus item 13, the send timestamp."""

    transactions_waiting_certification: int = 0
    transactions_waiting_apply: int = 0
    transactions_certified: int = 0
    transactions_applied: int = 0
    transactions_local: int = 0
    transactions_negative_certified: int = 0
    transactions_rows_validating: int = 0
    transaction_gtids_present: bool = False
    transactions_committed_all_members: bytes = b""
    transaction_last_conflict_free: bytes = b""
    transactions_local_rollback: int = 0
    flow_control_mode: int = FLOW_CONTROL_QUOTA
    sent_timestamp: int | None = None


ITEM_HEADER: Final = struct.Struct("<HQ")
"""An item's header: type (u16), value length (u64)."""
ITEMS_10_TO_12: Final = struct.Struct("<HQqHQBHQB")
"""Items 10, 11, 12 as the encoder writes them: (type, length, value) each."""

# Encoder: everything up to item 8's header, item 9's header, items 10-12, item 13.
_ENC_HEAD = struct.Struct("<IHQH" + "HQi" * 2 + "HQq" * 5 + "HQ")
_ENC_TIMESTAMP = struct.Struct("<HQQ")


def as_ps_unsigned(value: int) -> int:
    """Map a signed wire value to what performance_schema shows for it.

    MySQL hands every numeric column to P_S as an unsigned 64-bit integer, so a
    negative int32/int64 shows as 2^64 - |value| (PROTOCOL.md section 8).

    Args:
        value: a counter as decoded (signed, fits in 64 bits).

    Returns:
        The value modulo 2^64, in 0 .. 2^64-1.
    """
    return value & 0xFFFF_FFFF_FFFF_FFFF


def encode_pipeline_stats(stats: PipelineStats) -> bytes:
    """Encode a stats message exactly as MySQL's encoder does (PROTOCOL.md section 5).

    Items 1..12 always, in order, both strings even when empty; item 13 only
    when `stats.sent_timestamp` is not None (None mimics an 8.0-series member).

    Args:
        stats: the message fields.

    Returns:
        The plugin message: 16-byte header (message_len 16, as MySQL writes it)
        plus the items; 212 + len(strings) bytes with item 13, 18 fewer without.

    Raises:
        ProtocolError: a field does not fit its wire type (int32 items 1-2, int64
            counters, a byte for the flow-control mode, uint64 timestamp) or a
            string field is not bytes.
    """
    committed = stats.transactions_committed_all_members
    last_free = stats.transaction_last_conflict_free
    if not isinstance(committed, bytes) or not isinstance(last_free, bytes):
        raise ProtocolError("GTID fields must be bytes")
    try:
        head = _ENC_HEAD.pack(
            PLUGIN_MESSAGE_VERSION,
            FIXED_HEADER_SIZE,
            FIXED_HEADER_SIZE,  # message_len: MySQL never updates it (trap 1)
            CARGO_TYPE_PIPELINE_STATS,
            ITEM_TRANSACTIONS_WAITING_CERTIFICATION,
            4,
            stats.transactions_waiting_certification,
            ITEM_TRANSACTIONS_WAITING_APPLY,
            4,
            stats.transactions_waiting_apply,
            ITEM_TRANSACTIONS_CERTIFIED,
            8,
            stats.transactions_certified,
            ITEM_TRANSACTIONS_APPLIED,
            8,
            stats.transactions_applied,
            ITEM_TRANSACTIONS_LOCAL,
            8,
            stats.transactions_local,
            ITEM_TRANSACTIONS_NEGATIVE_CERTIFIED,
            8,
            stats.transactions_negative_certified,
            ITEM_TRANSACTIONS_ROWS_VALIDATING,
            8,
            stats.transactions_rows_validating,
            ITEM_TRANSACTIONS_COMMITTED_ALL_MEMBERS,
            len(committed),
        )
        tail = ITEMS_10_TO_12.pack(
            ITEM_TRANSACTIONS_LOCAL_ROLLBACK,
            8,
            stats.transactions_local_rollback,
            ITEM_FLOW_CONTROL_MODE,
            1,
            stats.flow_control_mode,
            ITEM_TRANSACTION_GTIDS_PRESENT,
            1,
            GTIDS_PRESENT_TRUE if stats.transaction_gtids_present else _GTIDS_PRESENT_FALSE,
        )
        parts = [
            head,
            committed,
            ITEM_HEADER.pack(ITEM_TRANSACTION_LAST_CONFLICT_FREE, len(last_free)),
            last_free,
            tail,
        ]
        if stats.sent_timestamp is not None:
            parts.append(_ENC_TIMESTAMP.pack(ITEM_SENT_TIMESTAMP, 8, stats.sent_timestamp))
    except struct.error as exc:
        raise ProtocolError(f"field out of range for its wire type: {exc}") from None
    return b"".join(parts)
