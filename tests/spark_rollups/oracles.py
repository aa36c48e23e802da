"""Independent DuckDB oracles of the rollups, as rows for their tests.

`counter_steps` runs tests/fixtures/rollup_oracle.counter_steps_sql (counter
increases per member and bucket straight from the history Parquet files,
from the definitions) and keys its rows by member and bucket.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.fixtures.rollup_oracle import counter_steps_sql


def counter_steps(
    history: Path, increases: dict[str, str], bucket_us: int
) -> dict[tuple[str, int], dict[str, Any]]:
    """(member, bucket start in µs) -> the increase of each counter, samples, resets.

    Args:
        history: the history root.
        increases: history column -> rollup column.
        bucket_us: the bucket length (an hour, a day) in µs.

    Returns:
        `rollup_oracle.counter_steps_sql`'s rows (one group), by member and bucket.
    """
    result = duckdb.sql(counter_steps_sql(history, increases, bucket_us)).to_arrow_table()
    found = {}
    for r in result.drop_columns(["group_name"]).to_pylist():
        found[(r.pop("member_id"), r.pop("bucket"))] = r
    return found


def rollup_rows(out: Path, table: str, columns: list[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """A member rollup table as written: (member, bucket start in µs) -> `columns`."""
    sql = f"""
        SELECT member_id, epoch_us(bucket_start) AS bucket, {", ".join(columns)}
        FROM read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)
    """
    result = duckdb.sql(sql).to_arrow_table().to_pylist()
    return {(r.pop("member_id"), r.pop("bucket")): r for r in result}


def assert_rows_equal(actual: dict[Any, Any], expected: dict[Any, Any]) -> None:
    """Equal keys; integers, texts and NULLs exactly, other numbers to 1e-12."""
    assert set(actual) == set(expected)
    for key, want in expected.items():
        for column, value in want.items():
            got = actual[key][column]
            if value is None or isinstance(value, (int, str)):
                assert got == value, (key, column)
            else:
                assert got == pytest.approx(value, rel=1e-12), (key, column)
