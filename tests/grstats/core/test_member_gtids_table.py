"""grstats_member_gtids in MemberTables: ext.gtids from the bus, the rule over time."""

from __future__ import annotations

from typing import Any

from grstats.core.sample import LocalMember, LocalSample
from grstats.core.tables import Limits, MemberTables, RegistryLimits
from protocol import (
    GtidSet,
    GtidState,
    PipelineStats,
)
from tests.fixtures.member_gtids import GROUP, LOCAL, REMOTE, T0, THIRD, S, send, tables


def local(t: MemberTables, at_us: int, executed: str, purged: str = "") -> None:
    state = GtidState(at_us, GtidSet.parse(executed), GtidSet.parse(purged))
    sample = LocalSample(
        member=LocalMember(GROUP, LOCAL, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "17000000:3"),
        stats=PipelineStats(),
        sampled_at_us=at_us,
        gtid_state=state,
    )
    t.set_local(sample, incarnation=1, seq=1)


def rows(t: MemberTables, at_us: int) -> dict[str, dict[str, Any]]:
    return {str(r["MEMBER_ID"]): dict(r) for r in t.snapshot(at_us).table("grstats_member_gtids")}


def test_a_local_write_is_errant_once_a_peer_applied_past_it_then_clears() -> None:
    # every peer's counts fit its set (each applied transaction is a GTID of it): REMOTE
    # has applied 100 of GROUP:1-100 and then 5 more (GROUP:101-105) it had queued;
    # THIRD crawls, 1,000 queued, never past its count here
    t = tables()
    send(t, REMOTE, 1, f"{GROUP}:1-100", applied=100)
    send(t, THIRD, 1, f"{GROUP}:1-90", applied=90, queued=1000)
    mine = f"{LOCAL}:1,\n{GROUP}:1-100"
    local(t, T0, mine)
    r = rows(t, T0 + 59 * S)  # the peers' sets were read before ours: nothing to follow
    assert r[LOCAL]["ERRANT_COUNT"] == 0 and r[LOCAL]["ERRANT_TRANSACTIONS"] == ""
    # one 30 s GTID interval after ours: REMOTE has 5 queued (100 + 5 = 105 to reach);
    # its set read at 60 s has reached 105 (GROUP:1-105), and its set read at 90 s still
    # lacks LOCAL:1: errant from then
    peers = [(2, 30, 100, 5, "1-100"), (3, 60, 105, 0, "1-105"), (4, 90, 105, 0, "1-105")]
    for seq, read_s, applied, queued, remote_set in peers:
        assert rows(t, T0 + read_s * S)[LOCAL]["ERRANT_COUNT"] == 0, read_s
        send(t, REMOTE, seq, f"{GROUP}:{remote_set}", read_s=read_s, applied=applied, queued=queued)
        send(t, THIRD, seq, f"{GROUP}:1-90", read_s=read_s, applied=90, queued=1000)
        local(t, T0 + read_s * S, f"{LOCAL}:1,\n{GROUP}:{remote_set}")
    r = rows(t, T0 + 90 * S)
    assert r[LOCAL]["ERRANT_TRANSACTIONS"] == f"{LOCAL}:1"
    assert r[LOCAL]["ERRANT_COUNT"] == 1
    assert r[LOCAL]["ERRANT_SINCE"] == "2023-11-14 22:13:20.000000"  # T0 in UTC
    # Group Replication refuses a member with extra GTIDs: its own method, not CLONE
    assert r[LOCAL]["RECOVERY_METHOD"] == "REPROVISION"
    assert r[REMOTE]["ERRANT_COUNT"] == 0
    assert r[THIRD]["MISSING_COUNT"] == 15 and r[THIRD]["MISSING_FIRST_UUID"] == GROUP
    assert r[THIRD]["GTID_EXECUTED"] == f"{GROUP}:1-90"
    # the others receive LOCAL:1 (an empty transaction injected on them)
    send(t, REMOTE, 5, f"{LOCAL}:1,\n{GROUP}:1-105", read_s=120, applied=106)
    send(t, THIRD, 5, f"{LOCAL}:1,\n{GROUP}:1-105", read_s=120, applied=106)
    local(t, T0 + 120 * S, f"{LOCAL}:1,\n{GROUP}:1-105")
    r = rows(t, T0 + 120 * S)
    assert r[LOCAL]["ERRANT_COUNT"] == 0 and r[LOCAL]["ERRANT_SINCE"] is None
    assert r[LOCAL]["RECOVERY_METHOD"] == "INCREMENTAL"


def test_a_peer_whose_counts_outrun_its_set_proves_nothing() -> None:
    # REMOTE claims 10,000 applied with 100 GTIDs executed: no server counts that (each
    # applied transaction adds its GTID); it is no prover, and LOCAL:1 stays a candidate
    t = tables()
    send(t, REMOTE, 1, f"{GROUP}:1-100", applied=10_000)
    local(t, T0, f"{LOCAL}:1,\n{GROUP}:1-100")
    for seq, read_s in ((2, 30), (3, 60), (4, 90)):
        send(t, REMOTE, seq, f"{GROUP}:1-100", read_s=read_s, applied=10_000)
        local(t, T0 + read_s * S, f"{LOCAL}:1,\n{GROUP}:1-100")
    r = rows(t, T0 + 90 * S)
    assert r[LOCAL]["ERRANT_COUNT"] == 0
    assert r[REMOTE]["TESTIMONY"] == "counts impossible for its sets"
    assert r[LOCAL]["TESTIMONY"] is None


def test_a_purge_on_every_donor_flips_the_lagging_member_to_clone() -> None:
    t = tables()
    send(t, REMOTE, 1, f"{GROUP}:1-100", f"{GROUP}:1-50")
    send(t, THIRD, 1, f"{GROUP}:1-90")
    local(t, T0, f"{GROUP}:1-100")
    r = rows(t, T0)
    assert r[THIRD]["RECOVERY_METHOD"] == "INCREMENTAL"
    assert r[THIRD]["DONORS"] == f"{LOCAL},{REMOTE}"
    local(t, T0 + S, f"{GROUP}:1-100", f"{GROUP}:1-91")  # purges GROUP:91, THIRD lacks it
    r = rows(t, T0 + S)
    # our own state is judged at the others' cadence: once per gtid_interval (30 s)
    assert r[THIRD]["DONORS"] == f"{LOCAL},{REMOTE}"
    local(t, T0 + 30 * S, f"{GROUP}:1-100", f"{GROUP}:1-91")
    r = rows(t, T0 + 30 * S)
    assert r[THIRD]["DONORS"] == REMOTE
    send(t, REMOTE, 2, f"{GROUP}:1-100", f"{GROUP}:1-95")
    local(t, T0 + 31 * S, f"{GROUP}:1-100", f"{GROUP}:1-91")
    r = rows(t, T0 + 31 * S)
    assert r[THIRD]["RECOVERY_METHOD"] == "CLONE" and r[THIRD]["DONORS"] == ""


def test_a_malformed_section_is_counted_and_the_stats_applied() -> None:
    t = tables()
    send(t, REMOTE, 1, "", ext=[1, T0, f"{GROUP}:0", ""])
    local(t, T0, f"{GROUP}:1-100")
    assert t.counters().malformed["gtids"] == 1
    assert t.counters().envelopes_accepted == 1
    assert REMOTE not in rows(t, T0)  # no GTID state: no row, not compared with
    assert rows(t, T0)[LOCAL]["RECOVERY_METHOD"] is None


def test_not_judged_is_null_and_an_empty_set_is_empty_text() -> None:
    """A member with no ONLINE peer to compare with: what is errant is not known (NULL,
    like the counts beside it); its own purged set is known and empty ("", as MySQL's
    @@gtid_purged shows it). Once a peer is there, no errant GTID is the empty set."""
    t = tables()
    local(t, T0, f"{GROUP}:1-100")
    alone = rows(t, T0)[LOCAL]
    assert alone["RECOVERY_METHOD"] is None and alone["ERRANT_COUNT"] is None
    assert alone["ERRANT_TRANSACTIONS"] is None
    assert alone["GTID_PURGED"] == ""
    send(t, REMOTE, 1, "", ext=[1, T0, f"{GROUP}:1-100", ""])
    local(t, T0 + S, f"{GROUP}:1-100")
    judged = rows(t, T0 + S)[LOCAL]
    assert judged["RECOVERY_METHOD"] is not None, judged
    assert judged["ERRANT_TRANSACTIONS"] == "" and judged["ERRANT_COUNT"] == 0, judged


def test_a_member_lacking_the_clone_threshold_rejoins_by_clone_whatever_its_donors() -> None:
    # GR clones when the GTIDs a joiner lacks number group_replication_clone_threshold or
    # more, though a donor still holds them (remote_clone_handler.cc): THIRD lacks
    # GROUP:91-100, 10 GTIDs; at a threshold of 10 that is CLONE, at 11 INCREMENTAL
    for threshold, method in ((10, "CLONE"), (11, "INCREMENTAL")):
        t = MemberTables(
            group=GROUP,
            local_member_id=LOCAL,
            registry_limits=RegistryLimits(
                period_s=1.0, unreachable_after=1000, forget_after_s=10_000.0
            ),
            limits=Limits(),
            gtid_interval_s=30.0,
            clone_threshold=threshold,
        )
        send(t, REMOTE, 1, f"{GROUP}:1-100")
        send(t, THIRD, 1, f"{GROUP}:1-90")
        local(t, T0, f"{GROUP}:1-100")
        r = rows(t, T0)
        assert r[THIRD]["RECOVERY_METHOD"] == method, threshold
        assert r[THIRD]["DONORS"] == f"{LOCAL},{REMOTE}"
