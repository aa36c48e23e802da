"""GTID events and Previous_gtids_log_event bodies of MySQL binary logs.

Strategy: `Gtid_log_event` / `Anonymous_gtid_log_event` bodies are read in
all their historical lengths: 5.6 (flags, SID, GNO), 5.7 (+ logical clock),
8.0.1 (+ commit timestamps), 8.0.2 (+ transaction_length), 8.0.14 (+ server
versions), 8.0.27 (+ commit group ticket). A body that stops at one of those
boundaries is complete; one that stops inside a field is truncated.
`Gtid_tagged_log_event` (8.4+) uses MySQL's self-describing serialization
format: a message header, then (field id, value) pairs in increasing id
order with variable-length integers; an unknown ignorable field ends the read.

Invariants: every read is bounds-checked first, so the only exception out of
a decoder is `ProtocolError`, its offset counted from the start of the body;
counts read from the input are checked against the bytes present before any
loop runs on them.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from protocol.errors import ProtocolError
from protocol.gtid import GNO_MAX, GtidSet

GTID_LOG_EVENT: Final = 33
ANONYMOUS_GTID_LOG_EVENT: Final = 34
PREVIOUS_GTIDS_LOG_EVENT: Final = 35
GTID_TAGGED_LOG_EVENT: Final = 42
GTID_EVENT_TYPES: Final = frozenset(
    {GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT, GTID_TAGGED_LOG_EVENT}
)

INVALID_GTID: Final = "Invalid Gtid_log_event"
INVALID_GNO: Final = "Invalid GNO"
INVALID_PREVIOUS_GTIDS: Final = "Invalid Previous_gtids_log_event"

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_PREFIX_56 = struct.Struct("<B16sq")  # flags, SID, GNO (signed, as MySQL reads it)
_PREFIX_57 = struct.Struct(
    "<B16sqBqq"
)  # + logical clock type code, last_committed, sequence_number
_TS_FLAG: Final = 1 << 55  # top bit of the 7-byte immediate timestamp
_VERSION_FLAG: Final = 1 << 31  # top bit of the 4-byte immediate server version
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT64_MAX: Final = (1 << 64) - 1
_UINT32_MAX: Final = (1 << 32) - 1
_LOGICAL_TIMESTAMP_TYPECODE: Final = 2
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")


def _fail(reason: str, offset: int | None) -> NoReturn:
    raise ProtocolError(reason, offset)


@dataclass(frozen=True, slots=True)
class GtidEvent:
    """GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT or GTID_TAGGED_LOG_EVENT.

    Fields the writer's version did not have are None.

    Attributes:
        event_type: 33, 34 or 42.
        gtid_flags: bit 0: the transaction may have changes logged with SBR.
        sid: source UUID, lowercase dashed (all zeros for anonymous).
        gno: 1 .. GNO_MAX (0 for anonymous).
        tag: lowercase tag, "" when untagged.
        last_committed: logical clock (5.7+).
        sequence_number: logical clock (5.7+).
        immediate_commit_timestamp: µs since the epoch, UTC, on the log writer (8.0.1+).
        original_commit_timestamp: µs on the source that first committed it;
            0 when that source predates 8.0.1 (8.0.1+).
        transaction_length: bytes of the whole transaction, this event and
            checksums included (8.0.2+).
        immediate_server_version: e.g. 80045 (8.0.14+).
        original_server_version: 0 when the source predates 8.0.14 (8.0.14+).
        commit_group_ticket: Group Replication's binlog group ticket (8.0.27+), if written.
    """

    event_type: int
    gtid_flags: int
    sid: str
    gno: int
    tag: str = ""
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    @property
    def anonymous(self) -> bool:
        return self.event_type == ANONYMOUS_GTID_LOG_EVENT

    @property
    def gtid(self) -> str:
        """``uuid:gno``, ``uuid:tag:gno`` or ``ANONYMOUS`` as mysqlbinlog prints it."""
        if self.anonymous:
            return "ANONYMOUS"
        if self.tag:
            return f"{self.sid}:{self.tag}:{self.gno}"
        return f"{self.sid}:{self.gno}"


def _uuid_text(raw: bytes | bytearray | memoryview) -> str:
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _check_gno(event_type: int, gno: int, offset: int) -> None:
    if event_type == ANONYMOUS_GTID_LOG_EVENT:
        if gno != 0:
            _fail(f"{INVALID_GNO}: anonymous GTID with GNO {gno}", offset)
    elif not 1 <= gno <= GNO_MAX:
        _fail(f"{INVALID_GNO}: {gno} outside 1..{GNO_MAX}", offset)


def _decode_classic_gtid(event_type: int, body: bytes | bytearray | memoryview) -> GtidEvent:
    body = bytes(body)  # under 100 bytes; slicing bytes is cheaper than a memoryview
    n = len(body)
    if n < 25:
        _fail(f"{INVALID_GTID}: body of {n} bytes, at least 25 expected", n)
    fields: dict[str, Any] = {}
    # 5.7+: logical clock. Like MySQL, a type code other than 2 ends the read.
    if n >= 42 and body[25] == _LOGICAL_TIMESTAMP_TYPECODE:
        flags, raw_sid, gno, _, last_committed, sequence_number = _PREFIX_57.unpack_from(body)
        fields["last_committed"] = last_committed
        fields["sequence_number"] = sequence_number
        _check_gno(event_type, gno, 17)
        _decode_gtid_tail(body, 42, fields)
    else:
        if 25 < n < 42 and body[25] == _LOGICAL_TIMESTAMP_TYPECODE:
            _fail(f"{INVALID_GTID}: logical clock truncated", n)
        flags, raw_sid, gno = _PREFIX_56.unpack_from(body)
        _check_gno(event_type, gno, 17)
    return GtidEvent(
        event_type=event_type, gtid_flags=flags, sid=_uuid_text(raw_sid), gno=gno, **fields
    )


def _decode_gtid_tail(
    body: bytes | bytearray | memoryview, pos: int, fields: dict[str, int]
) -> int:
    """8.0 additions after the logical clock; each group is optional, none may be cut."""
    n = len(body)
    if pos == n:
        return pos
    if n - pos < 7:
        _fail(f"{INVALID_GTID}: immediate_commit_timestamp truncated", n)
    immediate = int.from_bytes(body[pos : pos + 7], "little")
    pos += 7
    if immediate & _TS_FLAG:
        immediate &= ~_TS_FLAG
        if n - pos < 7:
            _fail(f"{INVALID_GTID}: original_commit_timestamp truncated", n)
        original = int.from_bytes(body[pos : pos + 7], "little")
        pos += 7
    else:
        original = immediate
    fields["immediate_commit_timestamp"] = immediate
    fields["original_commit_timestamp"] = original
    if pos == n:
        return pos
    fields["transaction_length"], pos = _packed_int(body, pos)
    if pos == n:
        return pos
    if n - pos < 4:
        _fail(f"{INVALID_GTID}: immediate_server_version truncated", n)
    version = _U32.unpack_from(body, pos)[0]
    pos += 4
    if version & _VERSION_FLAG:
        if n - pos < 4:
            _fail(f"{INVALID_GTID}: original_server_version truncated", n)
        fields["immediate_server_version"] = version & ~_VERSION_FLAG
        fields["original_server_version"] = _U32.unpack_from(body, pos)[0]
        pos += 4
    else:
        fields["immediate_server_version"] = fields["original_server_version"] = version
    if n - pos >= 8:
        fields["commit_group_ticket"] = _U64.unpack_from(body, pos)[0]
        pos += 8
    return pos


def _packed_int(body: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """net_field_length_ll: < 251 in one byte, else 252/253/254 + 2/3/8 bytes."""
    first = body[pos]
    width = {252: 2, 253: 3, 254: 8}.get(first, 0)
    if first < 251:
        return first, pos + 1
    if width == 0:
        _fail(f"{INVALID_GTID}: bad packed integer prefix {first}", pos)
    if len(body) - pos - 1 < width:
        _fail(f"{INVALID_GTID}: transaction_length truncated", len(body))
    return int.from_bytes(body[pos + 1 : pos + 1 + width], "little"), pos + 1 + width


# --- the serialization format of Gtid_tagged_log_event --------------------------------


def _varlen(body: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Unsigned variable-length integer: the count of trailing 1 bits of the
    first byte, plus one, is the byte count; 0xff means 8 more bytes follow."""
    if pos >= end:
        _fail(f"{INVALID_GTID}: integer truncated", pos)
    first = body[pos]
    if first == 0xFF:
        if end - pos < 9:
            _fail(f"{INVALID_GTID}: integer truncated", end)
        return _U64.unpack_from(body, pos + 1)[0], pos + 9
    size = 1
    while first & (1 << (size - 1)):
        size += 1
    if end - pos < size:
        _fail(f"{INVALID_GTID}: integer truncated", end)
    return int.from_bytes(body[pos : pos + size], "little") >> size, pos + size


def _varlen_signed(body: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    value, new_pos = _varlen(body, pos, end)
    return (value >> 1) ^ -(value & 1), new_pos  # zigzag


def _bounded(value: int, limit: int, name: str, pos: int) -> int:
    if value > limit:
        _fail(f"{INVALID_GTID}: {name} {value} out of range", pos)
    return value


_TAGGED_UNSIGNED: Final = {
    6: ("immediate_commit_timestamp", _UINT64_MAX),
    7: ("original_commit_timestamp", _UINT64_MAX),
    8: ("transaction_length", _UINT64_MAX),
    9: ("immediate_server_version", _UINT32_MAX),
    10: ("original_server_version", _UINT32_MAX),
    11: ("commit_group_ticket", _UINT64_MAX),
}
_TAGGED_SIGNED: Final = {2: "gno", 4: "last_committed", 5: "sequence_number"}
_TAGGED_REQUIRED: Final = (0, 1, 2, 4, 5, 6, 8, 9)


def _decode_tagged_gtid(body: bytes | bytearray | memoryview) -> GtidEvent:
    n = len(body)
    _version, pos = _varlen(body, 0, n)
    size_pos = pos
    size, pos = _varlen(body, pos, n)
    if size > n:
        _fail(f"{INVALID_GTID}: message of {size} bytes in a body of {n}", size_pos)
    end = size
    last_non_ignorable, pos = _varlen(body, pos, end)
    flags = 0
    sid_raw = bytearray()
    tag = ""
    values: dict[str, Any] = {}
    seen: set[int] = set()
    previous_id = -1
    while pos < end:
        id_pos = pos
        field_id, pos = _varlen(body, pos, end)
        if field_id <= previous_id:
            _fail(f"{INVALID_GTID}: field {field_id} out of order", id_pos)
        previous_id = field_id
        if field_id == 0:
            value, pos = _varlen(body, pos, end)
            flags = _bounded(value, 0xFF, "gtid_flags", id_pos)
        elif field_id == 1:
            for _ in range(16):
                value, pos = _varlen(body, pos, end)
                sid_raw.append(_bounded(value, 0xFF, "uuid byte", pos))
        elif field_id == 3:
            length, pos = _varlen(body, pos, end)
            if length > 32 or end - pos < length:
                _fail(f"{INVALID_GTID}: tag of {length} bytes", pos)
            raw_tag = bytes(body[pos : pos + length])
            tag = raw_tag.decode("ascii", "replace")
            if tag and not _TAG.fullmatch(tag):
                _fail(f"{INVALID_GTID}: invalid tag", pos)
            tag = tag.lower()
            pos += length
        elif field_id in _TAGGED_SIGNED:
            value, pos = _varlen_signed(body, pos, end)
            if not _INT64_MIN <= value <= _INT64_MAX:
                _fail(f"{INVALID_GTID}: {_TAGGED_SIGNED[field_id]} out of range", id_pos)
            values[_TAGGED_SIGNED[field_id]] = value
        elif field_id in _TAGGED_UNSIGNED:
            name, limit = _TAGGED_UNSIGNED[field_id]
            value, pos = _varlen(body, pos, end)
            values[name] = _bounded(value, limit, name, id_pos)
        elif field_id <= last_non_ignorable:
            _fail(f"{INVALID_GTID}: unknown non-ignorable field {field_id}", id_pos)
        else:
            break  # an ignorable field of a newer writer: its size is unknown, stop here
        seen.add(field_id)
    missing = [i for i in _TAGGED_REQUIRED if i not in seen]
    if missing:
        _fail(f"{INVALID_GTID}: missing field {missing[0]}", end)
    gno = values.pop("gno")
    event_type = GTID_TAGGED_LOG_EVENT
    _check_gno(event_type, gno, 0)
    values.setdefault("original_commit_timestamp", values["immediate_commit_timestamp"])
    values.setdefault("original_server_version", values["immediate_server_version"])
    return GtidEvent(
        event_type=event_type, gtid_flags=flags, sid=_uuid_text(sid_raw), gno=gno, tag=tag, **values
    )


def decode_gtid_body(event_type: int, body: bytes | bytearray | memoryview) -> GtidEvent:
    """Decode the body (after the common header, before any checksum) of a GTID event.

    Args:
        event_type: GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT or GTID_TAGGED_LOG_EVENT.
        body: the body bytes.

    Returns:
        The event; fields its writer's version did not have are None.

    Raises:
        ProtocolError: a truncated or malformed body, or another event type.
    """
    if event_type == GTID_TAGGED_LOG_EVENT:
        return _decode_tagged_gtid(body)
    if event_type in (GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT):
        return _decode_classic_gtid(event_type, body)
    _fail(f"{INVALID_GTID}: event type {event_type} is not a GTID event", None)


def decode_previous_gtids(body: bytes | bytearray | memoryview) -> GtidSet:
    """Decode a PREVIOUS_GTIDS_LOG_EVENT body into a GTID set.

    The first 8 bytes are the TSID count; in the tagged format (8.3+) byte 0
    and byte 7 are 1 and bytes 1-6 hold the count, and each UUID is followed
    by its tag as a length-prefixed string of the serialization format.

    Raises:
        ProtocolError: truncated or malformed; an interval outside 1..GNO_MAX.
    """
    n = len(body)
    if n < 8:
        _fail(f"{INVALID_PREVIOUS_GTIDS}: body of {n} bytes", n)
    tagged = body[7] != 0
    if tagged:
        if body[0] != 1 or body[7] != 1:
            _fail(f"{INVALID_PREVIOUS_GTIDS}: unknown format", 0)
        count = int.from_bytes(body[1:7], "little")
    else:
        count = _U64.unpack_from(body, 0)[0]
    min_entry = 16 + (1 if tagged else 0) + 8
    if count * min_entry > n - 8:
        _fail(f"{INVALID_PREVIOUS_GTIDS}: {count} UUIDs cannot fit", 0)
    pos = 8
    ranges: list[tuple[str, str, int, int]] = []
    for _ in range(count):
        if n - pos < 16:
            _fail(f"{INVALID_PREVIOUS_GTIDS}: UUID truncated", n)
        uuid = _uuid_text(body[pos : pos + 16])
        pos += 16
        tag = ""
        if tagged:
            length, pos = _varlen(body, pos, n)
            if length > 32 or n - pos < length:
                _fail(f"{INVALID_PREVIOUS_GTIDS}: tag of {length} bytes", pos)
            tag = bytes(body[pos : pos + length]).decode("ascii", "replace")
            if tag and not _TAG.fullmatch(tag):
                _fail(f"{INVALID_PREVIOUS_GTIDS}: invalid tag", pos)
            pos += length
        if n - pos < 8:
            _fail(f"{INVALID_PREVIOUS_GTIDS}: interval count truncated", n)
        intervals = _U64.unpack_from(body, pos)[0]
        pos += 8
        if intervals * 16 > n - pos:
            _fail(f"{INVALID_PREVIOUS_GTIDS}: {intervals} intervals cannot fit", pos - 8)
        for _ in range(intervals):
            start, stop = struct.unpack_from("<QQ", body, pos)
            if not 1 <= start < stop or stop - 1 > GNO_MAX:
                _fail(f"{INVALID_PREVIOUS_GTIDS}: interval {start}-{stop}", pos)
            ranges.append((uuid, tag, start, stop - 1))
            pos += 16
    return GtidSet(ranges)
