"""The divergence rule: expected sets worked out by hand from MySQL's GTID text."""

from __future__ import annotations

from grstats.core.gtid_divergence import (
    CLONE,
    DEFAULT_CLONE_THRESHOLD,
    INCREMENTAL,
    MAX_CHUNKS,
    REPROVISION,
    ErrantTracker,
    MemberGtids,
    recovery_method,
)
from grstats.core.gtid_group import GroupSets
from protocol.gtid import GtidSet

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"  # group_replication_group_name
VIEW = "cccccccc-cccc-cccc-cccc-cccccccccccc"  # group_replication_view_change_uuid
M1 = "11111111-1111-1111-1111-111111111111"
M2 = "22222222-2222-2222-2222-222222222222"
M3 = "33333333-3333-3333-3333-333333333333"
LIAR = "66666666-6666-6666-6666-666666666666"


def member(
    member_id: str, executed: str, purged: str = "", state: str = "ONLINE", **trust: bool
) -> MemberGtids:
    return MemberGtids(member_id, state, GtidSet.parse(executed), GtidSet.parse(purged), **trust)


def group(*members: MemberGtids) -> GroupSets:
    sets = GroupSets()
    for m in members:
        sets.update(m)
    return sets


def test_candidates_are_what_some_witness_lacks() -> None:
    # the server prints gtid_executed over several lines, ",\n" between UUIDs
    g = group(
        member(M1, f"{M1}:1,\n{GROUP}:1-100"),
        member(M2, f"{GROUP}:1-100"),
        member(M3, f"{GROUP}:1-90"),
    )
    # M3 lacks GROUP:91-100 (in flight to it, or never certified: the tracker decides)
    assert str(g.candidates(M1)) == f"{M1}:1,\n{GROUP}:91-100"
    assert str(g.candidates(M2)) == f"{GROUP}:91-100"
    assert g.candidates(M3).is_empty()


def test_a_set_two_members_share_is_a_candidate_on_both() -> None:
    # M3 was provisioned from M1 (clone, or recovery from it as donor): both hold M1:1,
    # M2 lacks it. "No other member has it" would clear both; MySQL Shell compares with
    # one source member (check_replica_gtid_state), and M2 is one that lacks it
    g = group(
        member(M1, f"{M1}:1,\n{GROUP}:1-100"),
        member(M2, f"{GROUP}:1-100"),
        member(M3, f"{M1}:1,\n{GROUP}:1-100"),
    )
    assert str(g.candidates(M1)) == f"{M1}:1"
    assert str(g.candidates(M3)) == f"{M1}:1"
    assert g.candidates(M2).is_empty()


def test_a_member_no_server_lists_changes_nobody_s_candidates() -> None:
    # a bus member with an empty executed set, not in the server's view: not a witness
    honest = (member(M1, f"{GROUP}:1-100"), member(M2, f"{GROUP}:1-100"))
    for liar in (member(LIAR, "", listed=False), member(LIAR, "", clock_ok=False)):
        g = group(*honest, liar)
        assert g.candidates(M1).is_empty() and g.candidates(M2).is_empty()
        assert g.witnesses() == (M1, M2)
        missing = g.missing(M1)
        assert missing is not None and missing.is_empty()
        assert g.lacking(M1) == 0


def test_missing_is_what_every_other_witness_has() -> None:
    m1 = member(M1, f"{M1}:1,\n{GROUP}:1-100")
    m2 = member(M2, f"{GROUP}:1-100")
    m3 = member(M3, f"{GROUP}:1-90")
    g = group(m1, m2, m3)
    # common of m1 and m2 = GROUP:1-100; minus GROUP:1-90 = GROUP:91-100
    missing = g.missing(M3)
    assert missing is not None and str(missing) == f"{GROUP}:91-100" and missing.count() == 10
    # m1's own write is not "missing" for m2: m3 lacks it too
    assert g.missing(M2) == GtidSet()
    # what GR counts against the clone threshold: the union of the others, M1:1 included
    assert g.lacking(M2) == 1 and g.lacking(M3) == 11


def test_tagged_local_write_is_a_candidate_with_its_tag() -> None:
    g = group(
        member(M1, f"{GROUP}:1-100:maint:1-3"),
        member(M2, f"{GROUP}:1-100:maint:2"),
        member(M3, f"{GROUP}:1-100:Maint:2"),  # tags are case-insensitive
    )
    # maint:1-3 minus maint:2 = maint:1 and maint:3; MySQL prints the tag once,
    # it applies to the intervals after it
    assert str(g.candidates(M1)) == f"{GROUP}:maint:1:3"
    assert g.candidates(M1).count() == 2


def test_view_change_gtids_diverge_only_when_a_member_lacks_one() -> None:
    g = group(
        member(M1, f"{GROUP}:1-50,\n{VIEW}:1-4"),
        member(M2, f"{GROUP}:1-50,\n{VIEW}:1-5"),
        member(M3, f"{GROUP}:1-50,\n{VIEW}:1-5"),
    )
    assert str(g.candidates(M2)) == f"{VIEW}:5"  # M1 lacks it (the tracker will see why)
    missing = g.missing(M1)
    assert missing is not None and str(missing) == f"{VIEW}:5"


def test_members_not_online_are_no_witnesses() -> None:
    g = group(
        member(M1, f"{M1}:1,\n{GROUP}:1-10"),
        member(M2, f"{M1}:1,\n{GROUP}:1-10", state="RECOVERING"),
        member(M3, f"{GROUP}:1-10"),
    )
    assert str(g.candidates(M1)) == f"{M1}:1"
    assert g.witnesses() == (M1, M3)


def test_alone_there_is_nothing_to_compare() -> None:
    g = group(member(M1, f"{M1}:1-5"))
    assert g.candidates(M1).is_empty() and g.missing(M1) is None and g.donors(M1) == ()


def test_donors_are_the_witnesses_that_purged_nothing_it_lacks() -> None:
    g = group(
        member(M1, f"{GROUP}:1-100", purged=f"{GROUP}:1-95"),
        member(M2, f"{GROUP}:1-100", purged=f"{GROUP}:1-50"),
        member(M3, f"{GROUP}:1-90"),
    )
    # m1: GROUP:1-95 - GROUP:1-90 = GROUP:91-95 purged -> not a donor; m2: nothing
    assert g.donors(M3) == (M2,)
    g.update(member(M2, f"{GROUP}:1-100", purged=f"{GROUP}:1-91"))
    assert g.donors(M3) == ()


def test_recovery_method_as_group_replication_decides_it() -> None:
    # remote_clone_handler.cc check_clone_preconditions, and the join check for errant
    assert recovery_method(errant=False, donors=1, lacking=10) == INCREMENTAL
    assert recovery_method(errant=False, donors=0, lacking=10) == CLONE
    # lacking >= group_replication_clone_threshold: clone, though a donor holds them
    assert recovery_method(errant=False, donors=2, lacking=10, clone_threshold=10) == CLONE
    assert recovery_method(errant=False, donors=2, lacking=9, clone_threshold=10) == INCREMENTAL
    assert DEFAULT_CLONE_THRESHOLD == 9_223_372_036_854_775_807  # MySQL's default
    # errant GTIDs: refused whatever the method; its own value, never CLONE
    assert recovery_method(errant=True, donors=2, lacking=0) == REPROVISION
    assert recovery_method(errant=True, donors=0, lacking=10) == REPROVISION


S = 1_000_000
SLACK = 2 * S  # a peer's set counts when read 2 s after the member's


def peer(
    member_id: str, read_s: float, applied: int, queued: int, executed: str = ""
) -> MemberGtids:
    """A peer's sample: its set (read at `read_s`) and the counts read just before it."""
    return MemberGtids(
        member_id,
        "ONLINE",
        GtidSet.parse(executed),
        read_us=int(read_s * S),
        applied=applied,
        queued=queued,
    )


def test_a_candidate_is_errant_once_a_peer_applied_past_it_and_its_next_set_lacks_it() -> None:
    t = ErrantTracker()
    gtid = GtidSet.parse(f"{M1}:1")
    t.update(M1, gtid, 100 * S, read_us=99 * S)
    # read 1 s after M1's set: it may not have received the transaction yet, not followed
    assert t.errant(M1, [peer(M2, 100, applied=500, queued=7)], SLACK) == (GtidSet(), None)
    # read 2 s after: followed; applied 500 + 7 queued = 507 is the count to reach
    assert t.errant(M1, [peer(M2, 101, applied=500, queued=7)], SLACK)[0].is_empty()
    assert t.errant(M1, [peer(M2, 103, applied=506, queued=30)], SLACK)[0].is_empty()
    # 507 reached at the set read at 105 s, which still lacks it: one more set may fill a
    # parallel applier's out-of-order gap
    assert t.errant(M1, [peer(M2, 105, applied=507, queued=40)], SLACK)[0].is_empty()
    assert t.errant(M1, [peer(M2, 105, applied=507, queued=40)], SLACK)[0].is_empty()
    assert t.errant(M1, [peer(M2, 107, applied=540, queued=0)], SLACK) == (gtid, 100 * S)


def test_a_peer_whose_queue_grows_faster_than_it_drains_flags_nothing_in_flight() -> None:
    # the hot-hour lie of the estimate (2 x 2 s + queue / rate): M2 has 6,063 queued at
    # 549/s (an 11 s drain) but takes in 593/s, so what M1 executed at 100 s reaches M2
    # after 15 s; the estimate flagged it at 115 s. Here M2 has applied 6,000 by 110 s,
    # 6,062 by 111.9 s: not yet the 6,063 it had queued, so nothing is errant.
    t = ErrantTracker()
    in_flight = GtidSet.parse(f"{GROUP}:1001-2000")
    t.update(M1, in_flight, 100 * S, read_us=100 * S)
    samples = [(102.0, 0, 6063), (104, 1100, 6050), (110, 6000, 6300), (111.9, 6062, 6400)]
    for read_s, applied, queued in samples:
        assert t.errant(M1, [peer(M2, read_s, applied, queued)], SLACK)[0].is_empty()
    assert not t.snapshot()[M1][0][0].is_empty()  # still a candidate, still followed


def test_any_one_peer_that_keeps_up_suffices_and_a_slow_one_delays_nothing() -> None:
    t = ErrantTracker()
    gtid = GtidSet.parse(f"{M1}:1")
    t.update(M1, gtid, 0, read_us=0)
    slow = [peer(M3, r, applied=10 * r, queued=90_000) for r in (2, 4, 6)]  # hours behind
    fast = [peer(M2, r, applied=1000 + r, queued=1) for r in (2, 4, 6)]
    assert t.errant(M1, [slow[0], fast[0]], SLACK)[0].is_empty()  # followed from 2 s
    assert t.errant(M1, [slow[1], fast[1]], SLACK)[0].is_empty()  # 1003 reached at 4 s
    assert t.errant(M1, [slow[2], fast[2]], SLACK) == (gtid, 0)  # and lacking it at 6 s
    t2 = ErrantTracker()
    t2.update(M1, gtid, 0, read_us=0)
    for sample in slow:
        assert t2.errant(M1, [sample], SLACK)[0].is_empty()


def test_a_peer_without_counts_or_with_restarted_counters_proves_nothing_yet() -> None:
    t = ErrantTracker()
    gtid = GtidSet.parse(f"{M1}:1")
    t.update(M1, gtid, 0, read_us=0)
    blind = MemberGtids(M2, "ONLINE", GtidSet(), read_us=10 * S)
    for _ in range(3):
        assert t.errant(M1, [blind], SLACK)[0].is_empty()
    assert t.errant(M1, [peer(M2, 10, applied=5000, queued=10)], SLACK)[0].is_empty()
    # M2 restarted: its counters begin again from 0; followed again from there (3 + 5)
    assert t.errant(M1, [peer(M2, 12, applied=3, queued=5)], SLACK)[0].is_empty()
    assert t.errant(M1, [peer(M2, 14, applied=8, queued=0)], SLACK)[0].is_empty()
    assert t.errant(M1, [peer(M2, 16, applied=8, queued=0)], SLACK) == (gtid, 0)


def _flag(t: ErrantTracker, member_id: str, at_s: int) -> tuple[GtidSet, int | None]:
    """Follow a peer that keeps up (nothing queued) over three sets from `at_s` on."""
    got: tuple[GtidSet, int | None] = (GtidSet(), None)
    for read_s in (at_s, at_s + 2, at_s + 4):
        got = t.errant(member_id, [peer(M2, read_s, applied=0, queued=0)], SLACK)
    return got


def test_a_flag_stays_while_the_gtid_stays_a_candidate_though_the_peer_falls_behind() -> None:
    t = ErrantTracker()
    gtid = GtidSet.parse(f"{M1}:1")
    t.update(M1, gtid, 1_000 * S, read_us=1_000 * S)
    assert _flag(t, M1, 1_002) == (gtid, 1_000 * S)
    # then M2's queue fills (a burst): the GTID was due there before, the flag holds
    assert t.errant(M1, [peer(M2, 1_008, applied=1, queued=90_000)], SLACK) == (gtid, 1_000 * S)
    t.update(M1, GtidSet.parse(f"{M1}:1-2"), 1_010 * S, read_us=1_010 * S)  # :2 is new
    assert t.errant(M1, [peer(M2, 1_010, applied=2, queued=0)], SLACK) == (gtid, 1_000 * S)
    t.update(M1, GtidSet(), 1_020 * S)  # it reached another member
    t.update(M1, gtid, 1_030 * S, read_us=1_030 * S)  # and is a candidate again: followed anew
    assert t.errant(M1, [peer(M2, 1_032, applied=0, queued=0)], SLACK) == (GtidSet(), None)


def test_tracker_keeps_first_seen_per_chunk_and_clears() -> None:
    t = ErrantTracker()
    t.update(M1, GtidSet.parse(f"{M1}:1"), 0, read_us=0)
    t.update(M1, GtidSet.parse(f"{M1}:1-2"), 3 * S, read_us=3 * S)
    # :1 is followed from the set read at 2 s, :2 only from 5 s on
    errant, since = _flag(t, M1, 2)
    assert str(errant) == f"{M1}:1" and since == 0
    t.update(M1, GtidSet.parse(f"{M1}:2"), 7 * S, read_us=7 * S)  # :1 arrived elsewhere
    errant, since = t.errant(M1, [peer(M2, 8, applied=0, queued=0)], SLACK)
    assert str(errant) == f"{M1}:2" and since == 3 * S
    t.update(M1, GtidSet(), 9 * S)
    assert t.errant(M1, [peer(M2, 10, applied=0, queued=0)], SLACK) == (GtidSet(), None)
    assert t.snapshot() == {}


def test_tracker_bounds_its_chunks() -> None:
    t = ErrantTracker()
    for i in range(1, MAX_CHUNKS + 5):
        t.update(M1, GtidSet([(M1, "", 1, i)]), i * S, read_us=i * S)
    chunks = t.snapshot()[M1]
    assert len(chunks) == MAX_CHUNKS
    assert chunks[0] == (GtidSet.parse(f"{M1}:1"), S)
    # merged chunks take the newer stamps: the newest GTIDs are never older than seen
    assert chunks[-1][1] == (MAX_CHUNKS + 4) * S
    # every chunk proven; a new GTID merges into the newest chunk, which keeps the proofs
    # of both (a proof is a fact about GTIDs) and takes the new one's counts: the new
    # GTID is proven only once the peers pass those (delayed, never invented)
    assert _flag(t, M1, 100)[0] == GtidSet([(M1, "", 1, MAX_CHUNKS + 4)])
    t.update(M1, GtidSet([(M1, "", 1, MAX_CHUNKS + 5)]), 200 * S, read_us=200 * S)
    expected = GtidSet([(M1, "", 1, MAX_CHUNKS + 4)])
    assert t.errant(M1, [peer(M2, 200, applied=0, queued=0)], SLACK) == (expected, S)


def test_a_chunk_is_judged_only_against_sets_read_after_it_was_seen() -> None:
    # X's set (read at 100 s) has group transactions 101-110 that the others' sets, read
    # at 90 s and arriving late, cannot hold yet: not errant however long they stay
    # stale; sets read from 102 s (one 2 s GTID interval later) on that still lack them
    # after their members applied all they had queued then are what decide
    from grstats.core.gtidrows import GtidDivergenceTable, MemberGtidInput  # noqa: PLC0415
    from protocol import GtidState  # noqa: PLC0415

    empty = GtidSet()
    table = GtidDivergenceTable(2.0)

    def observe(now: int, others_at: int, applied: int = 0) -> object:
        sets = {M1: (100, "1-110"), M2: (others_at, "1-100"), M3: (others_at, "1-100")}
        table.observe(
            [
                MemberGtidInput(
                    m,
                    "ONLINE",
                    GtidState(at * S, GtidSet.parse(f"{GROUP}:{n}"), empty),
                    applied,
                    0,
                )
                for m, (at, n) in sets.items()
            ],
            now * S,
        )
        return {str(r["MEMBER_ID"]): r["ERRANT_COUNT"] for r in table.rows()}[M1]

    assert observe(100, 90) == 0
    assert observe(120, 90) == 0  # 20 s on, but nobody's set is newer
    assert observe(121, 101) == 0  # newer, but within the slack of M1's read
    assert observe(122, 102) == 0  # followed: nothing queued, so due already
    assert observe(124, 104) == 10  # and the next set still lacks them
