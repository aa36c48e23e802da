"""Hand-computed rollups of tiny histories (DESIGN.md section 7 semantics)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    FLOW_HISTORY_COLUMNS,
    HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from spark_rollups import transforms
from spark_rollups.schema import APPLIER_COUNTERS, FLOW_COLUMNS, FLOW_SCHEMA
from tests.spark_rollups.history_rows import read_samples, row, rows_of, write_history

pytestmark = pytest.mark.slow


def rollup(spark: Any, tmp_path: Path, rows: list[dict[str, Any]], **kwargs: Any) -> Any:
    write_history(tmp_path / "history", rows)
    return transforms.rollup_tables(read_samples(spark, tmp_path / "history"), **kwargs)


def only(frame: Any) -> dict[str, Any]:
    rows = rows_of(frame)
    assert len(rows) == 1, rows
    return rows[0]


def test_history_column_names_equal_grstats_records() -> None:
    names = {name for name, _ in HISTORY_COLUMNS}
    assert set(transforms.HISTORY_INPUT_COLUMNS) <= names
    assert transforms.GROUP_NAME == "group_name"
    assert transforms.SAMPLED_AT == "sampled_at"
    assert {src for src, _ in transforms.COUNTERS} == {
        "count_transactions_checked",
        "count_conflicts_detected",
        "count_transactions_remote_applied",
        "count_transactions_local_proposed",
        "count_transactions_local_rollback",
    }


def test_history_schema_copy_equals_grstats_records() -> None:
    kinds = dict(HISTORY_COLUMNS)
    spark_types = {
        "string": "string",
        "int64": "bigint",
        "uint64": "decimal(20,0)",
        "timestamp[us, tz=UTC]": "timestamp",
        "double": "double",
    }
    for field in transforms.HISTORY_SCHEMA.fields:
        assert field.dataType.simpleString() == spark_types[kinds[field.name]], field.name
    names = [n for n, _ in HISTORY_COLUMNS]
    first_lag = names.index(transforms.LAGS[0])
    lag_columns = names[first_lag : first_lag + 5]
    assert [*transforms.LAGS, "clock_offset_seconds"] == lag_columns
    applier = [src for src, _ in APPLIER_COUNTERS]
    assert applier == names[first_lag + 5 : first_lag + 5 + len(applier)]
    assert set(applier) == set(APPLIER_HISTORY_COLUMNS)
    assert [*transforms.LAGS, "clock_offset_seconds"] == list(LAG_HISTORY_COLUMNS)
    flow_types = {"string": "string", "int64": "bigint", "int8": "tinyint", "double": "double"}
    for field in FLOW_SCHEMA.fields:
        assert field.dataType.simpleString() == {**spark_types, **flow_types}[kinds[field.name]]
    assert [n for n, _ in FLOW_COLUMNS] == [n for n, _ in FLOW_HISTORY_COLUMNS]


def test_member_table_columns_are_the_design_names(spark: Any, tmp_path: Path) -> None:
    tables = rollup(spark, tmp_path, [row("a", 0)])
    expected = [
        "group_name", "member_id", "bucket_start",
        "transactions_checked", "conflicts_detected", "transactions_remote_applied",
        "transactions_local_proposed", "transactions_local_rollback",
        "transactions_in_queue_min", "transactions_in_queue_avg",
        "transactions_in_queue_max", "transactions_in_queue_p95",
        "transactions_remote_in_applier_queue_min", "transactions_remote_in_applier_queue_avg",
        "transactions_remote_in_applier_queue_max", "transactions_remote_in_applier_queue_p95",
        "transactions_rows_validating_min", "transactions_rows_validating_avg",
        "transactions_rows_validating_max",
        "samples", "coverage", "resets", "restarts",
        "replication_lag_seconds_p50", "replication_lag_seconds_p95",
        "replication_lag_seconds_p99", "replication_lag_seconds_max",
        "queue_lag_seconds_p50", "queue_lag_seconds_p95",
        "queue_lag_seconds_p99", "queue_lag_seconds_max",
        "apply_lag_seconds_p50", "apply_lag_seconds_p95",
        "apply_lag_seconds_p99", "apply_lag_seconds_max",
        "apply_time_seconds_p50", "apply_time_seconds_p95",
        "apply_time_seconds_p99", "apply_time_seconds_max",
        "day",
    ]  # fmt: skip
    for name in ("member_minute", "member_hour", "member_day"):
        assert tables[name].columns == expected


def test_group_table_columns_include_the_design_names(spark: Any, tmp_path: Path) -> None:
    tables = rollup(spark, tmp_path, [row("a", 0)])
    required = {
        "group_name", "bucket_start", "members", "conflict_rate", "samples", "coverage",
        "resets", "transactions_checked", "conflicts_detected", "transactions_local_proposed",
        "transactions_local_rollback",
    }  # fmt: skip
    for name in ("group_hour", "group_day"):
        assert required <= set(tables[name].columns)


def test_first_sample_is_only_a_baseline(spark: Any, tmp_path: Path) -> None:
    minute = only(rollup(spark, tmp_path, [row("a", 0, checked=100)])["member_minute"])
    assert minute["transactions_checked"] == 0
    assert minute["samples"] == 1


def test_counter_reset_counts_the_new_value_as_the_step(spark: Any, tmp_path: Path) -> None:
    values = [10, 15, 3, 8, 8]  # steps: baseline, 5, 3 (reset: the value), 5, 0
    rows = [row("a", i, checked=v) for i, v in enumerate(values)]
    minute = only(rollup(spark, tmp_path, rows)["member_minute"])
    assert minute["transactions_checked"] == 13
    assert minute["resets"] == 1


def test_new_incarnation_alone_is_not_a_reset(spark: Any, tmp_path: Path) -> None:
    rows = [
        row("a", 0, checked=100, incarnation=1, seq=50),
        row("a", 1, checked=105, incarnation=2, seq=0),  # daemon restarted, server did not
    ]
    minute = only(rollup(spark, tmp_path, rows)["member_minute"])
    assert minute["transactions_checked"] == 5
    assert minute["resets"] == 0
    assert minute["restarts"] == 1


def test_gap_puts_the_step_in_the_bucket_of_the_later_sample(spark: Any, tmp_path: Path) -> None:
    rows = [row("a", 0, checked=100), row("a", 30, checked=110), row("a", 125, checked=150)]
    minutes = rows_of(rollup(spark, tmp_path, rows)["member_minute"])
    assert [(m["bucket_start"], m["transactions_checked"]) for m in minutes] == [
        ("2026-11-17T10:00:00", 10),
        ("2026-11-17T10:02:00", 40),
    ]
    assert minutes[0]["coverage"] == pytest.approx(2 / 60)


def test_duplicate_sample_is_counted_once(spark: Any, tmp_path: Path) -> None:
    rows = [
        row("a", 0, checked=100, queue=1, seq=1),
        row("a", 1, checked=105, queue=10, seq=2),
        row("a", 1, checked=105, queue=10, seq=2),  # the same sample written twice
        row("a", 2, checked=107, queue=4, seq=3),
    ]
    minute = only(rollup(spark, tmp_path, rows)["member_minute"])
    assert minute["samples"] == 3
    assert minute["transactions_checked"] == 7
    assert minute["transactions_in_queue_avg"] == pytest.approx(5.0)  # (1 + 10 + 4) / 3


def test_redelivered_samples_in_another_file_are_dropped_wherever_they_are(
    spark: Any, tmp_path: Path
) -> None:
    # A collector restart writes retained samples again into a new segment: the
    # copies are in another file, far from their originals and out of order.
    checked = [100, 103, 110, 111, 120, 121]  # a, incarnation 1, seq 1..6 at t = 0..5
    first = [row("a", i, checked=v, queue=2 * (i + 1), seq=i + 1) for i, v in enumerate(checked)]
    first += [row("b", i, checked=v, seq=i + 1) for i, v in enumerate([50, 51, 53])]
    first.append(row("a", 6, checked=125, queue=14, incarnation=2, seq=3))  # seq 3 again: kept
    redelivered = [
        row("a", 5, checked=121, queue=12, seq=6),
        row("b", 1, checked=51, seq=2),
        row("a", 0, checked=100, queue=2, seq=1),
        row("a", 2, checked=110, queue=6, seq=3),
        row("a", 6, checked=125, queue=14, incarnation=2, seq=3),
    ]
    write_history(tmp_path / "history", first[::-1], name="part-0.parquet")
    write_history(tmp_path / "history", redelivered, name="part-1.parquet")
    tables = transforms.rollup_tables(read_samples(spark, tmp_path / "history"))
    a, b = rows_of(tables["member_minute"])
    # a: 7 distinct samples; steps 3 + 7 + 1 + 9 + 1 + (125 - 121) = 25; one restart
    assert (a["samples"], a["transactions_checked"], a["restarts"], a["resets"]) == (7, 25, 1, 0)
    assert a["transactions_in_queue_avg"] == pytest.approx(8.0)  # (2 + 4 + ... + 14) / 7
    assert a["transactions_in_queue_p95"] == pytest.approx(13.4)  # 12 + 0.7 * (14 - 12)
    assert (b["samples"], b["transactions_checked"]) == (3, 3)
    day_a, _ = rows_of(tables["member_day"])
    assert (day_a["samples"], day_a["transactions_checked"]) == (7, 25)


def test_rows_out_of_order_are_ordered_by_sampled_at(spark: Any, tmp_path: Path) -> None:
    rows = [
        row("a", 2, checked=12),
        row("a", 0, checked=10),
        row("a", 3, checked=13),
        row("a", 1, checked=11),
    ]
    minute = only(rollup(spark, tmp_path, rows)["member_minute"])
    assert minute["transactions_checked"] == 3
    assert minute["resets"] == 0


def test_gauges_min_avg_max_and_exact_p95(spark: Any, tmp_path: Path) -> None:
    # queue values 20, 19, ..., 1: p95 position 0.95 * 19 = 18.05 -> 19 + 0.05 * (20 - 19)
    rows = [row("a", i, queue=20 - i, applier_queue=7, validating=i % 3) for i in range(20)]
    tables = rollup(spark, tmp_path, rows)
    for name in ("member_minute", "member_hour", "member_day"):
        bucket = only(tables[name])
        assert bucket["transactions_in_queue_min"] == 1
        assert bucket["transactions_in_queue_max"] == 20
        assert bucket["transactions_in_queue_avg"] == pytest.approx(10.5)
        assert bucket["transactions_in_queue_p95"] == pytest.approx(19.05)
        assert bucket["transactions_remote_in_applier_queue_p95"] == pytest.approx(7.0)
        assert bucket["transactions_rows_validating_max"] == 2
        assert bucket["transactions_rows_validating_avg"] == pytest.approx(19 / 20)


def test_hour_p95_uses_every_sample_of_the_hour(spark: Any, tmp_path: Path) -> None:
    # minute 10:00 holds ten 0s, minute 10:01 ten 100s: hour p95 at 0.95 * 19 = 18.05 -> 100
    # (an average of the minutes' p95 values would give 50)
    rows = [row("a", i, queue=0) for i in range(10)]
    rows += [row("a", 60 + i, queue=100) for i in range(10)]
    hour = only(rollup(spark, tmp_path, rows)["member_hour"])
    assert hour["transactions_in_queue_p95"] == pytest.approx(100.0)


def test_member_joining_mid_hour_has_half_coverage(spark: Any, tmp_path: Path) -> None:
    rows = [row("b", 1800 + i, checked=1000 + 2 * i) for i in range(1800)]  # 10:30:00-10:59:59
    hour = only(rollup(spark, tmp_path, rows)["member_hour"])
    assert hour["samples"] == 1800
    assert hour["coverage"] == pytest.approx(0.5)
    assert hour["transactions_checked"] == 2 * 1799  # the first sample is the baseline


def test_group_checked_and_conflicts_are_the_max_proposals_the_sum(
    spark: Any, tmp_path: Path
) -> None:
    rows = [
        row("a", 0),
        row("a", 60, checked=100, conflicts=4, proposed=60, rollback=3),
        row("b", 0),
        row("b", 60, checked=90, conflicts=5, proposed=40, rollback=1),
    ]
    group = only(rollup(spark, tmp_path, rows)["group_hour"])
    assert group["members"] == 2
    assert group["transactions_checked"] == 100
    assert group["conflicts_detected"] == 5
    assert group["transactions_local_proposed"] == 100
    assert group["transactions_local_rollback"] == 4
    assert group["conflict_rate"] == pytest.approx(0.05)


def test_group_conflict_rate_is_null_when_nothing_was_checked(spark: Any, tmp_path: Path) -> None:
    rows = [row("a", 0, checked=7), row("a", 1, checked=7)]
    group = only(rollup(spark, tmp_path, rows)["group_day"])
    assert group["transactions_checked"] == 0
    assert group["conflict_rate"] is None


def test_group_members_counts_members_present_in_the_bucket(spark: Any, tmp_path: Path) -> None:
    rows = [row("a", 0), row("a", 3600), row("b", 3600)]  # b only in hour 11
    groups = rows_of(rollup(spark, tmp_path, rows)["group_hour"])
    assert [(g["bucket_start"], g["members"]) for g in groups] == [
        ("2026-11-17T10:00:00", 1),
        ("2026-11-17T11:00:00", 2),
    ]


MIDNIGHT = dt.datetime(2026, 11, 18, tzinfo=dt.UTC)


def test_first_step_of_a_day_comes_from_the_previous_day(spark: Any, tmp_path: Path) -> None:
    rows = [
        row("a", MIDNIGHT - dt.timedelta(seconds=2), checked=90),
        row("a", MIDNIGHT - dt.timedelta(seconds=1), checked=100),
        row("a", MIDNIGHT, checked=130),
        row("a", MIDNIGHT + dt.timedelta(seconds=1), checked=131),
    ]
    days = rows_of(rollup(spark, tmp_path, rows)["member_day"])
    assert [(d["bucket_start"], d["transactions_checked"]) for d in days] == [
        ("2026-11-17T00:00:00", 10),
        ("2026-11-18T00:00:00", 31),
    ]


def test_incremental_day_takes_its_first_step_from_the_baseline(spark: Any, tmp_path: Path) -> None:
    write_history(tmp_path / "before", [row("a", MIDNIGHT - dt.timedelta(seconds=1), checked=100)])
    write_history(
        tmp_path / "day",
        [row("a", MIDNIGHT, checked=130), row("a", MIDNIGHT + dt.timedelta(seconds=1), checked=5)],
    )
    tables = transforms.rollup_tables(
        read_samples(spark, tmp_path / "day"), read_samples(spark, tmp_path / "before")
    )
    minute = only(tables["member_minute"])
    assert minute["bucket_start"] == "2026-11-18T00:00:00"
    assert minute["transactions_checked"] == 30 + 5  # 130 - 100, then a reset to 5
    assert minute["resets"] == 1


def test_reset_across_midnight_counts_the_new_value(spark: Any, tmp_path: Path) -> None:
    rows = [
        row("a", MIDNIGHT - dt.timedelta(seconds=1), checked=100, incarnation=1),
        row("a", MIDNIGHT, checked=20, incarnation=2, seq=0),
    ]
    day = rows_of(rollup(spark, tmp_path, rows)["member_day"])[1]
    assert day["transactions_checked"] == 20
    assert day["resets"] == 1
    assert day["restarts"] == 1
