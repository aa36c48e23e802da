"""What the commit path costs a tick: its rows are built only for a reader, and a
member's unchanged communication section is checked once; values by hand."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core import columns as col
from grstats.core import commitpath
from protocol import CommitPathReport
from tests.grstats.core.test_tables import local_sample, make_tables
from tests.grstats.test_commitpath import NEW, REMOTE, WINDOW, _received

TABLE = "grstats_member_commit_path"


@pytest.fixture
def row_builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The member ids of every commit-path row built."""
    built: list[str] = []
    real = commitpath._row

    def counted(member_id: str, *args: object) -> dict[str, object]:
        built.append(member_id)
        return real(member_id, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(commitpath, "_row", counted)
    return built


def test_a_snapshot_nobody_reads_builds_no_commit_path_row(row_builds: list[str]) -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    for seq, report in enumerate(WINDOW, start=1):
        _received(tables, seq, report)
    snapshot = tables.snapshot(WINDOW[1].at_us)
    assert snapshot.table(col.MEMBER_STATS.name)  # the other tables are there
    assert row_builds == []
    (row,) = snapshot.table(TABLE)
    assert row_builds == [REMOTE]
    assert row["CONSENSUS_PER_SECOND"] == 50.0  # 500 rounds in 10 s
    assert snapshot.table(TABLE)[0] is row  # built once per snapshot
    assert row_builds == [REMOTE]


def test_a_snapshot_read_later_shows_the_rows_of_its_moment() -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    for seq, report in enumerate(WINDOW, start=1):
        _received(tables, seq, report)
    before = tables.snapshot(WINDOW[1].at_us)
    # a third report: consensus 1500 -> 1800 rounds over 5 s, read after it arrived
    third = dataclasses.replace(NEW, consensus_proposals=1800, consensus_time_us=3_900_000)
    _received(tables, 3, CommitPathReport(WINDOW[1].at_us + 5_000_000, third))
    after = tables.snapshot(WINDOW[1].at_us + 5_000_000)
    (now,) = after.table(TABLE)
    (then,) = before.table(TABLE)
    assert (then["PERIOD_SECONDS"], then["CONSENSUS_PER_SECOND"]) == (10.0, 50.0)
    assert (now["PERIOD_SECONDS"], now["CONSENSUS_PER_SECOND"]) == (5.0, 60.0)
    assert dict(before.tables)[TABLE] == (then,)  # every reader sees the same rows
