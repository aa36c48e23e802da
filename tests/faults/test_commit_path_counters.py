"""Issue 39 row 9: commit_path counters MySQL cannot hold, or moving backwards.

MySQL shows its Gr_* status variables as signed 64-bit integers (SHOW_LONGLONG),
so a counter past 2^63 - 1 on the wire did not come from a server: the section
is refused at admission (counted malformed; the envelope's stats applied) and
no rate is made of it. A counter lower than the member's previous report is
what MySQL shows after Group Replication restarted on it (its counters start
again from 0): a reset, so the period starts again from that report instead
of showing a negative or absurd rate.

Worked by hand, one member, reports 10 s apart: 1,000 proposals taking 2 s in
all, then 2,000 taking 4 s: 100 rounds a second of 2 ms each.
"""

from __future__ import annotations

import pytest

from grstats.core.tables import MemberTables
from protocol import CommitPathCounters, CommitPathReport
from tests.fixtures.commit_path import GROUP, REMOTE, T0, receive_report
from tests.fixtures.member_tables import local_sample

pytestmark = pytest.mark.faults

LOCAL = "11111111-1111-1111-1111-111111111111"
S = 1_000_000
TABLE = "grstats_member_commit_path"


def _report(at_s: int, proposals: int, time_us: int) -> CommitPathReport:
    return CommitPathReport(
        T0 + at_s * S, CommitPathCounters(consensus_proposals=proposals, consensus_time_us=time_us)
    )


def _row(tables: MemberTables, at_s: int) -> dict[str, object]:
    rows = {r["MEMBER_ID"]: r for r in tables.snapshot(T0 + at_s * S).table(TABLE)}
    return dict(rows.get(REMOTE, {}))


def _tables() -> MemberTables:
    tables = MemberTables(group=GROUP, local_member_id=LOCAL)
    tables.set_local(local_sample(), incarnation=1, seq=1)  # in the group: remote rows shown
    return tables


def _steady(tables: MemberTables) -> None:
    receive_report(tables, 1, _report(0, 1_000, 2_000_000))
    receive_report(tables, 2, _report(10, 2_000, 4_000_000))
    row = _row(tables, 10)
    assert row["CONSENSUS_PER_SECOND"] == pytest.approx(100.0)
    assert row["CONSENSUS_MEAN_SECONDS"] == pytest.approx(0.002)


def test_a_counter_past_signed_64_bit_is_refused_and_makes_no_rate() -> None:
    tables = _tables()
    _steady(tables)
    receive_report(tables, 3, _report(20, 2**64 - 1, 6_000_000))
    assert tables.counters().malformed["commit_path"] == 1
    assert tables.counters().envelopes_accepted == 3  # the stats were applied
    rate = _row(tables, 20).get("CONSENSUS_PER_SECOND")
    assert rate is None or rate == pytest.approx(100.0)
    receive_report(tables, 4, _report(30, 2**63, 6_000_000))  # one past signed 64-bit
    assert tables.counters().malformed["commit_path"] == 2
    # sane reports again: 100 a second from the next two
    receive_report(tables, 5, _report(40, 4_000, 8_000_000))
    receive_report(tables, 6, _report(50, 5_000, 10_000_000))
    assert _row(tables, 50)["CONSENSUS_PER_SECOND"] == pytest.approx(100.0)


def test_the_largest_signed_64_bit_counter_is_accepted() -> None:
    tables = _tables()
    receive_report(tables, 1, _report(0, 2**63 - 1, 2_000_000))
    assert tables.counters().malformed["commit_path"] == 0


def test_a_counter_moving_backwards_is_a_reset_not_a_negative_rate() -> None:
    tables = _tables()
    _steady(tables)
    # Group Replication restarted on the member: its counters start again
    receive_report(tables, 3, _report(20, 500, 1_000_000))
    assert tables.counters().malformed["commit_path"] == 0
    row = _row(tables, 20)
    assert row["CONSENSUS_PER_SECOND"] is None  # one report since the reset: no period yet
    assert row["CONSENSUS_PER_SECOND_1M"] is None
    receive_report(tables, 4, _report(30, 1_500, 3_000_000))
    row = _row(tables, 30)
    assert row["CONSENSUS_PER_SECOND"] == pytest.approx(100.0)
    assert row["CONSENSUS_MEAN_SECONDS"] == pytest.approx(0.002)
    assert row["CONSENSUS_PER_SECOND_1M"] == pytest.approx(100.0)
