"""The simulated group behaves as MySQL Group Replication does (issue 17).

Each test states one behaviour of MySQL and names where mysql/mysql-server
implements it (paths under plugin/group_replication/). Expected values are
worked out by hand in the comments or computed here from other columns;
never taken from the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grstats.config import load_config
from grstats.sources.simulated import (
    GroupModel,
    ScriptEvent,
    SimulatedSource,
    SimulationSettings,
)
from protocol import GtidSet, PipelineStats

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"
C = "33333333-3333-3333-3333-333333333333"
MEMBERS = (A, B, C)
US = 1_000_000
T0 = 1_795_424_400  # 2026-11-18 (a Wednesday) 09:00:00 UTC; hours 10 and 11 are hot
HOUR = 3600


def _scripted(*events: ScriptEvent, members: tuple[str, ...] = MEMBERS, **kw: Any) -> GroupModel:
    return GroupModel(
        SimulationSettings(group=GROUP, members=members, scripted=True, script=events, **kw)
    )


def _at(model: GroupModel, member: str, t_s: float) -> PipelineStats:
    return model.stats_at(member, int(t_s * US))


def _monotonic(model: GroupModel, member: str, t_s: int) -> int | None:
    view_id = model.member_at(member, t_s * US).view_id
    return int(view_id.split(":")[1]) if view_id else None


# ---- VIEW_ID ----


def test_view_id_fixed_part_is_bootstrap_time_in_100_ns_units_plus_0_to_999() -> None:
    # libmysqlgcs/src/bindings/xcom/gcs_xcom_state_exchange.cc (state_exchange): the
    # bootstrapping member proposes fixed_part = My_xp_util::getsystime() (100 ns units)
    # + rand() % 1000, kept by every later view; gcs_xcom_view_identifier.cc prints
    # "<fixed_part>:<monotonic_part>"
    epoch = T0 - 86400  # the model's group is bootstrapped at its epoch
    settings = SimulationSettings(group=GROUP, members=MEMBERS, seed=5, epoch_s=epoch)
    fixed, monotonic = GroupModel(settings).member_at(A, T0 * US).view_id.split(":")
    assert fixed.isdigit() and monotonic.isdigit()
    assert len(fixed) == 17  # 17951520000000000 + 0..999
    assert 0 <= int(fixed) - epoch * 10_000_000 <= 999
    later = GroupModel(settings)  # another daemon, a month later
    for member in MEMBERS:
        assert later.member_at(member, (T0 + 30 * 86400) * US).view_id.split(":")[0] == fixed


def test_view_id_monotonic_part_counts_every_installed_view() -> None:
    # gcs_xcom_view_identifier.cc: increment_by_one() for each installed view, the
    # bootstrap view being 1 (proposed 0, incremented on install). Three members that
    # formed the group by a bootstrap and two joins are at view 3; each join, leave and
    # expel installs one more; a suspected (UNREACHABLE) member stays in the view.
    model = _scripted(
        ScriptEvent(T0 + 10, B, "set_state", state="OFFLINE", duration_s=20),  # leaves, back at +30
        ScriptEvent(T0 + 50, C, "set_state", state="UNREACHABLE", duration_s=5),
        ScriptEvent(T0 + 70, C, "set_state", state="ERROR"),  # expelled
    )
    times = (T0 + 9, T0 + 10, T0 + 29, T0 + 30, T0 + 52, T0 + 69, T0 + 70, T0 + 9999)
    assert [_monotonic(model, A, t) for t in times] == [3, 4, 4, 5, 5, 5, 6, 6]
    assert [_monotonic(model, B, t) for t in times] == [3, None, None, 5, 5, 5, 6, 6]
    assert _monotonic(model, C, T0 + 52) == 5  # suspected, still in the view
    assert _monotonic(model, C, T0 + 70) is None  # outside the view: no VIEW_ID
    assert model.member_at(C, (T0 + 70) * US).state == "ERROR"
    for member in MEMBERS:  # the history rows show the same views
        column = model.history_columns(member, T0, 80)["view_id"]
        assert column == [model.member_at(member, (T0 + i) * US).view_id for i in range(80)]


def test_leavers_and_joiners_of_one_second_install_one_view() -> None:
    # xcom delivers one configuration with its joined and left members: one view
    model = _scripted(
        ScriptEvent(T0 + 10, B, "set_state", state="OFFLINE"),
        ScriptEvent(T0 + 10, C, "set_state", state="ERROR"),
    )
    assert (_monotonic(model, A, T0 + 9), _monotonic(model, A, T0 + 10)) == (3, 4)


async def test_three_daemons_see_a_departure_in_the_same_second() -> None:
    # every daemon builds its own model; C leaves at 100.5 s, i.e. from second 101 on
    def settings() -> SimulationSettings:
        event = ScriptEvent(T0 + 100.5, C, "set_state", state="OFFLINE")
        return SimulationSettings(group=GROUP, members=MEMBERS, seed=3, script=(event,))

    daemons = {m: SimulatedSource(GroupModel(settings()), m) for m in MEMBERS}
    before = {m: await daemons[m].sample((T0 + 100) * US + 250_000) for m in MEMBERS}
    after = {m: await daemons[m].sample((T0 + 101) * US + 10) for m in MEMBERS}
    assert [before[m].member.state for m in MEMBERS] == ["ONLINE"] * 3
    assert [after[m].member.state for m in MEMBERS] == ["ONLINE", "ONLINE", "OFFLINE"]
    assert after[C].member.view_id == "" and after[C].member.role == ""
    view_ids = {before[m].member.view_id for m in MEMBERS}
    assert len(view_ids) == 1
    fixed, monotonic = view_ids.pop().split(":")
    assert after[A].member.view_id == after[B].member.view_id == f"{fixed}:{int(monotonic) + 1}"


# ---- certification garbage collection ----


def test_gc_keeps_the_write_set_of_the_stable_sets_last_transaction() -> None:
    # certifier.cc Certifier::garbage_collect erases a write-set only if its snapshot
    # version is_subset_not_equals(stable_gtid_set): the stable set's last transaction,
    # whose snapshot version is the stable set itself, stays. GC runs when every member's
    # gtid_executed of the 60 s broadcast (BROADCAST_GTID_EXECUTED_PERIOD) has arrived.
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=3),
        ScriptEvent(T0 + 2, B, "commit", count=2),
    )
    assert _at(model, A, T0 + 59).transactions_rows_validating == 5  # before the first GC
    for t in (T0 + 60, T0 + 61, T0 + 600):
        stats = _at(model, C, t)
        assert stats.transactions_committed_all_members == f"{GROUP}:1-3:1000001-1000002".encode()
        assert stats.transactions_rows_validating == 1


def test_rows_validating_never_drops_to_zero_on_an_active_group() -> None:
    # after each GC round the certifier still holds the transactions certified since the
    # stable point (the members' gtid_executed is read when the round starts, and the
    # transactions of that second are still in the appliers) plus the kept last one
    model = GroupModel(SimulationSettings(group=GROUP, members=MEMBERS, seed=7))
    for gc in range(T0 + HOUR, T0 + 2 * HOUR, 60):
        stats = {m: _at(model, m, gc) for m in MEMBERS}
        rows = {s.transactions_rows_validating for s in stats.values()}
        assert len(rows) == 1
        certified = sum(
            s.transactions_local - s.transactions_local_rollback for s in stats.values()
        )
        stable = GtidSet.parse(stats[A].transactions_committed_all_members).count()
        assert certified - stable > 0
        assert rows == {certified - stable + 1}


# ---- view change transactions ----


def test_a_join_counts_the_view_change_transaction_in_remote_applied_before_8_3() -> None:
    # gcs_event_handlers.cc: a view with joiners queues a View_change_packet in the
    # applier, which applier.cc logs as a View_change_log_event transaction; the
    # before-commit hook (observer_trans.cc) counts every transaction the applier
    # channel commits in transactions_applied while the member is ONLINE (a joiner,
    # RECOVERING, counts it as applied during recovery). Leaves log no event.
    # plugin_constants.h: MEMBER_VERSION_REMOVING_VCLE 0x080300, no VCLE from 8.3.0 on.
    script = (
        ScriptEvent(T0 + 10, B, "set_state", state="OFFLINE", duration_s=20),  # joins at +30
        ScriptEvent(T0 + 100, C, "set_state", state="OFFLINE", duration_s=10),  # joins at +110
    )
    old = _scripted(*script, version="8.0.36")

    def applied(model: GroupModel, member: str, t: int) -> int:
        return _at(model, member, t).transactions_applied

    times = (T0 + 10, T0 + 29, T0 + 30, T0 + 109, T0 + 110)
    assert [applied(old, A, t) for t in times] == [0, 0, 1, 1, 2]
    assert [applied(old, B, t) for t in times] == [0, 0, 0, 0, 1]  # not its own join
    assert [applied(old, C, t) for t in times] == [0, 0, 1, 1, 1]
    new = _scripted(*script, version="8.4.3")
    assert [applied(new, m, T0 + 200) for m in MEMBERS] == [0, 0, 0]


# ---- applier queue ----


def test_applier_queue_carries_over_the_hour_boundary() -> None:
    # an applier of 1 tx/s receives 100 transactions 5 s before the hour: it applies one
    # a second, across the boundary (a real applier does not empty at :00)
    hour = T0 + HOUR
    model = _scripted(
        ScriptEvent(hour - 5, B, "commit", count=100), members=(A, B), applier_capacity=1.0
    )
    stats = [_at(model, A, t) for t in range(hour - 5, hour + 3)]
    assert [s.transactions_waiting_apply for s in stats] == [99, 98, 97, 96, 95, 94, 93, 92]
    assert [s.transactions_applied for s in stats] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_slow_members_queue_follows_the_applier_across_every_hour_boundary() -> None:
    # Q(t) = max(0, Q(t-1) + arrivals(t) - capacity), the slow member's capacity being
    # 1.5 x write_rate 20 x 2 remote writers = 60 tx/s; arrivals are the other members'
    # positively certified transactions of that second
    model = GroupModel(SimulationSettings(group=GROUP, members=MEMBERS, seed=7, slow_member=C))

    def certified(t: int) -> int:
        return sum(
            _at(model, m, t).transactions_local - _at(model, m, t).transactions_local_rollback
            for m in (A, B)
        )

    carried = 0
    for boundary in range(T0 + HOUR, T0 + 9 * HOUR, HOUR):
        before = _at(model, C, boundary - 1).transactions_waiting_apply
        arrivals = certified(boundary) - certified(boundary - 1)
        assert _at(model, C, boundary).transactions_waiting_apply == max(0, before + arrivals - 60)
        carried += before > 60
    assert carried >= 3  # the queue built in the hot hours lives on past their end


# ---- scripted certifier queue ----


def test_script_sets_a_members_certifier_queue_for_a_period() -> None:
    model = _scripted(
        ScriptEvent(T0 + 10, A, "certifier_queue", count=7, duration_s=20),
        ScriptEvent(T0 + 15, A, "certifier_queue", count=2, duration_s=5),
    )
    times = (T0 + 9, T0 + 10, T0 + 14, T0 + 15, T0 + 19, T0 + 20, T0 + 29, T0 + 30)
    expected = [0, 7, 7, 2, 2, 7, 7, 0]
    assert [_at(model, A, t).transactions_waiting_certification for t in times] == expected
    assert {_at(model, B, t).transactions_waiting_certification for t in times} == {0}
    column = model.history_columns(A, T0, 40)["count_transactions_in_queue"]
    assert [column[t - T0] for t in times] == expected


def test_certifier_queue_event_is_read_from_the_config(tmp_path: Path) -> None:
    path = tmp_path / "grstats.toml"
    path.write_text(
        '[member]\ngroup = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"\n'
        'id = "11111111-1111-1111-1111-111111111111"\n[simulated]\n'
        'members = ["11111111-1111-1111-1111-111111111111"]\n'
        "[[simulated.script]]\nat = 2026-01-01T00:00:10Z\n"
        'member = "11111111-1111-1111-1111-111111111111"\n'
        'action = "certifier_queue"\ncount = 250\nduration = 30.0\n',
        encoding="utf-8",
    )
    (event,) = load_config(path).source_settings.script
    assert (event.action, event.count, event.duration_s) == ("certifier_queue", 250, 30.0)
