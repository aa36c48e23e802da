"""The msgpack envelope that carries one stats message on the bus (DESIGN.md section 3).

Wire form: a msgpack map with the keys `v`, `group`, `member` (a map of `id`,
`host`, `port`, `state`, `role`, `version`, `gcs_id`), `view_id`,
`incarnation`, `seq`, `sent_us`, `stats` (bin: the MySQL message bytes) and
the optional `ext` map. Known `ext` sections: `communication_stack` (str) and
`lag` (the member's replication lag by stage; layout, bounds and versioning in
`protocol.lag`). The envelope keeps `ext` as plain data; a section is checked
by its own codec, so a bad section never makes the envelope undecodable.

Strategy: strict about types and limits, lenient about unknown keys.
* The size limit is checked before msgpack sees a byte; msgpack then runs with
  every declared length (str, bin, array, map) bounded by the buffer size, so
  a tiny buffer declaring a 4-GiB array fails before any allocation.
* The map is read by `protocol.envelope_read`: the decoding cost is bounded by
  the bytes (C does the work; a duplicate key is refused in the maps that
  carry meaning; a generic `ext` section is refused by its size before its
  duplicate-key walk); `decode_envelope_sections` skips the sections a
  receiver does not keep without building them.
* Extension types are refused (`max_ext_len=0` and an ext hook that raises),
  map keys must be strings or bytes (`strict_map_key`), trailing bytes are an
  error.
* Every field is type-checked after unpacking: `bool` is not accepted where an
  int is expected; integers that are counters or ports are range-checked.
* `ext` stays plain decoded data (dict/list/str/bytes/int/float/bool/None),
  nested at most `MAX_EXT_DEPTH` containers deep.

Invariants: only `ProtocolError` leaves `decode_envelope`; whatever
`encode_envelope` returns, `decode_envelope` accepts (with the same limit).
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import msgpack

from protocol.envelope_read import MAX_SECTION_SIZE, SELF_CHECKED_SECTIONS, read_envelope_map
from protocol.errors import ProtocolError
from protocol.frozen import builder

ENVELOPE_VERSION = 1
DEFAULT_MAX_ENVELOPE_SIZE = 64 * 1024
#: Containers (maps/arrays) inside `ext`, counting `ext` itself.
MAX_EXT_DEPTH: Final = 16

_U64_MAX: Final = (1 << 64) - 1
_PORT_MAX: Final = 65535


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


_build_envelope = builder(Envelope)
_build_member = builder(MemberInfo)

# Keys and types of a well-formed envelope, in one order for the fast checks.
_TOP_KEYS = operator.itemgetter(
    "v", "group", "member", "view_id", "incarnation", "seq", "sent_us", "stats"
)
_TOP_TYPES: Final = (int, str, dict, str, int, int, int, bytes)
_MEMBER_KEYS = operator.itemgetter("id", "host", "port", "state", "role", "version", "gcs_id")
_MEMBER_TYPES: Final = (str, str, int, str, str, str, str)
_ENVELOPE_FIELDS = operator.attrgetter(
    "v", "group", "view_id", "incarnation", "seq", "sent_us", "stats"
)
_ENVELOPE_TYPES: Final = (int, str, str, int, int, int, bytes)
_MEMBER_FIELDS = operator.attrgetter("id", "host", "port", "state", "role", "version", "gcs_id")


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"envelope: {where}: {problem}")


def _type_name(value: object) -> str:
    return type(value).__name__


def _str(where: str, value: object) -> str:
    if type(value) is not str:
        _fail(where, f"expected a string, got {_type_name(value)}")
    return value


def _uint(where: str, value: object, maximum: int) -> int:
    # type() rather than isinstance(): True/False are ints in Python but not here.
    if type(value) is not int:
        _fail(where, f"expected an integer, got {_type_name(value)}")
    if not 0 <= value <= maximum:
        _fail(where, f"expected an integer 0-{maximum}, got {value}")
    return value


def _bytes(where: str, value: object) -> bytes:
    if type(value) is not bytes:
        _fail(where, f"expected bin (bytes), got {_type_name(value)}")
    return value


# Plain scalars, by exact type: the common case, decided without the isinstance chain.
_SCALARS: Final = frozenset({str, bytes, int, float, bool, type(None)})


def _check_ext_value(value: object, depth: int) -> None:
    if type(value) in _SCALARS:
        return
    if isinstance(value, Mapping):
        if depth >= MAX_EXT_DEPTH:
            _fail("ext", f"nested deeper than {MAX_EXT_DEPTH} containers")
        for key, item in value.items():
            if not isinstance(key, str | bytes):
                _fail("ext", f"map keys must be strings, got {_type_name(key)}")
            _check_ext_value(item, depth + 1)
    elif isinstance(value, list | tuple):
        if depth >= MAX_EXT_DEPTH:
            _fail("ext", f"nested deeper than {MAX_EXT_DEPTH} containers")
        for item in value:
            _check_ext_value(item, depth + 1)
    elif value is not None and not isinstance(value, str | bytes | int | float):
        _fail("ext", f"unsupported value type {_type_name(value)}")


# Sections with a strict codec of their own (protocol/lag.py, protocol/applier.py):
# every reader decodes them through it, position by position, so the generic
# walk below (types, nesting) would only repeat that work -- it cost ~17 us of
# an envelope with one busy lag channel, on each side.
_SELF_CHECKED_SECTIONS: Final = SELF_CHECKED_SECTIONS


def _ext(value: object) -> dict[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):
        _fail("ext", f"expected a map, got {_type_name(value)}")
    for key, item in value.items():
        if type(key) is not str:
            _fail("ext", f"keys must be strings, got {_type_name(key)}")
        if key not in _SELF_CHECKED_SECTIONS:
            _check_ext_value(item, 1)
    return dict(value)


def _member(value: object) -> MemberInfo:
    if type(value) is not dict:
        _fail("member", f"expected a map, got {_type_name(value)}")
    try:
        return MemberInfo(
            id=_str("member.id", value["id"]),
            host=_str("member.host", value["host"]),
            port=_uint("member.port", value["port"], _PORT_MAX),
            state=_str("member.state", value["state"]),
            role=_str("member.role", value["role"]),
            version=_str("member.version", value["version"]),
            gcs_id=_str("member.gcs_id", value["gcs_id"]),
        )
    except KeyError as exc:
        _fail("member", f"missing key {exc.args[0]!r}")


def _check(envelope: Envelope) -> None:
    """Validate a dataclass before encoding, with the decoder's rules."""
    member = envelope.member
    if (
        type(member) is MemberInfo
        and tuple(map(type, _ENVELOPE_FIELDS(envelope))) == _ENVELOPE_TYPES
        and tuple(map(type, _MEMBER_FIELDS(member))) == _MEMBER_TYPES
        and envelope.v == ENVELOPE_VERSION
        and 0 <= member.port <= _PORT_MAX
        and 0 <= envelope.incarnation <= _U64_MAX
        and 0 <= envelope.seq <= _U64_MAX
        and 0 <= envelope.sent_us <= _U64_MAX
    ):
        if envelope.ext:
            _ext(envelope.ext)
        return
    # Something is wrong: find the first problem and name it.
    if type(envelope.v) is not int or envelope.v != ENVELOPE_VERSION:
        _fail("v", f"unsupported envelope version {envelope.v!r}")
    _str("group", envelope.group)
    if not isinstance(member, MemberInfo):
        _fail("member", f"expected MemberInfo, got {_type_name(member)}")
    for name in ("id", "host", "state", "role", "version", "gcs_id"):
        _str(f"member.{name}", getattr(member, name))
    _uint("member.port", member.port, _PORT_MAX)
    _str("view_id", envelope.view_id)
    _uint("incarnation", envelope.incarnation, _U64_MAX)
    _uint("seq", envelope.seq, _U64_MAX)
    _uint("sent_us", envelope.sent_us, _U64_MAX)
    _bytes("stats", envelope.stats)
    _ext(envelope.ext)


# A text this short packs within MAX_SECTION_SIZE (<= 4 UTF-8 bytes a character, a
# 5-byte header): its size needs no packing to know.
_SHORT_TEXT: Final = (MAX_SECTION_SIZE - 5) // 4


def _check_section_sizes(ext: Mapping[str, Any]) -> None:
    for name, value in ext.items():
        if type(value) is str and len(value) <= _SHORT_TEXT:
            continue  # communication_stack: the one generic section a member sends
        if name not in _SELF_CHECKED_SECTIONS:
            try:
                size = len(msgpack.packb(value, use_bin_type=True))
            except (TypeError, ValueError, OverflowError) as exc:
                _fail("ext", f"cannot be encoded: {exc}")
            if size > MAX_SECTION_SIZE:
                _fail(f"ext.{name}", f"{size} bytes, over {MAX_SECTION_SIZE}")


def encode_envelope(envelope: Envelope, *, max_size: int = DEFAULT_MAX_ENVELOPE_SIZE) -> bytes:
    """Encode an envelope as a msgpack map (`ext` omitted when empty).

    Args:
        envelope: the envelope; `stats` is the already encoded MySQL message.
        max_size: refuse to produce more bytes than a receiver with this limit
            accepts.

    Returns:
        The msgpack bytes; `decode_envelope` with the same limit accepts them.

    Raises:
        ProtocolError: a field has the wrong type or range, `ext` holds a value
            that is not plain data or is nested too deeply, or the result is
            larger than `max_size`.
    """
    _check(envelope)
    member = envelope.member
    message: dict[str, Any] = {
        "v": envelope.v,
        "group": envelope.group,
        "member": {
            "id": member.id,
            "host": member.host,
            "port": member.port,
            "state": member.state,
            "role": member.role,
            "version": member.version,
            "gcs_id": member.gcs_id,
        },
        "view_id": envelope.view_id,
        "incarnation": envelope.incarnation,
        "seq": envelope.seq,
        "sent_us": envelope.sent_us,
        "stats": envelope.stats,
    }
    if envelope.ext:
        message["ext"] = dict(envelope.ext)
        _check_section_sizes(envelope.ext)
    try:
        packed: bytes = msgpack.packb(message, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        _fail("ext", f"cannot be encoded: {exc}")
    if len(packed) > max_size:
        raise ProtocolError(f"envelope of {len(packed)} bytes exceeds the limit of {max_size}")
    return packed


def _decode_well_formed(message: dict[Any, Any], ext: dict[str, Any]) -> Envelope | None:
    """The common case in one pass of C-level lookups and type comparisons.

    Returns None when any key is missing or any type or range is off; the
    caller then runs the field-by-field checks, which name the problem. For
    every input this yields the same envelope those checks would.
    """
    try:
        top = _TOP_KEYS(message)
    except KeyError:
        return None
    if (
        tuple(map(type, top)) != _TOP_TYPES
        or top[0] != ENVELOPE_VERSION
        or top[4] < 0
        or top[5] < 0
        or top[6] < 0
    ):
        return None
    try:
        member = _MEMBER_KEYS(top[2])
    except KeyError:
        return None
    if tuple(map(type, member)) != _MEMBER_TYPES or not 0 <= member[2] <= _PORT_MAX:
        return None
    # fields in declaration order: group, member, view_id, incarnation, seq, sent_us, stats, ext, v
    return _build_envelope(
        top[1], _build_member(*member), top[3], top[4], top[5], top[6], top[7], ext, top[0]
    )


def decode_envelope(
    data: bytes | bytearray | memoryview, *, max_size: int = DEFAULT_MAX_ENVELOPE_SIZE
) -> Envelope:
    """Decode and validate an envelope.

    Unknown keys (top level and in `member`) are ignored; `ext` defaults to an
    empty dict. `stats` is returned as bytes, not decoded.

    Args:
        data: the msgpack bytes (bytes, bytearray or memoryview).
        max_size: the largest envelope accepted, checked before unpacking.

    Returns:
        The envelope, every `ext` section kept.

    Raises:
        ProtocolError: too large, not valid msgpack, trailing bytes, an
            extension type, not a map, a missing or mistyped key, a version
            other than 1, or an `ext` section other than `lag`/`applier` over
            `MAX_SECTION_SIZE` bytes.
    """
    return decode_envelope_sections(data, keep=None, max_size=max_size)[0]


def decode_envelope_sections(
    data: bytes | bytearray | memoryview,
    *,
    keep: Collection[str] | None,
    max_size: int = DEFAULT_MAX_ENVELOPE_SIZE,
) -> tuple[Envelope, tuple[str, ...]]:
    """Decode and validate an envelope, keeping only the `ext` sections in `keep`.

    A section not in `keep` is skipped unread (never built in memory); its
    name is returned so the caller can count it. Otherwise as `decode_envelope`.

    Args:
        data: the msgpack bytes.
        keep: the `ext` section names to keep; None keeps every section.
        max_size: the largest envelope accepted, checked before unpacking.

    Returns:
        (the envelope, the names of the `ext` sections dropped, in wire order).

    Raises:
        ProtocolError: as `decode_envelope`.
    """
    size = len(data)
    if size > max_size:
        raise ProtocolError(f"envelope of {size} bytes exceeds the limit of {max_size}", max_size)
    message, raw_ext, dropped = read_envelope_map(data, keep_ext=keep)
    ext = {} if raw_ext is None else _ext(raw_ext)
    envelope = _decode_well_formed(message, ext)
    if envelope is not None:
        return envelope, dropped
    # Something is missing or mistyped: find the first problem and name it.
    try:
        version = message["v"]
        if type(version) is not int:
            _fail("v", f"expected an integer, got {_type_name(version)}")
        if version != ENVELOPE_VERSION:
            _fail("v", f"unsupported envelope version {version}")
        envelope = Envelope(
            v=version,
            group=_str("group", message["group"]),
            member=_member(message["member"]),
            view_id=_str("view_id", message["view_id"]),
            incarnation=_uint("incarnation", message["incarnation"], _U64_MAX),
            seq=_uint("seq", message["seq"], _U64_MAX),
            sent_us=_uint("sent_us", message["sent_us"], _U64_MAX),
            stats=_bytes("stats", message["stats"]),
            ext=ext,
        )
    except KeyError as exc:
        _fail("top level", f"missing key {exc.args[0]!r}")
    return envelope, dropped
