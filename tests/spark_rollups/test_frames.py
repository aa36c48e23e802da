"""spark_rollups.frames: the same rows through pyspark 4's toArrow and pyspark 3.5's path;
a rollup table's week, by group."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from spark_rollups.frames import read_week, rows, rows_by_group


class _Pyspark35Frame:
    """A DataFrame as pyspark 3.5 shows it: no toArrow, the Arrow collection of toPandas."""

    def __init__(self, frame: Any) -> None:
        self._frame = frame

    def _collect_as_arrow(self) -> Any:
        return self._frame._collect_as_arrow()


def test_both_paths_give_the_same_rows_with_utc_timestamps(spark: Any) -> None:
    frame = spark.sql(
        "SELECT * FROM VALUES "
        "('a', 1, TIMESTAMP '2026-11-23 10:00:00', 0.5), "
        "('b', NULL, NULL, NULL) AS t(member_id, n, at, share) ORDER BY member_id"
    )
    expected = [
        {
            "member_id": "a",
            "n": 1,
            "at": dt.datetime(2026, 11, 23, 10, 0, tzinfo=dt.UTC),
            "share": 0.5,
        },
        {"member_id": "b", "n": None, "at": None, "share": None},
    ]
    assert rows(frame) == expected
    assert rows(_Pyspark35Frame(frame)) == expected  # type: ignore[arg-type]
    assert rows(_Pyspark35Frame(frame.where("n > 5"))) == []  # type: ignore[arg-type]


def test_read_week_keeps_the_week_and_group_and_is_none_without_files(
    spark: Any, tmp_path: Path
) -> None:
    table = tmp_path / "t"
    spark.sql(
        "SELECT * FROM VALUES "
        "('g1', 'a', '2026-11-22'), ('g1', 'a', '2026-11-23'), ('g1', 'b', '2026-11-29'), "
        "('g1', 'c', '2026-11-30'), ('g2', 'd', '2026-11-24') AS t(group_name, member_id, date)"
    ).withColumn("group", F.col("group_name")).write.partitionBy("group", "date").parquet(
        str(table)
    )
    monday, next_monday = dt.date(2026, 11, 23), dt.date(2026, 11, 30)
    week = read_week(spark, str(table), monday, next_monday, "g1")
    assert week is not None
    assert rows_by_group(week.select("group_name", "member_id").orderBy("member_id")) == {
        "g1": [{"group_name": "g1", "member_id": "a"}, {"group_name": "g1", "member_id": "b"}]
    }
    every = read_week(spark, str(table), monday, next_monday, None)
    assert every is not None
    assert sorted(r["member_id"] for r in rows(every.select("member_id"))) == ["a", "b", "d"]
    (tmp_path / "empty" / "group=g1" / "date=2026-11-23").mkdir(parents=True)
    assert read_week(spark, str(tmp_path / "empty"), monday, next_monday, None) is None
    assert read_week(spark, str(tmp_path / "missing"), monday, next_monday, None) is None
