"""The msgpack envelope of DESIGN.md section 3: round trip, strictness, bombs."""

from __future__ import annotations

import dataclasses
import tracemalloc
from typing import Any

import msgpack
import pytest

from protocol import (
    DEFAULT_MAX_ENVELOPE_SIZE,
    Envelope,
    MemberInfo,
    PipelineStats,
    ProtocolError,
    decode_envelope,
    encode_envelope,
    encode_pipeline_stats,
)

STATS = encode_pipeline_stats(PipelineStats(transactions_certified=42, sent_timestamp=1))

MEMBER = MemberInfo(
    id="8a94f357-aab4-11df-86ab-c80aa9429562",
    host="db1.example",
    port=3306,
    state="ONLINE",
    role="PRIMARY",
    version="8.4.3",
    gcs_id="db1.example:33061",
)

ENVELOPE = Envelope(
    group="aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
    member=MEMBER,
    view_id="17000000000000000:3",
    incarnation=2**64 - 1,
    seq=1,
    sent_us=1781234567000000,
    stats=STATS,
)

TOP_KEYS = ("v", "group", "member", "view_id", "incarnation", "seq", "sent_us", "stats")
MEMBER_KEYS = ("id", "host", "port", "state", "role", "version", "gcs_id")


def _plain() -> dict[str, Any]:
    """The envelope as a plain msgpack map, written by hand from DESIGN.md section 3."""
    return {
        "v": 1,
        "group": ENVELOPE.group,
        "member": {
            "id": MEMBER.id,
            "host": MEMBER.host,
            "port": MEMBER.port,
            "state": MEMBER.state,
            "role": MEMBER.role,
            "version": MEMBER.version,
            "gcs_id": MEMBER.gcs_id,
        },
        "view_id": ENVELOPE.view_id,
        "incarnation": ENVELOPE.incarnation,
        "seq": ENVELOPE.seq,
        "sent_us": ENVELOPE.sent_us,
        "stats": STATS,
    }


def _pack(message: object) -> bytes:
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed


# --- round trip and wire form ----------------------------------------------------------


def test_round_trip_gives_the_same_envelope() -> None:
    assert decode_envelope(encode_envelope(ENVELOPE)) == ENVELOPE


def test_encoded_form_is_the_documented_map() -> None:
    assert msgpack.unpackb(encode_envelope(ENVELOPE), raw=False) == _plain()


def test_hand_packed_map_decodes() -> None:
    assert decode_envelope(_pack(_plain())) == ENVELOPE


def test_stats_travel_as_bin_not_str() -> None:
    # With raw=False msgpack returns str for str and bytes only for bin.
    assert type(msgpack.unpackb(encode_envelope(ENVELOPE), raw=False)["stats"]) is bytes


def test_ext_round_trip() -> None:
    ext = {
        "lag": {"apply_us": 1500, "queue": [1, 2, 3], "ratio": 0.5},
        "applier": {"state": "ON", "blob": b"\x00\xff", "missing": None, "busy": True},
    }
    envelope = dataclasses.replace(ENVELOPE, ext=ext)
    assert decode_envelope(encode_envelope(envelope)).ext == ext


def test_missing_ext_decodes_as_empty_map() -> None:
    assert decode_envelope(_pack(_plain())).ext == {}


def test_empty_ext_is_not_written() -> None:
    assert "ext" not in msgpack.unpackb(encode_envelope(ENVELOPE), raw=False)


# --- unknown keys ----------------------------------------------------------------------


def test_unknown_top_level_keys_are_ignored() -> None:
    message = _plain() | {"future": [1, 2], "x": {"y": "z"}}
    assert decode_envelope(_pack(message)) == ENVELOPE


def test_unknown_member_keys_are_ignored() -> None:
    message = _plain()
    message["member"]["communication_stack"] = "MYSQL"
    assert decode_envelope(_pack(message)) == ENVELOPE


def test_unknown_ext_sections_are_kept_as_plain_data() -> None:
    message = _plain() | {"ext": {"new_section": {"k": [1, "a", b"b"]}}}
    assert decode_envelope(_pack(message)).ext == {"new_section": {"k": [1, "a", b"b"]}}


# --- missing and mistyped keys ---------------------------------------------------------


@pytest.mark.parametrize("key", TOP_KEYS)
def test_missing_top_level_key_is_rejected(key: str) -> None:
    message = _plain()
    del message[key]
    with pytest.raises(ProtocolError, match=key):
        decode_envelope(_pack(message))


@pytest.mark.parametrize("key", MEMBER_KEYS)
def test_missing_member_key_is_rejected(key: str) -> None:
    message = _plain()
    del message["member"][key]
    with pytest.raises(ProtocolError, match=key):
        decode_envelope(_pack(message))


_WRONG_TOP: list[tuple[str, object]] = [
    ("v", "1"),
    ("v", 1.0),
    ("v", True),
    ("group", 1),
    ("group", b"bytes"),
    ("member", "db1"),
    ("member", [1, 2]),
    ("view_id", None),
    ("incarnation", "1"),
    ("incarnation", True),
    ("incarnation", -1),
    ("incarnation", 1.5),
    ("seq", False),
    ("seq", -5),
    ("sent_us", "now"),
    ("sent_us", True),
    ("stats", "text"),
    ("stats", [1]),
    ("ext", [1, 2]),
    ("ext", "x"),
    ("ext", None),
]


@pytest.mark.parametrize(("key", "value"), _WRONG_TOP)
def test_mistyped_top_level_key_is_rejected(key: str, value: object) -> None:
    message = _plain() | {key: value}
    with pytest.raises(ProtocolError, match=key):
        decode_envelope(_pack(message))


_WRONG_MEMBER: list[tuple[str, object]] = [
    ("id", 1),
    ("host", None),
    ("port", "3306"),
    ("port", True),
    ("port", 70000),
    ("port", -1),
    ("state", 0),
    ("role", b"PRIMARY"),
    ("version", 8.4),
    ("gcs_id", ["db1", 33061]),
]


@pytest.mark.parametrize(("key", "value"), _WRONG_MEMBER)
def test_mistyped_member_key_is_rejected(key: str, value: object) -> None:
    message = _plain()
    message["member"][key] = value
    with pytest.raises(ProtocolError, match=key):
        decode_envelope(_pack(message))


@pytest.mark.parametrize("version", [2, 0, 255])
def test_unknown_version_is_rejected(version: int) -> None:
    with pytest.raises(ProtocolError, match="version"):
        decode_envelope(_pack(_plain() | {"v": version}))


def test_root_that_is_not_a_map_is_rejected() -> None:
    with pytest.raises(ProtocolError, match="map"):
        decode_envelope(_pack([1, 2, 3]))


def test_ext_with_non_string_key_is_rejected() -> None:
    with pytest.raises(ProtocolError):
        decode_envelope(_pack(_plain() | {"ext": {b"lag": 1}}))


def test_ext_nested_too_deeply_is_rejected() -> None:
    deep: object = 1
    for _ in range(40):
        deep = [deep]
    with pytest.raises(ProtocolError, match="nested"):
        decode_envelope(_pack(_plain() | {"ext": {"deep": deep}}))


def test_invalid_utf8_string_is_rejected() -> None:
    packed = _pack(_plain() | {"group": "GROUPNAME"}).replace(b"GROUPNAME", b"GROUPNAM\xff")
    with pytest.raises(ProtocolError):
        decode_envelope(packed)


# --- size limit, trailing bytes, extension types ---------------------------------------


def test_envelope_over_the_limit_is_rejected_before_unpacking() -> None:
    data = b"\xc1" * (DEFAULT_MAX_ENVELOPE_SIZE + 1)  # 0xc1 is never valid msgpack
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        decode_envelope(data)


def test_custom_size_limit_applies() -> None:
    data = encode_envelope(ENVELOPE)
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        decode_envelope(data, max_size=len(data) - 1)
    assert decode_envelope(data, max_size=len(data)) == ENVELOPE


def test_encode_refuses_an_envelope_receivers_would_drop() -> None:
    big = dataclasses.replace(ENVELOPE, stats=bytes(DEFAULT_MAX_ENVELOPE_SIZE))
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        encode_envelope(big)


def test_trailing_bytes_are_rejected_with_their_offset() -> None:
    packed = encode_envelope(ENVELOPE)
    with pytest.raises(ProtocolError) as caught:
        decode_envelope(packed + b"\x00")
    assert caught.value.offset == len(packed)


def test_truncated_envelope_is_rejected() -> None:
    packed = encode_envelope(ENVELOPE)
    for length in range(len(packed)):
        with pytest.raises(ProtocolError):
            decode_envelope(packed[:length])


@pytest.mark.parametrize(
    "ext_bytes",
    [
        pytest.param(bytes.fromhex("d40100"), id="fixext1"),
        pytest.param(bytes.fromhex("c70005"), id="ext8_empty"),
        pytest.param(bytes.fromhex("d6ff00000000"), id="timestamp32"),
    ],
)
def test_msgpack_extension_types_are_rejected(ext_bytes: bytes) -> None:
    # {"ext": {"x": <ext>}} spliced by hand: 0x81 map of 1, 0xa1 'x'.
    message = _pack(_plain() | {"ext": {"x": 0}})
    packed = message.replace(b"\x81\xa1x\x00", b"\x81\xa1x" + ext_bytes)
    assert packed != message
    with pytest.raises(ProtocolError):
        decode_envelope(packed)


# --- msgpack bombs: tiny buffers declaring huge sizes ----------------------------------


_BOMBS = [
    pytest.param(bytes.fromhex("ddffffffff"), id="array32_4G"),
    pytest.param(bytes.fromhex("dfffffffff"), id="map32_4G"),
    pytest.param(bytes.fromhex("c6ffffffff"), id="bin32_4G"),
    pytest.param(bytes.fromhex("dbffffffff"), id="str32_4G"),
    pytest.param(bytes.fromhex("c9ffffffff01"), id="ext32_4G"),
    pytest.param(bytes.fromhex("dc7fff") + b"\xc0", id="array16_short"),
    pytest.param(bytes.fromhex("81a17bddffffffff"), id="map_with_huge_array_value"),
    pytest.param(b"\x91" * 60000, id="deep_arrays"),
    pytest.param(b"\x81\xa1k" * 20000, id="deep_maps"),
]


@pytest.mark.parametrize("bomb", _BOMBS)
def test_msgpack_bomb_is_rejected_without_allocating(bomb: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            decode_envelope(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_bomb_inside_a_valid_prefix_is_rejected() -> None:
    packed = _pack(_plain() | {"ext": {"x": 0}})
    bomb = packed.replace(b"\x81\xa1x\x00", b"\x81\xa1x" + bytes.fromhex("ddffffffff"))
    with pytest.raises(ProtocolError):
        decode_envelope(bomb)


# --- encoder input checks --------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"seq": -1}, id="negative_seq"),
        pytest.param({"incarnation": 2**64}, id="incarnation_over_u64"),
        pytest.param({"sent_us": True}, id="bool_sent_us"),
        pytest.param({"stats": "text"}, id="str_stats"),
        pytest.param({"v": 2}, id="version_2"),
        pytest.param({"ext": {"x": {1, 2}}}, id="set_in_ext"),
        pytest.param({"ext": {1: "x"}}, id="int_ext_key"),
        pytest.param(
            {"member": dataclasses.replace(MEMBER, port=65536)},
            id="port_over_65535",
        ),
    ],
)
def test_encode_rejects_what_decode_would_reject(change: dict[str, Any]) -> None:
    envelope = dataclasses.replace(ENVELOPE, **change)
    with pytest.raises(ProtocolError):
        encode_envelope(envelope)


def _map_with_pairs(pairs: list[tuple[str, object]]) -> bytes:
    """A msgpack map written pair by pair, so that a key may appear twice."""
    assert len(pairs) < 16
    return bytes([0x80 | len(pairs)]) + b"".join(_pack(k) + _pack(v) for k, v in pairs)


def test_duplicate_top_level_key_is_rejected() -> None:
    pairs = list(_plain().items())
    pairs.append(("seq", ENVELOPE.seq + 1))  # a second seq: which one counts?
    with pytest.raises(ProtocolError, match="duplicate key"):
        decode_envelope(_map_with_pairs(pairs))


def test_duplicate_member_id_is_rejected() -> None:
    plain = _plain()
    member_pairs = [*plain["member"].items(), ("id", "99999999-9999-9999-9999-999999999999")]
    member = _map_with_pairs(member_pairs)
    top = [(k, v) for k, v in plain.items() if k != "member"]
    encoded = bytes([0x80 | (len(top) + 1)]) + b"".join(_pack(k) + _pack(v) for k, v in top)
    encoded += _pack("member") + member
    with pytest.raises(ProtocolError, match="duplicate key"):
        decode_envelope(encoded)


def test_the_same_map_without_duplicates_decodes() -> None:
    # the hand-written encoder above is right: without a duplicate it decodes
    assert decode_envelope(_map_with_pairs(list(_plain().items()))) == dataclasses.replace(
        ENVELOPE, ext={}
    )
