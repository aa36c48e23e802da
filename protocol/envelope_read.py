"""Reading an envelope's msgpack map at a cost bounded by its bytes, not by its shape.

Strategy: msgpack's C unpacker does all the work that scales with the input;
Python touches only the three maps whose keys carry meaning -- the top level,
`member` and `ext` -- key by key, so that a duplicate key there is refused
(msgpack keeps the last of two equal keys without a word: a second `id` in
`member` could mean one thing to us and another to a different reader).
Everything else is unpacked by C with no per-object Python hook: a
per-map hook over the whole buffer cost ~17 ms on a 64 KiB envelope of
empty maps, 13x a plain `msgpack.unpackb` of the same bytes. An envelope of
at most `FAST_PATH_SIZE` bytes (every one a daemon sends each period) is
first unpacked whole in C with the duplicate-key hook on its maps, as long as
there are at most `FAST_PATH_MAPS` of them (a daemon's has three: its
sections are arrays); past that, the walk below decides. (This replaced
packing the result again to compare bytes: a second C pass over every
section, ~10 us of an envelope with every steady section.)

`ext` sections:
* a section the caller does not keep is skipped unread (C, nothing
  allocated) and only its name is reported;
* the self-checked sections (`lag`, `applier`: positional arrays checked by
  their own codecs, which refuse a map anywhere) are unpacked plainly;
* any other kept section may hold maps, so it is re-read strictly (with the
  duplicate-key hook) -- only when its bytes are within `MAX_SECTION_SIZE`:
  a larger one is refused by its size before that walk.

Invariants: only `ProtocolError` leaves `read_envelope_map`; every declared
length (str, bin, array, map) is bounded by the buffer size, so a tiny buffer
declaring a 4-GiB array fails before any allocation.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final, NoReturn

import msgpack

from protocol.errors import ProtocolError

#: The largest kept `ext` section that is neither `lag` nor `applier` (it is
#: re-read with the duplicate-key walk, whose cost grows with its maps).
MAX_SECTION_SIZE: Final = 4096
#: Envelopes up to this size, with at most FAST_PATH_MAPS maps, are read in one C
#: unpack (`_read_small`).
FAST_PATH_SIZE: Final = 4096
FAST_PATH_MAPS: Final = 16
#: Sections with a strict positional codec of their own (protocol/lag.py, applier.py, mirrored.py,
#: gtid_state.py, commit_path.py, commit_path_comm.py): lists, no maps, so no key can
#: repeat; bounded by their own codecs.
SELF_CHECKED_SECTIONS: Final = frozenset(
    {"lag", "applier", "gtids", "commit_path", "commit_path_comm", "channels"}
)
_MEMBER: Final = "member"
_EXT: Final = "ext"
_TOP_KEYS: Final = frozenset(
    {"v", "group", "member", "view_id", "incarnation", "seq", "sent_us", "stats"}
)
_MEMBER_KEYS: Final = frozenset({"id", "host", "port", "state", "role", "version", "gcs_id"})


class Refused(Exception):
    """Raised inside msgpack's hooks (ext type, duplicate key); a ProtocolError for callers."""


def refuse_ext(code: int, data: bytes) -> NoReturn:
    """msgpack's ext_hook: extension types are never accepted."""
    raise Refused(f"msgpack extension type {code} is not allowed")


def unique_keys(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """msgpack's object_pairs_hook: a map with a key twice is refused."""
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise Refused("a map has a duplicate key")
    return mapping


def _bounds(size: int) -> dict[str, Any]:
    return {
        "raw": False,
        "use_list": True,
        "strict_map_key": True,
        "ext_hook": refuse_ext,
        "max_ext_len": 0,
        "max_str_len": size,
        "max_bin_len": size,
        "max_array_len": size,
        "max_map_len": size,
    }


_FAST_BOUNDS: Final = _bounds(FAST_PATH_SIZE)


def _fail(where: str, problem: str, offset: int | None = None) -> NoReturn:
    raise ProtocolError(f"envelope: {where}: {problem}", offset)


def unpack_strict(data: bytes | bytearray | memoryview) -> Any:
    """Unpack `data` whole, refusing duplicate keys in any map (callers bound its size)."""
    return msgpack.unpackb(data, object_pairs_hook=unique_keys, **_bounds(len(data)))


def _unpacker(data: bytes | bytearray | memoryview) -> msgpack.Unpacker:
    unpacker = msgpack.Unpacker(max_buffer_size=max(1, len(data)), **_bounds(len(data)))
    unpacker.feed(data)
    return unpacker


def _map_size(unpacker: msgpack.Unpacker) -> int:
    """Entries of the map at the cursor; -1 (nothing consumed) when it is not a map."""
    try:
        size: int = unpacker.read_map_header()
    except ValueError:
        return -1  # the caller reads the value to name its type
    return size


def _key(unpacker: msgpack.Unpacker, where: str, seen: set[object]) -> Any:
    key = unpacker.unpack()
    if type(key) is not str and type(key) is not bytes:
        _fail(where, f"keys must be strings, got {type(key).__name__}")
    if key in seen:
        raise Refused("a map has a duplicate key")
    seen.add(key)
    return key


def read_envelope_map(
    data: bytes | bytearray | memoryview, *, keep_ext: Collection[str] | None
) -> tuple[dict[str, Any], dict[str, Any] | None, tuple[str, ...]]:
    """Read the envelope's top-level map.

    Args:
        data: the msgpack bytes (already checked against the size limit).
        keep_ext: the `ext` sections to keep; None keeps every section.

    Returns:
        (the known top-level keys with their values -- `member` as a dict of
        its known keys --, the kept `ext` sections or None when there is no
        `ext`, the names of the sections skipped unread).

    Raises:
        ProtocolError: not valid msgpack, a duplicate key in a map that
            carries meaning, trailing bytes, a non-map top level, `member` or
            `ext`, or a kept generic section over `MAX_SECTION_SIZE`.
    """
    if len(data) <= FAST_PATH_SIZE:
        fast = _read_small(data, keep_ext)
        if fast is not None:
            return fast
    unpacker = _unpacker(data)
    try:
        return _read(unpacker, data, keep_ext)
    except (ValueError, TypeError, Refused, msgpack.UnpackException) as exc:
        if isinstance(exc, ProtocolError):
            raise
        # ValueError covers msgpack's FormatError, StackError, the max_*_len
        # refusals, strict_map_key and UnicodeDecodeError; OutOfData is truncation.
        raise ProtocolError(
            f"envelope: not valid msgpack: {exc or type(exc).__name__}", unpacker.tell()
        ) from None


def _read_small(
    data: bytes | bytearray | memoryview, keep_ext: Collection[str] | None
) -> tuple[dict[str, Any], dict[str, Any] | None, tuple[str, ...]] | None:
    """The common small envelope, all in one C unpack: None sends it the streaming way.

    Every map is checked for a repeated key by the hook, and there are few:
    an envelope a daemon sends has three (top level, `member`, `ext`; its
    sections are arrays). The hook gives up past `FAST_PATH_MAPS` maps, so a
    small envelope made of maps costs a few hook calls here before the
    streaming read skips what it does not keep, in C. Anything else -- a
    repeated key, an error to name -- goes the streaming way, which decides.
    """
    maps = 0

    def unique_few(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        nonlocal maps
        maps += 1
        mapping = dict(pairs)
        if maps > FAST_PATH_MAPS or len(mapping) != len(pairs):
            raise Refused("not the common envelope")
        return mapping

    try:
        # every declared length bounded by FAST_PATH_SIZE (>= len(data)): an
        # allocation stays as bounded, and a refusal sends `data` the strict way
        message = msgpack.unpackb(data, object_pairs_hook=unique_few, **_FAST_BOUNDS)
    except (ValueError, TypeError, Refused, msgpack.UnpackException):
        return None
    if type(message) is not dict:
        return None
    if _EXT not in message:
        return message, None, ()
    ext = message.pop(_EXT)
    if type(ext) is not dict or any(type(name) is not str for name in ext):
        return None
    if keep_ext is None:
        return message, ext, ()
    dropped = tuple(name for name in ext if name not in keep_ext)
    for name in dropped:
        del ext[name]
    return message, ext, dropped


def _read(
    unpacker: msgpack.Unpacker,
    data: bytes | bytearray | memoryview,
    keep_ext: Collection[str] | None,
) -> tuple[dict[str, Any], dict[str, Any] | None, tuple[str, ...]]:
    count = _map_size(unpacker)
    if count < 0:
        _fail("top level", f"expected a map, got {type(unpacker.unpack()).__name__}")
    message: dict[str, Any] = {}
    ext: dict[str, Any] | None = None
    dropped: tuple[str, ...] = ()
    seen: set[object] = set()
    for _ in range(count):
        key = _key(unpacker, "top level", seen)
        if key in _TOP_KEYS:
            message[key] = _member(unpacker) if key == _MEMBER else unpacker.unpack()
        elif key == _EXT:
            ext, dropped = _ext(unpacker, data, keep_ext)
        else:
            unpacker.skip()  # unknown top-level key: ignored, never built
    end = unpacker.tell()
    if end != len(data):
        _fail("top level", "trailing bytes after the map", end)
    return message, ext, dropped


def _member(unpacker: msgpack.Unpacker) -> Any:
    count = _map_size(unpacker)
    if count < 0:
        return unpacker.unpack()  # not a map: the caller names its type
    member: dict[str, Any] = {}
    seen: set[object] = set()
    for _ in range(count):
        key = _key(unpacker, _MEMBER, seen)
        if key in _MEMBER_KEYS:
            member[key] = unpacker.unpack()
        else:
            unpacker.skip()  # unknown member key: ignored, never built
    return member


def _ext(
    unpacker: msgpack.Unpacker,
    data: bytes | bytearray | memoryview,
    keep: Collection[str] | None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    count = _map_size(unpacker)
    if count < 0:
        _fail(_EXT, f"expected a map, got {type(unpacker.unpack()).__name__}")
    sections: dict[str, Any] = {}
    dropped: list[str] = []
    seen: set[object] = set()
    for _ in range(count):
        name = _key(unpacker, _EXT, seen)
        if type(name) is not str:
            _fail(_EXT, f"keys must be strings, got {type(name).__name__}")
        if keep is not None and name not in keep:
            unpacker.skip()
            dropped.append(name)
            continue
        start = unpacker.tell()
        value = unpacker.unpack()
        if name not in SELF_CHECKED_SECTIONS and (type(value) is dict or type(value) is list):
            # it may hold maps, whose duplicate keys the plain unpack merged: re-read strictly
            end = unpacker.tell()
            if end - start > MAX_SECTION_SIZE:
                _fail(f"ext.{name[:64]}", f"{end - start} bytes, over {MAX_SECTION_SIZE}", start)
            value = unpack_strict(data[start:end])
        sections[name] = value
    return sections, tuple(dropped)
