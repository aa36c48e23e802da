"""Helpers shared by the protocol tests: golden vectors -> expected values.

Everything here reads the vectors or follows PROTOCOL.md by hand; nothing
calls the code under test.
"""

from __future__ import annotations

from typing import Any

from protocol import PipelineStats

STRING_FIELDS = ("transactions_committed_all_members", "transaction_last_conflict_free")

FIELDS = (
    "transactions_waiting_certification",
    "transactions_waiting_apply",
    "transactions_certified",
    "transactions_applied",
    "transactions_local",
    "transactions_negative_certified",
    "transactions_rows_validating",
    "transaction_gtids_present",
    "transactions_committed_all_members",
    "transaction_last_conflict_free",
    "transactions_local_rollback",
    "flow_control_mode",
)

# Item code -> (field, value size on the wire or None for a string); PROTOCOL.md section 4.
ITEMS: dict[int, tuple[str, int | None]] = {
    1: ("transactions_waiting_certification", 4),
    2: ("transactions_waiting_apply", 4),
    3: ("transactions_certified", 8),
    4: ("transactions_applied", 8),
    5: ("transactions_local", 8),
    6: ("transactions_negative_certified", 8),
    7: ("transactions_rows_validating", 8),
    8: ("transactions_committed_all_members", None),
    9: ("transaction_last_conflict_free", None),
    10: ("transactions_local_rollback", 8),
    11: ("flow_control_mode", 1),
    12: ("transaction_gtids_present", 1),
    13: ("sent_timestamp", 8),
}

DEFAULTS: dict[str, Any] = {
    "transactions_waiting_certification": 0,
    "transactions_waiting_apply": 0,
    "transactions_certified": 0,
    "transactions_applied": 0,
    "transactions_local": 0,
    "transactions_negative_certified": 0,
    "transactions_rows_validating": 0,
    "transaction_gtids_present": False,
    "transactions_committed_all_members": b"",
    "transaction_last_conflict_free": b"",
    "transactions_local_rollback": 0,
    "flow_control_mode": 1,
    "sent_timestamp": None,
}


def field_value(obj: dict[str, Any], name: str) -> Any:
    """A field of a vector object; strings become bytes (`_hex` keys hold non-UTF-8 ones)."""
    if name in STRING_FIELDS:
        if name in obj:
            return str(obj[name]).encode("utf-8")
        return bytes.fromhex(obj[name + "_hex"])
    return obj[name]


def fields_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The twelve message fields of a vector object, strings as bytes."""
    return {name: field_value(obj, name) for name in FIELDS}


def stats_of(obj: dict[str, Any], sent_timestamp: int | None) -> PipelineStats:
    return PipelineStats(**fields_of(obj), sent_timestamp=sent_timestamp)


def timestamp_of(value: int) -> int | None:
    """Vectors write 0 for "no timestamp"; the decoder reports None."""
    return value or None


def item_layout(fields: dict[str, Any], with_timestamp: bool) -> list[tuple[int, int, int]]:
    """(item code, first byte, end byte) of every item the encoder writes, by hand.

    Item header = 2 + 8 bytes; values 4/8/1 bytes or the string's length.
    """
    layout = []
    pos = 16
    codes = range(1, 14 if with_timestamp else 13)
    for code in codes:
        name, size = ITEMS[code]
        value_size = len(fields[name]) if size is None else size
        layout.append((code, pos, pos + 10 + value_size))
        pos += 10 + value_size
    return layout
