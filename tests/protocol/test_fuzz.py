"""Bounded fuzzing of the decoders: only ProtocolError (or a result) may come out.

Stats messages are also decoded twice, through `decode_pipeline_stats` (with
its fast path) and through the general decoder; both must agree on the result
or on the error reason and offset.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import (
    MALFORMED_FIXED_HEADER,
    MALFORMED_PAYLOAD_ITEM,
    MALFORMED_PAYLOAD_LENGTH,
    Envelope,
    MemberInfo,
    PipelineStats,
    ProtocolError,
    decode_envelope,
    decode_pipeline_stats,
    encode_envelope,
    encode_pipeline_stats,
)
from protocol.pipeline_stats_decode import decode_pipeline_stats_general, scan_sent_timestamp

# thousands of examples per target, CPU-bound: `make test` runs them, `make test-fast` not
pytestmark = pytest.mark.slow

EXAMPLES = 2000
REASONS = {MALFORMED_FIXED_HEADER, MALFORMED_PAYLOAD_ITEM, MALFORMED_PAYLOAD_LENGTH}
HEADER = bytes.fromhex("01000000100010000000000000000600")
HUGE_LENGTHS = [2**63, 2**64 - 1, 2**64 - 10, 2**32, 2**31, 2**16]

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
u64 = st.integers(0, 2**64 - 1)

stats_strategy = st.builds(
    PipelineStats,
    transactions_waiting_certification=int32,
    transactions_waiting_apply=int32,
    transactions_certified=int64,
    transactions_applied=int64,
    transactions_local=int64,
    transactions_negative_certified=int64,
    transactions_rows_validating=int64,
    transaction_gtids_present=st.booleans(),
    transactions_committed_all_members=st.binary(max_size=40),
    transaction_last_conflict_free=st.binary(max_size=40),
    transactions_local_rollback=int64,
    flow_control_mode=st.integers(0, 255),
    sent_timestamp=st.none() | u64,
)


def _outcome(decode: Any, data: bytes) -> PipelineStats | tuple[str, int | None]:
    try:
        result: PipelineStats = decode(data)
    except ProtocolError as exc:
        return (exc.reason, exc.offset)
    return result


def _check_stats_decoders(data: bytes) -> None:
    fast = _outcome(decode_pipeline_stats, data)
    general = _outcome(decode_pipeline_stats_general, data)
    assert fast == general
    if isinstance(fast, tuple):
        reason, offset = fast
        assert reason in REASONS
        assert offset is not None
        assert 0 <= offset <= len(data)
    else:
        assert isinstance(fast, PipelineStats)


# --- stats message ----------------------------------------------------------------------


@settings(max_examples=EXAMPLES)
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_protocol_error(data: bytes) -> None:
    _check_stats_decoders(data)
    assert 0 <= scan_sent_timestamp(data) < 2**64


@settings(max_examples=EXAMPLES)
@given(st.binary(max_size=300))
def test_random_payload_after_valid_header_only_raises_protocol_error(payload: bytes) -> None:
    _check_stats_decoders(HEADER + payload)


@settings(max_examples=EXAMPLES)
@given(stats_strategy)
def test_encode_then_decode_round_trips(stats: PipelineStats) -> None:
    decoded = decode_pipeline_stats(encode_pipeline_stats(stats))
    # The only normalisation: a timestamp of 0 reads back as "no timestamp".
    assert decoded == dataclasses.replace(stats, sent_timestamp=stats.sent_timestamp or None)
    assert decoded == decode_pipeline_stats_general(encode_pipeline_stats(stats))


def _items(stats: PipelineStats) -> list[tuple[int, int, bytes]]:
    """Split an encoded message into (type, declared length, value) by its item headers."""
    data = encode_pipeline_stats(stats)
    items = []
    pos = 16
    while pos < len(data):
        code = int.from_bytes(data[pos : pos + 2], "little")
        length = int.from_bytes(data[pos + 2 : pos + 10], "little")
        items.append((code, length, data[pos + 10 : pos + 10 + length]))
        pos += 10 + length
    return items


def _serialise(cargo: int, items: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(HEADER[:14]) + cargo.to_bytes(2, "little")
    for code, length, value in items:
        out += code.to_bytes(2, "little") + length.to_bytes(8, "little") + value
    return bytes(out)


item_types = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 99, 0xFFFF])


@st.composite
def mutated_messages(draw: st.DrawFn) -> bytes:
    items = _items(draw(stats_strategy))
    cargo = draw(st.sampled_from([6, 6, 6, 0, 1, 14, 15, 0xFFFF]))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["insert", "duplicate", "swap", "delete", "length", "type"]))
        index = draw(st.integers(0, len(items) - 1)) if items else 0
        if op == "insert":
            value = draw(st.binary(max_size=12))
            length = draw(st.sampled_from([len(value), *HUGE_LENGTHS]) | u64)
            items.insert(index, (draw(item_types), length, value))
        elif not items:
            continue
        elif op == "duplicate":
            items.insert(index, items[index])
        elif op == "swap":
            other = draw(st.integers(0, len(items) - 1))
            items[index], items[other] = items[other], items[index]
        elif op == "delete":
            del items[index]
        elif op == "length":
            code, _, value = items[index]
            near = st.integers(max(0, len(value) - 12), len(value) + 12)
            new_length = draw(st.sampled_from(HUGE_LENGTHS) | u64 | near)
            items[index] = (code, new_length, value)
        else:
            _, length, value = items[index]
            items[index] = (draw(item_types), length, value)
    data = bytearray(_serialise(cargo, items))
    for _ in range(draw(st.integers(0, 3))):
        if data:
            bit = draw(st.integers(0, len(data) * 8 - 1))
            data[bit // 8] ^= 1 << (bit % 8)
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    data += draw(st.binary(max_size=12))
    return bytes(data)


@settings(max_examples=EXAMPLES)
@given(mutated_messages())
def test_mutated_messages_only_raise_protocol_error(data: bytes) -> None:
    _check_stats_decoders(data)


@settings(max_examples=EXAMPLES)
@given(stats_strategy, st.data())
def test_any_length_field_set_huge_is_a_length_or_item_error(
    stats: PipelineStats, data: st.DataObject
) -> None:
    items = _items(stats)
    index = data.draw(st.integers(0, len(items) - 1))
    code, _, value = items[index]
    items[index] = (code, data.draw(st.sampled_from(HUGE_LENGTHS)), value)
    message = _serialise(6, items)
    outcome = _outcome(decode_pipeline_stats, message)
    # Positional items (first five) must have exact lengths; later ones overrun the buffer,
    # except item 13, which the decoder skips: its huge length only runs past the end.
    assert isinstance(outcome, tuple)
    assert outcome[0] == (MALFORMED_PAYLOAD_ITEM if index < 5 else MALFORMED_PAYLOAD_LENGTH)
    _check_stats_decoders(message)


# --- envelope ---------------------------------------------------------------------------


def _check_envelope(data: bytes) -> None:
    try:
        result = decode_envelope(data)
    except ProtocolError:
        return
    assert isinstance(result, Envelope)


plain_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
plain_data = st.recursive(
    plain_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

members = st.builds(
    MemberInfo,
    id=st.text(max_size=36),
    host=st.text(max_size=20),
    port=st.integers(0, 65535),
    state=st.sampled_from(["ONLINE", "RECOVERING", "OFFLINE", "ERROR", "UNREACHABLE"]),
    role=st.sampled_from(["PRIMARY", "SECONDARY", ""]),
    version=st.text(max_size=8),
    gcs_id=st.text(max_size=24),
)
envelopes = st.builds(
    Envelope,
    group=st.text(max_size=36),
    member=members,
    view_id=st.text(max_size=24),
    incarnation=u64,
    seq=u64,
    sent_us=u64,
    stats=st.binary(max_size=64),
    ext=st.dictionaries(st.text(max_size=6), plain_data, max_size=3),
)


@settings(max_examples=EXAMPLES)
@given(st.binary(max_size=200))
def test_envelope_random_bytes_only_raise_protocol_error(data: bytes) -> None:
    _check_envelope(data)


@settings(max_examples=EXAMPLES)
@given(plain_data)
def test_envelope_any_msgpack_value_only_raises_protocol_error(value: object) -> None:
    _check_envelope(msgpack.packb(value, use_bin_type=True))


@settings(max_examples=EXAMPLES // 2)  # the most expensive strategy to draw from
@given(envelopes)
def test_envelope_round_trips(envelope: Envelope) -> None:
    assert decode_envelope(encode_envelope(envelope)) == envelope


_BASE_MEMBER = MemberInfo(
    id="8a94f357-aab4-11df-86ab-c80aa9429562",
    host="db1",
    port=3306,
    state="ONLINE",
    role="PRIMARY",
    version="8.4.3",
    gcs_id="db1:33061",
)
_BASE_ENVELOPE = Envelope(
    group="aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
    member=_BASE_MEMBER,
    view_id="17000000000000000:3",
    incarnation=2**64 - 1,
    seq=7,
    sent_us=1781234567000000,
    stats=encode_pipeline_stats(PipelineStats(sent_timestamp=1781234567000000)),
)
# Fixed bases keep generation cheap; the mutations are what is being explored.
_BASE_ENVELOPES = [
    encode_envelope(_BASE_ENVELOPE),
    encode_envelope(
        dataclasses.replace(
            _BASE_ENVELOPE,
            ext={"lag": {"apply_us": 15, "q": [1, -2, 3.5]}, "x": [b"\x00", None, True]},
        )
    ),
    encode_envelope(dataclasses.replace(_BASE_ENVELOPE, stats=b"", group="", view_id="")),
]


@st.composite
def mutated_envelopes(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(_BASE_ENVELOPES)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "bomb"]))
        position = draw(st.integers(0, len(data)))
        if op == "flip" and position < len(data):
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            data = data[:position]
        elif op == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=6))
        elif op == "bomb":
            # array32 / map32 / bin32 / str32 / ext32 headers declaring huge sizes
            marker = draw(st.sampled_from([b"\xdd", b"\xdf", b"\xc6", b"\xdb", b"\xc9"]))
            data[position:position] = marker + b"\xff\xff\xff\xff"
    return bytes(data)


@settings(max_examples=EXAMPLES)
@given(mutated_envelopes())
def test_mutated_envelopes_only_raise_protocol_error(data: bytes) -> None:
    _check_envelope(data)
