"""Housekeeping: retention by age, compaction of finished days."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq

from grstats.core.records import LAG_HISTORY_COLUMNS
from grstats.history.parquet import read_history, rows_to_table, write_segments
from grstats.history.writer import HistoryWriter
from tests.grstats.history.rows import (
    US,
    new_writer,
    parts,
    sample_row,
    start_and_close,
)


async def test_retention_deletes_old_date_partitions(tmp_path: Path) -> None:
    today = dt.datetime.now(dt.UTC).date()

    def at(day: dt.date) -> int:
        return int(dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC).timestamp()) * US

    old, kept = today - dt.timedelta(days=31), today - dt.timedelta(days=30)
    rows = [
        sample_row(1, at_us=at(old)),
        sample_row(2, at_us=at(kept)),
        sample_row(3, at_us=at(today)),
    ]
    write_segments(tmp_path, rows_to_table(rows), segment_id="r")
    writer = HistoryWriter(tmp_path, retention_days=30)
    await writer.start()
    await writer.close()
    dates = sorted(p.name for p in (tmp_path / "group=g").iterdir())
    assert dates == [f"date={kept.isoformat()}", f"date={today.isoformat()}"]


async def test_finished_day_compacted_into_one_file(tmp_path: Path) -> None:
    for seq in (1, 2, 3):
        write_segments(tmp_path, rows_to_table([sample_row(seq)]), segment_id=f"c{seq}")
    assert len(parts(tmp_path)) == 3
    writer = new_writer(tmp_path)
    await writer.start()
    await writer.close()
    assert len(parts(tmp_path)) == 1
    assert read_history(tmp_path).column("seq").to_pylist() == [1, 2, 3]


async def test_a_day_mixing_old_and_new_files_is_compacted_with_null_lag(
    tmp_path: Path,
) -> None:
    write_segments(tmp_path, rows_to_table([sample_row(1)]), segment_id="old")
    (old,) = parts(tmp_path)
    table = pq.read_table(old)
    pq.write_table(table.drop_columns(list(LAG_HISTORY_COLUMNS)), old)  # the pre-lag schema
    new = dataclasses.replace(sample_row(2), apply_lag_seconds=1.5)
    write_segments(tmp_path, rows_to_table([new]), segment_id="new")
    await start_and_close(tmp_path)
    assert len(parts(tmp_path)) == 1
    history = read_history(tmp_path)
    assert history.column("seq").to_pylist() == [1, 2]
    assert history.column("apply_lag_seconds").to_pylist() == [None, 1.5]


async def test_inputs_left_by_a_crash_during_compaction_are_not_read_twice(
    tmp_path: Path,
) -> None:
    inputs = [
        write_segments(tmp_path, rows_to_table([sample_row(s)]), segment_id=f"i{s}")[0]
        for s in (1, 2)
    ]
    saved = {path: path.read_bytes() for path in inputs}
    await start_and_close(tmp_path)  # compacts the finished day
    assert not any(path.exists() for path in inputs)
    for path, data in saved.items():  # as if the crash came before the inputs were deleted
        path.write_bytes(data)
    assert sorted(read_history(tmp_path).column("seq").to_pylist()) == [1, 2]
    await start_and_close(tmp_path)
    assert len(parts(tmp_path)) == 1
    assert sorted(read_history(tmp_path).column("seq").to_pylist()) == [1, 2]
