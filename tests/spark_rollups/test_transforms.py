"""Hand-computed rollups of tiny histories (DESIGN.md section 7 semantics).

Strategy: every case is a tiny history of its own group (the group name is
the case's name) and every case goes through ONE rollup: the cases are
written together (each group to its own partition directories, as before),
read once, rolled up by `transforms.rollup_tables` once, and each table is
collected once.  Every key of the rollups starts with group_name (the
windows, the minute, hour and day groupings, the day boundary's join), so
a case cannot see another; a warm Spark job costs seconds even on a few
rows, one pipeline per case cost minutes.  Each test then checks its own
case's rows, by hand-computed values, as when it ran alone.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pytest

from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    FLOW_HELD_HISTORY_COLUMNS,
    FLOW_HISTORY_COLUMNS,
    HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from spark_rollups import transforms
from spark_rollups.schema import APPLIER_COUNTERS, FLOW_COLUMNS, FLOW_SCHEMA
from tests.spark_rollups.history_rows import read_samples, row, rows_of, write_history

pytestmark = pytest.mark.slow

# file name -> the rows of every case written to it; "before" rows are the baseline
_FILES: dict[str, list[dict[str, Any]]] = defaultdict(list)
_BEFORE: list[dict[str, Any]] = []


def case(
    name: str,
    rows: list[dict[str, Any]],
    *,
    file: str = "part-0.parquet",
    before: list[dict[str, Any]] | None = None,
) -> str:
    """Register a case's history rows (in their order) under group `name`.

    Args:
        name: the case, also its group name.
        rows: history rows (`row(...)`), written in this order.
        file: the history file name under each of the case's partitions.
        before: rows of the day before the rolled-up dates (the baseline).

    Returns:
        `name`, for the test to look its rows up by.
    """
    _FILES[file] += [{**r, "group_name": name} for r in rows]
    _BEFORE.extend({**r, "group_name": name} for r in before or [])
    return name


@dataclass(frozen=True)
class Rolled:
    """The one rollup of every case: the lazy tables and their collected rows."""

    tables: dict[str, Any]
    collected: dict[str, dict[str, list[dict[str, Any]]]]  # table -> case -> rows

    def rows(self, table: str, name: str) -> list[dict[str, Any]]:
        """The case's rows of one table, ordered by member and bucket."""
        return self.collected[table].get(name, [])

    def only(self, table: str, name: str) -> dict[str, Any]:
        """The case's one row of a table."""
        rows = self.rows(table, name)
        assert len(rows) == 1, rows
        return rows[0]


@pytest.fixture(scope="module")
def rolled(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Rolled:
    root = tmp_path_factory.mktemp("cases")
    for name, rows in _FILES.items():
        write_history(root / "history", rows, name=name)
    write_history(root / "before", _BEFORE)
    tables = transforms.rollup_tables(
        read_samples(spark, root / "history"), read_samples(spark, root / "before")
    )
    collected: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for table, frame in tables.items():
        by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows_of(frame):
            by_case[r["group_name"]].append(r)
        collected[table] = dict(by_case)
    return Rolled(tables, collected)


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
    flow_history = [*FLOW_HISTORY_COLUMNS, *FLOW_HELD_HISTORY_COLUMNS]
    assert [n for n, _ in FLOW_COLUMNS] == [n for n, _ in flow_history]


ONE_SAMPLE = case("one-sample", [row("a", 0)])


def test_member_table_columns_are_the_design_names(rolled: Rolled) -> None:
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
        assert rolled.tables[name].columns == expected
        assert list(rolled.only(name, ONE_SAMPLE)) == expected  # the collected rows too


def test_group_table_columns_include_the_design_names(rolled: Rolled) -> None:
    required = {
        "group_name", "bucket_start", "members", "conflict_rate", "samples", "coverage",
        "resets", "transactions_checked", "conflicts_detected", "transactions_local_proposed",
        "transactions_local_rollback",
    }  # fmt: skip
    for name in ("group_hour", "group_day"):
        assert required <= set(rolled.tables[name].columns)
        assert required <= set(rolled.only(name, ONE_SAMPLE))


FIRST_SAMPLE = case("first-sample", [row("a", 0, checked=100)])


def test_first_sample_is_only_a_baseline(rolled: Rolled) -> None:
    minute = rolled.only("member_minute", FIRST_SAMPLE)
    assert minute["transactions_checked"] == 0
    assert minute["samples"] == 1


# steps: baseline, 5, 3 (reset: the value), 5, 0
RESET = case("reset", [row("a", i, checked=v) for i, v in enumerate([10, 15, 3, 8, 8])])


def test_counter_reset_counts_the_new_value_as_the_step(rolled: Rolled) -> None:
    minute = rolled.only("member_minute", RESET)
    assert minute["transactions_checked"] == 13
    assert minute["resets"] == 1


INCARNATION = case(
    "incarnation",
    [
        row("a", 0, checked=100, incarnation=1, seq=50),
        row("a", 1, checked=105, incarnation=2, seq=0),  # daemon restarted, server did not
    ],
)


def test_new_incarnation_alone_is_not_a_reset(rolled: Rolled) -> None:
    minute = rolled.only("member_minute", INCARNATION)
    assert minute["transactions_checked"] == 5
    assert minute["resets"] == 0
    assert minute["restarts"] == 1


GAP = case("gap", [row("a", 0, checked=100), row("a", 30, checked=110), row("a", 125, checked=150)])


def test_gap_puts_the_step_in_the_bucket_of_the_later_sample(rolled: Rolled) -> None:
    minutes = rolled.rows("member_minute", GAP)
    assert [(m["bucket_start"], m["transactions_checked"]) for m in minutes] == [
        ("2026-11-17T10:00:00", 10),
        ("2026-11-17T10:02:00", 40),
    ]
    assert minutes[0]["coverage"] == pytest.approx(2 / 60)


DUPLICATE = case(
    "duplicate",
    [
        row("a", 0, checked=100, queue=1, seq=1),
        row("a", 1, checked=105, queue=10, seq=2),
        row("a", 1, checked=105, queue=10, seq=2),  # the same sample written twice
        row("a", 2, checked=107, queue=4, seq=3),
    ],
)


def test_duplicate_sample_is_counted_once(rolled: Rolled) -> None:
    minute = rolled.only("member_minute", DUPLICATE)
    assert minute["samples"] == 3
    assert minute["transactions_checked"] == 7
    assert minute["transactions_in_queue_avg"] == pytest.approx(5.0)  # (1 + 10 + 4) / 3


# A collector restart writes retained samples again into a new segment: the
# copies are in another file, far from their originals and out of order.
_CHECKED = [100, 103, 110, 111, 120, 121]  # a, incarnation 1, seq 1..6 at t = 0..5
_FIRST = [row("a", i, checked=v, queue=2 * (i + 1), seq=i + 1) for i, v in enumerate(_CHECKED)]
_FIRST += [row("b", i, checked=v, seq=i + 1) for i, v in enumerate([50, 51, 53])]
_FIRST.append(row("a", 6, checked=125, queue=14, incarnation=2, seq=3))  # seq 3 again: kept
REDELIVERED = case("redelivered", _FIRST[::-1], file="part-0.parquet")
case(
    REDELIVERED,
    [
        row("a", 5, checked=121, queue=12, seq=6),
        row("b", 1, checked=51, seq=2),
        row("a", 0, checked=100, queue=2, seq=1),
        row("a", 2, checked=110, queue=6, seq=3),
        row("a", 6, checked=125, queue=14, incarnation=2, seq=3),
    ],
    file="part-1.parquet",
)


def test_redelivered_samples_in_another_file_are_dropped_wherever_they_are(
    rolled: Rolled,
) -> None:
    a, b = rolled.rows("member_minute", REDELIVERED)
    # a: 7 distinct samples; steps 3 + 7 + 1 + 9 + 1 + (125 - 121) = 25; one restart
    assert (a["samples"], a["transactions_checked"], a["restarts"], a["resets"]) == (7, 25, 1, 0)
    assert a["transactions_in_queue_avg"] == pytest.approx(8.0)  # (2 + 4 + ... + 14) / 7
    assert a["transactions_in_queue_p95"] == pytest.approx(13.4)  # 12 + 0.7 * (14 - 12)
    assert (b["samples"], b["transactions_checked"]) == (3, 3)
    day_a, _ = rolled.rows("member_day", REDELIVERED)
    assert (day_a["samples"], day_a["transactions_checked"]) == (7, 25)


OUT_OF_ORDER = case(
    "out-of-order",
    [
        row("a", 2, checked=12),
        row("a", 0, checked=10),
        row("a", 3, checked=13),
        row("a", 1, checked=11),
    ],
)


def test_rows_out_of_order_are_ordered_by_sampled_at(rolled: Rolled) -> None:
    minute = rolled.only("member_minute", OUT_OF_ORDER)
    assert minute["transactions_checked"] == 3
    assert minute["resets"] == 0


# queue values 20, 19, ..., 1: p95 position 0.95 * 19 = 18.05 -> 19 + 0.05 * (20 - 19)
GAUGES = case(
    "gauges", [row("a", i, queue=20 - i, applier_queue=7, validating=i % 3) for i in range(20)]
)


def test_gauges_min_avg_max_and_exact_p95(rolled: Rolled) -> None:
    for name in ("member_minute", "member_hour", "member_day"):
        bucket = rolled.only(name, GAUGES)
        assert bucket["transactions_in_queue_min"] == 1
        assert bucket["transactions_in_queue_max"] == 20
        assert bucket["transactions_in_queue_avg"] == pytest.approx(10.5)
        assert bucket["transactions_in_queue_p95"] == pytest.approx(19.05)
        assert bucket["transactions_remote_in_applier_queue_p95"] == pytest.approx(7.0)
        assert bucket["transactions_rows_validating_max"] == 2
        assert bucket["transactions_rows_validating_avg"] == pytest.approx(19 / 20)


# minute 10:00 holds ten 0s, minute 10:01 ten 100s: hour p95 at 0.95 * 19 = 18.05 -> 100
# (an average of the minutes' p95 values would give 50)
HOUR_P95 = case(
    "hour-p95",
    [row("a", i, queue=0) for i in range(10)] + [row("a", 60 + i, queue=100) for i in range(10)],
)


def test_hour_p95_uses_every_sample_of_the_hour(rolled: Rolled) -> None:
    hour = rolled.only("member_hour", HOUR_P95)
    assert hour["transactions_in_queue_p95"] == pytest.approx(100.0)


# b from 10:30:00 to 10:59:59
MID_HOUR = case("mid-hour", [row("b", 1800 + i, checked=1000 + 2 * i) for i in range(1800)])


def test_member_joining_mid_hour_has_half_coverage(rolled: Rolled) -> None:
    hour = rolled.only("member_hour", MID_HOUR)
    assert hour["samples"] == 1800
    assert hour["coverage"] == pytest.approx(0.5)
    assert hour["transactions_checked"] == 2 * 1799  # the first sample is the baseline


GROUP_SUMS = case(
    "group-sums",
    [
        row("a", 0),
        row("a", 60, checked=100, conflicts=4, proposed=60, rollback=3),
        row("b", 0),
        row("b", 60, checked=90, conflicts=5, proposed=40, rollback=1),
    ],
)


def test_group_checked_and_conflicts_are_the_max_proposals_the_sum(rolled: Rolled) -> None:
    group = rolled.only("group_hour", GROUP_SUMS)
    assert group["members"] == 2
    assert group["transactions_checked"] == 100
    assert group["conflicts_detected"] == 5
    assert group["transactions_local_proposed"] == 100
    assert group["transactions_local_rollback"] == 4
    assert group["conflict_rate"] == pytest.approx(0.05)


NOTHING_CHECKED = case("nothing-checked", [row("a", 0, checked=7), row("a", 1, checked=7)])


def test_group_conflict_rate_is_null_when_nothing_was_checked(rolled: Rolled) -> None:
    group = rolled.only("group_day", NOTHING_CHECKED)
    assert group["transactions_checked"] == 0
    assert group["conflict_rate"] is None


MEMBERS_PRESENT = case("members-present", [row("a", 0), row("a", 3600), row("b", 3600)])


def test_group_members_counts_members_present_in_the_bucket(rolled: Rolled) -> None:
    groups = rolled.rows("group_hour", MEMBERS_PRESENT)  # b only in hour 11
    assert [(g["bucket_start"], g["members"]) for g in groups] == [
        ("2026-11-17T10:00:00", 1),
        ("2026-11-17T11:00:00", 2),
    ]


MIDNIGHT = dt.datetime(2026, 11, 18, tzinfo=dt.UTC)
SECOND = dt.timedelta(seconds=1)

FIRST_STEP = case(
    "first-step",
    [
        row("a", MIDNIGHT - 2 * SECOND, checked=90),
        row("a", MIDNIGHT - SECOND, checked=100),
        row("a", MIDNIGHT, checked=130),
        row("a", MIDNIGHT + SECOND, checked=131),
    ],
)


def test_first_step_of_a_day_comes_from_the_previous_day(rolled: Rolled) -> None:
    days = rolled.rows("member_day", FIRST_STEP)
    assert [(d["bucket_start"], d["transactions_checked"]) for d in days] == [
        ("2026-11-17T00:00:00", 10),
        ("2026-11-18T00:00:00", 31),
    ]


# only the day is rolled up; the day before is the baseline (its last sample)
INCREMENTAL = case(
    "incremental",
    [row("a", MIDNIGHT, checked=130), row("a", MIDNIGHT + SECOND, checked=5)],
    before=[row("a", MIDNIGHT - SECOND, checked=100)],
)


def test_incremental_day_takes_its_first_step_from_the_baseline(rolled: Rolled) -> None:
    minute = rolled.only("member_minute", INCREMENTAL)
    assert minute["bucket_start"] == "2026-11-18T00:00:00"
    assert minute["transactions_checked"] == 30 + 5  # 130 - 100, then a reset to 5
    assert minute["resets"] == 1


RESET_AT_MIDNIGHT = case(
    "reset-at-midnight",
    [
        row("a", MIDNIGHT - SECOND, checked=100, incarnation=1),
        row("a", MIDNIGHT, checked=20, incarnation=2, seq=0),
    ],
)


def test_reset_across_midnight_counts_the_new_value(rolled: Rolled) -> None:
    day = rolled.rows("member_day", RESET_AT_MIDNIGHT)[1]
    assert day["transactions_checked"] == 20
    assert day["resets"] == 1
    assert day["restarts"] == 1
