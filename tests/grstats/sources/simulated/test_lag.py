"""Replication lag by stage in the simulated group model (GroupModel.lag_at).

Expected values are hand-calculated from the model's documented sub-second
rule (grstats/sources/simulated/lag.py): a second's positively certified
transactions commit on their origin at ``k + p * 10 ms / N`` (p: rank in
member order), are queued 1 ms later for 50 µs, start applying at the
earliest 100 µs after that (a backlogged applier: its i-th of n transactions
of second j at ``j + i * 10 ms / n``) and apply in 400 µs. The background
workload is checked against identities between the members' history rows.
"""

from __future__ import annotations

from typing import Any

from grstats.core.lag import APPLIER_CHANNEL, ChannelLag, StageTrx
from grstats.sources.simulated import GroupModel, ScriptEvent, SimulationSettings

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
A = "11111111-1111-1111-1111-111111111111"
B = "22222222-2222-2222-2222-222222222222"
C = "33333333-3333-3333-3333-333333333333"
US = 1_000_000
T0 = 1_795_424_400  # 2026-11-23 09:00:00 UTC (a Monday); hot hours 10 and 11 follow


def _scripted(*events: ScriptEvent, members: tuple[str, ...] = (A, B), **kw: Any) -> GroupModel:
    return GroupModel(
        SimulationSettings(group=GROUP, members=members, scripted=True, script=events, **kw)
    )


def _channel(model: GroupModel, member: str, t_s: int) -> ChannelLag:
    (channel,) = model.lag_at(member, t_s * US + 250_000)  # within the second does not matter
    assert channel.channel == APPLIER_CHANNEL
    return channel


def _trx(gno: int, original_us: int, start_us: int, end_us: int | None) -> StageTrx:
    return StageTrx(f"{GROUP}:{gno}", original_us, original_us, start_us, end_us)


def test_stopped_applier_queues_and_applies_on_resume_with_the_stop_as_lag() -> None:
    model = _scripted(
        ScriptEvent(T0 + 5, A, "applier_stop", duration_s=20),
        ScriptEvent(T0 + 10, B, "commit", count=10),
    )
    tenth = (T0 + 10) * US + 9 * 10_000 // 10  # the 10th of 10 commits of second T0 + 10
    stopped = _channel(model, A, T0 + 15)
    assert stopped == ChannelLag(
        receiver_on=True,
        applier_on=False,
        last_queued=_trx(1_000_010, tenth, tenth + 1_000, tenth + 1_050),
        workers=4,
    )  # nothing applied, nothing applying while stopped
    resumed = _channel(model, A, T0 + 25)  # the stop ends at T0 + 25: all 10 applied then
    start = (T0 + 25) * US + 9 * 10_000 // 10  # 10th of the 10 applied in second T0 + 25
    assert resumed.last_applied == _trx(1_000_010, tenth, start, start + 400)
    assert resumed.last_applied.end_us is not None
    assert resumed.last_applied.end_us - tenth == 15 * US + 400  # lag = resume - commit
    assert resumed.last_queued == stopped.last_queued
    assert (resumed.applying, resumed.busy_workers, resumed.applier_on) == (StageTrx(), 0, True)
    assert resumed.last_processed == _trx(1_000_010, tenth, start - 20, start)


def test_the_origin_never_queues_its_own_transactions() -> None:
    model = _scripted(ScriptEvent(T0 + 10, B, "commit", count=10))
    assert _channel(model, B, T0 + 11) == ChannelLag(receiver_on=True, applier_on=True, workers=4)


def test_backlogged_applier_shows_the_next_transaction_applying() -> None:
    # 2 tx/s of applier capacity: of B's 10, A applies 2 in each second from T0 + 10
    model = _scripted(ScriptEvent(T0 + 10, B, "commit", count=10), applier_capacity=2.0)
    lag = _channel(model, A, T0 + 12)
    sixth, seventh = (T0 + 10) * US + 5_000, (T0 + 10) * US + 6_000
    start = (T0 + 12) * US + 1 * 10_000 // 2  # the 2nd of the 2 applied in second T0 + 12
    assert lag.last_applied == _trx(1_000_006, sixth, start, start + 400)
    assert lag.applying == _trx(1_000_007, seventh, start + 400, None)  # right after it
    assert lag.last_processed == _trx(1_000_007, seventh, start + 380, start + 400)
    assert lag.last_queued.gtid == f"{GROUP}:1000010"
    assert (lag.workers, lag.busy_workers) == (4, 4)  # 4 queued: every worker busy
    late = _channel(model, A, T0 + 14)  # the last two: 1 left after T0 + 14's first
    assert late.busy_workers == 0 and late.applying == StageTrx()
    assert late.last_applied.gtid == late.last_queued.gtid


def test_same_second_commits_are_ordered_by_member_and_spread_over_10_ms() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=2),  # GNOs 1-2, commits at +0 and +2 ms
        ScriptEvent(T0 + 1, B, "commit", count=3),  # 1000001-1000003 at +4, +6, +8 ms
        members=(A, B, C),
    )
    at = (T0 + 1) * US
    c = _channel(model, C, T0 + 1)  # C's stream: A's two, then B's three
    assert c.last_queued == _trx(1_000_003, at + 8_000, at + 9_000, at + 9_050)
    # applied right away: queued + 100 µs, for 400 µs
    assert c.last_applied == _trx(1_000_003, at + 8_000, at + 9_150, at + 9_550)
    assert _channel(model, A, T0 + 1).last_applied.gtid == f"{GROUP}:1000003"
    assert _channel(model, B, T0 + 1).last_applied == _trx(2, at + 2_000, at + 3_150, at + 3_550)


def test_idle_group_shows_the_last_applied_transaction_and_nothing_queued() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=2),
        ScriptEvent(T0 + 1, B, "commit", count=3),
        members=(A, B, C),
    )
    at = (T0 + 1) * US
    for t in (T0 + 2, T0 + 3 * 3600 + 7):  # hours later: found through the hour prefix sums
        c = _channel(model, C, t)
        assert c.last_applied == _trx(1_000_003, at + 8_000, at + 9_150, at + 9_550)
        assert c.last_queued.gtid == c.last_applied.gtid
        assert (c.applying, c.processing, c.queueing, c.busy_workers) == (
            StageTrx(),
            StageTrx(),
            StageTrx(),
            0,
        )


def test_single_primary_primary_has_no_applier_lag_for_its_own_writes() -> None:
    model = _scripted(
        ScriptEvent(T0 + 1, A, "commit", count=5), members=(A, B, C), mode="single-primary"
    )
    assert _channel(model, A, T0 + 2) == ChannelLag(receiver_on=True, applier_on=True, workers=4)
    at = (T0 + 1) * US + 4 * 10_000 // 5  # the 5th of 5
    for secondary in (B, C):
        assert _channel(model, secondary, T0 + 2).last_applied == _trx(
            5, at, at + 1_150, at + 1_550
        )


def test_member_outside_the_view_shows_no_channel() -> None:
    model = _scripted(ScriptEvent(T0 + 10, B, "set_state", state="OFFLINE", duration_s=30))
    assert model.lag_at(B, (T0 + 20) * US) == ()
    assert len(model.lag_at(B, (T0 + 40) * US)) == 1


# ---- the background workload, against the members' history rows ----


def _remote_certified(rows: dict[str, dict[str, list[Any]]], member: str) -> list[int]:
    """Positively certified transactions of the other members, through each second."""
    others = [m for m in rows if m != member]
    return [
        sum(
            rows[x]["count_transactions_local_proposed"][i]
            - rows[x]["count_transactions_local_rollback"][i]
            for x in others
        )
        for i in range(len(rows[member]["sampled_at"]))
    ]


def test_slow_member_apply_lag_follows_its_queue_and_a_healthy_one_stays_near_zero() -> None:
    settings = SimulationSettings(group=GROUP, members=(A, B, C), seed=7, slow_member=C)
    model = GroupModel(settings)
    start = T0 + 3600  # hot hours 10 and 11: C's queue builds
    rows = {m: model.history_columns(m, start - 3600, 3 * 3600) for m in (A, B, C)}
    remote = _remote_certified(rows, C)
    lags = []
    for t in range(start + 600, start + 2 * 3600, 600):
        i = t - (start - 3600)
        applied = rows[C]["count_transactions_remote_applied"][i]
        queue = rows[C]["count_transactions_remote_in_applier_queue"][i]
        lag = _channel(model, C, t)
        assert queue > 0 and lag.busy_workers == min(4, queue)
        # the last applied was certified in the first second the others' total reached it
        k = next(j for j, n in enumerate(remote) if n >= applied) + start - 3600
        last = lag.last_applied
        assert last.original_commit_us is not None and last.end_us is not None
        assert last.original_commit_us // US == k
        assert last.end_us // US == t  # the applier works on the backlog every second
        last_k = max(j for j in range(i + 1) if remote[j] > remote[j - 1]) + start - 3600
        assert lag.last_queued.original_commit_us is not None
        assert lag.last_queued.original_commit_us // US == last_k
        lags.append(last.end_us - last.original_commit_us)
        healthy = _channel(model, A, t).last_applied
        assert healthy.end_us is not None and healthy.original_commit_us is not None
        assert healthy.end_us - healthy.original_commit_us < 20_000
    assert lags == sorted(lags) and lags[-1] > 600 * US  # grows through the hot hours


def test_lag_does_not_depend_on_what_was_evaluated_before() -> None:
    settings = SimulationSettings(group=GROUP, members=(A, B, C), seed=7, slow_member=C)
    t = T0 + 2 * 3600 + 1234
    fresh = GroupModel(settings).lag_at(C, t * US)
    warmed = GroupModel(settings)
    for s in range(t - 4000, t + 100, 97):
        warmed.lag_at(C, s * US)
    assert warmed.lag_at(C, t * US) == fresh
