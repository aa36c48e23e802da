"""core.oracle: the local server's view of a member against what its daemon published.

Values written by hand; ranges of the last periods, GTID texts as sets.
"""

from __future__ import annotations

from grstats.core import columns as col
from grstats.core.oracle import ServerOracle
from grstats.core.sample import LocalMember, ServerViewMember
from protocol import MemberStatsState, PipelineStats

M2 = "22222222-2222-2222-2222-222222222222"
M4 = "44444444-4444-4444-4444-444444444444"
A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
HEARD = {M2: True}


def _server(member_id: str, certified: int, committed: str = "") -> ServerViewMember:
    member = LocalMember("g", member_id, "db", 3306, "ONLINE", "SECONDARY", "8.4.3")
    stats = PipelineStats(
        transactions_certified=certified, transactions_committed_all_members=committed.encode()
    )
    return ServerViewMember(member, stats)


def _bus(certified: int, committed: str = "") -> MemberStatsState:
    return MemberStatsState(
        transactions_certified=certified, transactions_committed_all_members=committed.encode()
    )


def test_idle_copies_that_agree_count_no_disagreement() -> None:
    oracle = ServerOracle()
    for _ in range(3):
        oracle.bus(M2, _bus(100))
        oracle.check([_server(M2, 100)], HEARD)
    assert oracle.comparisons == 2 * 5  # from the second sample on; five counters, no texts
    assert sum(oracle.disagreements.values()) == 0
    assert oracle.reasons() == ()


def test_a_copy_one_period_behind_is_within_the_range() -> None:
    oracle = ServerOracle()
    for bus, server in ((10, 8), (12, 10), (15, 13)):  # the server's copy lags a period
        oracle.bus(M2, _bus(bus))
        oracle.check([_server(M2, server)], HEARD)
    assert sum(oracle.disagreements.values()) == 0


def test_a_wrong_counter_is_counted_per_comparison_and_only_for_its_column() -> None:
    oracle = ServerOracle()
    for _ in range(3):
        oracle.bus(M2, _bus(100))
        oracle.check([_server(M2, 999)], HEARD)
    assert oracle.disagreements[col.COUNT_TRANSACTIONS_CHECKED] == 2  # the 2nd and 3rd
    assert sum(oracle.disagreements.values()) == 2
    assert oracle.by_member == {M2: 2}
    assert oracle.current == {M2: (col.COUNT_TRANSACTIONS_CHECKED,)}
    oracle.check([_server(M2, 100)], HEARD)  # still 999 in the window: disagrees
    for _ in range(3):  # the window forgets the wrong values
        oracle.check([_server(M2, 100)], HEARD)
    assert oracle.current == {}


def test_gtid_texts_are_compared_as_sets() -> None:
    oracle = ServerOracle()
    oracle.bus(M2, _bus(1, f"{A}:1-5,\n{B}:1-3"))
    oracle.bus(M2, _bus(1, f"{A}:1-5,\n{B}:1-3"))
    oracle.check([_server(M2, 1, f"{B}:1-2:3, {A}:1-5")], HEARD)  # same set, other text
    oracle.check([_server(M2, 1, f"{B}:1-2:3, {A}:1-5")], HEARD)
    assert oracle.disagreements[col.TRANSACTIONS_COMMITTED_ALL_MEMBERS] == 0
    oracle.check([_server(M2, 1, f"{A}:1-4,\n{B}:1-3")], HEARD)  # one fewer: another set
    oracle.check([_server(M2, 1, f"{A}:1-4,\n{B}:1-3")], HEARD)
    oracle.check([_server(M2, 1, f"{A}:1-4,\n{B}:1-3")], HEARD)
    assert oracle.disagreements[col.TRANSACTIONS_COMMITTED_ALL_MEMBERS] == 1  # once out of range


def test_a_member_without_a_daemon_is_not_compared_and_forget_drops_a_member() -> None:
    oracle = ServerOracle()
    oracle.check([_server(M4, 5)], HEARD)
    assert oracle.comparisons == 0
    for _ in range(2):
        oracle.bus(M2, _bus(1))
        oracle.check([_server(M2, 2)], HEARD)
    assert oracle.current
    oracle.forget(M2)
    assert (oracle.current, oracle.by_member) == ({}, {})
