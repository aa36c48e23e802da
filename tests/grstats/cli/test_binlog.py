"""`grstats binlog` (scan, the default, and decode) through the real CLI group.

Synthetic relay logs are built here with struct and zlib.crc32 from the
documented layout; real logs come from tests/protocol/binlog_vectors.
Expected percentiles are nearest-rank values computed here from the delays
the test chose.
"""

from __future__ import annotations

import csv
import io
import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from grstats.cli.main import main

VECTORS = Path(__file__).resolve().parents[3] / "tests" / "protocol" / "binlog_vectors"
SOURCE_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SOURCE_B = "9a1b2c3d-0000-4000-8000-00000000000b"
BASE_US = 1_763_900_000_000_000  # 2025-11-23T12:13:20Z


def _event(
    event_type: int, body: bytes, timestamp: int = 1_763_900_000, server_id: int = 7
) -> bytes:
    size = 19 + len(body) + 4
    raw = struct.pack("<IBIIIH", timestamp, event_type, server_id, size, 0, 0) + body
    return raw + struct.pack("<I", zlib.crc32(raw))


def _fde() -> bytes:
    body = struct.pack("<H", 4) + b"8.0.40".ljust(50, b"\0") + struct.pack("<I", 0) + bytes([19])
    return _event(15, body + bytes(41) + bytes([1]))


def _gtid_body(sid: str, gno: int, immediate: int, original: int, length: int) -> bytes:
    body = bytes([0]) + bytes.fromhex(sid.replace("-", "")) + struct.pack("<q", gno)
    body += bytes([2]) + struct.pack("<qq", gno - 1, gno)
    if original != immediate:
        body += (immediate | 1 << 55).to_bytes(7, "little") + original.to_bytes(7, "little")
    else:
        body += immediate.to_bytes(7, "little")
    body += bytes([length]) if length < 251 else b"\xfc" + length.to_bytes(2, "little")
    return body + struct.pack("<I", 80040)


def _transaction(sid: str, gno: int, immediate: int, original: int) -> bytes:
    rows = _event(30, bytes(300)) + _event(16, struct.pack("<Q", gno))
    length = 0
    for _ in range(3):  # the length's own width is part of the length
        gtid = _event(33, _gtid_body(sid, gno, immediate, original, length))
        length = len(gtid) + len(rows)
    return _event(33, _gtid_body(sid, gno, immediate, original, length)) + rows


def _relay_log(path: Path, delays: list[tuple[str, int]]) -> Path:
    """One transaction per (source, delay µs); delay -1 means original 0 (pre-8.0 source)."""
    data = b"\xfebin" + _fde()
    for i, (sid, delay) in enumerate(delays):
        immediate = BASE_US + i * 1_000_000
        original = 0 if delay < 0 else immediate - delay
        data += _transaction(sid, i + 1, immediate, original)
    path.write_bytes(data)
    return path


def _run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(main, ["binlog", *args], input=stdin)


def _nearest_rank(values: list[int], p: int) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * p / 100)) - 1]


def test_file_argument_defaults_to_scan(tmp_path: Path) -> None:
    log = _relay_log(tmp_path / "relay-bin.000001", [(SOURCE_A, 1500), (SOURCE_A, 2500)])
    default = _run("--format", "json", str(log))
    explicit = _run("scan", "--format", "json", str(log))
    assert default.exit_code == 0, default.output
    assert default.output == explicit.output
    rows = [json.loads(line) for line in default.output.splitlines()]
    assert [r["hop_delay_us"] for r in rows] == [1500, 2500]
    assert [r["gtid"] for r in rows] == [f"{SOURCE_A}:1", f"{SOURCE_A}:2"]
    assert all(r["transaction_length"] == r["span"] for r in rows)


def test_original_timestamp_zero_gives_no_delay_and_says_why(tmp_path: Path) -> None:
    log = _relay_log(tmp_path / "relay-bin.000001", [(SOURCE_A, -1)])
    (row,) = [json.loads(line) for line in _run("--format", "json", str(log)).output.splitlines()]
    assert row["original_commit_timestamp"] == 0
    assert row["hop_delay_us"] is None
    assert "predates MySQL 8.0.1" in row["note"]
    table = _run(str(log)).output
    assert "0 (unknown)" in table
    assert "unknown" in table.splitlines()[1]


def test_summary_percentiles_per_source_match_nearest_rank(tmp_path: Path) -> None:
    delays_a = [1000 + 37 * i for i in range(120)]
    delays_b = [50_000 + 1013 * i for i in range(40)]
    plan = [(SOURCE_A, d) for d in delays_a] + [(SOURCE_B, d) for d in delays_b] + [(SOURCE_B, -1)]
    log = _relay_log(tmp_path / "relay-bin.000002", plan)
    result = _run("--summary", "--format", "json", str(log))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["transactions"], summary["original_unknown"]) == (161, 1)
    by_source = {row["key"]: row for row in summary["by_source"]}
    for sid, delays in ((SOURCE_A, delays_a), (SOURCE_B, delays_b)):
        row = by_source[sid]
        assert row["with_delay"] == len(delays)
        assert row["max_us"] == max(delays)
        for p in (50, 95, 99):
            expected = _nearest_rank(delays, p)
            assert abs(row[f"p{p}_us"] - expected) <= expected * 0.008, p
    assert by_source[SOURCE_B]["transactions"] == 41
    assert sum(row["transactions"] for row in summary["by_minute"]) == 161


def test_since_and_until_filter_on_the_immediate_commit_time(tmp_path: Path) -> None:
    log = _relay_log(tmp_path / "relay-bin.000003", [(SOURCE_A, 10)] * 5)
    since, until = str(BASE_US + 1_000_000), "2025-11-23T12:13:24Z"  # the 2nd to the 4th
    result = _run("--format", "json", "--since", since, "--until", until, str(log))
    assert [json.loads(line)["gtid"][-1] for line in result.output.splitlines()] == ["2", "3", "4"]


def test_csv_has_a_header_and_one_row_per_transaction(tmp_path: Path) -> None:
    log = _relay_log(tmp_path / "relay-bin.000004", [(SOURCE_A, 7), (SOURCE_B, 9)])
    rows = list(csv.DictReader(io.StringIO(_run("--format", "csv", str(log)).output)))
    assert [r["hop_delay_us"] for r in rows] == ["7", "9"]


def test_real_logs_in_order_keep_their_lengths_and_spans() -> None:
    files = [
        VECTORS / "files" / "mysql-enum-string-set.000001",
        VECTORS / "files" / "json-opaque.binlog",
    ]
    result = _run("--format", "json", *map(str, files))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 8
    assert [r["gtid"] for r in rows[-3:]] == ["ANONYMOUS"] * 3
    assert all(r["transaction_length"] == r["span"] and r["hop_delay_us"] == 0 for r in rows)


def test_truncated_log_exits_1_with_reason_and_offset() -> None:
    result = _run(str(VECTORS / "files" / "binlog_truncated_prev_gtid_event.000001"))
    assert result.exit_code == 1
    assert "Event truncated at offset 120" in result.output


def test_missing_log_exits_2(tmp_path: Path) -> None:
    result = _run(str(tmp_path / "nope.000001"))
    assert result.exit_code == 2


def _real_event(name: str, event_type: int) -> bytes:
    data = (VECTORS / "files" / name).read_bytes()
    pos = 4
    while data[pos + 4] != event_type:
        pos += struct.unpack_from("<I", data, pos + 9)[0]
    return data[pos : pos + struct.unpack_from("<I", data, pos + 9)[0]]


def test_decode_whole_real_event_as_json() -> None:
    event = _real_event("binlog_transaction_with_GTID_TAG.000001", 42)
    result = _run("decode", "--format", "json", event.hex())
    assert result.exit_code == 0, result.output
    fields = json.loads(result.output)
    assert fields["event_type"] == 42
    assert fields["checksum_ok"] is True
    assert fields["gtid"] == "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3"
    assert fields["tag"] == "mytag"
    assert fields["next_position"] == 328
    assert fields["transaction_length"] == 296


def test_decode_body_of_gtid_from_stdin() -> None:
    vector = json.loads((VECTORS / "bodies.json").read_text())[0]
    result = _run("decode", "--body-of", "gtid", "--format", "json", "-", stdin=vector["body_hex"])
    fields = json.loads(result.output)
    assert (fields["original_commit_timestamp"], fields["immediate_server_version"]) == (0, 80019)
    assert "event_size" not in fields


def test_decode_table_shows_utc_text() -> None:
    event = _real_event("mysql-enum-string-set.000001", 33)
    output = _run("decode", event.hex()).output
    assert "2022-03-13T17:39:51.638429Z" in output


def test_decode_malformed_event_exits_1_with_offset() -> None:
    event = bytearray(_real_event("mysql-enum-string-set.000001", 33))
    event[40] ^= 1
    result = _run("decode", "--checksum", "crc32", bytes(event).hex())
    assert result.exit_code == 1
    assert "Event crc check failed at offset 75" in result.output


def test_decode_bad_hex_exits_2() -> None:
    assert _run("decode", "abc").exit_code == 2


def test_help_shows_examples() -> None:
    output = _run("--help").output
    assert "grstats binlog --summary" in output
    assert "decode" in output and "scan" in output


def test_summary_table_lists_sources_and_minutes_in_ms(tmp_path: Path) -> None:
    log = _relay_log(
        tmp_path / "relay-bin.000005", [(SOURCE_A, 2000), (SOURCE_A, 4000), (SOURCE_B, -1)]
    )
    result = _run("--summary", str(log))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "original unknown (pre-8.0.1 source): 1" in lines[0]
    (row_a,) = [line for line in lines if line.startswith(SOURCE_A)]
    assert row_a.split()[1:] == ["2", "2", "2.000", "4.000", "4.000", "4.000"]
    (row_b,) = [line for line in lines if line.startswith(SOURCE_B)]
    assert row_b.split()[1:] == ["1", "0", "-", "-", "-", "-"]
    assert any(line.startswith("2025-11-23T12:13Z") for line in lines)
