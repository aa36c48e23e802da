"""The SQL endpoint shows the rows still in the WAL (between flushes), once each.

Strategy: a real `HistoryWriter` (flush interval one hour, so nothing is
flushed unless the test says so) records rows; the endpoint runs in this
process on its own loop and PyMySQL asks it.  WAL files with a torn last
record, a damaged record, or a segment already written beside them are made
by hand with the writer's own record codec.  Expected values are written by
hand from the rows recorded.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from grstats.history.parquet import rows_to_table, write_segments
from grstats.history.tail import WalTail
from grstats.history.wal import encode_record, wal_id
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.sql_inprocess import Running, serve
from tests.grstats.history.rows import new_writer, parts, sample_row, wal_file

pytestmark = pytest.mark.faults

PASSWORD = "s3cret"
INCARNATION = 2**63 + 5  # sample_row's
_DAY = dt.date(2026, 11, 20)  # sample_row's day (MIDNIGHT_US)
QUERY = (
    "SELECT seq, member_id, incarnation, count_transactions_checked, date "
    "FROM grstats.history ORDER BY seq"
)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    yield from serve(
        SqlOptions(
            port=0,
            password_hash=native_password_hash(PASSWORD),
            history_dir=str(tmp_path),
            query_timeout=10.0,
        )
    )


def _rows(port: int) -> list[tuple[object, ...]]:
    with (
        pymysql.connect(
            host="127.0.0.1", port=port, user="grstats", password=PASSWORD, read_timeout=30
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(QUERY)
        return list(cur.fetchall())


def _expected(*seqs: int) -> list[tuple[object, ...]]:
    # sample_row(seq): sampled at 2026-11-20 00:00:00 UTC + seq s, checked = 10 * seq
    return [(s, "m-1", INCARNATION, 10 * s, _DAY) for s in seqs]


async def _poll(port: int, count: int, deadline_s: float = 20.0) -> list[tuple[object, ...]]:
    # the writer fsyncs its buffer about once a second: wait for that, not for a flush
    end = time.monotonic() + deadline_s
    while True:
        got = await asyncio.to_thread(_rows, port)
        if len(got) >= count or time.monotonic() > end:
            return got
        await asyncio.sleep(0.2)


async def test_a_recorded_row_shows_before_any_flush_and_once_after_it(
    running: Running, tmp_path: Path
) -> None:
    writer = new_writer(tmp_path, flush_interval_s=3600.0)
    await writer.start()
    try:
        for seq in (1, 2):
            writer.record(sample_row(seq))
        assert await _poll(running.port, 2) == _expected(1, 2)
        writer.record(sample_row(3))  # the same WAL file, grown: its new record is read
        assert await _poll(running.port, 3) == _expected(1, 2, 3)
        assert parts(tmp_path) == []  # shown from the WAL: nothing is in Parquet yet
        await writer.flush()
        assert parts(tmp_path) != []
        assert await asyncio.to_thread(_rows, running.port) == _expected(1, 2, 3)
        writer.record(sample_row(4))  # a new WAL file after the flush
        assert await _poll(running.port, 4) == _expected(1, 2, 3, 4)
    finally:
        await writer.close()
    assert await asyncio.to_thread(_rows, running.port) == _expected(1, 2, 3, 4)


def test_a_torn_last_record_ends_the_tail_without_an_error(
    running: Running, tmp_path: Path
) -> None:
    records = b"".join(encode_record(sample_row(seq)) for seq in (1, 2, 3))
    torn = encode_record(sample_row(4))[:-5]  # an append cut short: its last 5 bytes missing
    wal_file(tmp_path, "wtorn0000001-000000000001-0a", records + torn)
    assert _rows(running.port) == _expected(1, 2, 3)


def test_a_torn_record_completed_later_is_read_then(tmp_path: Path) -> None:
    record = encode_record(sample_row(2))
    path = wal_file(tmp_path, "wgrow0000001-000000000001-0f", encode_record(sample_row(1)))
    with path.open("ab") as f:
        f.write(record[:-5])  # an append under way
    tail = WalTail(tmp_path)
    assert tail.table().column("seq").to_pylist() == [1]
    with path.open("ab") as f:
        f.write(record[-5:])
    assert tail.table().column("seq").to_pylist() == [1, 2]
    assert tail.damaged == 0


def test_a_damaged_record_costs_only_itself(running: Running, tmp_path: Path) -> None:
    records = [encode_record(sample_row(seq)) for seq in (1, 2, 3)]
    bad = bytearray(records[1])
    bad[-3] ^= 0xFF  # its CRC no longer checks out
    wal_file(tmp_path, "wbad00000001-000000000001-0b", records[0] + bytes(bad) + records[2])
    assert _rows(running.port) == _expected(1, 3)  # what the writer's segment will hold


def test_a_wal_file_whose_segment_exists_is_not_read_twice(
    running: Running, tmp_path: Path
) -> None:
    # a flush between the segment's rename and the WAL file's deletion
    done = wal_file(
        tmp_path,
        "wdone0000001-000000000001-0c",
        b"".join(encode_record(sample_row(seq)) for seq in (1, 2)),
    )
    write_segments(tmp_path, rows_to_table([sample_row(1), sample_row(2)]), segment_id=wal_id(done))
    wal_file(tmp_path, "wdone0000001-000000000002-0d", encode_record(sample_row(3)))
    assert _rows(running.port) == _expected(1, 2, 3)
    done.unlink()  # the flush ends
    assert _rows(running.port) == _expected(1, 2, 3)


def test_past_its_byte_bound_the_tail_reads_the_newest_files_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    one = len(encode_record(sample_row(1)))
    for n, seq in enumerate((1, 2, 3), start=1):
        wal_file(tmp_path, f"wbnd00000001-{n:012d}-1{n}", encode_record(sample_row(seq)))
    tail = WalTail(tmp_path, max_bytes=2 * one)  # room for two files of one record
    assert tail.table().column("seq").to_pylist() == [2, 3]
    assert tail.skipped == 1
