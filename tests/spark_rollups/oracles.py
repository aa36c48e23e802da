"""Independent DuckDB oracles of the rollups, shared by their tests.

`counter_steps` sums counter increases per member and bucket straight from the
history Parquet files, from the definitions (DESIGN.md section 7 steps): each
sample's predecessor is the member's latest earlier sample with any of the
counters, found with an ASOF join, not with a window; a counter NULL in either
of the two has no step there; a decrease is a reset (the step is the value);
a predecessor older than the previous UTC day gives no step; exact duplicate
rows (a file written twice) count once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest


def counter_steps(
    history: Path, increases: dict[str, str], bucket_us: int
) -> dict[tuple[str, int], dict[str, Any]]:
    """(member, bucket start in µs) -> the increase of each counter, samples, resets.

    Args:
        history: the history root.
        increases: history column -> rollup column.
        bucket_us: the bucket length (an hour, a day) in µs.

    Returns:
        Per member-bucket with at least one sample with figures: each rollup
        column (NULL without any step), `samples` (samples with figures) and
        `resets` (of those, samples where a counter went back).
    """
    joins, steps = [], []
    figures = " OR ".join(f"{src} IS NOT NULL" for src in increases)
    for n, (src, out) in enumerate(increases.items()):
        # the latest earlier sample of the member with figures
        joins.append(f"""
            ASOF LEFT JOIN (SELECT member_id, sampled_at AS at_{n}, {src} AS v_{n},
                                   epoch_us(sampled_at) // 86400000000 AS d_{n}
                            FROM samples WHERE {figures}) p{n}
              ON p{n}.member_id = s.member_id AND s.sampled_at > p{n}.at_{n}""")
        known = f"s.{src} IS NOT NULL AND v_{n} IS NOT NULL AND s.day - d_{n} <= 1"
        steps.append(f"""CASE WHEN NOT ({known}) THEN NULL
                              WHEN s.{src} >= v_{n} THEN s.{src} - v_{n}
                              ELSE s.{src} END AS {out}""")
        steps.append(f"coalesce({known} AND s.{src} < v_{n}, false) AS reset_{n}")
    resets = " OR ".join(f"reset_{n}" for n in range(len(increases)))
    sums = ", ".join(f"sum({out})::BIGINT AS {out}" for out in increases.values())
    sql = f"""
        WITH samples AS (
            SELECT DISTINCT * FROM read_parquet('{history}/*/*/part-*.parquet',
                                                union_by_name = true, hive_partitioning = false)
        ),
        stepped AS (
            SELECT s.member_id, s.sampled_at, ({figures}) AS has_figures, {", ".join(steps)}
            FROM (SELECT *, epoch_us(sampled_at) // 86400000000 AS day FROM samples) s
            {" ".join(joins)}
        )
        SELECT member_id, epoch_us(sampled_at) // {bucket_us} * {bucket_us} AS bucket, {sums},
               count(*) FILTER (WHERE has_figures) AS samples,
               count(*) FILTER (WHERE has_figures AND ({resets})) AS resets
        FROM stepped GROUP BY ALL HAVING count(*) FILTER (WHERE has_figures) > 0
    """
    result = duckdb.sql(sql).to_arrow_table().to_pylist()
    return {(r.pop("member_id"), r.pop("bucket")): r for r in result}


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
