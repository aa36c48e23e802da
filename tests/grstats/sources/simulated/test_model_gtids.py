"""The simulated group's GTID sets: per-member blocks, the stable set, compact texts.

Expected sets are worked out by hand from the scripted commits (blocks of a
million GNOs per member) or checked against identities of the members' counters.
"""

from __future__ import annotations

from grstats.sources.simulated import GroupModel, ScriptEvent
from protocol import GtidSet
from protocol.gtid import Gtid
from tests.fixtures.simulated_group import (
    BLOCK,
    GROUP,
    MEMBERS,
    T0,
    A,
    B,
    C,
    at,
    multi_primary,
    scripted,
    single_primary,
)


def test_gtid_texts_use_per_member_blocks() -> None:
    model = scripted(
        ScriptEvent(T0 + 1, A, "commit", count=5),
        ScriptEvent(T0 + 2, B, "commit", count=10),
        ScriptEvent(T0 + 3, B, "conflict", count=2),  # no GTID for a rolled-back transaction
    )
    assert at(model, A, T0 + 59).transactions_committed_all_members == b""  # before the GC
    stats = at(model, A, T0 + 60)
    assert stats.transactions_committed_all_members == f"{GROUP}:1-5:1000001-1000010".encode()
    assert stats.transaction_last_conflict_free == f"{GROUP}:1000010".encode()
    assert at(model, A, T0 + 1).transaction_last_conflict_free == f"{GROUP}:5".encode()
    assert stats.transactions_rows_validating == 1  # GC keeps the last transaction's write-set


def test_stable_set_waits_for_a_stopped_applier() -> None:
    model = scripted(
        ScriptEvent(T0 + 1, A, "commit", count=3),
        ScriptEvent(T0 + 2, B, "applier_stop", duration_s=100),
        ScriptEvent(T0 + 5, A, "commit", count=2),
    )
    # B has applied A's first three, not the two that arrived while it was stopped
    assert at(model, A, T0 + 60).transactions_committed_all_members == f"{GROUP}:1-3".encode()
    assert at(model, A, T0 + 60).transactions_rows_validating == 2 + 1  # + the last stable one
    assert at(model, B, T0 + 120).transactions_committed_all_members == f"{GROUP}:1-5".encode()


def test_used_up_blocks_are_followed_by_the_next_free_block() -> None:
    model = scripted(
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
    assert at(model, C, T0 + 60).transactions_committed_all_members == (
        f"{GROUP}:1-1000005:3000001-3000002".encode()
    )
    assert at(model, C, T0 + 60).transaction_last_conflict_free == f"{GROUP}:3000002".encode()
    assert at(model, A, T0 + 120).transactions_committed_all_members == (
        f"{GROUP}:1-1000005:2000001-3000002:4000001".encode()
    )
    assert at(model, A, T0 + 120).transaction_last_conflict_free == f"{GROUP}:4000001".encode()
    assert at(model, B, T0 + 240).transactions_committed_all_members == (
        f"{GROUP}:1-4000001:5000001:6000001".encode()
    )
    last = at(model, B, T0 + 240).transaction_last_conflict_free
    assert last in (f"{GROUP}:5000001".encode(), f"{GROUP}:6000001".encode())


def test_background_gtid_sets_are_compact_and_recent() -> None:
    model = GroupModel(multi_primary())
    t = T0 + 3600 + 1830  # 2026-11-18 10:30:30 UTC, ten and a half months after the epoch
    stats = at(model, A, t)
    committed = GtidSet.parse(stats.transactions_committed_all_members)
    assert str(committed).encode() == stats.transactions_committed_all_members  # canonical
    intervals = list(committed.intervals())
    assert 1 <= len(intervals) <= 4  # full blocks, then the writers' three current blocks
    assert intervals[0][2] == 1
    ok_at_gc = sum(
        at(model, m, t - 30).transactions_local - at(model, m, t - 30).transactions_local_rollback
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
    model = GroupModel(single_primary())
    stats = at(model, C, T0 + 7200)
    committed = GtidSet.parse(stats.transactions_committed_all_members)
    (interval,) = list(committed.intervals())
    primary = at(model, A, T0 + 7200)
    assert interval[2] == 1
    assert interval[3] <= primary.transactions_local
    assert Gtid.parse(stats.transaction_last_conflict_free).gno == primary.transactions_local


def test_recovering_member_shows_no_stable_set() -> None:
    settings = multi_primary(script=(ScriptEvent(T0, C, "set_state", state="RECOVERING"),))
    model = GroupModel(settings)
    assert at(model, C, T0 + 120).transactions_committed_all_members == b""
    assert at(model, A, T0 + 120).transactions_committed_all_members != b""
