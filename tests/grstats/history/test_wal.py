"""WAL records: torn tails and corrupt records are cut."""

from __future__ import annotations

from pathlib import Path

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


def test_repair_wal_stops_at_crc_mismatch_in_the_middle(tmp_path: Path) -> None:
    records = [encode_record(sample_row(seq)) for seq in range(1, 6)]
    bad = bytearray(records[2])
    bad[-1] ^= 0x01  # payload byte: length fine, CRC wrong
    path = wal_file(tmp_path, "000000000001-bb", b"".join([*records[:2], bytes(bad), *records[3:]]))
    scan = repair_wal(path)
    assert scan is not None
    assert [r.seq for r in scan.rows] == [1, 2]
    assert path.stat().st_size == len(WAL_MAGIC) + len(records[0]) + len(records[1])
