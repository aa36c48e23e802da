"""grstats_member_gtids in MemberTables: ext.gtids from the bus, the rule over time."""

from __future__ import annotations

from typing import Any

from grstats.core.sample import LocalMember, LocalSample
from grstats.core.tables import MemberTables
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
    t = tables()
    send(t, REMOTE, 1, f"{GROUP}:1-100")
    send(t, THIRD, 1, f"{GROUP}:1-90")
    mine = f"{LOCAL}:1,\n{GROUP}:1-100"
    local(t, T0, mine)
    r = rows(t, T0 + 59 * S)  # the peers' sets were read before ours: nothing to follow
    assert r[LOCAL]["ERRANT_COUNT"] == 0 and r[LOCAL]["ERRANT_TRANSACTIONS"] == ""
    # one 30 s GTID interval after ours: REMOTE has 5 queued (applied 100 + 5 = 105 to
    # reach), THIRD 1,000 at a crawl; REMOTE reaches 105 in its set read at 60 s, and its
    # set read at 90 s still lacks LOCAL:1: errant (THIRD never reaches 1,100 here)
    peers = [(2, 30, 100, 5, 0), (3, 60, 105, 0, 5), (4, 90, 110, 0, 10)]
    for seq, read_s, applied, queued, crawled in peers:
        assert rows(t, T0 + read_s * S)[LOCAL]["ERRANT_COUNT"] == 0, read_s
        send(t, REMOTE, seq, f"{GROUP}:1-100", read_s=read_s, applied=applied, queued=queued)
        send(t, THIRD, seq, f"{GROUP}:1-90", read_s=read_s, applied=crawled, queued=1000)
        local(t, T0 + read_s * S, mine)
    r = rows(t, T0 + 90 * S)
    assert r[LOCAL]["ERRANT_TRANSACTIONS"] == f"{LOCAL}:1"
    assert r[LOCAL]["ERRANT_COUNT"] == 1
    assert r[LOCAL]["ERRANT_SINCE"] == "2023-11-14 22:13:20.000000"  # T0 in UTC
    assert r[LOCAL]["RECOVERY_METHOD"] == "CLONE"
    assert r[REMOTE]["ERRANT_COUNT"] == 0
    assert r[THIRD]["MISSING_COUNT"] == 10 and r[THIRD]["MISSING_FIRST_UUID"] == GROUP
    assert r[THIRD]["GTID_EXECUTED"] == f"{GROUP}:1-90"
    # the others receive LOCAL:1 (an empty transaction injected on them)
    send(t, REMOTE, 5, f"{LOCAL}:1,\n{GROUP}:1-100")
    send(t, THIRD, 5, f"{LOCAL}:1,\n{GROUP}:1-100")
    local(t, T0 + 120 * S, mine)
    r = rows(t, T0 + 120 * S)
    assert r[LOCAL]["ERRANT_COUNT"] == 0 and r[LOCAL]["ERRANT_SINCE"] is None
    assert r[LOCAL]["RECOVERY_METHOD"] == "INCREMENTAL"


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
    assert t.counters().envelopes_gtids_malformed == 1
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
