"""Errant GTIDs and the recovery method on the ground-truth scenarios, on every daemon.

Worked out by hand from each scenario's script (T = its start, 10:30:00):

- errant_write: db2 writes M2:1-3 at T + 10 with sql_log_bin on, outside the
  group's certification. db1 and db3 lack them; both keep up (nothing queued
  at 400 tx/s), so once one of them has applied everything it had queued
  when db2's set was read (one 2 s GTID interval later) and its next set still
  lacks them, they are errant -- on db2 only, shown by every daemon. Group
  Replication refuses a member with extra GTIDs: REPROVISION, not CLONE.
- errant_spread: the same write at T + 5, then db3 is re-provisioned from db2 at
  T + 15 (a clone): db3 has M2:1-3 too. db1 lacks them and applies past them:
  errant on db2 *and* db3 ("no other member has it" cleared both), REPROVISION
  for both. db1 misses exactly those 3 (what both others have).
- purged_binary_logs: db3's applier stopped at T - 60, then db1 and db2 purge
  their binary logs at T + 20: every GTID db3 lacks (a minute and more of the
  group's) is purged on both donors: CLONE, no donor. Its applier applies
  nothing: not errant anywhere (its counts never pass its target).
- lying_member: a bus member on its own topic, in nobody's view, dating its
  sets 120 s ahead, its executed set empty and a billion transactions applied:
  it lacks everything the group executed -- the hot hour's in-flight GTIDs of
  every member included, which the old rule let it "prove" errant at once --
  and proves nothing: nobody is errant, nobody's missing count shrinks, its
  row says why its word does not count.
- member_rejoining: db3 leaves (OFFLINE) at T + 10 for 20 s and comes back:
  nothing errant anywhere, every member can rejoin incrementally.
"""

from __future__ import annotations

from typing import Any

import pytest

from grstats.core.explain import gtids_text
from grstats.core.sample import LocalMember, LocalSample
from protocol import GtidSet, GtidState, PipelineStats
from tests.fixtures.member_gtids import GROUP as G
from tests.fixtures.member_gtids import LOCAL, REMOTE, T0, THIRD, S, send, tables
from tests.fixtures.verdict_scenarios import HEALTHY, LABELS, LIAR, M1, M2, M3, MEMBERS, run

TABLE = "grstats_member_gtids"
ERRANT = f"{M2}:1-3"


def _rows(name: str, viewer: str) -> dict[str, dict[str, Any]]:
    return run(name).table(viewer, TABLE)


@pytest.mark.parametrize("name", [*HEALTHY, "member_rejoining", "slow_link"])
@pytest.mark.parametrize("viewer", MEMBERS)
def test_nothing_errant_and_every_member_rejoins_incrementally(name: str, viewer: str) -> None:
    for member, row in _rows(name, viewer).items():
        assert row["ERRANT_COUNT"] == 0, (member, row)
        assert row["RECOVERY_METHOD"] == "INCREMENTAL"
        assert row["TESTIMONY"] is None


@pytest.mark.parametrize("viewer", MEMBERS)
def test_an_errant_write_is_flagged_on_its_member_with_reprovision(viewer: str) -> None:
    rows = _rows("errant_write", viewer)
    assert rows[M2]["ERRANT_TRANSACTIONS"] == ERRANT and rows[M2]["ERRANT_COUNT"] == 3
    assert rows[M2]["RECOVERY_METHOD"] == "REPROVISION"
    for other in (M1, M3):
        assert rows[other]["ERRANT_COUNT"] == 0
        assert rows[other]["RECOVERY_METHOD"] == "INCREMENTAL"


@pytest.mark.parametrize("viewer", MEMBERS)
def test_errant_gtids_spread_to_a_second_member_are_flagged_on_both(viewer: str) -> None:
    rows = _rows("errant_spread", viewer)
    for member in (M2, M3):
        assert rows[member]["ERRANT_TRANSACTIONS"] == ERRANT, member
        assert rows[member]["RECOVERY_METHOD"] == "REPROVISION"
    assert rows[M1]["ERRANT_COUNT"] == 0 and rows[M1]["MISSING_COUNT"] == 3


@pytest.mark.parametrize("viewer", MEMBERS)
def test_purged_binary_logs_leave_the_lagging_member_only_clone(viewer: str) -> None:
    rows = _rows("purged_binary_logs", viewer)
    assert rows[M3]["RECOVERY_METHOD"] == "CLONE" and rows[M3]["DONORS"] == ""
    assert rows[M3]["MISSING_COUNT"] > 0
    for member in MEMBERS:
        assert rows[member]["ERRANT_COUNT"] == 0, member


@pytest.mark.parametrize("viewer", MEMBERS)
def test_a_lying_bus_member_makes_nobody_errant(viewer: str) -> None:
    rows = _rows("lying_member", viewer)
    executed = {m: GtidSet.parse(str(rows[m]["GTID_EXECUTED"])) for m in MEMBERS}
    for member in MEMBERS:
        assert rows[member]["ERRANT_COUNT"] == 0, member
        assert rows[member]["RECOVERY_METHOD"] == "INCREMENTAL"
        # its empty set hides nothing either: what a member misses is what both of the
        # other honest members have (the in-flight transactions of a hot hour)
        a, b = (executed[o] for o in MEMBERS if o != member)
        assert rows[member]["MISSING_COUNT"] == ((a & b) - executed[member]).count()
    assert rows[LIAR]["TESTIMONY"] == "not in the server's view"
    assert rows[LIAR]["GTID_EXECUTED"] == ""


def test_explain_names_the_errant_members_by_host_port_with_what_to_do() -> None:
    group = run("errant_spread")
    text = gtids_text(list(group.table(M1, TABLE).values()), group.labels(M1))
    for member in (M2, M3):
        block = text.split(f"{LABELS[member]}: 3 errant")[1].split("\ndb")[0]
        assert f"SET GTID_NEXT='{M2}:1'; BEGIN; COMMIT;" in block
        assert "recovery: REPROVISION: Group Replication refuses a member" in block
        assert f"cluster.removeInstance('{LABELS[member]}')" in block
    assert f"{LABELS[M1]}: 0 errant, 3 missing" in text


def test_explain_says_why_the_lying_member_proves_nothing() -> None:
    group = run("lying_member")
    text = gtids_text(list(group.table(M2, TABLE).values()), group.labels(M2))
    assert "its sets prove nothing about the others: not in the server's view" in text
    assert text.count(": 0 errant, ") == 4 and "recovery: REPROVISION" not in text


def test_a_set_two_members_share_is_errant_on_both_through_the_receive_path() -> None:
    # by hand, through a daemon's tables (the local member and two remote ones): LOCAL and
    # THIRD hold LOCAL:1-2 (THIRD recovered from LOCAL), REMOTE -- which has applied all
    # it had queued (nothing) -- lacks them in its sets read 30 s and 60 s later: errant
    # on LOCAL and on THIRD, whose words each cleared the other under "no other member"
    shared = f"{LOCAL}:1-2,\n{G}:1-100"
    t = tables()
    for seq, read_s in ((1, 0), (2, 30), (3, 60)):
        send(t, REMOTE, seq, f"{G}:1-100", read_s=read_s, applied=0, queued=0)
        send(t, THIRD, seq, shared, read_s=read_s, applied=0, queued=0)
        at = T0 + read_s * S
        state = GtidState(at, GtidSet.parse(shared), GtidSet())
        member = LocalMember(G, LOCAL, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "17:3")
        t.set_local(
            LocalSample(member, PipelineStats(), at, gtid_state=state), incarnation=1, seq=seq
        )
    rows = {r["MEMBER_ID"]: r for r in t.snapshot(T0 + 60 * S).table(TABLE)}
    assert rows[LOCAL]["ERRANT_TRANSACTIONS"] == f"{LOCAL}:1-2"
    assert rows[THIRD]["ERRANT_TRANSACTIONS"] == f"{LOCAL}:1-2"
    assert rows[REMOTE]["ERRANT_COUNT"] == 0
