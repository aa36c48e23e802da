"""Parquet segments: partitioning, file names, format settings."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    COMMIT_PATH_HISTORY_COLUMNS,
    FLOW_HISTORY_COLUMNS,
    HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from grstats.history.cadence import one_value
from grstats.history.parquet import (
    SUM_ZSTD_LEVEL,
    ZSTD_LEVEL,
    invalid_column,
    read_history,
    rows_to_table,
    write_segments,
    zstd_level,
)
from tests.fixtures.history_files import old_schema_file
from tests.grstats.history.rows import (
    MIDNIGHT_US,
    sample_row,
)


def test_partitions_by_utc_date_across_midnight(tmp_path: Path) -> None:
    rows = [
        sample_row(1, at_us=MIDNIGHT_US - 1),
        sample_row(2, at_us=MIDNIGHT_US),
        sample_row(3, group="a/b c"),
    ]
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
    (path,) = write_segments(
        tmp_path, rows_to_table(sample_row(s) for s in range(1, 50)), segment_id="s"
    )
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


def test_the_measured_choices_override_the_rules(tmp_path: Path) -> None:
    (path,) = write_segments(
        tmp_path, rows_to_table(sample_row(s) for s in range(1, 50)), segment_id="s"
    )
    meta = pq.ParquetFile(path).metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    for name in ("count_transactions_in_queue", "count_transactions_remote_in_applier_queue"):
        assert "RLE_DICTIONARY" in columns[name].encodings, name
    # none of them is BYTE_STREAM_SPLIT, which Spark 3.5 cannot read for integers
    assert all("BYTE_STREAM_SPLIT" not in c.encodings for c in columns.values())


def test_same_segment_written_twice_is_one_file(tmp_path: Path) -> None:
    table = rows_to_table([sample_row(1), sample_row(2)])
    first = write_segments(tmp_path, table, segment_id="wal-7")
    second = write_segments(tmp_path, table, segment_id="wal-7")
    assert first == second
    assert read_history(tmp_path).num_rows == 2


@pytest.mark.parametrize(
    ("column", "value", "bad"),
    [
        ("flow_control_mode", 127, False),
        ("flow_control_mode", 128, True),
        ("flow_control_mode", -128, False),
        ("member_port", 2**31 - 1, False),
        ("member_port", 2**31, True),
        ("seq", 2**63 - 1, False),
        ("seq", 2**63, True),
        ("incarnation", 2**64 - 1, False),
        ("incarnation", 2**64, True),
        ("incarnation", -1, True),
        ("sampled_at", 253_402_300_799_999_999, False),  # 9999-12-31 23:59:59.999999
        ("sampled_at", 253_402_300_800_000_000, True),
        ("sampled_at", -1, True),
        ("member_id", 7, True),
        ("seq", True, True),
        ("seq", "1", True),
        ("last_conflict_free_transaction", None, False),
        ("apply_lag_seconds", None, False),
        ("apply_lag_seconds", 1.5, False),
        ("apply_lag_seconds", -0.25, False),  # a clock behind the source's
        ("apply_lag_seconds", 3, False),
        ("apply_lag_seconds", float("nan"), True),
        ("queue_lag_seconds", float("inf"), True),
        ("clock_offset_seconds", float("-inf"), True),
        ("replication_lag_seconds", "1.5", True),
        ("apply_time_seconds", True, True),
    ],
)
def test_invalid_column_names_a_value_its_column_cannot_hold(
    column: str, value: object, bad: bool
) -> None:
    row = dataclasses.replace(sample_row(1), **{column: value})
    assert invalid_column(row) == (column if bad else None)


def test_lag_figures_survive_a_round_trip(tmp_path: Path) -> None:
    row = dataclasses.replace(
        sample_row(1), apply_lag_seconds=2.5, queue_lag_seconds=-0.125, clock_offset_seconds=0.0
    )
    write_segments(tmp_path, rows_to_table([row, sample_row(2)]), segment_id="s")
    table = read_history(tmp_path)
    assert table["apply_lag_seconds"].to_pylist() == [2.5, None]
    assert table["queue_lag_seconds"].to_pylist() == [-0.125, None]
    assert table["clock_offset_seconds"].to_pylist() == [0.0, None]
    assert table.schema.field("apply_lag_seconds").type == pa.float64()


def test_a_directory_mixing_old_and_new_files_reads_nulls_for_old_rows(tmp_path: Path) -> None:
    old_schema_file(tmp_path, [sample_row(1), sample_row(2)])
    new = dataclasses.replace(sample_row(3), apply_lag_seconds=0.75, replication_lag_seconds=0.0)
    write_segments(tmp_path, rows_to_table([new]), segment_id="new")
    table = read_history(tmp_path).sort_by("seq")
    assert table["seq"].to_pylist() == [1, 2, 3]
    assert table["apply_lag_seconds"].to_pylist() == [None, None, 0.75]
    assert table["replication_lag_seconds"].to_pylist() == [None, None, 0.0]
    assert table["count_transactions_checked"].to_pylist() == [10, 20, 30]


def test_applier_counters_survive_a_round_trip(tmp_path: Path) -> None:
    big = (1 << 63) - 1  # what the wire allows, nanoseconds
    row = dataclasses.replace(
        sample_row(1),
        total_active_time_duration=big,
        transactions_committed_count=0,
        waits_due_to_commit_order_sum_time=12_345_678_901,
    )
    write_segments(tmp_path, rows_to_table([row, sample_row(2)]), segment_id="s")
    table = read_history(tmp_path).sort_by("seq")
    assert table["total_active_time_duration"].to_pylist() == [big, None]
    assert table["transactions_committed_count"].to_pylist() == [0, None]
    assert table["waits_due_to_commit_order_sum_time"].to_pylist() == [12_345_678_901, None]
    assert table["read_from_relay_log_sum_time"].to_pylist() == [None, None]
    assert table.schema.field("waits_for_work_from_source_count").type == pa.int64()


def test_applier_counters_come_right_after_the_lag_figures() -> None:
    names = [n for n, _ in HISTORY_COLUMNS]
    first = names.index(APPLIER_HISTORY_COLUMNS[0])
    assert names[first - len(LAG_HISTORY_COLUMNS) : first] == list(LAG_HISTORY_COLUMNS)
    assert names[first : first + len(APPLIER_HISTORY_COLUMNS)] == list(APPLIER_HISTORY_COLUMNS)
    assert (
        len(APPLIER_HISTORY_COLUMNS) == 17
    )  # active, committed, bytes, events, 6 x 2 waits, relay


def test_a_file_from_before_the_applier_counters_reads_them_as_null(tmp_path: Path) -> None:
    lagged = dataclasses.replace(sample_row(1), apply_lag_seconds=0.5)
    old_schema_file(tmp_path, [lagged], newer=APPLIER_HISTORY_COLUMNS)
    new = dataclasses.replace(sample_row(2), transactions_committed_count=7)
    write_segments(tmp_path, rows_to_table([new]), segment_id="new")
    table = read_history(tmp_path).sort_by("seq")
    assert table["apply_lag_seconds"].to_pylist() == [0.5, None]  # kept: it was in the file
    assert table["transactions_committed_count"].to_pylist() == [None, 7]
    assert table["waits_for_work_from_source_sum_time"].to_pylist() == [None, None]


FLOW = {
    "fc_bottleneck": "applier",
    "fc_excess_over_threshold": 1234,
    "fc_group_quota": 4321,
    "fc_throttling": 1,
    "fc_catch_up_eta_seconds": float("inf"),  # never at this rate
    "fc_failover_ready": 0,
}


def test_flow_columns_are_one_block_right_after_the_applier_counters() -> None:
    names = [n for n, _ in HISTORY_COLUMNS]
    first = names.index(APPLIER_HISTORY_COLUMNS[-1]) + 1
    assert names[first : first + len(FLOW)] == list(FLOW)


def test_the_commit_path_is_followed_by_writers_held_alone() -> None:
    # appended after the GTID counts (issue 27): the commit path's counters, 14 int64; then
    # (issue 38) whether flow control held the writers, one int8
    assert HISTORY_COLUMNS[-1] == ("fc_writers_held", "int8")
    tail = HISTORY_COLUMNS[-len(COMMIT_PATH_HISTORY_COLUMNS) - 1 : -1]
    assert [n for n, _ in tail] == list(COMMIT_PATH_HISTORY_COLUMNS)
    assert {kind for _, kind in tail} == {"int64"}
    assert dict(FLOW_HISTORY_COLUMNS) == {
        "fc_bottleneck": "string",
        "fc_excess_over_threshold": "int64",
        "fc_group_quota": "int64",
        "fc_throttling": "int8",
        "fc_catch_up_eta_seconds": "double",
        "fc_failover_ready": "int8",
    }


def test_flow_figures_survive_a_round_trip(tmp_path: Path) -> None:
    row = dataclasses.replace(sample_row(1), **FLOW)  # type: ignore[arg-type]
    eta_row = dataclasses.replace(sample_row(2), fc_bottleneck="", fc_catch_up_eta_seconds=2.5)
    write_segments(tmp_path, rows_to_table([row, eta_row, sample_row(3)]), segment_id="s")
    table = read_history(tmp_path).sort_by("seq")
    for name, value in FLOW.items():
        assert table[name].to_pylist()[0] == value, name
        assert table[name].to_pylist()[2] is None, name
    assert table["fc_bottleneck"].to_pylist()[1] == ""
    assert table["fc_catch_up_eta_seconds"].to_pylist()[1] == 2.5
    assert table.schema.field("fc_throttling").type == pa.int8()


def test_a_file_from_before_the_flow_columns_reads_them_as_null(tmp_path: Path) -> None:
    old_schema_file(
        tmp_path,
        [dataclasses.replace(sample_row(1), apply_lag_seconds=0.5)],
        newer=tuple(name for name, _ in FLOW_HISTORY_COLUMNS),
    )
    new = dataclasses.replace(sample_row(2), **FLOW)  # type: ignore[arg-type]
    write_segments(tmp_path, rows_to_table([new]), segment_id="new")
    table = read_history(tmp_path).sort_by("seq")
    assert table["apply_lag_seconds"].to_pylist() == [0.5, None]  # the old file has lag
    for name, value in FLOW.items():
        assert table[name].to_pylist() == [None, value], name


def test_running_sums_are_stored_smaller_than_at_the_base_zstd_level(tmp_path: Path) -> None:
    # a member-day of a nanosecond running sum in random steps of whole 10 us (the
    # simulated relay-log read time: 10 us per transaction, 0-600 a second)
    rng = random.Random(29)
    steps = [rng.randrange(600) * 10_000 for _ in range(86_400)]
    total, sums = 26_821_074_619_753_334, []
    for step in steps:
        total += step
        sums.append(total)
    column = "waits_for_work_from_source_sum_time"
    rows = [
        dataclasses.replace(sample_row(s + 1, at_us=s * 1_000_000), **{column: sums[s]})
        for s in range(86_400)
    ]
    (path,) = write_segments(tmp_path, rows_to_table(rows), segment_id="sums")
    # stored on the first sample and the last of each 10 s window (history.cadence)
    kept = [v if s == 0 or s % 10 == 9 else None for s, v in enumerate(sums)]
    # reference: the same column as pyarrow writes it with zstd 9 and the same encoding
    reference = tmp_path / "reference.parquet"
    pq.write_table(
        pa.table({column: pa.array(kept, pa.int64())}),
        reference,
        compression="zstd",
        compression_level=9,
        use_dictionary=False,
        column_encoding={column: "DELTA_BINARY_PACKED"},
    )

    def stored(file: Path) -> int:
        meta = pq.ParquetFile(file).metadata.row_group(0)
        chunks = (meta.column(i) for i in range(meta.num_columns))
        (chunk,) = (c for c in chunks if c.path_in_schema == column)
        return int(chunk.total_compressed_size)

    # every 10th value only: the repeats zstd 15 finds are fewer (9 x 7 simulated: 5 %)
    assert stored(path) < stored(reference)
    assert read_history(tmp_path).column(column).to_pylist() == kept


def test_every_integer_running_sum_gets_the_higher_zstd_level() -> None:
    # by rule over name and kind: a column added later ("..._sum_time") is covered too
    assert zstd_level("waits_for_anything_new_sum_time", "int64") == SUM_ZSTD_LEVEL
    assert zstd_level("transactions_committed_size_bytes_sum", "int64") == SUM_ZSTD_LEVEL
    assert zstd_level("count_transactions_checked", "int64") == ZSTD_LEVEL
    assert zstd_level("a_text_sum", "string") == ZSTD_LEVEL
    assert SUM_ZSTD_LEVEL > ZSTD_LEVEL


@pytest.mark.parametrize("order", [(1, 2, 4, 3, 5), (2, 4, 3, 5, 1)])
def test_one_members_rows_out_of_order_are_written_in_order(
    tmp_path: Path, order: tuple[int, ...]
) -> None:
    # seq 3 and 4 share a second: the tie is broken by seq (the second order is in
    # time order but for that tie)
    at = {1: 5, 2: 1, 3: 3, 4: 3, 5: 4}
    rows = [sample_row(s, at_us=MIDNIGHT_US + at[s] * 1_000_000) for s in order]
    (path,) = write_segments(tmp_path, rows_to_table(rows), segment_id="one")
    assert pq.read_table(path).column("seq").to_pylist() == [2, 3, 4, 5, 1]


@pytest.mark.parametrize(
    "values",
    [
        ["a", "a", "a"],
        ["a", "b", "a"],
        ["a", None, "a"],
        [None, None],
        [None, "a"],
        [],
        ["a"],
    ],
)
def test_one_value_is_count_distinct_of_one(values: list[str | None]) -> None:
    column = pa.chunked_array(
        [pa.array(values[:1], pa.string()), pa.array(values[1:], pa.string())]
    )
    expected = pc.count_distinct(column, mode="all").as_py() == 1  # NULL counts as a value
    assert one_value(column) is expected
