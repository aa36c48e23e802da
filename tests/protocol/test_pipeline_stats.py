"""The stats message codec against the golden vectors and PROTOCOL.md section 6.1."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from protocol import (
    MALFORMED_FIXED_HEADER,
    MALFORMED_PAYLOAD_ITEM,
    MALFORMED_PAYLOAD_LENGTH,
    FixedHeader,
    PipelineStats,
    ProtocolError,
    as_ps_unsigned,
    decode_fixed_header,
    decode_pipeline_stats,
    encode_pipeline_stats,
)
from protocol.pipeline_stats_decode import decode_pipeline_stats_general
from tests.fixtures.paths import load_vectors
from tests.protocol.vectors import (
    DEFAULTS,
    ITEMS,
    fields_of,
    item_layout,
    stats_of,
    timestamp_of,
)


def _encode_vectors() -> list[Any]:
    return [pytest.param(v, id=v["name"]) for v in load_vectors("pipeline_stats_encode.json")]


def _outcome(decode: Any, data: bytes) -> PipelineStats | tuple[str, int | None]:
    try:
        result: PipelineStats = decode(data)
    except ProtocolError as exc:
        return (exc.reason, exc.offset)
    return result


def _malformed_vectors() -> list[Any]:
    return [
        pytest.param(v, id=v["name"]) for v in load_vectors("pipeline_stats_decode_malformed.json")
    ]


# --- encoder ---------------------------------------------------------------------------


@pytest.mark.parametrize("vector", _encode_vectors())
def test_encode_writes_vector_hex(vector: dict[str, Any]) -> None:
    stats = stats_of(vector, sent_timestamp=vector["sent_timestamp"])
    assert encode_pipeline_stats(stats).hex() == vector["hex"]


@pytest.mark.parametrize("vector", _encode_vectors())
def test_encode_without_timestamp_writes_8_0_message(vector: dict[str, Any]) -> None:
    stats = stats_of(vector, sent_timestamp=None)
    assert encode_pipeline_stats(stats).hex() == vector["hex_without_sent_timestamp"]


@pytest.mark.parametrize("vector", _encode_vectors())
def test_encode_length_is_212_plus_strings(vector: dict[str, Any]) -> None:
    stats = stats_of(vector, sent_timestamp=vector["sent_timestamp"])
    assert len(encode_pipeline_stats(stats)) == vector["length"]


def test_encode_header_is_mysqls_fixed_header() -> None:
    encoded = encode_pipeline_stats(PipelineStats(sent_timestamp=1))
    assert encoded[:16].hex() == "01000000100010000000000000000600"


def test_encode_flag_is_ascii_digit() -> None:
    with_flag = encode_pipeline_stats(PipelineStats(transaction_gtids_present=True))
    without_flag = encode_pipeline_stats(PipelineStats(transaction_gtids_present=False))
    assert with_flag[-1:] == b"1"
    assert without_flag[-1:] == b"0"


@pytest.mark.parametrize(
    "stats",
    [
        pytest.param(PipelineStats(transactions_waiting_certification=2**31), id="int32_over"),
        pytest.param(PipelineStats(transactions_waiting_apply=-(2**31) - 1), id="int32_under"),
        pytest.param(PipelineStats(transactions_certified=2**63), id="int64_over"),
        pytest.param(PipelineStats(transactions_local_rollback=-(2**63) - 1), id="int64_under"),
        pytest.param(PipelineStats(flow_control_mode=256), id="mode_over_byte"),
        pytest.param(PipelineStats(flow_control_mode=-1), id="mode_negative"),
        pytest.param(PipelineStats(sent_timestamp=-1), id="timestamp_negative"),
        pytest.param(PipelineStats(sent_timestamp=2**64), id="timestamp_over_u64"),
        pytest.param(
            PipelineStats(transactions_committed_all_members="text"),  # type: ignore[arg-type]
            id="string_not_bytes",
        ),
    ],
)
def test_encode_rejects_value_outside_its_wire_type(stats: PipelineStats) -> None:
    with pytest.raises(ProtocolError):
        encode_pipeline_stats(stats)


# --- decoder: golden encode vectors ----------------------------------------------------


@pytest.mark.parametrize("vector", _encode_vectors())
def test_decode_vector_hex_gives_its_fields(vector: dict[str, Any]) -> None:
    decoded = decode_pipeline_stats(bytes.fromhex(vector["hex"]))
    assert decoded == stats_of(vector, sent_timestamp=timestamp_of(vector["sent_timestamp"]))


@pytest.mark.parametrize("vector", _encode_vectors())
def test_decode_8_0_message_has_no_timestamp(vector: dict[str, Any]) -> None:
    decoded = decode_pipeline_stats(bytes.fromhex(vector["hex_without_sent_timestamp"]))
    assert decoded == stats_of(vector, sent_timestamp=None)


@pytest.mark.parametrize("vector", _encode_vectors())
def test_fast_path_and_general_decoder_agree_on_vector(vector: dict[str, Any]) -> None:
    for key in ("hex", "hex_without_sent_timestamp"):
        data = bytes.fromhex(vector[key])
        assert decode_pipeline_stats(data) == decode_pipeline_stats_general(data)


def test_decode_accepts_bytearray_and_memoryview() -> None:
    data = encode_pipeline_stats(PipelineStats(transactions_certified=7, sent_timestamp=5))
    expected = PipelineStats(transactions_certified=7, sent_timestamp=5)
    assert decode_pipeline_stats(bytearray(data)) == expected
    assert decode_pipeline_stats(memoryview(data)) == expected


def test_decode_timestamp_zero_is_none() -> None:
    data = encode_pipeline_stats(PipelineStats(sent_timestamp=0))
    assert decode_pipeline_stats(data).sent_timestamp is None


def test_decode_timestamp_max_u64_is_kept() -> None:
    data = encode_pipeline_stats(PipelineStats(sent_timestamp=2**64 - 1))
    assert decode_pipeline_stats(data).sent_timestamp == 2**64 - 1


# --- decoder: malformed vectors --------------------------------------------------------


@pytest.mark.parametrize("vector", _malformed_vectors())
def test_malformed_vector_decodes_as_hardened_mysql(vector: dict[str, Any]) -> None:
    expected = vector["expected"]
    data = bytes.fromhex(vector["hex"])
    if expected["error"]:
        with pytest.raises(ProtocolError) as caught:
            decode_pipeline_stats(data)
        assert caught.value.reason == expected["error_message"]
        assert expected["error_message"] in str(caught.value)
        assert f"offset {caught.value.offset}" in str(caught.value)
    else:
        decoded = decode_pipeline_stats(data)
        assert decoded == PipelineStats(
            **fields_of(expected["fields"]),
            sent_timestamp=timestamp_of(expected["sent_timestamp"]),
        )


@pytest.mark.parametrize("vector", _malformed_vectors())
def test_malformed_vector_same_through_general_decoder(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    assert _outcome(decode_pipeline_stats, data) == _outcome(decode_pipeline_stats_general, data)


@pytest.mark.parametrize("vector", _malformed_vectors())
def test_malformed_vector_fixed_header(vector: dict[str, Any]) -> None:
    expected = vector["expected"]
    data = bytes.fromhex(vector["hex"])
    if expected["error_message"] == MALFORMED_FIXED_HEADER:
        with pytest.raises(ProtocolError, match=MALFORMED_FIXED_HEADER):
            decode_fixed_header(data)
    else:
        assert decode_fixed_header(data) == FixedHeader(**expected["header"])


@pytest.mark.parametrize(
    ("name", "reason", "offset"),
    [
        # Offsets by hand: header 0..15, item 1 at 16, item 2 at 30, items 3-5 at 44/62/80,
        # item 6 at 98, item 7 at 116, item 8 at 134 in the reference message.
        ("empty_buffer", MALFORMED_FIXED_HEADER, 0),
        ("truncated_header_15_bytes", MALFORMED_FIXED_HEADER, 0),
        ("cargo_type_0", MALFORMED_FIXED_HEADER, 14),
        ("cargo_type_15", MALFORMED_FIXED_HEADER, 14),
        ("header_only", MALFORMED_PAYLOAD_ITEM, 16),
        ("truncated_after_first_item", MALFORMED_PAYLOAD_ITEM, 30),
        ("positional_items_1_and_2_swapped", MALFORMED_PAYLOAD_ITEM, 16),
        ("truncated_in_optional_item_value", MALFORMED_PAYLOAD_LENGTH, 98),
        ("negative_certified_length_4", MALFORMED_PAYLOAD_ITEM, 98),
        ("truncated_in_committed_string", MALFORMED_PAYLOAD_LENGTH, 134),
        ("string_length_all_ones", MALFORMED_PAYLOAD_LENGTH, 134),
    ],
)
def test_error_offset_is_start_of_failing_element(name: str, reason: str, offset: int) -> None:
    vector = next(
        v for v in load_vectors("pipeline_stats_decode_malformed.json") if v["name"] == name
    )
    with pytest.raises(ProtocolError) as caught:
        decode_pipeline_stats(bytes.fromhex(vector["hex"]))
    assert (caught.value.reason, caught.value.offset) == (reason, offset)


# --- decoder: every strict prefix ------------------------------------------------------


def _prefix_expectation(
    layout: list[tuple[int, int, int]], full: dict[str, Any], length: int
) -> tuple[str, int] | PipelineStats:
    """What section 6.1 says a prefix of `length` bytes decodes to, from the item layout."""
    if length < 16:
        return (MALFORMED_FIXED_HEADER, 0)
    for code, start, end in layout[:5]:
        if length < end:
            return (MALFORMED_PAYLOAD_ITEM, start)
        assert code <= 5
    values = dict(DEFAULTS)
    for code, _start, _end in layout[:5]:
        name = ITEMS[code][0]
        values[name] = full[name]
    for code, start, end in layout[5:]:
        if length - start < 10:
            break  # a partial item header is ignored
        if end > length:
            return (MALFORMED_PAYLOAD_LENGTH, start)
        name = ITEMS[code][0]
        values[name] = full[name]
    return PipelineStats(**values)


@pytest.mark.parametrize("vector", _encode_vectors())
@pytest.mark.parametrize("key", ["hex", "hex_without_sent_timestamp"])
def test_every_strict_prefix_decodes_as_section_6_1_says(vector: dict[str, Any], key: str) -> None:
    data = bytes.fromhex(vector[key])
    with_timestamp = key == "hex"
    full = fields_of(vector) | {"sent_timestamp": timestamp_of(vector["sent_timestamp"])}
    layout = item_layout(full, with_timestamp)
    assert layout[-1][2] == len(data)
    for length in range(len(data)):
        expected = _prefix_expectation(layout, full, length)
        try:
            outcome: tuple[str, int | None] | PipelineStats = decode_pipeline_stats(data[:length])
        except ProtocolError as exc:
            outcome = (exc.reason, exc.offset)
        assert outcome == expected, f"prefix of {length} bytes"


# --- decoder: trailing bytes -----------------------------------------------------------


@pytest.mark.parametrize("vector", _encode_vectors())
@pytest.mark.parametrize("extra", [1, 5, 9])
def test_fewer_than_10_trailing_bytes_are_ignored(vector: dict[str, Any], extra: int) -> None:
    data = bytes.fromhex(vector["hex"]) + b"\xff" * extra
    expected = stats_of(vector, sent_timestamp=timestamp_of(vector["sent_timestamp"]))
    assert decode_pipeline_stats(data) == expected


@pytest.mark.parametrize("vector", _encode_vectors())
def test_trailing_empty_unknown_item_is_skipped(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"]) + bytes(10)  # type 0, length 0
    expected = stats_of(vector, sent_timestamp=timestamp_of(vector["sent_timestamp"]))
    assert decode_pipeline_stats(data) == expected


@pytest.mark.parametrize("vector", _encode_vectors())
def test_trailing_item_header_claiming_bytes_is_a_length_error(vector: dict[str, Any]) -> None:
    message = bytes.fromhex(vector["hex"])
    data = message + bytes.fromhex("63000100000000000000")  # type 99, length 1, no value
    with pytest.raises(ProtocolError) as caught:
        decode_pipeline_stats(data)
    assert (caught.value.reason, caught.value.offset) == (MALFORMED_PAYLOAD_LENGTH, len(message))


# --- decoder: section 6.1 rules not covered by a vector --------------------------------


def _message(*items: tuple[int, bytes], cargo: int = 6) -> bytes:
    """A header plus the given (type, value) items, built by hand."""
    out = bytearray.fromhex("0100000010001000000000000000")
    out += cargo.to_bytes(2, "little")
    for code, value in items:
        out += code.to_bytes(2, "little") + len(value).to_bytes(8, "little") + value
    return bytes(out)


_POSITIONAL = (
    (1, (3).to_bytes(4, "little")),
    (2, (4).to_bytes(4, "little")),
    (3, (5).to_bytes(8, "little")),
    (4, (6).to_bytes(8, "little")),
    (5, (7).to_bytes(8, "little")),
)


def test_later_duplicate_of_optional_item_wins() -> None:
    data = _message(
        *_POSITIONAL,
        (11, b"\x00"),
        (11, b"\x07"),
    )
    assert decode_pipeline_stats(data).flow_control_mode == 7


def test_first_timestamp_item_is_the_one_reported() -> None:
    data = _message(
        *_POSITIONAL,
        (13, (111).to_bytes(8, "little")),
        (13, (222).to_bytes(8, "little")),
    )
    assert decode_pipeline_stats(data).sent_timestamp == 111


def test_first_timestamp_item_with_wrong_length_hides_later_ones() -> None:
    data = _message(
        *_POSITIONAL,
        (13, (111).to_bytes(4, "little")),
        (13, (222).to_bytes(8, "little")),
    )
    assert decode_pipeline_stats(data).sent_timestamp is None


def test_negative_counters_decode_as_twos_complement() -> None:
    data = _message(
        (1, b"\xff\xff\xff\xff"),
        (2, b"\x00\x00\x00\x80"),
        (3, b"\xff" * 8),
        (4, b"\x00" * 7 + b"\x80"),
        (5, b"\xfe" + b"\xff" * 7),
    )
    decoded = decode_pipeline_stats(data)
    assert (
        decoded.transactions_waiting_certification,
        decoded.transactions_waiting_apply,
        decoded.transactions_certified,
        decoded.transactions_applied,
        decoded.transactions_local,
    ) == (-1, -(2**31), -1, -(2**63), -2)


def test_fixed_size_optional_item_with_wrong_length_is_malformed_item() -> None:
    data = _message(*_POSITIONAL, (12, b"11"))
    with pytest.raises(ProtocolError) as caught:
        decode_pipeline_stats(data)
    assert (caught.value.reason, caught.value.offset) == (MALFORMED_PAYLOAD_ITEM, 98)


@pytest.mark.parametrize("length", [2**63, 2**64 - 1, 2**32])
@pytest.mark.parametrize("code", [8, 9, 13, 99])
def test_huge_length_is_a_length_error_not_an_allocation(code: int, length: int) -> None:
    header = code.to_bytes(2, "little") + length.to_bytes(8, "little")
    data = _message(*_POSITIONAL) + header + b"abc"
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match=MALFORMED_PAYLOAD_LENGTH):
            decode_pipeline_stats(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_positional_item_with_wrong_type_is_malformed_item() -> None:
    data = _message((1, b"\0" * 4), (2, b"\0" * 4), (3, b"\0" * 8), (6, b"\0" * 8), (5, b"\0" * 8))
    with pytest.raises(ProtocolError) as caught:
        decode_pipeline_stats(data)
    assert (caught.value.reason, caught.value.offset) == (MALFORMED_PAYLOAD_ITEM, 62)


@pytest.mark.parametrize("cargo", [1, 5, 14])
def test_valid_cargo_type_other_than_6_is_accepted(cargo: int) -> None:
    assert decode_pipeline_stats(_message(*_POSITIONAL, cargo=cargo)).transactions_local == 7


# --- P_S display -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, 0),
        (12345, 12345),
        (2**63 - 1, 2**63 - 1),
        (-1, 18446744073709551615),
        (-(2**31), 18446744071562067968),
        (-(2**63), 9223372036854775808),
    ],
)
def test_ps_shows_signed_values_as_unsigned_64_bit(value: int, shown: int) -> None:
    assert as_ps_unsigned(value) == shown


@pytest.mark.parametrize("vector", _encode_vectors())
@pytest.mark.parametrize("key", ["hex", "hex_without_sent_timestamp"])
def test_fast_paths_agree_with_general_decoder_on_near_canonical_messages(
    vector: dict[str, Any], key: str
) -> None:
    data = bytes.fromhex(vector[key])
    full = fields_of(vector) | {"sent_timestamp": vector["sent_timestamp"]}
    variants = [data + b"\x00" * extra for extra in (1, 9, 10, 18)]
    variants.append(data[:14] + b"\x05\x00" + data[16:])  # another valid cargo type
    for _code, start, _end in item_layout(full, key == "hex"):
        for type_value in (0, 13, 99):
            variants.append(data[:start] + type_value.to_bytes(2, "little") + data[start + 2 :])
        length = int.from_bytes(data[start + 2 : start + 10], "little")
        for new_length in (length - 1, length + 1, length + 10, 2**64 - 1):
            if new_length >= 0:
                field = new_length.to_bytes(8, "little")
                variants.append(data[: start + 2] + field + data[start + 10 :])
    for variant in variants:
        assert _outcome(decode_pipeline_stats, variant) == _outcome(
            decode_pipeline_stats_general, variant
        )
