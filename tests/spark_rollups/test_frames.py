"""spark_rollups.frames: the same rows through pyspark 4's toArrow and pyspark 3.5's path."""

from __future__ import annotations

import datetime as dt
from typing import Any

from spark_rollups.frames import rows


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
