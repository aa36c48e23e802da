"""History writer: WAL, replay, Parquet layout and settings, retention, crash safety."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from grstats.core.records import HISTORY_COLUMNS, HistoryRow
from grstats.history.writer import (
    WAL_MAGIC,
    HistoryError,
    HistoryWriter,
    encode_record,
    read_history,
    repair_wal,
    rows_to_table,
    write_segments,
)
from tests.grstats.history_crash_writer import make_row

CRASH_WRITER = Path(__file__).with_name("history_crash_writer.py")
US = 1_000_000
# 2026-11-20 00:00:00 UTC, computed by hand: 20777 days after the epoch
MIDNIGHT_US = 20_777 * 86_400 * US


def _row(
    seq: int, *, member: str = "m-1", at_us: int | None = None, group: str = "g"
) -> HistoryRow:
    return HistoryRow(
        group_name=group,
        member_id=member,
        member_host="db1",
        member_port=3306,
        member_state="ONLINE",
        member_role="PRIMARY",
        member_version="8.4.3",
        view_id="1700:3",
        incarnation=2**63 + 5,  # u64 above int64's range must survive
        seq=seq,
        sampled_at=MIDNIGHT_US + seq * US if at_us is None else at_us,
        count_transactions_in_queue=seq % 3,
        count_transactions_checked=10 * seq,
        count_conflicts_detected=seq // 2,
        count_transactions_rows_validating=40 + seq,
        count_transactions_remote_in_applier_queue=1,
        count_transactions_remote_applied=9 * seq,
        count_transactions_local_proposed=seq,
        count_transactions_local_rollback=0,
        transactions_committed_all_members="aaaa:1-9" if seq == 1 else None,
        last_conflict_free_transaction="aaaa:9" if seq == 1 else None,
        flow_control_mode=1,
    )


def _as_dict(row: HistoryRow) -> dict[str, object]:
    out: dict[str, object] = {name: getattr(row, name) for name, _ in HISTORY_COLUMNS}
    out["sampled_at"] = dt.datetime.fromtimestamp(row.sampled_at / US, dt.UTC)
    return out


def _writer(directory: Path, **kwargs: float) -> HistoryWriter:
    return HistoryWriter(directory, retention_days=36500, **kwargs)  # type: ignore[arg-type]


def _wal_file(directory: Path, name: str, records: bytes) -> Path:
    wal = directory / "wal"
    wal.mkdir(parents=True, exist_ok=True)
    path = wal / f"wal-{name}.log"
    path.write_bytes(WAL_MAGIC + records)
    return path


def _parts(directory: Path) -> list[Path]:
    return sorted(directory.glob("group=*/date=*/part-*.parquet"))


async def test_rows_round_trip_through_wal_and_parquet(tmp_path: Path) -> None:
    rows = [_row(seq) for seq in range(1, 6)]
    writer = _writer(tmp_path)
    await writer.start()
    for row in rows:
        writer.record(row)
    await writer.close()
    assert read_history(tmp_path).to_pylist() == [_as_dict(r) for r in rows]
    assert writer.stats.rows_durable == 5
    assert list((tmp_path / "wal").iterdir()) == []  # WAL deleted once Parquet is durable


async def test_flush_makes_rows_readable_while_running(tmp_path: Path) -> None:
    writer = _writer(tmp_path, flush_interval_s=3600.0)
    await writer.start()
    writer.record(_row(1))
    await writer.flush()
    assert read_history(tmp_path).column("seq").to_pylist() == [1]
    await writer.close()


async def test_row_of_wrong_types_is_dropped_alone(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    await writer.start()
    writer.record(_row(1))
    writer.record(dataclasses.replace(_row(2), member_port="not a port"))  # type: ignore[arg-type]
    writer.record(_row(3))
    await writer.close()
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 3]
    assert writer.stats.errors == 1
    assert list((tmp_path / "wal").iterdir()) == []


async def test_record_after_close_raises(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    await writer.start()
    await writer.close()
    with pytest.raises(HistoryError):
        writer.record(_row(1))


async def test_segment_rows_sorted_by_member_then_time(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    await writer.start()
    for seq, member in [(3, "m-b"), (2, "m-a"), (1, "m-b"), (1, "m-a"), (2, "m-b")]:
        writer.record(_row(seq, member=member))
    await writer.close()
    (part,) = _parts(tmp_path)
    table = pq.read_table(part)
    assert list(zip(table["member_id"].to_pylist(), table["seq"].to_pylist(), strict=True)) == [
        ("m-a", 1),
        ("m-a", 2),
        ("m-b", 1),
        ("m-b", 2),
        ("m-b", 3),
    ]


def test_partitions_by_utc_date_across_midnight(tmp_path: Path) -> None:
    rows = [_row(1, at_us=MIDNIGHT_US - 1), _row(2, at_us=MIDNIGHT_US), _row(3, group="a/b c")]
    paths = write_segments(tmp_path, rows_to_table(rows), segment_id="x")
    rel = sorted(str(p.parent.relative_to(tmp_path)) for p in paths)
    assert rel == [
        "group=a%2Fb%20c/date=2026-11-20",
        "group=g/date=2026-11-19",
        "group=g/date=2026-11-20",
    ]
    before = pq.read_table(tmp_path / "group=g/date=2026-11-19")
    assert before.column("seq").to_pylist() == [1]
    # file name: part-<first sampled_at, 16 digits>-<uuid>.parquet
    name = next(p.name for p in paths if "2026-11-19" in str(p))
    assert name.startswith(f"part-{MIDNIGHT_US - 1:016d}-") and name.endswith(".parquet")


def test_parquet_settings_applied(tmp_path: Path) -> None:
    (path,) = write_segments(tmp_path, rows_to_table(_row(s) for s in range(1, 50)), segment_id="s")
    meta = pq.ParquetFile(path).metadata
    columns = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
        for i in range(meta.num_columns)
    }
    for name in ("seq", "sampled_at", "incarnation", "count_transactions_checked", "member_port"):
        assert "DELTA_BINARY_PACKED" in columns[name].encodings, name
    for name in ("member_id", "view_id", "transactions_committed_all_members"):
        assert "RLE_DICTIONARY" in columns[name].encodings, name
    assert {c.compression for c in columns.values()} == {"ZSTD"}
    assert [(f.name, str(f.type)) for f in pq.read_schema(path)] == list(HISTORY_COLUMNS)


def test_same_segment_written_twice_is_one_file(tmp_path: Path) -> None:
    table = rows_to_table([_row(1), _row(2)])
    first = write_segments(tmp_path, table, segment_id="wal-7")
    second = write_segments(tmp_path, table, segment_id="wal-7")
    assert first == second
    assert read_history(tmp_path).num_rows == 2


def test_repair_wal_cuts_torn_tail(tmp_path: Path) -> None:
    good = encode_record(_row(1)) + encode_record(_row(2))
    torn = encode_record(_row(3))[:-4]
    path = _wal_file(tmp_path, "000000000001-aa", good + torn)
    scan = repair_wal(path)
    assert scan is not None
    assert [r.seq for r in scan.rows] == [1, 2]
    assert path.stat().st_size == len(WAL_MAGIC) + len(good)


def test_repair_wal_stops_at_crc_mismatch_in_the_middle(tmp_path: Path) -> None:
    records = [encode_record(_row(seq)) for seq in range(1, 6)]
    bad = bytearray(records[2])
    bad[-1] ^= 0x01  # payload byte: length fine, CRC wrong
    path = _wal_file(
        tmp_path, "000000000001-bb", b"".join([*records[:2], bytes(bad), *records[3:]])
    )
    scan = repair_wal(path)
    assert scan is not None
    assert [r.seq for r in scan.rows] == [1, 2]
    assert path.stat().st_size == len(WAL_MAGIC) + len(records[0]) + len(records[1])


async def test_start_replays_wal_of_previous_run_and_cuts_garbage(tmp_path: Path) -> None:
    garbage = b"\xff\x00\x00\x00garbage"
    _wal_file(
        tmp_path, "000000000003-cc", encode_record(_row(1)) + encode_record(_row(2)) + garbage
    )
    writer = _writer(tmp_path)
    await writer.start()
    await writer.close()
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2]
    assert writer.stats.rows_recovered == 2
    assert writer.stats.wal_bytes_cut == len(garbage)
    assert list((tmp_path / "wal").iterdir()) == []


async def test_crash_between_parquet_rename_and_wal_delete_does_not_duplicate(
    tmp_path: Path,
) -> None:
    rows = [_row(1), _row(2)]
    _wal_file(tmp_path, "000000000001-dd", b"".join(encode_record(r) for r in rows))
    # what the writer had done before dying: the segment of that WAL file is durable
    write_segments(tmp_path, rows_to_table(rows), segment_id="000000000001-dd")
    writer = _writer(tmp_path)
    await writer.start()
    await writer.close()
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2]


async def test_temporaries_are_never_data_and_removed_at_start(tmp_path: Path) -> None:
    write_segments(tmp_path, rows_to_table([_row(1)]), segment_id="t")
    partition = tmp_path / "group=g/date=2026-11-20"
    tmp = partition / ".part-0000000000000001-x.parquet.tmp"
    tmp.write_bytes(b"PAR1 half a file")
    assert read_history(tmp_path).num_rows == 1
    writer = _writer(tmp_path)
    await writer.start()
    await writer.close()
    assert not tmp.exists()


async def test_retention_deletes_old_date_partitions(tmp_path: Path) -> None:
    today = dt.datetime.now(dt.UTC).date()

    def at(day: dt.date) -> int:
        return int(dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC).timestamp()) * US

    old, kept = today - dt.timedelta(days=31), today - dt.timedelta(days=30)
    rows = [_row(1, at_us=at(old)), _row(2, at_us=at(kept)), _row(3, at_us=at(today))]
    write_segments(tmp_path, rows_to_table(rows), segment_id="r")
    writer = HistoryWriter(tmp_path, retention_days=30)
    await writer.start()
    await writer.close()
    dates = sorted(p.name for p in (tmp_path / "group=g").iterdir())
    assert dates == [f"date={kept.isoformat()}", f"date={today.isoformat()}"]


async def test_finished_day_compacted_into_one_file(tmp_path: Path) -> None:
    for seq in (1, 2, 3):
        write_segments(tmp_path, rows_to_table([_row(seq)]), segment_id=f"c{seq}")
    assert len(_parts(tmp_path)) == 3
    writer = _writer(tmp_path)
    await writer.start()
    await writer.close()
    assert len(_parts(tmp_path)) == 1
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2, 3]


async def test_inputs_left_by_a_crash_during_compaction_are_not_read_twice(
    tmp_path: Path,
) -> None:
    inputs = [
        write_segments(tmp_path, rows_to_table([_row(s)]), segment_id=f"i{s}")[0] for s in (1, 2)
    ]
    saved = {path: path.read_bytes() for path in inputs}
    await _start_and_close(tmp_path)  # compacts the finished day
    assert not any(path.exists() for path in inputs)
    for path, data in saved.items():  # as if the crash came before the inputs were deleted
        path.write_bytes(data)
    assert sorted(read_history(tmp_path).column("seq").to_pylist()) == [1, 2]
    await _start_and_close(tmp_path)
    assert len(_parts(tmp_path)) == 1
    assert sorted(read_history(tmp_path).column("seq").to_pylist()) == [1, 2]


async def _start_and_close(directory: Path) -> None:
    writer = _writer(directory)
    await writer.start()
    await writer.close()


def _fsynced_seqs(side_file: Path) -> dict[int, int]:
    best: dict[int, int] = {}
    for line in side_file.read_bytes().split(b"\n")[:-1]:  # the last line may be torn
        incarnation, seq = (int(x) for x in line.split())
        best[incarnation] = max(best.get(incarnation, 0), seq)
    return best


def _wait_for_line(side_file: Path, incarnation: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        if side_file.exists() and incarnation in _fsynced_seqs(side_file):
            return
        time.sleep(0.01)
    raise AssertionError(f"writer {incarnation} reported nothing fsynced")


def test_sigkill_twenty_times_loses_no_fsynced_row_and_duplicates_none(tmp_path: Path) -> None:
    history, side = tmp_path / "history", tmp_path / "fsynced.txt"
    today = dt.datetime.now(dt.UTC).date()
    base_us = int(dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC).timestamp()) * US
    base_us -= 35 * US  # the first runs write yesterday and cross midnight: compaction runs too
    rng = random.Random(20261122)
    for incarnation in range(1, 21):
        args = [str(history), str(side), str(incarnation), str(base_us)]
        process = subprocess.Popen([sys.executable, str(CRASH_WRITER), *args])
        try:
            if incarnation % 4 == 0:
                time.sleep(rng.uniform(0.2, 1.0))  # the kill moment: maybe during start/replay
            else:
                _wait_for_line(side, incarnation, process)
                time.sleep(rng.uniform(0.0, 0.5))  # the kill moment, after some fsyncs
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    for path in _parts(history):
        pq.read_table(path)  # every Parquet file opens
    asyncio.run(_start_and_close(history))
    assert list(history.glob("**/.*.tmp")) == []
    table = read_history(history)
    keys = list(
        zip(
            table["member_id"].to_pylist(),
            table["incarnation"].to_pylist(),
            table["seq"].to_pylist(),
            strict=True,
        )
    )
    assert len(keys) == len(set(keys)), "duplicated samples"
    got: dict[int, list[int]] = {}
    for _, incarnation, seq in keys:
        got.setdefault(incarnation, []).append(seq)
    fsynced = _fsynced_seqs(side)
    assert len(fsynced) >= 15
    for incarnation, top in fsynced.items():
        seqs = sorted(got.get(incarnation, []))
        # a WAL is append-only and replay stops at the first bad record: always a prefix
        assert seqs == list(range(1, len(seqs) + 1)), incarnation
        assert len(seqs) >= top, (incarnation, len(seqs), top)
    # values are intact, not just keys
    sample = rng.sample(table.to_pylist(), 50)
    for row in sample:
        assert row == _as_dict(make_row(row["incarnation"], row["seq"], base_us))
