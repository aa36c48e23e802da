"""Simulated @@gtid_executed / @@gtid_purged (sources/simulated/gtidstate.py) under the rule.

Expected values: the errant GTIDs are the scripted ones written out by hand
(`<member uuid>:1-3`); the group's sets come from the model's own certified
GTID set (TRANSACTIONS_COMMITTED_ALL_MEMBERS is a subset of every member's
executed set, MySQL's definition of it).
"""

from __future__ import annotations

import dataclasses

from grstats.core.gtid_divergence import ErrantTracker, MemberGtids, candidates, divergence
from grstats.sources.simulated.model import GroupModel, SimulationSettings
from grstats.sources.simulated.settings import ScriptEvent
from protocol import GtidSet
from protocol.gtid import GNO_MAX

BASE = SimulationSettings()
M1, M2, SLOW = BASE.members
DAY = BASE.epoch_s + 86400 * 5  # a Tuesday
HOT = DAY + 10 * 3600  # a hot hour: the slow member lags by thousands
S = 1_000_000


def _members(model: GroupModel, t_s: int) -> list[MemberGtids]:
    out = []
    for m in model.settings.members:
        state = model.gtid_state_at(m, t_s * S)
        out.append(MemberGtids(m, "ONLINE", state.executed, state.purged))
    return out


def own(member: str) -> GtidSet:
    """Every GTID of `member`'s own server UUID (what the group never certifies)."""
    return GtidSet([(member, "", 1, GNO_MAX)])


def test_a_busy_hour_with_a_slow_member_flags_nothing_errant() -> None:
    # A member ahead of all others shows the transactions still in flight as
    # candidates; the grace (here two 10 s GTID intervals) outlives them.
    model = GroupModel(dataclasses.replace(BASE, slow_member=SLOW))
    tracker = ErrantTracker()
    lags = []
    for t in range(HOT, HOT + 1200, 10):
        group = _members(model, t)
        committed = GtidSet.parse(model.stats_at(M1, t * S).transactions_committed_all_members)
        for m in group:
            assert committed <= m.executed
            tracker.update(m.member_id, candidates(m, group), t * S)
            assert tracker.errant(m.member_id, t * S, 20 * S)[0].is_empty(), (t, m.member_id)
        assert candidates(group[2], group).is_empty()  # the slow one is never ahead
        lags.append(divergence(group[2], group).missing.count())
    assert max(lags) > 1000  # the slow member really is thousands behind


def test_an_errant_write_is_on_its_member_only_until_injected() -> None:
    script = (
        ScriptEvent(at_s=HOT + 60, member=M2, action="errant_write", count=3),
        ScriptEvent(at_s=HOT + 120, member=M2, action="inject_errant"),
    )
    model = GroupModel(dataclasses.replace(BASE, script=script))
    group = _members(model, HOT + 59)
    assert (candidates(group[1], group) & own(M2)).is_empty()
    group = _members(model, HOT + 60)
    assert str(candidates(group[1], group) & own(M2)) == f"{M2}:1-3"
    assert divergence(group[1], group, errant=GtidSet.parse(f"{M2}:1-3")).recovery == "CLONE"
    group = _members(model, HOT + 120)
    assert all((candidates(m, group) & own(M2)).is_empty() for m in group)
    assert all(GtidSet.parse(f"{M2}:1-3") <= m.executed for m in group)


def test_purges_on_every_donor_make_a_restored_member_need_clone() -> None:
    script = (
        ScriptEvent(at_s=HOT, member=SLOW, action="restore_backup", duration_s=1800),
        ScriptEvent(at_s=HOT + 60, member=M1, action="purge"),
    )
    model = GroupModel(dataclasses.replace(BASE, script=script))
    group = _members(model, HOT + 30)
    assert group[2].purged == group[2].executed  # a restore sets gtid_purged
    d = divergence(group[2], group)
    assert d.missing.count() > 0 and d.recovery == "INCREMENTAL" and d.donors == (M1, M2)
    group = _members(model, HOT + 60)
    assert group[0].purged == group[0].executed  # PURGE BINARY LOGS up to now
    assert divergence(group[2], group).donors == (M2,)
    model = GroupModel(
        dataclasses.replace(
            BASE, script=(*script, ScriptEvent(at_s=HOT + 90, member=M2, action="purge"))
        )
    )
    group = _members(model, HOT + 90)
    d = divergence(group[2], group)
    assert d.recovery == "CLONE" and d.donors == ()
