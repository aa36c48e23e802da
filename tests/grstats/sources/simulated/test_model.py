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

from grstats.sources.simulated import GroupModel, ScriptEvent
from protocol import GtidSet, PipelineStats
from tests.fixtures.simulated_group import (
    GROUP,
    HOURS,
    MEMBERS,
    T0,
    US,
    A,
    B,
    C,
    at,
    multi_primary,
    scripted,
    single_primary,
)

COUNTERS = (
    "count_transactions_checked",
    "count_conflicts_detected",
    "count_transactions_remote_applied",
    "count_transactions_local_proposed",
    "count_transactions_local_rollback",
)


_HISTORY_CACHE: dict[str, dict[str, dict[str, list[Any]]]] = {}


def _history(kind: str) -> dict[str, dict[str, list[Any]]]:
    """Three hours of every member at 1 Hz, computed once per module run."""
    if kind not in _HISTORY_CACHE:
        model = GroupModel(multi_primary() if kind == "multi" else single_primary())
        _HISTORY_CACHE[kind] = {m: model.history_columns(m, T0, HOURS * 3600) for m in MEMBERS}
    return _HISTORY_CACHE[kind]


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
    model = scripted(
        ScriptEvent(T0 + 1, A, "applier_stop", duration_s=60),
        ScriptEvent(T0 + 2, A, "commit", count=5),
    )
    a, b = at(model, A, T0 + 10), at(model, B, T0 + 10)
    assert (a.transactions_waiting_apply, a.transactions_applied, a.transactions_local) == (0, 0, 5)
    assert (b.transactions_waiting_apply, b.transactions_applied, b.transactions_local) == (0, 5, 0)


def test_slow_member_queue_builds_in_hot_hours() -> None:
    model = GroupModel(multi_primary(slow_member=C))
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
    model = GroupModel(multi_primary())
    drops = 0
    for s in range(T0 + 3600 + 50, T0 + 3600 + 50 + 600, 5):
        stats = at(model, A, s)
        ok_total = sum(
            at(model, m, s).transactions_local - at(model, m, s).transactions_local_rollback
            for m in MEMBERS
        )
        stable = GtidSet.parse(stats.transactions_committed_all_members).count()
        # + 1: GC keeps the write-set of the stable set's last transaction (certifier.cc)
        assert stats.transactions_rows_validating == ok_total - stable + 1
        if s % 60 == 0:
            before = at(model, A, s - 1).transactions_rows_validating
            drops += stats.transactions_rows_validating < before
    assert drops >= 9  # every boundary of the ten minutes, bar perhaps one


# ---- determinism: absolute time, not process history ----


def test_two_models_built_separately_agree() -> None:
    times = [T0 + random.Random(1).randrange(0, 30 * 86400) for _ in range(20)]
    first, second = GroupModel(multi_primary()), GroupModel(multi_primary())
    for t in times:
        for m in MEMBERS:
            assert first.stats_at(m, t * US) == second.stats_at(m, t * US)
    for t in reversed(times):
        assert first.member_at(B, t * US) == second.member_at(B, t * US)


def test_evaluation_order_does_not_matter() -> None:
    times = [*range(T0 + 3000, T0 + 4200, 7), T0 + 5 * 86400, T0 - 86400 * 40]
    sequential = GroupModel(multi_primary(slow_member=B))
    expected = {(t, m): sequential.stats_at(m, t * US) for t in sorted(times) for m in MEMBERS}
    shuffled = list(expected)
    random.Random(3).shuffle(shuffled)
    other = GroupModel(multi_primary(slow_member=B))
    for t, m in shuffled:
        assert other.stats_at(m, t * US) == expected[(t, m)]


def test_time_within_a_second_does_not_matter() -> None:
    model = GroupModel(multi_primary())
    assert model.stats_at(A, T0 * US + 999_999) == model.stats_at(A, T0 * US)


def test_nothing_happens_before_the_model_epoch() -> None:
    model = GroupModel(multi_primary(epoch_s=T0))
    assert at(model, B, T0 - 1) == PipelineStats()
    assert at(model, B, T0 + 60).transactions_certified > 0


def test_counting_starts_at_the_model_epoch() -> None:
    # the later epoch cuts its first hour short, the earlier one counts ten months before it
    early, late = GroupModel(multi_primary()), GroupModel(multi_primary(epoch_s=T0 + 1))
    for t in (T0 + 1, T0 + 3599, T0 + 3600, T0 + 5000, T0 + 10799):
        for m in MEMBERS:
            e0, e, lt = at(early, m, T0), at(early, m, t), at(late, m, t)
            for name in (
                "transactions_certified",
                "transactions_negative_certified",
                "transactions_local",
                "transactions_local_rollback",
            ):
                assert getattr(lt, name) == getattr(e, name) - getattr(e0, name), (t, m, name)


def test_stop_at_freezes_the_workload() -> None:
    stop = T0 + 3600 + 1234.5
    model = GroupModel(multi_primary(stop_at_s=stop))
    frozen = {m: at(model, m, stop + 30) for m in MEMBERS}
    later = {m: at(model, m, stop + 7200) for m in MEMBERS}
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
    assert at(model, A, stop - 60).transactions_certified < frozen[A].transactions_certified


# ---- MySQL's member-stats scenario, by hand ----


def test_scripted_conflict_counts_everywhere_but_rolls_back_only_the_proposer() -> None:
    model = scripted(ScriptEvent(T0 + 1, A, "conflict"))
    a, b = at(model, A, T0 + 2), at(model, B, T0 + 2)
    assert (a.transactions_negative_certified, b.transactions_negative_certified) == (1, 1)
    assert (a.transactions_certified, b.transactions_certified) == (1, 1)
    assert (a.transactions_local_rollback, b.transactions_local_rollback) == (1, 0)
    assert (a.transactions_local, b.transactions_local) == (1, 0)
    assert (a.transactions_applied, b.transactions_applied) == (0, 0)  # nothing to apply
    assert a.transaction_last_conflict_free == b"" == a.transactions_committed_all_members


def test_scripted_stopped_applier_queues_the_remote_commits() -> None:
    model = scripted(
        ScriptEvent(T0 + 1, A, "conflict"),
        ScriptEvent(T0 + 5, A, "applier_stop", duration_s=20),
        ScriptEvent(T0 + 10, B, "commit", count=10),
    )
    a, b = at(model, A, T0 + 15), at(model, B, T0 + 15)
    assert (a.transactions_waiting_apply, b.transactions_waiting_apply) == (10, 0)
    assert (a.transactions_applied, b.transactions_applied) == (0, 0)
    assert (a.transactions_certified, a.transactions_negative_certified) == (11, 1)
    assert (b.transactions_local, b.transactions_local_rollback) == (10, 0)
    assert a.transaction_last_conflict_free == f"{GROUP}:1000010".encode()
    a = at(model, A, T0 + 26)  # the applier restarted at T0 + 25 and caught up
    assert (a.transactions_waiting_apply, a.transactions_applied) == (0, 10)


def test_scripted_stop_across_an_hour_boundary_keeps_the_queue() -> None:
    hour = T0 + 3600
    model = scripted(
        ScriptEvent(hour - 5, A, "applier_stop", duration_s=20),
        ScriptEvent(hour - 3, B, "commit", count=4),
        ScriptEvent(hour + 2, B, "commit", count=3),
    )
    assert at(model, A, hour - 1).transactions_waiting_apply == 4
    assert at(model, A, hour).transactions_waiting_apply == 4
    assert at(model, A, hour + 3).transactions_waiting_apply == 7
    after = at(model, A, hour + 15)
    assert (after.transactions_waiting_apply, after.transactions_applied) == (0, 7)


def test_long_applier_stop_queues_across_hours_and_drains_after() -> None:
    stop = ScriptEvent(T0 + 10, A, "applier_stop", duration_s=2 * 86400)
    direct = GroupModel(multi_primary(script=(stop,)))
    late = T0 + 30 * 3600 + 5
    late_direct = at(direct, A, late)  # evaluated first, with nothing cached
    stepwise = GroupModel(multi_primary(script=(stop,)))
    applied_at_stop = at(stepwise, A, T0 + 10).transactions_applied
    queues = []
    for hour in range(1, 31):
        stats = at(stepwise, A, T0 + hour * 3600 + 5)
        assert stats.transactions_applied == applied_at_stop  # nothing applied while stopped
        queues.append(stats.transactions_waiting_apply)
    assert all(b > a for a, b in itertools.pairwise(queues))  # no reset at hour boundaries
    assert at(stepwise, A, late) == late_direct
    assert queues[-1] > 1_000_000
    # after the stop the backlog is applied at the applier's capacity, 150 tx/s
    # (1.25 x hot_factor 3 x 20 tx/s x 2 remote writers), until it is gone
    end = T0 + 10 + 2 * 86400
    first, second = at(stepwise, A, end + 3600), at(stepwise, A, end + 7 * 3600)
    assert second.transactions_waiting_apply > 0
    assert second.transactions_applied - first.transactions_applied == 150 * 6 * 3600
    assert at(stepwise, A, end + 48 * 3600).transactions_waiting_apply < 1000


def test_scripted_event_at_a_fractional_second_counts_from_the_next_second() -> None:
    model = scripted(ScriptEvent(T0 + 10.25, B, "commit", count=2))
    assert at(model, B, T0 + 10.9).transactions_local == 0
    assert at(model, B, T0 + 11).transactions_local == 2


def test_scripted_state_change_is_shown_and_reverts() -> None:
    model = scripted(ScriptEvent(T0 + 10, B, "set_state", state="RECOVERING", duration_s=30))
    assert model.member_at(B, (T0 + 9) * US).state == "ONLINE"
    recovering = model.member_at(B, (T0 + 10) * US)
    assert (recovering.state, recovering.role) == ("RECOVERING", "PRIMARY")
    assert model.member_at(B, (T0 + 40) * US).state == "ONLINE"


def test_the_view_a_member_s_server_lists() -> None:
    # B leaves (OFFLINE) for 30 s: its server then lists only itself, the others' list
    # only the two of them; UNREACHABLE stays in the view (suspected, not expelled)
    model = scripted(
        ScriptEvent(T0 + 10, B, "set_state", state="OFFLINE", duration_s=30),
        ScriptEvent(T0 + 60, A, "set_state", state="UNREACHABLE", duration_s=5),
    )
    assert model.view_at(A, (T0 + 5) * US) == frozenset({A, B})
    assert model.view_at(A, (T0 + 10) * US) == frozenset({A})
    assert model.view_at(B, (T0 + 10) * US) == frozenset({B})
    assert model.view_at(B, (T0 + 40) * US) == frozenset({A, B})
    assert model.view_at(B, (T0 + 61) * US) == frozenset({A, B})
