"""The divergence rule: expected sets worked out by hand from MySQL's GTID text."""

from __future__ import annotations

from grstats.core.gtid_divergence import (
    CLONE,
    INCREMENTAL,
    MAX_CHUNKS,
    MAX_GRACE_US,
    ErrantTracker,
    MemberGtids,
    candidates,
    divergence,
    grace_window_us,
)
from protocol.gtid import GtidSet

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"  # group_replication_group_name
VIEW = "cccccccc-cccc-cccc-cccc-cccccccccccc"  # group_replication_view_change_uuid
M1 = "11111111-1111-1111-1111-111111111111"
M2 = "22222222-2222-2222-2222-222222222222"
M3 = "33333333-3333-3333-3333-333333333333"


def member(member_id: str, executed: str, purged: str = "", state: str = "ONLINE") -> MemberGtids:
    return MemberGtids(member_id, state, GtidSet.parse(executed), GtidSet.parse(purged))


def test_local_write_is_a_candidate_only_on_its_member() -> None:
    # the server prints gtid_executed over several lines, ",\n" between UUIDs
    m1 = member(M1, f"{M1}:1,\n{GROUP}:1-100")
    m2 = member(M2, f"{GROUP}:1-100")
    m3 = member(M3, f"{GROUP}:1-90")
    group = [m1, m2, m3]
    assert str(candidates(m1, group)) == f"{M1}:1"
    assert candidates(m2, group).is_empty()
    assert candidates(m3, group).is_empty()


def test_missing_is_what_every_other_member_has() -> None:
    m1 = member(M1, f"{M1}:1,\n{GROUP}:1-100")
    m2 = member(M2, f"{GROUP}:1-100")
    m3 = member(M3, f"{GROUP}:1-90")
    d3 = divergence(m3, [m1, m2, m3])
    # common of m1 and m2 = GROUP:1-100; minus GROUP:1-90 = GROUP:91-100
    assert str(d3.missing) == f"{GROUP}:91-100"
    assert d3.missing.count() == 10
    assert d3.missing_uuid == GROUP
    # m1's own write is not "missing" for m2: m3 lacks it too
    assert divergence(m2, [m1, m2, m3]).missing.is_empty()


def test_tagged_local_write_is_a_candidate_with_its_tag() -> None:
    m1 = member(M1, f"{GROUP}:1-100:maint:1-3")
    m2 = member(M2, f"{GROUP}:1-100")
    m3 = member(M3, f"{GROUP}:1-100:Maint:2")  # tags are case-insensitive
    group = [m1, m2, m3]
    # maint:1-3 minus maint:2 = maint:1 and maint:3; MySQL prints the tag once,
    # it applies to the intervals after it
    assert str(candidates(m1, group)) == f"{GROUP}:maint:1:3"
    assert candidates(m1, group).count() == 2


def test_view_change_gtids_diverge_only_when_a_member_lacks_one() -> None:
    m1 = member(M1, f"{GROUP}:1-50,\n{VIEW}:1-4")
    m2 = member(M2, f"{GROUP}:1-50,\n{VIEW}:1-5")
    m3 = member(M3, f"{GROUP}:1-50,\n{VIEW}:1-5")
    group = [m1, m2, m3]
    assert all(candidates(m, group).is_empty() for m in group)
    d1 = divergence(m1, group)
    assert str(d1.missing) == f"{VIEW}:5"
    assert d1.missing_uuid == VIEW


def test_members_not_online_are_not_compared() -> None:
    m1 = member(M1, f"{M1}:1,\n{GROUP}:1-10")
    m2 = member(M2, f"{M1}:1,\n{GROUP}:1-10", state="RECOVERING")
    m3 = member(M3, f"{GROUP}:1-10")
    assert str(candidates(m1, [m1, m2, m3])) == f"{M1}:1"


def test_alone_there_is_nothing_to_compare() -> None:
    m1 = member(M1, f"{M1}:1-5")
    d = divergence(m1, [m1])
    assert d.candidates.is_empty() and d.recovery is None and d.donors == ()


def test_recovery_incremental_from_the_donors_that_purged_nothing_it_lacks() -> None:
    m1 = member(M1, f"{GROUP}:1-100", purged=f"{GROUP}:1-95")
    m2 = member(M2, f"{GROUP}:1-100", purged=f"{GROUP}:1-50")
    m3 = member(M3, f"{GROUP}:1-90")
    d3 = divergence(m3, [m1, m2, m3])
    # m1: GROUP:1-95 - GROUP:1-90 = GROUP:91-95 purged -> not a donor; m2: nothing
    assert d3.recovery == INCREMENTAL
    assert d3.donors == (M2,)


def test_recovery_needs_clone_when_every_donor_purged_what_it_lacks() -> None:
    m1 = member(M1, f"{GROUP}:1-100", purged=f"{GROUP}:1-95")
    m2 = member(M2, f"{GROUP}:1-100", purged=f"{GROUP}:1-91")
    m3 = member(M3, f"{GROUP}:1-90")
    d3 = divergence(m3, [m1, m2, m3])
    assert d3.recovery == CLONE
    assert d3.donors == ()


def test_recovery_needs_clone_with_errant_transactions() -> None:
    m1 = member(M1, f"{M1}:1,\n{GROUP}:1-100")
    m2 = member(M2, f"{GROUP}:1-100")
    d1 = divergence(m1, [m1, m2], errant=GtidSet.parse(f"{M1}:1"))
    assert d1.recovery == CLONE
    assert d1.donors == (M2,)  # the donors still hold what it lacks


def test_grace_window_is_two_intervals_plus_the_fastest_drain() -> None:
    # 2 * 30 s + min(3000 / 100, 600 / 60) s = 70 s: one member that keeps up suffices
    assert grace_window_us(30.0, [(3000, 100.0), (600, 60.0)]) == 70_000_000
    assert grace_window_us(30.0, [(3000, 100.0), (0, 0.0)]) == 60_000_000
    assert grace_window_us(30.0) == 60_000_000
    assert grace_window_us(30.0, [(5, 0.0)]) == MAX_GRACE_US


def test_tracker_flags_a_candidate_only_after_the_grace() -> None:
    t = ErrantTracker()
    gtid = GtidSet.parse(f"{M1}:1")
    t.update(M1, gtid, 1_000)
    assert t.errant(M1, 1_000 + 59, 60)[0].is_empty()
    t.update(M1, gtid, 1_060)
    errant, since = t.errant(M1, 1_060, 60)
    assert str(errant) == f"{M1}:1" and since == 1_000


def test_a_flag_stays_while_the_gtid_stays_a_candidate_though_the_grace_grows() -> None:
    # flagged at 60 s past first seen under a 60 s grace; then the fastest other
    # member's queue grows (grace 600 s): the GTID was due there long ago, so the
    # flag holds until the GTID stops being a candidate
    t = ErrantTracker()
    gtid = GtidSet.parse(f"{M1}:1")
    t.update(M1, gtid, 1_000)
    assert t.errant(M1, 1_060, 60) == (gtid, 1_000)
    assert t.errant(M1, 1_061, 600) == (gtid, 1_000)
    t.update(M1, GtidSet.parse(f"{M1}:1-2"), 1_070)  # :2 is new: not flagged by :1's flag
    assert t.errant(M1, 1_071, 600) == (gtid, 1_000)
    t.update(M1, GtidSet(), 1_080)  # it reached another member
    t.update(M1, gtid, 1_090)  # and is a candidate again: a new chunk, a new grace
    assert t.errant(M1, 1_091, 60) == (GtidSet(), None)


def test_tracker_keeps_first_seen_per_chunk_and_clears() -> None:
    t = ErrantTracker()
    t.update(M1, GtidSet.parse(f"{M1}:1"), 0)
    t.update(M1, GtidSet.parse(f"{M1}:1-2"), 50)
    errant, since = t.errant(M1, 100, 60)
    assert str(errant) == f"{M1}:1" and since == 0
    t.update(M1, GtidSet.parse(f"{M1}:2"), 120)  # :1 arrived elsewhere
    errant, since = t.errant(M1, 120, 60)
    assert str(errant) == f"{M1}:2" and since == 50
    t.update(M1, GtidSet(), 130)
    assert t.errant(M1, 1_000, 60) == (GtidSet(), None)
    assert t.snapshot() == {}


def test_tracker_bounds_its_chunks() -> None:
    t = ErrantTracker()
    for i in range(1, MAX_CHUNKS + 5):
        t.update(M1, GtidSet([(M1, "", 1, i)]), i)
    chunks = t.snapshot()[M1]
    assert len(chunks) == MAX_CHUNKS
    assert chunks[0] == (GtidSet.parse(f"{M1}:1"), 1)
    # merged chunks take the newer stamp: the newest GTIDs are never older than seen
    assert chunks[-1][1] == MAX_CHUNKS + 4
    # every chunk flagged; a new GTID merges into the newest chunk, which loses its
    # flag: a merge keeps one only when both chunks had it (delayed, never invented)
    assert t.errant(M1, 100 * MAX_CHUNKS, 1)[0] == GtidSet([(M1, "", 1, MAX_CHUNKS + 4)])
    t.update(M1, GtidSet([(M1, "", 1, MAX_CHUNKS + 5)]), 100 * MAX_CHUNKS)
    expected = GtidSet([(M1, "", 1, MAX_CHUNKS - 1)])
    assert t.errant(M1, 100 * MAX_CHUNKS, 1) == (expected, 1)


def test_a_chunk_is_judged_only_against_sets_read_after_it_was_seen() -> None:
    # X's set (read at 100 s) has group transactions 101-110 that the others' sets, read
    # at 90 s and arriving late, cannot hold yet: not errant however long they stay
    # stale; once a set read at 101 s still lacks them, the grace (2 x 2 s) decides
    from grstats.core.gtidrows import GtidDivergenceTable, MemberGtidInput  # noqa: PLC0415
    from protocol import GtidState  # noqa: PLC0415

    s, empty = 1_000_000, GtidSet()
    table = GtidDivergenceTable(2.0)

    def observe(now: int, others_at: int) -> object:
        sets = {M1: (100, "1-110"), M2: (others_at, "1-100"), M3: (others_at, "1-100")}
        table.observe(
            [
                MemberGtidInput(
                    m, "ONLINE", GtidState(at * s, GtidSet.parse(f"{GROUP}:{n}"), empty)
                )
                for m, (at, n) in sets.items()
            ],
            now * s,
        )
        return {str(r["MEMBER_ID"]): r["ERRANT_COUNT"] for r in table.rows(now * s)}[M1]

    assert observe(100, 90) == 0
    assert observe(120, 90) == 0  # 20 s past the grace, but nobody's set is newer
    assert observe(121, 101) == 10  # a set read after 100 s lacks them: 21 s >= 4 s
