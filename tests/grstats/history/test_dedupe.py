"""Write-time de-duplication index: marks from Parquet, tentative until durable."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from grstats.history.dedupe import SeenIndex
from grstats.history.parquet import rows_to_table, write_segments
from tests.grstats.history.rows import sample_row


def test_rows_already_in_parquet_are_duplicates_newer_ones_are_not(tmp_path: Path) -> None:
    write_segments(tmp_path, rows_to_table([sample_row(1), sample_row(2)]), segment_id="a")
    index = SeenIndex(tmp_path)
    assert [index.admit(sample_row(s)) for s in (1, 2, 3)] == [False, False, True]


def test_other_incarnation_member_or_group_is_not_a_duplicate(tmp_path: Path) -> None:
    write_segments(tmp_path, rows_to_table([sample_row(5)]), segment_id="a")
    index = SeenIndex(tmp_path)
    row = sample_row(5)
    assert not index.admit(row)
    assert index.admit(dataclasses.replace(row, incarnation=1))
    assert index.admit(dataclasses.replace(row, member_id="m-2"))
    assert index.admit(sample_row(5, group="other"))


def test_rollback_forgets_tentative_marks_commit_keeps_them(tmp_path: Path) -> None:
    index = SeenIndex(tmp_path)
    assert index.admit(sample_row(1))
    assert not index.admit(sample_row(1))  # twice in one batch
    index.rollback()
    assert index.admit(sample_row(1))  # the write failed: a retry is not a duplicate
    index.commit()
    assert not index.admit(sample_row(1))


def test_trim_keeps_the_most_recently_used_partitions(tmp_path: Path) -> None:
    index = SeenIndex(tmp_path, max_partitions=1)
    index.note([sample_row(1, group="a"), sample_row(1, group="b")])
    index.trim()  # "a" is forgotten (nothing on disk), "b" kept
    assert index.admit(sample_row(1, group="a"))
    assert not index.admit(sample_row(1, group="b"))


def test_marks_come_from_this_writers_files_and_untagged_ones_only(tmp_path: Path) -> None:
    # Another collector of the same shared group already wrote seq 10; this
    # writer's seq 5 (received earlier, still buffered) must not be dropped.
    write_segments(tmp_path, rows_to_table([sample_row(10)]), segment_id="b", writer="wbbbbbbbbbb")
    write_segments(tmp_path, rows_to_table([sample_row(3)]), segment_id="a", writer="waaaaaaaaaa")
    write_segments(tmp_path, rows_to_table([sample_row(1)]), segment_id="old")  # no writer id
    index = SeenIndex(tmp_path, writer="waaaaaaaaaa")
    assert [index.admit(sample_row(s)) for s in (1, 3, 5)] == [False, False, True]
    assert not SeenIndex(tmp_path).admit(sample_row(5))  # no writer: every file counts
