"""Simulated @@gtid_executed / @@gtid_purged (sources/simulated/gtidstate.py) under the rule.

Expected values: the errant GTIDs are the scripted ones written out by hand
(`<member uuid>:1-3`); the group's sets come from the model's own certified
GTID set (TRANSACTIONS_COMMITTED_ALL_MEMBERS is a subset of every member's
executed set, MySQL's definition of it).
"""

from __future__ import annotations

import dataclasses

from grstats.core.gtid_divergence import ErrantTracker, MemberGtids, recovery_method
from grstats.core.gtid_group import GroupSets
from grstats.sources.simulated.model import GroupModel
from grstats.sources.simulated.settings import ScriptEvent, SimulationSettings
from protocol import GtidSet
from protocol.gtid import GNO_MAX

BASE = SimulationSettings()
M1, M2, SLOW = BASE.members
DAY = BASE.epoch_s + 86400 * 5  # a Tuesday
HOT = DAY + 10 * 3600  # a hot hour: the slow member lags by thousands
S = 1_000_000


def _members(model: GroupModel, t_s: int, phase: dict[str, int] | None = None) -> list[MemberGtids]:
    """Every member's sets as read at `t_s` (less its `phase`), with that second's counts."""
    out = []
    for m in model.settings.members:
        at = (t_s - (phase or {}).get(m, 0)) * S
        state, stats = model.gtid_state_at(m, at), model.stats_at(m, at)
        queued = stats.transactions_waiting_certification + stats.transactions_waiting_apply
        out.append(
            MemberGtids(
                m, "ONLINE", state.executed, state.purged, at, stats.transactions_applied, queued
            )
        )
    return out


def _judged(group: list[MemberGtids]) -> GroupSets:
    sets = GroupSets()
    for m in group:
        sets.update(m)
    return sets


def candidates(m: MemberGtids, group: list[MemberGtids]) -> GtidSet:
    """What some other member (a witness) lacks of `m`'s executed set."""
    return _judged(group).candidates(m.member_id)


def missing(m: MemberGtids, group: list[MemberGtids]) -> GtidSet:
    found = _judged(group).missing(m.member_id)
    assert found is not None
    return found


def recovery(m: MemberGtids, group: list[MemberGtids], errant: bool = False) -> str:
    sets = _judged(group)
    donors = sets.donors(m.member_id)
    return recovery_method(errant=errant, donors=len(donors), lacking=sets.lacking(m.member_id))


def own(member: str) -> GtidSet:
    """Every GTID of `member`'s own server UUID (what the group never certifies)."""
    return GtidSet([(member, "", 1, GNO_MAX)])


def test_a_busy_hour_with_a_slow_member_flags_nothing_errant() -> None:
    # A member ahead of all others shows the transactions still in flight as
    # candidates; the peers' counts show they had not applied that far yet. Each
    # member's sets are read every 10 s at its own phase; the others' are the last
    # ones read. In this hour (a Thursday, 15 UTC, as the three-daemon test saw it)
    # the normal members' queues hold thousands too, at 150/s (lags of 15-30 s).
    hot = DAY + 2 * 86400 + 15 * 3600
    settings = dataclasses.replace(
        BASE, seed=7, slow_member=SLOW, slow_capacity=5.0, hot_hours=(15,), epoch_s=hot - 600
    )
    model = GroupModel(settings)
    phase = {M1: 0, M2: 3, SLOW: 7}
    tracker = ErrantTracker()
    lags, ahead = [], 0
    for t in range(hot, hot + 1200, 10):
        group = _members(model, t, phase)
        committed = GtidSet.parse(model.stats_at(M1, t * S).transactions_committed_all_members)
        for m in group:
            peers = [o for o in group if o.member_id != m.member_id]
            assert committed <= m.executed or m.read_us < t * S
            found = candidates(m, group)
            ahead = max(ahead, found.count())
            tracker.update(m.member_id, found, t * S, m.read_us)
            assert tracker.errant(m.member_id, peers, 10 * S)[0].is_empty(), (t, m.member_id)
        assert candidates(group[2], group).is_empty()  # the slow one is never ahead
        lags.append(missing(group[2], group).count())
    assert max(lags) > 1000  # the slow member really is thousands behind
    assert ahead > 1000  # and thousands are in flight at some moment


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
    assert recovery(group[1], group, errant=True) == "REPROVISION"
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
    assert missing(group[2], group).count() > 0 and recovery(group[2], group) == "INCREMENTAL"
    assert _judged(group).donors(SLOW) == (M1, M2)
    group = _members(model, HOT + 60)
    assert group[0].purged == group[0].executed  # PURGE BINARY LOGS up to now
    assert _judged(group).donors(SLOW) == (M2,)
    model = GroupModel(
        dataclasses.replace(
            BASE, script=(*script, ScriptEvent(at_s=HOT + 90, member=M2, action="purge"))
        )
    )
    group = _members(model, HOT + 90)
    assert recovery(group[2], group) == "CLONE" and _judged(group).donors(SLOW) == ()


def test_a_member_provisioned_from_an_errant_one_inherits_its_errant_gtids() -> None:
    # M2 writes M2:1-3 behind the group's back; at HOT + 120 SLOW is re-provisioned from
    # it (a clone): SLOW's executed and purged sets become M2's, M2:1-3 included, and it
    # goes on with the group's transactions; M1 still lacks them
    script = (
        ScriptEvent(at_s=HOT + 60, member=M2, action="errant_write", count=3),
        ScriptEvent(at_s=HOT + 90, member=M2, action="purge"),
        ScriptEvent(at_s=HOT + 120, member=SLOW, action="provision_from", donor=M2),
    )
    model = GroupModel(dataclasses.replace(BASE, script=script))
    before = _members(model, HOT + 119)
    assert (before[2].executed & own(M2)).is_empty()
    group = _members(model, HOT + 120)
    assert str(group[2].executed & own(M2)) == f"{M2}:1-3"
    assert group[2].purged == model.gtid_state_at(M2, (HOT + 120) * S).purged
    assert (group[0].executed & own(M2)).is_empty()
    for m in (group[1], group[2]):  # a candidate on both: M1 lacks it
        assert str(candidates(m, group) & own(M2)) == f"{M2}:1-3"
    later = _members(model, HOT + 600)  # and still, while it applies the group's transactions
    assert str(later[2].executed & own(M2)) == f"{M2}:1-3"
    applied_since = later[2].executed - group[2].executed
    assert applied_since and {uuid for uuid, *_ in applied_since.intervals()} == {BASE.group}
