"""protocol.binlog / protocol.binlog_stream against real server-written bytes.

Expected values come from peer projects' tests (bodies.json: go-mysql) and
from real binary logs (files.json: files from rust_mysql_common's and
mysql-binlog-connector-java's test data, each with its source), whose
expected fields were decoded by hand at fixed offsets, apart from this code.
Spans are re-derived here by walking the event sizes in the common headers.
"""

from __future__ import annotations

import contextlib
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from protocol import (
    BinlogScanner,
    FormatDescription,
    GtidEvent,
    GtidSet,
    ProtocolError,
    decode_body,
    decode_event,
    decode_event_header,
)

VECTORS = Path(__file__).parent / "binlog_vectors"
BODIES: list[dict[str, Any]] = json.loads((VECTORS / "bodies.json").read_text())
FILES: list[dict[str, Any]] = json.loads((VECTORS / "files.json").read_text())
COMPLETE_FILES = [f for f in FILES if f["complete"]]
GTID_FIELDS = (
    "gtid",
    "sid",
    "gno",
    "gtid_flags",
    "tag",
    "last_committed",
    "sequence_number",
    "immediate_commit_timestamp",
    "original_commit_timestamp",
    "transaction_length",
    "immediate_server_version",
    "original_server_version",
)


def _walk(data: bytes) -> list[tuple[int, int, int]]:
    """(position, type, size) of every event, from the headers alone."""
    out = []
    pos = 4
    while pos + 19 <= len(data):
        event_type = data[pos + 4]
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append((pos, event_type, size))
        pos += size
    return out


def _scan(data: bytes, chunk: int, **kwargs: Any) -> list[Any]:
    scanner = BinlogScanner(**kwargs)
    events = []
    for start in range(0, len(data), chunk):
        events += scanner.feed(data[start : start + chunk])
    scanner.finish()
    return events


@pytest.mark.parametrize("vector", BODIES, ids=lambda v: v["name"])
def test_peer_body_vector_decodes_to_its_expected_values(vector: dict[str, Any]) -> None:
    body = decode_body(vector["event_type"], bytes.fromhex(vector["body_hex"]))
    for key, expected in vector["expected"].items():
        got = str(body) if key == "gtid_set" else getattr(body, key)
        assert got == expected, key


@pytest.mark.parametrize("vector", BODIES, ids=lambda v: v["name"])
def test_every_prefix_of_a_body_decodes_or_raises_protocol_error(vector: dict[str, Any]) -> None:
    body = bytes.fromhex(vector["body_hex"])
    for cut in range(len(body)):
        with contextlib.suppress(ProtocolError):
            decode_body(vector["event_type"], body[:cut])


def test_classic_gtid_body_stops_cleanly_at_each_historical_length() -> None:
    full = bytes.fromhex(BODIES[2]["body_hex"])  # an 8.0.19 body
    v56 = decode_body(33, full[:25])
    assert (v56.gno, v56.last_committed) == (119, None)  # type: ignore[union-attr]
    v57 = decode_body(33, full[:42])
    assert (v57.sequence_number, v57.immediate_commit_timestamp) == (121, None)  # type: ignore[union-attr]
    v801 = decode_body(33, full[:49])
    assert v801.original_commit_timestamp == 1583813191872618  # type: ignore[union-attr]
    assert v801.transaction_length is None  # type: ignore[union-attr]
    v802 = decode_body(33, full[:52])
    assert (v802.transaction_length, v802.immediate_server_version) == (963, None)  # type: ignore[union-attr]
    with pytest.raises(ProtocolError) as err:
        decode_body(33, full[:45])  # inside the immediate timestamp
    assert err.value.offset == 45


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
@pytest.mark.parametrize("entry", COMPLETE_FILES, ids=lambda e: e["file"])
def test_real_file_transactions_decode_to_their_expected_values(
    entry: dict[str, Any], chunk: int
) -> None:
    data = (VECTORS / "files" / entry["file"]).read_bytes()
    gtids = [e for e in _scan(data, chunk) if isinstance(e.body, GtidEvent)]
    assert len(gtids) == len(entry["transactions"])
    for scanned, expected in zip(gtids, entry["transactions"], strict=True):
        assert scanned.position == expected["start"]
        assert scanned.header.server_id == expected["server_id"]
        for key in GTID_FIELDS:
            want = expected.get(key, "" if key == "tag" else None)
            assert getattr(scanned.body, key) == want, key


@pytest.mark.parametrize("entry", COMPLETE_FILES, ids=lambda e: e["file"])
def test_transaction_length_equals_the_span_in_the_real_file(entry: dict[str, Any]) -> None:
    data = (VECTORS / "files" / entry["file"]).read_bytes()
    events = _walk(data)
    ends_transaction = {3, 4, 15, 33, 34, 35, 42}
    for trx in entry["transactions"]:
        if trx.get("transaction_length") is None:
            continue
        following = [pos for pos, t, _ in events if pos > trx["start"] and t in ends_transaction]
        end = following[0] if following else len(data)
        assert trx["transaction_length"] == end - trx["start"]


def test_eight_oh_files_carry_lengths_and_timestamps_matching_their_headers() -> None:
    checked = 0
    for entry in COMPLETE_FILES:
        for trx in entry["transactions"]:
            if trx.get("immediate_commit_timestamp") is not None:
                assert trx["immediate_commit_timestamp"] // 1_000_000 == trx["header_timestamp"]
                checked += 1
    assert checked >= 15


def test_tagged_file_matches_rust_mysql_common_assertions() -> None:
    data = (VECTORS / "files" / "binlog_transaction_with_GTID_TAG.000001").read_bytes()
    events = _scan(data, 1 << 20)
    previous = [e.body for e in events if isinstance(e.body, GtidSet)]
    assert previous == [GtidSet.parse("55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2")]
    (tagged,) = [e.body for e in events if isinstance(e.body, GtidEvent)]
    assert (tagged.event_type, tagged.tag, tagged.gno) == (42, "mytag", 3)
    assert tagged.gtid == "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3"


def test_untagged_previous_gtids_file_matches_rust_mysql_common_assertions() -> None:
    data = (VECTORS / "files" / "binlog_transaction_previous_GTID_no_tag.000001").read_bytes()
    previous = [e.body for e in _scan(data, 3) if isinstance(e.body, GtidSet)]
    assert [str(s) for s in previous] == ["b9b88c66-0755-11f1-9899-4a9da94c4d71:1-2"]


@pytest.mark.parametrize(
    ("name", "offset"),
    [("binlog_truncated_event.000001", 4), ("binlog_truncated_prev_gtid_event.000001", 120)],
)
def test_truncated_real_files_fail_with_the_offset_of_the_cut_event(name: str, offset: int) -> None:
    data = (VECTORS / "files" / name).read_bytes()
    with pytest.raises(ProtocolError) as err:
        _scan(data, 5)
    assert err.value.reason == "Event truncated"
    assert err.value.offset == offset


def _event_at(name: str, event_type: int, nth: int = 0) -> bytes:
    data = (VECTORS / "files" / name).read_bytes()
    spans = [(p, s) for p, t, s in _walk(data) if t == event_type]
    pos, size = spans[nth]
    return data[pos : pos + size]


def test_whole_real_event_with_crc_decodes_and_verifies() -> None:
    event = _event_at("mysql-enum-string-set.000001", 33, 2)
    decoded = decode_event(event)
    assert decoded.checksum_ok is True
    assert decoded.header is not None
    assert (decoded.header.event_size, decoded.header.next_position) == (79, 870)
    assert isinstance(decoded.body, GtidEvent)
    assert decoded.body.gtid == "93e95066-a2f4-11ec-9b69-9657f0ae95e2:3"


def test_flipped_byte_fails_the_crc_check_in_crc32_mode() -> None:
    event = bytearray(_event_at("mysql-enum-string-set.000001", 33))
    event[30] ^= 0x40
    with pytest.raises(ProtocolError) as err:
        decode_event(bytes(event), "crc32")
    assert (err.value.reason, err.value.offset) == ("Event crc check failed", 75)


def test_event_without_checksum_decodes_in_auto_and_none_modes() -> None:
    event = _event_at("mysql-bin.checksum-none", 34)
    for mode in ("auto", "none"):
        decoded = decode_event(event, mode)
        assert decoded.checksum_ok is None
        assert isinstance(decoded.body, GtidEvent)
        assert decoded.body.sequence_number == 1


def test_format_description_of_a_log_in_use_verifies_with_the_flag_cleared() -> None:
    event = _event_at("json-opaque.binlog", 15)
    assert event[17] & 1 == 1  # copied while in use; the server sums as if the flag were clear
    raw_crc_matches = zlib.crc32(event[:-4]) == struct.unpack("<I", event[-4:])[0]
    assert not raw_crc_matches
    decoded = decode_event(event)
    assert decoded.checksum_ok is True
    assert isinstance(decoded.body, FormatDescription)
    assert (decoded.body.server_version, decoded.body.checksum_alg) == ("9.0.1", 1)


def test_event_size_below_the_header_is_rejected_with_its_offset() -> None:
    header = struct.pack("<IBIIIH", 0, 2, 1, 18, 0, 0)
    with pytest.raises(ProtocolError) as err:
        decode_event_header(header + b"\0")
    assert err.value.offset == 9
    with pytest.raises(ProtocolError) as err:
        _scan(b"\xfebin" + header, 64)
    assert err.value.offset == 13


def test_bad_magic_is_rejected_at_offset_zero() -> None:
    with pytest.raises(ProtocolError) as err:
        _scan(b"\xfebim" + bytes(40), 2)
    assert (err.value.reason, err.value.offset) == ("File is not a binary log file", 0)


def _event(event_type: int, body: bytes, *, crc: bool = True) -> bytes:
    size = 19 + len(body) + (4 if crc else 0)
    raw = struct.pack("<IBIIIH", 1, event_type, 1, size, 0, 0) + body
    return raw + struct.pack("<I", zlib.crc32(raw)) if crc else raw


def test_large_skipped_event_streams_through_a_small_buffer_bound() -> None:
    row = _event(30, bytes(range(256)) * 20_000)  # 5 MB row event
    gtid = _event(33, bytes.fromhex(BODIES[2]["body_hex"]))
    data = b"\xfebin" + row + gtid
    events = _scan(data, 65_536, checksum="crc32", max_event_size=1024)
    assert [e.position for e in events] == [4 + len(row)]
    corrupt = bytearray(data)
    corrupt[4 + 3_000_000] ^= 1
    with pytest.raises(ProtocolError) as err:
        _scan(bytes(corrupt), 65_536, checksum="crc32", max_event_size=1024)
    assert (err.value.reason, err.value.offset) == ("Event crc check failed", 4 + len(row) - 4)


def test_decoded_event_above_the_bound_is_refused() -> None:
    gtid = _event(33, bytes.fromhex(BODIES[2]["body_hex"]) + bytes(2000))
    with pytest.raises(ProtocolError) as err:
        _scan(b"\xfebin" + gtid, 100, checksum="crc32", max_event_size=1024)
    assert err.value.reason.startswith("Event too big")


def _chunked(scanner: BinlogScanner, data: bytes, chunk: int) -> list[Any]:
    events = []
    for start in range(0, len(data), chunk):
        events += scanner.feed(data[start : start + chunk])
    return events


def test_skipped_event_cut_at_every_byte_verifies_and_counts_what_it_summed() -> None:
    row = _event(30, bytes(range(40)))  # not decoded: streamed whenever it straddles chunks
    gtid = _event(33, bytes.fromhex(BODIES[2]["body_hex"]))
    data = b"\xfebin" + row + gtid
    for chunk in range(1, len(data) + 1):
        scanner = BinlogScanner(checksum="crc32")
        assert [e.position for e in _chunked(scanner, data, chunk)] == [4 + len(row)], chunk
        scanner.finish()
        assert scanner.events_seen == 2
        assert scanner.bytes_checksummed == len(row) - 4 + len(gtid) - 4, chunk
        # a header byte, a body byte, a byte of the stored checksum
        for flipped in (4, 4 + 30, 4 + len(row) - 1):
            corrupt = bytearray(data)
            corrupt[flipped] ^= 0x10
            with pytest.raises(ProtocolError) as err:
                _scan(bytes(corrupt), chunk, checksum="crc32")
            assert (err.value.reason, err.value.offset) == (
                "Event crc check failed",
                4 + len(row) - 4,
            ), (chunk, flipped)


def test_log_ending_inside_a_skipped_event_is_truncated_at_its_start() -> None:
    row = _event(30, bytes(range(40)))
    data = b"\xfebin" + _event(30, b"", crc=False) + row[:30]
    for chunk in range(1, len(data) + 1):
        scanner = BinlogScanner(checksum="none")
        assert _chunked(scanner, data, chunk) == []
        assert scanner.events_seen == 1  # the bare 19-byte event; the cut one is not seen
        with pytest.raises(ProtocolError) as err:
            scanner.finish()
        assert (err.value.reason, err.value.offset) == ("Event truncated", 4 + 19), chunk
