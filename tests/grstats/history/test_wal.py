"""WAL records: torn tails and corrupt records are cut."""

from __future__ import annotations

import dataclasses
import struct
import zlib
from pathlib import Path

import msgpack

from grstats.core.records import FLOW_HISTORY_COLUMNS, HISTORY_COLUMNS, LAG_HISTORY_COLUMNS
from grstats.history.parquet import row_values
from grstats.history.wal import WAL_MAGIC, encode_record, repair_wal
from tests.grstats.history.rows import (
    sample_row,
    wal_file,
)


def test_repair_wal_cuts_torn_tail(tmp_path: Path) -> None:
    good = encode_record(sample_row(1)) + encode_record(sample_row(2))
    torn = encode_record(sample_row(3))[:-4]
    path = wal_file(tmp_path, "000000000001-aa", good + torn)
    scan = repair_wal(path)
    assert scan is not None
    assert [r.seq for r in scan.rows] == [1, 2]
    assert path.stat().st_size == len(WAL_MAGIC) + len(good)


def test_repair_wal_skips_a_crc_mismatch_in_the_middle_and_reads_on(tmp_path: Path) -> None:
    # issue 21: samples are independent, one bad record must not cost the ones after it
    records = [encode_record(sample_row(seq)) for seq in range(1, 6)]
    bad = bytearray(records[2])
    bad[-1] ^= 0x01  # payload byte: length fine, CRC wrong
    data = b"".join([*records[:2], bytes(bad), *records[3:]])
    path = wal_file(tmp_path, "000000000001-bb", data)
    kept: list[Path] = []
    scan = repair_wal(path, keep=kept.append)
    assert scan is not None
    assert [r.seq for r in scan.rows] == [1, 2, 4, 5]
    assert (scan.damaged, scan.damaged_bytes) == (1, len(records[2]))
    assert kept == [path]
    assert path.read_bytes() == WAL_MAGIC + data  # never cut past the damage


def test_a_record_written_before_the_lag_columns_reads_with_null_lag(tmp_path: Path) -> None:
    # an older daemon's record: the values up to flow_control_mode only
    names = [name for name, _ in HISTORY_COLUMNS]
    old_values = list(row_values(sample_row(1)))[: names.index(LAG_HISTORY_COLUMNS[0])]
    payload = msgpack.packb(old_values, use_bin_type=True)
    record = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    path = wal_file(tmp_path, "000000000001-cc", record + encode_record(sample_row(2)))
    scan = repair_wal(path)
    assert scan is not None
    assert [r.seq for r in scan.rows] == [1, 2]
    assert scan.rows[0].apply_lag_seconds is None
    assert scan.rows[0] == sample_row(1)


def test_a_record_written_before_the_flow_columns_reads_with_null_figures(
    tmp_path: Path,
) -> None:
    # an issue-10 daemon's record: the values up to the lag columns
    new = dataclasses.replace(sample_row(1), apply_lag_seconds=1.5)
    values = list(row_values(new))
    first_flow = [name for name, _ in HISTORY_COLUMNS].index(FLOW_HISTORY_COLUMNS[0][0])
    payload = msgpack.packb(values[:first_flow], use_bin_type=True)
    record = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    flowing = dataclasses.replace(sample_row(2), fc_throttling=1, fc_bottleneck="certifier")
    path = wal_file(tmp_path, "000000000001-dd", record + encode_record(flowing))
    scan = repair_wal(path)
    assert scan is not None
    assert scan.rows[0] == new  # lag kept, every fc_* None
    assert scan.rows[0].fc_throttling is None
    assert (scan.rows[1].fc_throttling, scan.rows[1].fc_bottleneck) == (1, "certifier")
