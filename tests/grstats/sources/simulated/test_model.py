"""The simulated group model: GR invariants checked by independent computation.

Expected values come from hand calculation (the scripted scenarios) or from
identities between members' rows computed here (every certified transaction
was proposed by exactly one member, every conflict rolls back exactly one
proposer's transaction, applied + queued = remote positively certified).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    COMMIT_PATH_HISTORY_COLUMNS,
    FLOW_HISTORY_COLUMNS,
    GTID_HISTORY_COLUMNS,
    HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from grstats.core.sample import LocalSample
from grstats.sources.simulated import (
    GroupModel,
    ScriptEvent,
    SimulatedSource,
    SimulationSettings,
)
from grstats.sources.simulated.commitpath import commit_path_at, communication_of
from protocol import FLOW_CONTROL_QUOTA, GtidSet, PipelineStats
from protocol.gtid import Gtid

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"
C = "33333333-3333-3333-3333-333333333333"
MEMBERS = (A, B, C)
BLOCK = 1_000_000
US = 1_000_000
# 2026-11-18 (a Wednesday) 09:00:00 UTC: three hours cover a normal hour, then hot hours 10 and 11
T0 = 1_795_424_400
assert T0 % 3600 == 0 and (T0 // 3600) % 24 == 9
HOURS = 3
COUNTERS = (
    "count_transactions_checked",
    "count_conflicts_detected",
    "count_transactions_remote_applied",
    "count_transactions_local_proposed",
    "count_transactions_local_rollback",
)


def _multi(**kw: Any) -> SimulationSettings:
    return SimulationSettings(group=GROUP, members=MEMBERS, seed=7, **kw)


def _single(**kw: Any) -> SimulationSettings:
    return SimulationSettings(group=GROUP, members=MEMBERS, seed=7, mode="single-primary", **kw)


_HISTORY_CACHE: dict[str, dict[str, dict[str, list[Any]]]] = {}


def _history(kind: str) -> dict[str, dict[str, list[Any]]]:
    """Three hours of every member at 1 Hz, computed once per module run."""
    if kind not in _HISTORY_CACHE:
        model = GroupModel(_multi() if kind == "multi" else _single())
        _HISTORY_CACHE[kind] = {m: model.history_columns(m, T0, HOURS * 3600) for m in MEMBERS}
    return _HISTORY_CACHE[kind]


def _scripted(*events: ScriptEvent, members: tuple[str, ...] = (A, B)) -> GroupModel:
    settings = SimulationSettings(group=GROUP, members=members, scripted=True, script=events)
    return GroupModel(settings)


def _at(model: GroupModel, member: str, t_s: float) -> PipelineStats:
    return model.stats_at(member, int(t_s * US))


# ---- group invariants over three simulated hours ----


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_checked_and_conflicts_agree_on_every_member(kind: str) -> None:
    rows = _history(kind)
    for column in ("count_transactions_checked", "count_conflicts_detected"):
        assert rows[A][column] == rows[B][column] == rows[C][column]
    assert rows[A]["count_transactions_checked"][-1] > rows[A]["count_transactions_checked"][0]


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_counters_never_decrease(kind: str) -> None:
    for member in MEMBERS:
        for column in COUNTERS:
            values = _history(kind)[member][column]
            assert all(b >= a for a, b in itertools.pairwise(values)), column


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_rollbacks_never_exceed_proposals(kind: str) -> None:
    for member in MEMBERS:
        rows = _history(kind)[member]
        proposed = rows["count_transactions_local_proposed"]
        rolled_back = rows["count_transactions_local_rollback"]
        assert all(r <= p for r, p in zip(rolled_back, proposed, strict=True))


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_every_certified_transaction_was_proposed_by_one_member(kind: str) -> None:
    rows = _history(kind)
    proposed = [rows[m]["count_transactions_local_proposed"] for m in MEMBERS]
    assert [sum(p) for p in zip(*proposed, strict=True)] == rows[A]["count_transactions_checked"]


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_every_conflict_rolls_back_one_proposers_transaction(kind: str) -> None:
    rows = _history(kind)
    rollbacks = [rows[m]["count_transactions_local_rollback"] for m in MEMBERS]
    assert [sum(r) for r in zip(*rollbacks, strict=True)] == rows[A]["count_conflicts_detected"]


def test_no_second_has_more_conflicts_than_certified_transactions() -> None:
    rows = _history("multi")[B]
    checked = rows["count_transactions_checked"]
    conflicts = rows["count_conflicts_detected"]
    steps = [
        (c1 - c0, k1 - k0)
        for (c0, c1), (k0, k1) in zip(
            itertools.pairwise(conflicts), itertools.pairwise(checked), strict=True
        )
    ]
    assert all(c <= k for c, k in steps)
    assert sum(1 for c, _ in steps if c) > 1000  # conflicts are spread, not bunched


def test_multi_primary_has_conflicts_and_every_member_rolls_back() -> None:
    rows = _history("multi")
    checked = rows[A]["count_transactions_checked"]
    conflicts = rows[A]["count_conflicts_detected"]
    rate = (conflicts[-1] - conflicts[0]) / (checked[-1] - checked[0])
    assert 0.005 < rate < 0.02  # conflict_probability 0.01
    for member in MEMBERS:
        rolled_back = rows[member]["count_transactions_local_rollback"]
        assert rolled_back[-1] > rolled_back[0]


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_applied_plus_queued_equals_remote_positively_certified(kind: str) -> None:
    rows = _history(kind)
    for member in MEMBERS:
        others = [m for m in MEMBERS if m != member]
        remote_ok = [
            sum(
                rows[o]["count_transactions_local_proposed"][i]
                - rows[o]["count_transactions_local_rollback"][i]
                for o in others
            )
            for i in range(HOURS * 3600)
        ]
        mine = rows[member]
        queued = mine["count_transactions_remote_in_applier_queue"]
        applied = mine["count_transactions_remote_applied"]
        assert [a + q for a, q in zip(applied, queued, strict=True)] == remote_ok


def test_single_primary_only_the_primary_writes_and_nothing_conflicts() -> None:
    rows = _history("single")
    assert rows[A]["count_conflicts_detected"][-1] == 0
    assert rows[A]["count_transactions_local_proposed"][-1] > 0
    for secondary in (B, C):
        assert set(rows[secondary]["count_transactions_local_proposed"]) == {0}
        assert set(rows[secondary]["member_role"]) == {"SECONDARY"}
    assert set(rows[A]["member_role"]) == {"PRIMARY"}
    # the primary's own transactions are never in its applier queue
    assert set(rows[A]["count_transactions_remote_in_applier_queue"]) == {0}
    assert set(rows[A]["count_transactions_remote_applied"]) == {0}


def test_a_member_never_queues_its_own_transactions() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "applier_stop", duration_s=60),
        ScriptEvent(T0 + 2, A, "commit", count=5),
    )
    a, b = _at(model, A, T0 + 10), _at(model, B, T0 + 10)
    assert (a.transactions_waiting_apply, a.transactions_applied, a.transactions_local) == (0, 0, 5)
    assert (b.transactions_waiting_apply, b.transactions_applied, b.transactions_local) == (0, 5, 0)


def test_slow_member_queue_builds_in_hot_hours() -> None:
    model = GroupModel(_multi(slow_member=C))
    normal = model.history_columns(C, T0, 3600)["count_transactions_remote_in_applier_queue"]
    hot = model.history_columns(C, T0 + 3600, 3600)["count_transactions_remote_in_applier_queue"]
    fast_hot = model.history_columns(A, T0 + 3600, 3600)[
        "count_transactions_remote_in_applier_queue"
    ]
    # remote rate in hot hours is about 3 x 2 x 20 tx/s against 1.5 x 2 x 20 of capacity
    assert max(hot) > 100_000
    assert max(hot) > 100 * max(normal)
    assert max(fast_hot) < max(hot) // 100


def test_rows_validating_is_certified_since_the_stable_set_and_drops_at_gc() -> None:
    model = GroupModel(_multi())
    drops = 0
    for s in range(T0 + 3600 + 50, T0 + 3600 + 50 + 600, 5):
        stats = _at(model, A, s)
        ok_total = sum(
            _at(model, m, s).transactions_local - _at(model, m, s).transactions_local_rollback
            for m in MEMBERS
        )
        stable = GtidSet.parse(stats.transactions_committed_all_members).count()
        # + 1: GC keeps the write-set of the stable set's last transaction (certifier.cc)
        assert stats.transactions_rows_validating == ok_total - stable + 1
        if s % 60 == 0:
            before = _at(model, A, s - 1).transactions_rows_validating
            drops += stats.transactions_rows_validating < before
    assert drops >= 9  # every boundary of the ten minutes, bar perhaps one


# ---- determinism: absolute time, not process history ----


def test_two_models_built_separately_agree() -> None:
    times = [T0 + random.Random(1).randrange(0, 30 * 86400) for _ in range(20)]
    first, second = GroupModel(_multi()), GroupModel(_multi())
    for t in times:
        for m in MEMBERS:
            assert first.stats_at(m, t * US) == second.stats_at(m, t * US)
    for t in reversed(times):
        assert first.member_at(B, t * US) == second.member_at(B, t * US)


def test_evaluation_order_does_not_matter() -> None:
    times = [*range(T0 + 3000, T0 + 4200, 7), T0 + 5 * 86400, T0 - 86400 * 40]
    sequential = GroupModel(_multi(slow_member=B))
    expected = {(t, m): sequential.stats_at(m, t * US) for t in sorted(times) for m in MEMBERS}
    shuffled = list(expected)
    random.Random(3).shuffle(shuffled)
    other = GroupModel(_multi(slow_member=B))
    for t, m in shuffled:
        assert other.stats_at(m, t * US) == expected[(t, m)]


def test_time_within_a_second_does_not_matter() -> None:
    model = GroupModel(_multi())
    assert model.stats_at(A, T0 * US + 999_999) == model.stats_at(A, T0 * US)


def test_nothing_happens_before_the_model_epoch() -> None:
    model = GroupModel(_multi(epoch_s=T0))
    assert _at(model, B, T0 - 1) == PipelineStats()
    assert _at(model, B, T0 + 60).transactions_certified > 0


def test_counting_starts_at_the_model_epoch() -> None:
    # the later epoch cuts its first hour short, the earlier one counts ten months before it
    early, late = GroupModel(_multi()), GroupModel(_multi(epoch_s=T0 + 1))
    for t in (T0 + 1, T0 + 3599, T0 + 3600, T0 + 5000, T0 + 10799):
        for m in MEMBERS:
            e0, e, lt = _at(early, m, T0), _at(early, m, t), _at(late, m, t)
            for name in (
                "transactions_certified",
                "transactions_negative_certified",
                "transactions_local",
                "transactions_local_rollback",
            ):
                assert getattr(lt, name) == getattr(e, name) - getattr(e0, name), (t, m, name)


def test_stop_at_freezes_the_workload() -> None:
    stop = T0 + 3600 + 1234.5
    model = GroupModel(_multi(stop_at_s=stop))
    frozen = {m: _at(model, m, stop + 30) for m in MEMBERS}
    later = {m: _at(model, m, stop + 7200) for m in MEMBERS}
    for m in MEMBERS:
        f, g = frozen[m], later[m]
        assert f.transactions_certified == g.transactions_certified > 0
        assert f.transactions_negative_certified == g.transactions_negative_certified
        assert f.transactions_local == g.transactions_local
        assert f.transactions_local_rollback == g.transactions_local_rollback
        assert g.transactions_waiting_apply == 0
        assert (
            f.transactions_applied + f.transactions_waiting_apply
            == g.transactions_applied + g.transactions_waiting_apply
        )
    assert _at(model, A, stop - 60).transactions_certified < frozen[A].transactions_certified


# ---- MySQL's member-stats scenario, by hand ----


def test_scripted_conflict_counts_everywhere_but_rolls_back_only_the_proposer() -> None:
    model = _scripted(ScriptEvent(T0 + 1, A, "conflict"))
    a, b = _at(model, A, T0 + 2), _at(model, B, T0 + 2)
    assert (a.transactions_negative_certified, b.transactions_negative_certified) == (1, 1)
    assert (a.transactions_certified, b.transactions_certified) == (1, 1)
    assert (a.transactions_local_rollback, b.transactions_local_rollback) == (1, 0)
    assert (a.transactions_local, b.transactions_local) == (1, 0)
    assert (a.transactions_applied, b.transactions_applied) == (0, 0)  # nothing to apply
    assert a.transaction_last_conflict_free == b"" == a.transactions_committed_all_members


def test_scripted_stopped_applier_queues_the_remote_commits() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "conflict"),
        ScriptEvent(T0 + 5, A, "applier_stop", duration_s=20),
        ScriptEvent(T0 + 10, B, "commit", count=10),
    )
    a, b = _at(model, A, T0 + 15), _at(model, B, T0 + 15)
    assert (a.transactions_waiting_apply, b.transactions_waiting_apply) == (10, 0)
    assert (a.transactions_applied, b.transactions_applied) == (0, 0)
    assert (a.transactions_certified, a.transactions_negative_certified) == (11, 1)
    assert (b.transactions_local, b.transactions_local_rollback) == (10, 0)
    assert a.transaction_last_conflict_free == f"{GROUP}:1000010".encode()
    a = _at(model, A, T0 + 26)  # the applier restarted at T0 + 25 and caught up
    assert (a.transactions_waiting_apply, a.transactions_applied) == (0, 10)


def test_scripted_stop_across_an_hour_boundary_keeps_the_queue() -> None:
    hour = T0 + 3600
    model = _scripted(
        ScriptEvent(hour - 5, A, "applier_stop", duration_s=20),
        ScriptEvent(hour - 3, B, "commit", count=4),
        ScriptEvent(hour + 2, B, "commit", count=3),
    )
    assert _at(model, A, hour - 1).transactions_waiting_apply == 4
    assert _at(model, A, hour).transactions_waiting_apply == 4
    assert _at(model, A, hour + 3).transactions_waiting_apply == 7
    after = _at(model, A, hour + 15)
    assert (after.transactions_waiting_apply, after.transactions_applied) == (0, 7)


def test_long_applier_stop_queues_across_hours_and_drains_after() -> None:
    stop = ScriptEvent(T0 + 10, A, "applier_stop", duration_s=2 * 86400)
    direct = GroupModel(_multi(script=(stop,)))
    late = T0 + 30 * 3600 + 5
    late_direct = _at(direct, A, late)  # evaluated first, with nothing cached
    stepwise = GroupModel(_multi(script=(stop,)))
    applied_at_stop = _at(stepwise, A, T0 + 10).transactions_applied
    queues = []
    for hour in range(1, 31):
        stats = _at(stepwise, A, T0 + hour * 3600 + 5)
        assert stats.transactions_applied == applied_at_stop  # nothing applied while stopped
        queues.append(stats.transactions_waiting_apply)
    assert all(b > a for a, b in itertools.pairwise(queues))  # no reset at hour boundaries
    assert _at(stepwise, A, late) == late_direct
    assert queues[-1] > 1_000_000
    # after the stop the backlog is applied at the applier's capacity, 150 tx/s
    # (1.25 x hot_factor 3 x 20 tx/s x 2 remote writers), until it is gone
    end = T0 + 10 + 2 * 86400
    first, second = _at(stepwise, A, end + 3600), _at(stepwise, A, end + 7 * 3600)
    assert second.transactions_waiting_apply > 0
    assert second.transactions_applied - first.transactions_applied == 150 * 6 * 3600
    assert _at(stepwise, A, end + 48 * 3600).transactions_waiting_apply < 1000


def test_scripted_event_at_a_fractional_second_counts_from_the_next_second() -> None:
    model = _scripted(ScriptEvent(T0 + 10.25, B, "commit", count=2))
    assert _at(model, B, T0 + 10.9).transactions_local == 0
    assert _at(model, B, T0 + 11).transactions_local == 2


def test_scripted_state_change_is_shown_and_reverts() -> None:
    model = _scripted(ScriptEvent(T0 + 10, B, "set_state", state="RECOVERING", duration_s=30))
    assert model.member_at(B, (T0 + 9) * US).state == "ONLINE"
    recovering = model.member_at(B, (T0 + 10) * US)
    assert (recovering.state, recovering.role) == ("RECOVERING", "PRIMARY")
    assert model.member_at(B, (T0 + 40) * US).state == "ONLINE"


# ---- GTIDs ----


def test_gtid_texts_use_per_member_blocks() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=5),
        ScriptEvent(T0 + 2, B, "commit", count=10),
        ScriptEvent(T0 + 3, B, "conflict", count=2),  # no GTID for a rolled-back transaction
    )
    assert _at(model, A, T0 + 59).transactions_committed_all_members == b""  # before the GC
    stats = _at(model, A, T0 + 60)
    assert stats.transactions_committed_all_members == f"{GROUP}:1-5:1000001-1000010".encode()
    assert stats.transaction_last_conflict_free == f"{GROUP}:1000010".encode()
    assert _at(model, A, T0 + 1).transaction_last_conflict_free == f"{GROUP}:5".encode()
    assert stats.transactions_rows_validating == 1  # GC keeps the last transaction's write-set


def test_stable_set_waits_for_a_stopped_applier() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=3),
        ScriptEvent(T0 + 2, B, "applier_stop", duration_s=100),
        ScriptEvent(T0 + 5, A, "commit", count=2),
    )
    # B has applied A's first three, not the two that arrived while it was stopped
    assert _at(model, A, T0 + 60).transactions_committed_all_members == f"{GROUP}:1-3".encode()
    assert _at(model, A, T0 + 60).transactions_rows_validating == 2 + 1  # + the last stable one
    assert _at(model, B, T0 + 120).transactions_committed_all_members == f"{GROUP}:1-5".encode()


def test_used_up_blocks_are_followed_by_the_next_free_block() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=999_999),  # A: 1-999999 (block 0)
        ScriptEvent(T0 + 2, B, "commit", count=5),  # B: 1000001-1000005 (block 1)
        ScriptEvent(T0 + 3, A, "commit", count=3),  # A: 1000000, then block 3: 3000001-3000002
        ScriptEvent(T0 + 70, C, "commit", count=1_000_001),  # C: block 2 full, block 4: 4000001
        ScriptEvent(T0 + 130, B, "commit", count=999_995),  # B: block 1 full
        # same second: A (slot 0) gets block 5 before B (slot 1) gets block 6
        ScriptEvent(T0 + 200, A, "commit", count=999_999),  # A: block 3 full, 5000001
        ScriptEvent(T0 + 200, B, "commit", count=1),  # B: 6000001
        members=MEMBERS,
    )
    assert _at(model, C, T0 + 60).transactions_committed_all_members == (
        f"{GROUP}:1-1000005:3000001-3000002".encode()
    )
    assert _at(model, C, T0 + 60).transaction_last_conflict_free == f"{GROUP}:3000002".encode()
    assert _at(model, A, T0 + 120).transactions_committed_all_members == (
        f"{GROUP}:1-1000005:2000001-3000002:4000001".encode()
    )
    assert _at(model, A, T0 + 120).transaction_last_conflict_free == f"{GROUP}:4000001".encode()
    assert _at(model, B, T0 + 240).transactions_committed_all_members == (
        f"{GROUP}:1-4000001:5000001:6000001".encode()
    )
    last = _at(model, B, T0 + 240).transaction_last_conflict_free
    assert last in (f"{GROUP}:5000001".encode(), f"{GROUP}:6000001".encode())


def test_background_gtid_sets_are_compact_and_recent() -> None:
    model = GroupModel(_multi())
    t = T0 + 3600 + 1830  # 2026-11-18 10:30:30 UTC, ten and a half months after the epoch
    stats = _at(model, A, t)
    committed = GtidSet.parse(stats.transactions_committed_all_members)
    assert str(committed).encode() == stats.transactions_committed_all_members  # canonical
    intervals = list(committed.intervals())
    assert 1 <= len(intervals) <= 4  # full blocks, then the writers' three current blocks
    assert intervals[0][2] == 1
    ok_at_gc = sum(
        _at(model, m, t - 30).transactions_local - _at(model, m, t - 30).transactions_local_rollback
        for m in MEMBERS
    )
    assert ok_at_gc > 1_000_000_000
    assert 0 <= ok_at_gc - committed.count() < 5000  # the stable set is seconds behind
    last_gno = intervals[-1][3]
    assert last_gno <= (3 + ok_at_gc // BLOCK) * BLOCK  # no block is skipped
    assert last_gno - committed.count() < 3 * BLOCK  # only the current blocks have holes
    last_free = Gtid.parse(stats.transaction_last_conflict_free)
    assert last_free.uuid == GROUP
    assert str(last_free) not in committed  # certified after the stable point
    assert last_gno - 3 * BLOCK < last_free.gno <= last_gno + 3 * BLOCK


def test_single_primary_gtids_are_one_contiguous_range() -> None:
    model = GroupModel(_single())
    stats = _at(model, C, T0 + 7200)
    committed = GtidSet.parse(stats.transactions_committed_all_members)
    (interval,) = list(committed.intervals())
    primary = _at(model, A, T0 + 7200)
    assert interval[2] == 1
    assert interval[3] <= primary.transactions_local
    assert Gtid.parse(stats.transaction_last_conflict_free).gno == primary.transactions_local


# ---- bulk history and the Source ----


def test_history_columns_equal_stats_at_and_member_at() -> None:
    settings = _multi(
        slow_member=B,
        script=(ScriptEvent(T0 + 3590, C, "set_state", state="RECOVERING", duration_s=20),),
    )
    model = GroupModel(settings)
    start, n = T0 + 3600 - 95, 130  # across an hour boundary and two GC boundaries
    expected_columns = {name for name, _ in HISTORY_COLUMNS} - {"incarnation", "seq"}
    for member in MEMBERS:
        cols = model.history_columns(member, start, n)
        # the lag figures and applier counters come in bulk from their own methods,
        # the flow-control figures from the replay over every member (offline.flowfill)
        flow = {name for name, _ in FLOW_HISTORY_COLUMNS}
        optional = set(LAG_HISTORY_COLUMNS) | set(APPLIER_HISTORY_COLUMNS) | flow
        optional |= {name for name, _ in GTID_HISTORY_COLUMNS}  # a daemon's verdict only
        optional |= set(COMMIT_PATH_HISTORY_COLUMNS)  # in bulk from simulated.commithistory
        assert expected_columns - optional <= set(cols) <= expected_columns
        assert all(len(values) == n for values in cols.values())
        for i in range(n):
            s = start + i
            stats = model.stats_at(member, s * US)
            info = model.member_at(member, s * US)
            assert cols["sampled_at"][i] == s * US
            assert (
                cols["count_transactions_in_queue"][i] == stats.transactions_waiting_certification
            )
            assert cols["count_transactions_checked"][i] == stats.transactions_certified
            assert cols["count_conflicts_detected"][i] == stats.transactions_negative_certified
            assert (
                cols["count_transactions_rows_validating"][i] == stats.transactions_rows_validating
            )
            assert (
                cols["count_transactions_remote_in_applier_queue"][i]
                == stats.transactions_waiting_apply
            )
            assert cols["count_transactions_remote_applied"][i] == stats.transactions_applied
            assert cols["count_transactions_local_proposed"][i] == stats.transactions_local
            assert cols["count_transactions_local_rollback"][i] == stats.transactions_local_rollback
            assert cols["flow_control_mode"][i] == stats.flow_control_mode == FLOW_CONTROL_QUOTA
            if s % 30 == 0:
                assert cols["transactions_committed_all_members"][i] == (
                    stats.transactions_committed_all_members.decode()
                )
                assert cols["last_conflict_free_transaction"][i] == (
                    stats.transaction_last_conflict_free.decode()
                )
            else:
                assert cols["transactions_committed_all_members"][i] is None
                assert cols["last_conflict_free_transaction"][i] is None
            row_member = (
                cols["group_name"][i],
                cols["member_id"][i],
                cols["member_host"][i],
                cols["member_port"][i],
                cols["member_state"][i],
                cols["member_role"][i],
                cols["member_version"][i],
                cols["view_id"][i],
            )
            assert row_member == (
                info.group_name,
                info.member_id,
                info.host,
                info.port,
                info.state,
                info.role,
                info.version,
                info.view_id,
            )
    states = model.history_columns(C, T0 + 3585, 30)["member_state"]
    assert states == ["ONLINE"] * 5 + ["RECOVERING"] * 20 + ["ONLINE"] * 5


def test_recovering_member_shows_no_stable_set() -> None:
    settings = _multi(script=(ScriptEvent(T0, C, "set_state", state="RECOVERING"),))
    model = GroupModel(settings)
    assert _at(model, C, T0 + 120).transactions_committed_all_members == b""
    assert _at(model, A, T0 + 120).transactions_committed_all_members != b""


def test_member_identity_defaults_and_overrides() -> None:
    model = GroupModel(_single(hosts={C: ("db3.example", 3310)}, version="8.0.36"))
    a, b, c = (model.member_at(m, T0 * US) for m in MEMBERS)
    assert (a.host, a.port, a.role, a.state) == ("127.0.0.1", 3306, "PRIMARY", "ONLINE")
    assert (b.host, b.port, b.role) == ("127.0.0.1", 3307, "SECONDARY")
    assert (c.host, c.port, c.version, c.gcs_id) == (
        "db3.example",
        3310,
        "8.0.36",
        "db3.example:3310",
    )
    assert a.view_id == b.view_id == c.view_id != ""
    assert a.group_name == GROUP


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"members": ()}, "members"),
        ({"members": (A, A)}, "members"),
        ({"members": ("not-a-uuid",)}, "members"),
        ({"mode": "multi"}, "mode"),
        ({"conflict_probability": 1.5}, "conflict_probability"),
        ({"hot_hours": (24,)}, "hot_hours"),
        ({"slow_member": C}, "slow_member"),
        ({"script": (ScriptEvent(T0, A, "explode"),)}, "script"),
        ({"script": (ScriptEvent(T0, C, "commit"),)}, "script"),
        ({"mode": "single-primary", "script": (ScriptEvent(T0, B, "commit"),)}, "script"),
        ({"mode": "single-primary", "script": (ScriptEvent(T0, A, "conflict"),)}, "script"),
    ],
)
def test_invalid_settings_name_the_key(kwargs: dict[str, Any], key: str) -> None:
    base: dict[str, Any] = {"group": GROUP, "members": (A, B)}
    with pytest.raises(ValueError, match=f"^{key}: "):
        SimulationSettings(**{**base, **kwargs})


def test_unknown_member_is_an_error() -> None:
    model = GroupModel(_multi())
    with pytest.raises(ValueError, match=r"^member_id: "):
        model.stats_at("44444444-4444-4444-4444-444444444444", T0 * US)


async def test_source_samples_the_model() -> None:
    model = GroupModel(_multi())
    source = SimulatedSource(model, B.upper())
    await source.start()
    sample = await source.sample(T0 * US + 5)
    await source.close()
    assert sample == LocalSample(
        member=model.member_at(B, T0 * US),
        stats=model.stats_at(B, T0 * US),
        sampled_at_us=T0 * US + 5,
        lag=model.lag_at(B, T0 * US),
        applier=model.applier_at(B, T0 * US + 5),
        gtid_state=model.gtid_state_at(B, T0 * US + 5),
        commit_path=commit_path_at(
            model.settings, B, T0, model.stats_at(B, T0 * US).transactions_local
        ),
        communication=communication_of(model.settings),
    )
    assert sample.gtid_state is not None and sample.gtid_state.executed
    assert sample.lag[0].last_applied.gtid  # B applies A's and C's transactions
    assert sample.stats.sent_timestamp is None
    assert sample.stats.transaction_gtids_present is False
