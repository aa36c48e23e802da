"""History integrity (issue 21): every sample kept through bad values and corrupt files.

Each test reproduces one row of the issue's table against the real file
system and the real writer: unstorable values, a flipped bit in a WAL record,
a WAL of a newer version, a corrupt segment in today's partition, a corrupt
file in a finished day.  Expected counts are written by hand.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import struct
import time
import zlib
from pathlib import Path

import msgpack
import pytest
from structlog.testing import capture_logs

from grstats.core.records import HistoryRow
from grstats.history.housekeeping import housekeep
from grstats.history.parquet import (
    partition_dir,
    read_history,
    row_values,
    rows_to_table,
    write_segments,
)
from grstats.history.wal import WAL_MAGIC, encode_record
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import GROUP, M1, daemon_config, start_daemon, wait_for
from tests.fixtures.history_faults import fast_writer
from tests.grstats.history.rows import MIDNIGHT_US, US, sample_row, wal_file

pytestmark = pytest.mark.faults

INF, NAN = float("inf"), float("nan")
DOUBLES = (  # the history's double columns, by hand from DESIGN.md section 6
    "replication_lag_seconds",
    "queue_lag_seconds",
    "apply_lag_seconds",
    "apply_time_seconds",
    "clock_offset_seconds",
    "fc_catch_up_eta_seconds",
)
ETA = "fc_catch_up_eta_seconds"


def _quarantined(directory: Path) -> list[Path]:
    return sorted((directory / "quarantine").glob("*"))


def _seqs(directory: Path) -> list[int]:
    return sorted(read_history(directory)["seq"].to_pylist())


# ---------------------------------------------------------------- unstorable values

# Every double the replay and the sources can produce, and what each double
# column stores for it (by hand): non-finite -> NULL, except +inf in the
# catch-up ETA ("never at this rate"); an int beyond int64 -> NULL.
FLOATS: list[tuple[object, object, object]] = [
    # (value, stored in a lag column, stored in the ETA column)
    (NAN, None, None),
    (INF, None, INF),
    (-INF, None, None),
    (1.7976931348623157e308, 1.7976931348623157e308, 1.7976931348623157e308),
    (-1.7976931348623157e308, -1.7976931348623157e308, -1.7976931348623157e308),
    (5e-324, 5e-324, 5e-324),  # the smallest subnormal
    (-0.0, -0.0, -0.0),
    (0.0, 0.0, 0.0),
    (2**53, float(2**53), float(2**53)),  # an int a double holds exactly
    (2**53 + 1, None, None),  # one it does not
    (2**63, None, None),
    (True, None, None),  # a bool is not a number of ours
]


async def test_every_float_is_stored_as_itself_or_null_and_no_sample_is_dropped(
    tmp_path: Path,
) -> None:
    rows = [
        dataclasses.replace(sample_row(seq), **dict.fromkeys(DOUBLES, value))
        for seq, (value, _, _) in enumerate(FLOATS, start=1)
    ]
    writer = fast_writer(tmp_path)
    await writer.start()
    with capture_logs() as events:
        for row in rows:
            writer.record(row)
        await writer.flush()
        health = writer.health()
        await writer.close()
    table = read_history(tmp_path).sort_by("seq")
    assert table["seq"].to_pylist() == list(range(1, 13))  # 12 of 12 samples
    for column in DOUBLES:
        stored = table[column].to_pylist()
        for (value, lag, eta), got in zip(FLOATS, stored, strict=True):
            want = eta if column == ETA else lag
            assert (got is None) == (want is None), (column, value, got)
            if want is not None:
                assert got == want and math.copysign(1, got) == math.copysign(1, want), value  # type: ignore[arg-type]
    # NULLed by hand: lag columns nan, inf, -inf, 2**53 + 1, 2**63, True = 6; the ETA keeps +inf
    nulled = {column: 5 if column == ETA else 6 for column in DOUBLES}
    assert writer.stats.values_nulled == nulled
    assert writer.stats.dropped.invalid == 0
    assert health.ok  # still writing, but /healthz shows the data fault
    assert any("NULL" in fault for fault in health.faults)
    assert any(e["event"] == "history.values_nulled" for e in events)


async def test_out_of_range_values_are_nulled_and_only_an_unstorable_identity_drops_a_row(
    tmp_path: Path,
) -> None:
    rows = [
        sample_row(1),
        dataclasses.replace(sample_row(2), flow_control_mode=128),  # int8
        dataclasses.replace(sample_row(3), member_port=2**31),  # int32
        dataclasses.replace(sample_row(4), count_transactions_checked=-(2**63) - 1),
        dataclasses.replace(sample_row(5), member_host="db\udcff"),  # undecodable bytes
        dataclasses.replace(sample_row(6), fc_group_quota=1.5),  # type: ignore[arg-type]
        dataclasses.replace(sample_row(7), seq=2**63),  # identity: cannot be stored
        sample_row(8),
    ]
    writer = fast_writer(tmp_path)
    await writer.start()
    for row in rows:
        writer.record(row)
    await writer.close()
    table = read_history(tmp_path).sort_by("seq")
    assert table["seq"].to_pylist() == [1, 2, 3, 4, 5, 6, 8]
    by_seq = {r["seq"]: r for r in table.to_pylist()}
    assert by_seq[2]["flow_control_mode"] is None
    assert by_seq[3]["member_port"] is None
    assert by_seq[4]["count_transactions_checked"] is None
    assert by_seq[5]["member_host"] is None
    assert by_seq[6]["fc_group_quota"] is None
    assert by_seq[2]["member_port"] == 3306  # the rest of the row is kept
    assert writer.stats.dropped.invalid == 1
    assert writer.stats.values_nulled == {
        "flow_control_mode": 1,
        "member_port": 1,
        "count_transactions_checked": 1,
        "member_host": 1,
        "fc_group_quota": 1,
    }


# ---------------------------------------------------------------- WAL framing


def _flip(record: bytes, byte: int) -> bytes:
    flipped = bytearray(record)
    flipped[byte] ^= 0x10
    return bytes(flipped)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(-1, id="payload"),  # CRC mismatch
        pytest.param(2, id="length"),  # length runs past the next records
        pytest.param(5, id="crc"),
    ],
)
async def test_a_flipped_bit_in_wal_record_30_of_61_loses_only_record_30(
    tmp_path: Path, where: int
) -> None:
    records = [encode_record(sample_row(seq)) for seq in range(1, 62)]
    records[29] = _flip(records[29], where)
    original = WAL_MAGIC + b"".join(records)
    wal_file(tmp_path, "000000000001-aa", b"".join(records))
    writer = fast_writer(tmp_path)
    await writer.start()
    health = writer.health()
    await writer.close()
    assert _seqs(tmp_path) == [s for s in range(1, 62) if s != 30]  # 60 rows
    assert writer.stats.rows_recovered == 60
    assert writer.stats.dropped.corrupt == 1
    kept = _quarantined(tmp_path)
    assert [p.read_bytes() for p in kept] == [original]  # the damaged file, whole
    assert writer.stats.files_quarantined == 1
    assert writer.stats.wal_bytes_cut == 0
    assert any(kept[0].name in fault for fault in health.faults)


async def test_a_torn_last_record_is_cut_without_quarantine(tmp_path: Path) -> None:
    records = [encode_record(sample_row(seq)) for seq in range(1, 4)]
    wal_file(tmp_path, "000000000001-ab", b"".join(records) + records[0][:-3])
    writer = fast_writer(tmp_path)
    await writer.start()
    await writer.close()
    assert _seqs(tmp_path) == [1, 2, 3]
    assert _quarantined(tmp_path) == []
    assert writer.stats.dropped.corrupt == 0
    assert writer.stats.wal_bytes_cut == len(records[0]) - 3


async def test_a_wal_of_a_newer_version_keeps_the_columns_this_one_knows(tmp_path: Path) -> None:
    rows = [
        dataclasses.replace(sample_row(seq), apply_lag_seconds=seq / 4, fc_failover_ready=1)
        for seq in range(1, 62)
    ]
    records = b""
    for row in rows:  # one extra trailing column, as a newer grstats would append it
        payload = msgpack.packb([*row_values(row), "future"], use_bin_type=True)
        records += struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    wal_file(tmp_path, "000000000001-cd", records)
    writer = fast_writer(tmp_path)
    await writer.start()
    await writer.close()
    table = read_history(tmp_path).sort_by("seq")
    assert table["seq"].to_pylist() == list(range(1, 62))  # 61 of 61
    assert table["apply_lag_seconds"].to_pylist() == [s / 4 for s in range(1, 62)]
    assert table["fc_failover_ready"].to_pylist() == [1] * 61
    assert _quarantined(tmp_path) == []


async def test_a_wal_of_an_unknown_format_is_moved_to_the_quarantine(tmp_path: Path) -> None:
    wal = tmp_path / "wal"
    wal.mkdir()
    stranger = wal / "wal-000000000001-ee.log"
    stranger.write_bytes(b"GRSWAL9\n" + b"\x01" * 40)
    writer = fast_writer(tmp_path)
    await writer.start()
    await writer.close()
    assert not stranger.exists()
    assert [p.read_bytes() for p in _quarantined(tmp_path)] == [b"GRSWAL9\n" + b"\x01" * 40]


# ---------------------------------------------------------------- corrupt Parquet


def _today_row(seq: int) -> HistoryRow:
    return sample_row(seq, at_us=time.time_ns() // 1000 + seq)


def _cut_in_half(directory: Path) -> tuple[Path, bytes]:
    [segment] = sorted(directory.glob("group=*/date=*/part-*.parquet"))
    damaged = segment.read_bytes()[: segment.stat().st_size // 2]
    segment.write_bytes(damaged)
    return segment, damaged


async def test_a_corrupt_segment_in_todays_partition_is_quarantined_and_writing_goes_on(
    tmp_path: Path,
) -> None:
    writer = fast_writer(tmp_path)
    await writer.start()
    for seq in range(1, 11):
        writer.record(_today_row(seq))
    await writer.close()
    segment, damaged = _cut_in_half(tmp_path)

    writer = fast_writer(tmp_path)
    await writer.start()
    for seq in range(11, 41):
        writer.record(_today_row(seq))
    await writer.flush()
    health = writer.health()
    await writer.close()  # no rows lost at close, no exception
    assert _seqs(tmp_path) == list(range(11, 41))
    assert writer.stats.dropped.total == 0
    kept = _quarantined(tmp_path)
    assert [p.read_bytes() for p in kept] == [damaged]
    assert segment.name in kept[0].name
    assert writer.stats.files_quarantined == 1
    assert any("quarantine" in f and kept[0].name in f for f in health.faults)


# ---------------------------------------------------------------- housekeeping


def _day_files(directory: Path, group: str, day_us: int, files: int) -> list[Path]:
    written: list[Path] = []
    for n in range(files):
        row = sample_row(100 + n, group=group, at_us=day_us + n * US)
        written += write_segments(directory, rows_to_table([row]), segment_id=f"{group}{day_us}{n}")
    return written


def test_housekeeping_skips_a_corrupt_file_and_goes_on_with_every_later_partition(
    tmp_path: Path,
) -> None:
    today = dt.date(2026, 11, 25)
    day = 86_400 * US
    bad_day = _day_files(tmp_path, "a", MIDNIGHT_US, 3)  # 2026-11-20, finished
    later = _day_files(tmp_path, "b", MIDNIGHT_US + day, 3)  # 2026-11-21, finished
    expired = _day_files(tmp_path, "c", MIDNIGHT_US - 40 * day, 2)  # 2026-10-11
    bad_day[1].write_bytes(b"PAR1 not parquet at all")
    seen: list[tuple[Path, str]] = []

    def corrupt(path: Path, reason: str) -> None:
        seen.append((path, reason))
        path.rename(tmp_path / "moved.parquet")

    with capture_logs():
        housekeep(tmp_path, 30, today, on_corrupt=corrupt)
    assert [p for p, _ in seen] == [bad_day[1]]
    assert len(list(bad_day[0].parent.glob("part-*.parquet"))) == 1  # 2 good ones compacted
    assert len(list(later[0].parent.glob("part-*.parquet"))) == 1  # the later group too
    assert not expired[0].parent.exists()  # retention ran
    assert (tmp_path / "moved.parquet").read_bytes() == b"PAR1 not parquet at all"


async def test_the_writer_quarantines_what_housekeeping_cannot_read(tmp_path: Path) -> None:
    day = 86_400 * US
    bad_day = _day_files(tmp_path, "a", MIDNIGHT_US, 3)
    later = _day_files(tmp_path, "b", MIDNIGHT_US + day, 2)
    bad_day[2].write_bytes(b"")  # a zero-length file
    writer = fast_writer(tmp_path)
    await writer.start()
    writer.record(_today_row(1))
    await writer.flush()  # the thread has started today's housekeeping by now
    await writer.close()  # and close() waits for it
    assert len(list(later[0].parent.glob("part-*.parquet"))) == 1
    assert len(list(bad_day[0].parent.glob("part-*.parquet"))) == 1
    assert [p.stat().st_size for p in _quarantined(tmp_path)] == [0]
    assert writer.stats.files_quarantined == 1
    assert sorted(read_history(tmp_path)["seq"].to_pylist()) == [1, 100, 100, 101, 101]


# ---------------------------------------------------------------- a real daemon


def _corrupt_segment_today(history: Path) -> Path:
    # a file without a writer id (as `grstats simulate` names them): every writer reads it
    today = dt.datetime.now(dt.UTC).date()
    partition = partition_dir(history, GROUP, today)
    partition.mkdir(parents=True)
    bad = partition / "part-0000000000000001-6b1d3c1e-4f0a-5e2b-9a57-0c7d9e2f4a11.parquet"
    bad.write_bytes(b"PAR1" + b"\x00" * 64)  # no footer
    return bad


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_a_daemon_meeting_a_corrupt_segment_quarantines_it_keeps_writing_and_exits_0(
    broker: Broker, tmp_path: Path
) -> None:
    history = tmp_path / "history"
    bad = _corrupt_segment_today(history)
    config = daemon_config(broker.port, M1, [M1])
    config["history"] = {"dir": str(history), "flush_interval": 0.5}
    daemon = start_daemon(tmp_path / "d", config)
    try:
        wait_for(lambda: daemon.has_event("history.file_quarantined") or None, 30, "quarantine")
        health = wait_for(  # the snapshot /healthz reads is refreshed each period
            lambda: (body := daemon.get("/healthz")[1])["status"] == "degraded" and body,
            30,
            "/healthz degraded",
        )
        metrics = wait_for(
            lambda: (
                (text := daemon.get("/metrics")[1].decode())
                and _metric(text, "grstats_history_rows_written_total") >= 3
                and text
            ),
            30,
            "a few samples written",
        )
    finally:
        rc = daemon.terminate()
    assert rc == 0
    assert not daemon.has_event("history.rows_lost_at_close")
    assert not bad.exists()
    assert [p.read_bytes() for p in _quarantined(history)] == [b"PAR1" + b"\x00" * 64]
    assert health["status"] == "degraded" and "history_data" in health["reasons"]
    assert any(bad.name in d and "quarantine" in d for d in health["details"])
    assert _metric(metrics, "grstats_history_files_quarantined_total") == 1
    assert len(read_history(history)) >= 3  # the samples recorded are all there
