"""The applier's counters stored on the last sample of each 10 s window: which rows keep
them (by hand), and every applier rollup equal to the one of the full-cadence rows
(the DuckDB oracle over both copies of the same rows)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.history.cadence import THINNED, thin_counters
from grstats.history.parquet import read_history, rows_to_table, write_segments
from tests.fixtures.rollup_oracle import BUCKET_US, counter_steps_sql
from tests.grstats.history.rows import MIDNIGHT_US, US, sample_row

A, B = APPLIER_HISTORY_COLUMNS[0], APPLIER_HISTORY_COLUMNS[5]


def _kept(tmp_path: Path, rows: list[Any]) -> list[int]:
    """The seconds after midnight of the rows written with `A` non-NULL."""
    write_segments(tmp_path, rows_to_table(rows), segment_id="s")
    table = read_history(tmp_path).to_pylist()
    return [int(r["sampled_at"].timestamp() - MIDNIGHT_US // US) for r in table if r[A] is not None]


def _row(second: int, a: int | None, b: int | None, member: str = "m-1") -> Any:
    row = sample_row(second + 1, member=member, at_us=MIDNIGHT_US + second * US)
    return dataclasses.replace(row, **{A: a, B: b})


def test_the_last_sample_of_each_window_and_the_members_first_and_last_keep_them(
    tmp_path: Path,
) -> None:
    rows = [_row(s, s, 2 * s) for s in range(26)]
    assert _kept(tmp_path, rows) == [0, 9, 19, 25]


def test_both_sides_of_a_reset_a_change_of_known_counters_and_a_restart_keep_them(
    tmp_path: Path,
) -> None:
    rows = [_row(s, s if s < 14 else s - 14, 2 * s) for s in range(40)]
    rows[5] = _row(5, 5, None)  # B unknown for one sample
    rows[17] = _row(17, None, None)  # no figures at all: neither kept nor a neighbour
    rows[33] = dataclasses.replace(rows[33], incarnation=9)  # the daemon restarted
    rows[34] = dataclasses.replace(rows[34], incarnation=9)
    kept = _kept(tmp_path, rows)
    assert kept == [0, 4, 5, 6, 9, 13, 14, 19, 29, 32, 33, 34, 35, 39]


def test_late_and_early_samples_keep_the_last_one_written_in_the_window(tmp_path: Path) -> None:
    # period 2.5 s: the window 10..20 holds 10, 12.5, 15, 17.5 -- the last is 17.5
    rows = [
        dataclasses.replace(_row(0, i, i), seq=i + 1, sampled_at=MIDNIGHT_US + i * 2_500_000)
        for i in range(9)
    ]
    write_segments(tmp_path, rows_to_table(rows), segment_id="s")
    kept = [r["seq"] for r in read_history(tmp_path).to_pylist() if r[A] is not None]
    assert kept == [1, 4, 8, 9]  # 0 s (first), 7.5 s, 17.5 s, 20 s (last)


def _random_rows(rng: random.Random, counters: tuple[str, ...]) -> list[Any]:
    """Three members' 1 Hz samples over midnight and after a gap of days: jitter, lost
    samples, resets, restarts, counters unknown for a while, samples without figures."""
    rows: list[Any] = []
    for m in range(3):
        member = f"m-{m}"
        spans = [(MIDNIGHT_US - 5_400 * US, 7_200), (MIDNIGHT_US + (3 * 86_400 + 3) * US, 900)]
        values = [rng.randrange(10**12) for _ in counters]
        incarnation, seq = 1, 0
        for start_us, seconds in spans:
            for s in range(seconds):
                seq += 1
                if rng.random() < 0.05:
                    continue  # lost
                at = start_us + s * US + rng.randrange(-400_000, 400_000)
                if rng.random() < 0.002:
                    incarnation += 1
                    values = [rng.randrange(100) for _ in values]
                elif rng.random() < 0.002:
                    values[rng.randrange(len(values))] = rng.randrange(100)  # one counter reset
                values = [v + rng.choice((0, 0, 1, rng.randrange(10**9))) for v in values]
                figures: dict[str, int | None] = dict(zip(counters, values, strict=True))
                if (s // 300) % 5 == 1:  # a stretch without one counter
                    figures[counters[5]] = None
                if rng.random() < 0.01:
                    figures = dict.fromkeys(figures)  # a sample without the section
                row = dataclasses.replace(sample_row(seq, member=member, at_us=at), **figures)
                rows.append(dataclasses.replace(row, incarnation=incarnation))
    return rows


def _rollup(history: Path, counters: tuple[str, ...], unit: str) -> list[tuple[Any, ...]]:
    increases = {name: f"increase_{n}" for n, name in enumerate(counters)}
    sql = counter_steps_sql(history, increases, BUCKET_US[unit])
    return duckdb.sql(f"SELECT * EXCLUDE (samples) FROM ({sql}) ORDER BY ALL").fetchall()


def _write(root: Path, table: pa.Table) -> Path:
    directory = root / "group=g" / "date=any"
    directory.mkdir(parents=True)
    pq.write_table(table, directory / "part-0.parquet")
    return root


@pytest.mark.parametrize("counters", THINNED, ids=["applier", "commit_path"])
def test_every_hour_and_day_of_increases_equals_the_full_cadence_one(
    tmp_path: Path, counters: tuple[str, ...]
) -> None:
    # the oracle of applier_member_hour/day and commit_member_hour/day (counter steps)
    rows = _random_rows(random.Random(29), counters)
    order = [("member_id", "ascending"), ("sampled_at", "ascending"), ("seq", "ascending")]
    table = rows_to_table(rows).sort_by(order)
    # one table over days: write_segments would thin each UTC day apart
    thinned = thin_counters(table)
    kept = thinned.filter(pc.is_valid(thinned[counters[0]]))
    assert kept.num_rows < table.num_rows / 5  # the rule stores a fraction of them
    full, thin = _write(tmp_path / "full", table), _write(tmp_path / "thin", thinned)
    for unit in ("hour", "day"):
        expected = _rollup(full, counters, unit)
        assert len(expected) > 3
        assert _rollup(thin, counters, unit) == expected
