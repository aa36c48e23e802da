"""The simulated applier (WL#15620) over a simulated hour: invariants, and the slow member.

Expected values come from the model's stats stream (`stats_at`, an independent
part of the model) or are written by hand.
"""

from __future__ import annotations

import numpy as np

from grstats.core import columns as col
from grstats.core.applier_verdict import explain
from grstats.core.applierrows import metrics_rows
from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.core.rows import applier_history
from grstats.sources.simulated import GroupModel, SimulationSettings
from grstats.sources.simulated.settings import ScriptEvent

A, B, SLOW = (
    "11111111-1111-1111-1111-111111111111",
    "22222222-2222-2222-2222-222222222222",
    "33333333-3333-3333-3333-333333333333",
)
SETTINGS = SimulationSettings(slow_member=SLOW)
# day 3 of the model, 10:00 UTC: a hot hour (the slow member's queue builds)
HOT = SETTINGS.epoch_s + 2 * 86_400 + 10 * 3_600
NS = 1_000_000_000


def test_committed_and_pending_follow_the_stats_every_second_of_an_hour() -> None:
    model = GroupModel(SETTINGS)
    for member in (A, B, SLOW):
        prev = None
        for s in range(HOT, HOT + 3_600):
            t = s * 1_000_000
            stats = model.stats_at(member, t)
            channel = model.applier_at(member, t).channels[0]
            assert channel.channel == "group_replication_applier"
            assert channel.pending == stats.transactions_waiting_apply
            if prev is not None:
                prev_channel, prev_stats = prev
                assert channel.committed - prev_channel.committed == (
                    stats.transactions_applied - prev_stats.transactions_applied
                )
                for field in (
                    "active_ns",
                    "committed",
                    "committed_bytes",
                    "events_committed",
                    "waits_for_work_count",
                    "waits_for_work_ns",
                    "waits_dependency_ns",
                    "waits_commit_order_ns",
                    "waits_for_worker_ns",
                    "read_relay_log_ns",
                ):
                    assert getattr(channel, field) >= getattr(prev_channel, field), field
                assert channel.active_ns - prev_channel.active_ns == NS  # running all hour
            assert channel.ongoing == min(channel.pending, 4)
            waits = (
                channel.waits_for_work_ns
                + channel.waits_dependency_ns
                + channel.waits_commit_order_ns
                + channel.waits_for_worker_ns
                + channel.waits_queue_memory_ns
                + channel.waits_queues_full_ns
                + channel.read_relay_log_ns
            )
            assert waits <= channel.active_ns
            prev = (channel, stats)


def test_the_slow_member_has_a_backlog_in_the_hot_hour() -> None:
    model = GroupModel(SETTINGS)
    end = (HOT + 3_599) * 1_000_000
    assert model.applier_at(SLOW, end).channels[0].pending > 0
    assert model.applier_at(A, end).channels[0].pending == 0


def test_waits_for_work_dominate_on_idle_members_commit_order_on_the_slow_one() -> None:
    model = GroupModel(SETTINGS)
    t = (HOT + 3_599) * 1_000_000
    verdicts = {}
    for member in (A, B, SLOW):
        c = model.applier_at(member, t).channels[0]
        if member != SLOW:
            assert c.waits_for_work_ns > c.active_ns // 2
        else:
            assert c.waits_for_work_ns < c.active_ns // 2
            assert c.waits_commit_order_ns + c.waits_dependency_ns > c.active_ns // 2
        verdicts[member] = explain(metrics_rows(member, model.applier_at(member, t))[0]).kind
    assert verdicts == {A: "starved", B: "starved", SLOW: "commit_order"}


def test_a_scripted_applier_stop_pauses_active_time_and_moves_the_last_start() -> None:
    stop_at = HOT + 100
    model = GroupModel(
        SimulationSettings(script=(ScriptEvent(stop_at, A, "applier_stop", duration_s=30),))
    )
    before = model.applier_at(A, (stop_at - 1) * 1_000_000).channels[0]
    during = model.applier_at(A, (stop_at + 29) * 1_000_000).channels[0]
    after = model.applier_at(A, (stop_at + 31) * 1_000_000).channels[0]
    assert during.active_ns == before.active_ns  # 30 s stopped from stop_at on
    assert during.last_start_us is None
    assert after.active_ns == before.active_ns + 2 * NS
    assert after.last_start_us == (stop_at + 30) * 1_000_000


def test_workers_table_shows_the_ongoing_transactions() -> None:
    model = GroupModel(SETTINGS)
    applier = model.applier_at(SLOW, (HOT + 3_599) * 1_000_000)
    kinds = [w.transaction_type for w in applier.workers]
    assert [w.worker_id for w in applier.workers] == [1, 2, 3, 4]
    assert kinds == ["DML"] * 4  # backlog: every worker busy
    assert metrics_rows(SLOW, applier)[0][col.MEMBER_ID] == SLOW


def test_bulk_history_equals_what_a_daemon_records_every_second() -> None:
    stop_at = HOT + 3_590  # a stop across the hour boundary
    settings = SimulationSettings(
        slow_member=SLOW, script=(ScriptEvent(stop_at, A, "applier_stop", duration_s=20),)
    )
    model = GroupModel(settings)
    start, n = HOT + 3_500, 200
    for member in (A, B, SLOW):
        bulk = model.applier_history(member, start, n)
        assert set(bulk) == set(APPLIER_HISTORY_COLUMNS)
        for i in range(n):
            recorded = applier_history(model.applier_at(member, (start + i) * 1_000_000))
            assert {k: int(v[i]) for k, v in bulk.items()} == recorded, (member, i)
    steps = np.diff(model.applier_history(A, start, n)["total_active_time_duration"])
    # by hand: 1 s of active time per second, none while stopped (seconds stop_at .. +19)
    stopped = range(stop_at - start - 1, stop_at - start + 19)
    assert [int(x) for x in steps] == [0 if i in stopped else NS for i in range(n - 1)]


def test_bulk_history_does_not_overflow_with_billions_committed() -> None:
    model = GroupModel(SETTINGS)
    late = HOT + 10 * 365 * 86_400  # years of workload: committed * 1e9 passes int64
    bulk = model.applier_history(SLOW, late, 3)
    committed = bulk["transactions_committed_count"]
    active = bulk["total_active_time_duration"]
    assert int(committed[0]) * NS > (1 << 63)  # the product the model must not form
    assert (bulk["waits_for_work_from_source_sum_time"] >= 0).all()
    assert (bulk["waits_due_to_commit_order_sum_time"] <= active).all()
