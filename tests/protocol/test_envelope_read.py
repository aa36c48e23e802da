"""protocol.envelope_read: the one-unpack read of a small envelope decides as the walk does."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from protocol import (
    Envelope,
    MemberInfo,
    ProtocolError,
    decode_envelope_sections,
    encode_envelope,
    envelope_read,
)

UUID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
KEEP = ("communication_stack", "lag", "applier")


def _message() -> dict[str, Any]:
    member = MemberInfo(UUID, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "h:33061")
    ext = {"communication_stack": "MYSQL", "lag": [1, 5, []]}
    wire = encode_envelope(Envelope(UUID, member, "v:1", 1, 1, 5, b"\x01", ext))
    message: dict[str, Any] = msgpack.unpackb(wire)
    return message


def _packed(message: dict[str, Any]) -> bytes:
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed


def _with_repeated(path: tuple[str, ...], key: str) -> bytes:
    """The envelope with `key` written twice in the map at `path` (a fixmap, counted right)."""
    message = _message()
    target = message
    for step in path:
        target = target[step]
    items = list(target.items())
    value = target[key]
    packer = msgpack.Packer(use_bin_type=True)

    def pack_map(mapping_items: list[tuple[str, Any]], inner: dict[str, bytes]) -> bytes:
        out: bytes = packer.pack_map_header(len(mapping_items))
        for k, v in mapping_items:
            out += packer.pack(k) + (inner[k] if k in inner else packer.pack(v))
        return out

    repeated = pack_map([*items, (key, value)], {})
    for depth in range(len(path) - 1, -1, -1):
        parent = message
        for step in path[:depth]:
            parent = parent[step]
        repeated = pack_map(list(parent.items()), {path[depth]: repeated})
    return repeated


def _junk(maps: int) -> bytes:
    message = _message()
    message["ext"]["junk"] = [{}] * maps
    return _packed(message)


def _nested_repeat() -> bytes:
    # an unknown section holding a map with a key twice: skipped unread, so accepted
    message = _message()
    message["ext"]["future"] = [1]
    packed = _packed(message)
    return packed.replace(b"\x91\x01", b"\x91\x82\xa1k\x01\xa1k\x02")


def _int_key_in_member() -> bytes:
    packed = _packed(_message())
    member = msgpack.packb("member")
    at = packed.index(member) + len(member)
    count = packed[at]  # a fixmap
    return packed[:at] + bytes([count + 1]) + b"\x07\x01" + packed[at + 1 :]


def _ext_as_map16() -> bytes:
    # not what msgpack-python writes for a small map, but valid msgpack
    packed = _packed(_message())
    ext = msgpack.packb("ext")
    at = packed.index(ext) + len(ext)
    count = packed[at] & 0x0F
    return packed[:at] + b"\xde\x00" + bytes([count]) + packed[at + 1 :]


CASES: dict[str, bytes] = {
    "an int key in member": _int_key_in_member(),
    "ext as map16": _ext_as_map16(),
    "good": _packed(_message()),
    "member key twice": _with_repeated(("member",), "id"),
    "ext key twice": _with_repeated(("ext",), "lag"),
    "top key twice": _with_repeated((), "seq"),
    "2000 empty maps dropped": _junk(2000),
    "a repeat inside a dropped section": _nested_repeat(),
    "trailing bytes": _packed(_message()) + b"\x00",
}


def _outcome(payload: bytes) -> object:
    try:
        return decode_envelope_sections(payload, keep=KEEP)
    except ProtocolError as exc:
        return ("error", exc.reason)


@pytest.mark.parametrize("name", list(CASES))
def test_the_small_read_decides_as_the_streaming_walk(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = CASES[name]
    assert len(payload) <= envelope_read.FAST_PATH_SIZE
    fast = _outcome(payload)
    monkeypatch.setattr(envelope_read, "FAST_PATH_MAPS", 0)  # every map gives up: the walk
    assert _outcome(payload) == fast


@pytest.mark.parametrize("name", ["member key twice", "ext key twice", "top key twice"])
def test_a_key_twice_in_a_map_that_carries_meaning_is_refused(name: str) -> None:
    with pytest.raises(ProtocolError, match="duplicate key"):
        decode_envelope_sections(CASES[name], keep=KEEP)


def test_a_small_envelope_of_maps_gives_up_the_hook_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    real = msgpack.unpackb

    def counting(data: Any, **kwargs: Any) -> Any:
        hook = kwargs.get("object_pairs_hook")
        if hook is not None:

            def counted(pairs: Any) -> Any:
                nonlocal calls
                calls += 1
                return hook(pairs)

            kwargs["object_pairs_hook"] = counted
        return real(data, **kwargs)

    monkeypatch.setattr(msgpack, "unpackb", counting)  # the module protocol calls
    _, dropped = decode_envelope_sections(CASES["2000 empty maps dropped"], keep=KEEP)
    assert dropped == ("junk",)
    assert 0 < calls <= envelope_read.FAST_PATH_MAPS + 1  # then skipped unread, in C
