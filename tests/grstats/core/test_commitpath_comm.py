"""The communication columns of grstats_member_commit_path (ext.commit_path_comm):
from the local sample and from a remote member's envelope; values by hand."""

from __future__ import annotations

import dataclasses

from grstats.core.commitpath import commit_path_row
from protocol import (
    GroupCommunication,
)
from tests.fixtures.commit_path import (
    LEADER,
    REMOTE,
    SINGLE,
    T0,
    TOPIC,
    WINDOW,
    remote_envelope,
)
from tests.fixtures.member_tables import LOCAL, local_sample, make_tables

WIRE_SINGLE = [1, 10, "8.0.27", [LEADER], [LEADER], 1]
COMM_COLUMNS = (
    "WRITE_CONCURRENCY",
    "PROTOCOL_VERSION",
    "WRITE_CONSENSUS_LEADERS_PREFERRED",
    "WRITE_CONSENSUS_LEADERS_ACTUAL",
    "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE",
)


def test_the_row_shows_the_communication_information_as_mysql_does() -> None:
    both = GroupCommunication(200, "8.4.0", (LEADER, REMOTE), (LEADER, REMOTE), False)
    row = commit_path_row(REMOTE, WINDOW, both)
    pair = f"{LEADER},{REMOTE}"
    assert [row[c] for c in COMM_COLUMNS] == [200, "8.4.0", pair, pair, 0]
    assert row["CONSENSUS_PER_SECOND"] == 50.0  # the figures are untouched


def test_an_8_0_member_without_gr_figures_still_has_a_row() -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    tables.receive(
        TOPIC, remote_envelope(1, T0, version="8.0.40", commit_path_comm=WIRE_SINGLE), T0
    )
    (row,) = tables.snapshot(T0).table("grstats_member_commit_path")
    assert row["MEMBER_ID"] == REMOTE
    assert [row[c] for c in COMM_COLUMNS] == [10, "8.0.27", LEADER, LEADER, 1]
    assert row["PERIOD_SECONDS"] is None
    assert row["CONSENSUS_SECONDS_TOTAL"] is None


def test_the_local_samples_communication_makes_its_row() -> None:
    tables = make_tables()
    tables.set_local(
        dataclasses.replace(local_sample(), communication=SINGLE), incarnation=1, seq=1
    )
    (row,) = tables.snapshot(T0).table("grstats_member_commit_path")
    assert row["MEMBER_ID"] == LOCAL
    assert row["WRITE_CONSENSUS_LEADERS_ACTUAL"] == LEADER


def test_a_malformed_communication_section_is_counted_and_the_rest_applied() -> None:
    tables = make_tables()
    tables.set_local(local_sample(), incarnation=1, seq=1)
    report = WINDOW[0]
    wire = [1, report.at_us, list(dataclasses.astuple(report.counters))]
    bad = [1, 10, "8.0.27", ["not-a-uuid"], None, 1]
    tables.receive(
        TOPIC, remote_envelope(1, T0, version="8.0.40", commit_path=wire, commit_path_comm=bad), T0
    )
    snapshot = tables.snapshot(T0)
    assert snapshot.counters.malformed["commit_path"] == 1
    assert snapshot.counters.envelopes_accepted == 1
    (row,) = snapshot.table("grstats_member_commit_path")
    assert row["CONSENSUS_SECONDS_TOTAL"] == 2.0  # ext.commit_path still applied
    assert row["WRITE_CONCURRENCY"] is None
