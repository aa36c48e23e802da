"""What the commit path costs a tick: its rows are built only for a reader, and a
member's unchanged communication section is checked once; values by hand."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core import columns as col
from grstats.core import commitpath, commitpath_comm
from grstats.core.commitpath_comm import CommunicationReader
from protocol import CommitPathReport, GroupCommunication
from tests.fixtures.commit_path import (
    GROUP,
    LEADER,
    NEW,
    REMOTE,
    SINGLE,
    T0,
    TOPIC,
    WINDOW,
    receive_report,
    remote_envelope,
)
from tests.fixtures.member_tables import local_sample, make_tables

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
        receive_report(tables, seq, report)
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
        receive_report(tables, seq, report)
    before = tables.snapshot(WINDOW[1].at_us)
    # a third report: consensus 1500 -> 1800 rounds over 5 s, read after it arrived
    third = dataclasses.replace(NEW, consensus_proposals=1800, consensus_time_us=3_900_000)
    receive_report(tables, 3, CommitPathReport(WINDOW[1].at_us + 5_000_000, third))
    after = tables.snapshot(WINDOW[1].at_us + 5_000_000)
    (now,) = after.table(TABLE)
    (then,) = before.table(TABLE)
    assert (then["PERIOD_SECONDS"], then["CONSENSUS_PER_SECOND"]) == (10.0, 50.0)
    assert (now["PERIOD_SECONDS"], now["CONSENSUS_PER_SECOND"]) == (5.0, 60.0)
    assert dict(before.tables)[TABLE] == (then,)  # every reader sees the same rows


# -- ext.commit_path_comm: a member's unchanged section is checked once ---------

OTHER = "dddddddd-dddd-dddd-dddd-dddddddddddd"
KEY = (GROUP, REMOTE)


@pytest.fixture
def comm_decodes(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every ext.commit_path_comm value checked."""
    checked: list[object] = []
    real = commitpath_comm.decode_commit_path_comm

    def counted(value: object) -> GroupCommunication:
        checked.append(value)
        return real(value)

    monkeypatch.setattr(commitpath_comm, "decode_commit_path_comm", counted)
    return checked


def _comm_envelope(seq: int, wire: object) -> bytes:
    return remote_envelope(seq, T0 + seq * 1_000_000, version="8.0.40", commit_path_comm=wire)


def test_a_members_unchanged_communication_is_checked_once(comm_decodes: list[object]) -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    for seq in (1, 2, 3):
        tables.receive(TOPIC, _comm_envelope(seq, [1, 10, "8.0.27", [LEADER], [LEADER], 1]), T0)
    assert len(comm_decodes) == 1
    # a new leader: checked, and shown
    tables.receive(TOPIC, _comm_envelope(4, [1, 10, "8.0.27", [OTHER], [OTHER], 1]), T0)
    assert len(comm_decodes) == 2
    (row,) = tables.snapshot(T0 + 4_000_000).table(TABLE)
    assert row["WRITE_CONSENSUS_LEADERS_ACTUAL"] == OTHER
    assert row["WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE"] == 1
    assert tables.snapshot(T0).counters.envelopes_accepted == 4


def test_a_value_equal_only_in_python_is_checked_again_and_refused() -> None:
    # True == 1 in Python; on the wire true is no integer, so it is refused
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    tables.receive(TOPIC, _comm_envelope(1, [1, 10, "8.0.27", [LEADER], [LEADER], 1]), T0)
    tables.receive(TOPIC, _comm_envelope(2, [1, 10, "8.0.27", [LEADER], [LEADER], True]), T0)
    counters = tables.snapshot(T0).counters
    assert counters.malformed["commit_path"] == 1
    assert counters.envelopes_accepted == 2  # the stats applied all the same


def test_the_reader_keeps_at_most_its_bound_of_members(comm_decodes: list[object]) -> None:
    reader = CommunicationReader(max_members=2)
    wire = [1, 10, "8.0.27", [LEADER], [LEADER], 1]
    members = [(GROUP, f"0000000{i}-0000-4000-8000-000000000000") for i in (1, 2, 3)]
    for key in members:
        assert reader.read(key, list(wire)) == SINGLE
    assert len(comm_decodes) == 3
    reader.read(members[2], list(wire))  # kept
    assert len(comm_decodes) == 3
    reader.read(members[0], list(wire))  # the first was forgotten for the third
    assert len(comm_decodes) == 4
