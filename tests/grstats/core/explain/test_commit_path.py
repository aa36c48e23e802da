"""`grstats commit-path --explain` and the table's /metrics: expected values by hand."""

from __future__ import annotations

from grstats.core import columns as col
from grstats.core.explain import commit_path_text, commit_path_verdicts
from grstats.core.snapshot import with_tables
from tests.fixtures.metrics_snapshot import (
    GROUP,
    M1,
    M2,
    metric_samples,
    metric_types,
    sample_snapshot,
)

M3 = "33333333-3333-3333-3333-333333333333"


def _row(member: str, dominant: str, **cells: float | None) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(col.COMMIT_PATH.names)
    row.update({col.MEMBER_ID: member, "DOMINANT": dominant, **cells})
    return row


ROWS = [
    _row(
        M1,
        "consensus",
        CONSENSUS_SHARE=0.8,
        FLOW_CONTROL_SHARE=0.2,
        CONSENSUS_MEAN_SECONDS=0.004,
        ROUND_TRIP_MEAN_SECONDS=0.005,
        CONSENSUS_SECONDS_TOTAL=12.5,
    ),
    _row(M2, "before_begin", BEFORE_BEGIN_SHARE=0.6, CONSENSUS_SHARE=0.4),
    _row(
        M3,
        "consensus",
        CONSENSUS_SHARE=0.9,
        CONSENSUS_MEAN_SECONDS=0.050,
        ROUND_TRIP_MEAN_SECONDS=0.0625,
    ),
]


def test_explain_names_the_dominant_cost_and_the_slow_link_member() -> None:
    got = {v[col.MEMBER_ID]: v for v in commit_path_verdicts(ROWS)}
    assert got[M1]["dominant"] == "consensus"
    assert got[M1]["shares"] == {"consensus": 0.8, "flow_control": 0.2}
    # the slowest rounds are M3's: 50.0 ms, round trips 62.5 ms
    assert f"{M3}: rounds 50.0 ms, round trips 62.5 ms" in str(got[M1]["check"])
    assert "wait for the applier" in str(got[M2]["check"])


def test_explain_text_lists_shares_largest_first() -> None:
    text = commit_path_text(ROWS)
    block = text.split(f"{M2}: ")[1]
    assert block.startswith("before_begin\n")
    assert block.index("before_begin    ") < block.index("consensus   ")
    assert "  60.0 % of a transaction's overhead" in block


def test_nothing_abnormal_says_what_the_figure_is_and_gives_no_advice() -> None:
    # 2.0 ms of overhead per transaction, all of it its rounds, at 40 tx/s: the group
    # working, not a fault -- no "check the network"
    normal = _row(
        M1, "", CONSENSUS_SHARE=1.0, TRANSACTIONS_PER_SECOND=40.0, COMMIT_OVERHEAD_SECONDS=0.002
    )
    idle = _row(M2, "", TRANSACTIONS_PER_SECOND=0.0)
    got = {v[col.MEMBER_ID]: str(v["check"]) for v in commit_path_verdicts([normal, idle])}
    assert got[M1] == (
        "nothing to check: 2.0 ms of commit overhead per transaction (40.0/s), most of it "
        "consensus, as the other members' and its own last hour"
    )
    assert got[M2].startswith("nothing to check: idle, no transaction of its own")
    assert "network" not in commit_path_text([normal, idle])


def test_explain_without_rows_says_so() -> None:
    assert "8.1.0+" in commit_path_text([])


def test_a_member_id_with_control_characters_is_escaped() -> None:
    text = commit_path_text([_row("\x1b[2J", "")])
    assert "\x1b" not in text
    assert "\\x1b[2J: unknown" in text


def test_metrics_are_seconds_with_counters_as_counters() -> None:
    snap = with_tables(sample_snapshot(), {"grstats_member_commit_path": tuple(ROWS[:1])})
    labels = frozenset({"group": GROUP, "member_id": M1}.items())
    got = metric_samples(snap)
    assert got[("grstats_commit_path_consensus_seconds_total", labels)] == 12.5
    assert got[("grstats_commit_path_consensus_share", labels)] == 0.8
    assert got[("grstats_commit_path_consensus_mean_seconds", labels)] == 0.004
    assert ("grstats_commit_path_before_begin_share", labels) not in got  # NULL: no series
    assert metric_types(snap)["grstats_commit_path_consensus_seconds"] == "counter"


def _leading(single: int, actual: str) -> list[dict[str, object]]:
    cells = {col.COMMIT_PATH_LEADERS_ACTUAL: actual, col.COMMIT_PATH_SINGLE_LEADER: single}
    return [{**ROWS[0], **cells}, *ROWS[1:]]


def test_explain_names_the_single_consensus_leader_for_consensus() -> None:
    got = {v[col.MEMBER_ID]: v for v in commit_path_verdicts(_leading(1, M3))}
    assert f"single consensus leader {M3} proposes every round" in str(got[M1]["check"])
    # the leaders matter only where consensus dominates
    assert "leader" not in str(got[M2]["check"])


def test_explain_says_every_member_proposes_without_a_single_leader() -> None:
    got = {v[col.MEMBER_ID]: v for v in commit_path_verdicts(_leading(0, f"{M1},{M2},{M3}"))}
    assert "every member proposes its own rounds (3 consensus leaders)" in str(got[M1]["check"])


def test_communication_metrics_are_gauges() -> None:
    cells = {col.COMMIT_PATH_WRITE_CONCURRENCY: 10, col.COMMIT_PATH_SINGLE_LEADER: 1}
    snap = with_tables(sample_snapshot(), {"grstats_member_commit_path": ({**ROWS[0], **cells},)})
    labels = frozenset({"group": GROUP, "member_id": M1}.items())
    got = metric_samples(snap)
    assert got[("grstats_commit_path_write_concurrency", labels)] == 10
    assert got[("grstats_commit_path_single_leader_capable", labels)] == 1
    assert metric_types(snap)["grstats_commit_path_write_concurrency"] == "gauge"


def test_explain_names_the_consistency_level_from_the_members_waits() -> None:
    both = _row(M1, "after_termination", AFTER_TERMINATION_SHARE=0.5, BEFORE_BEGIN_SHARE=0.3)
    after = _row(M2, "after_termination", AFTER_TERMINATION_SHARE=0.7, BEFORE_BEGIN_SHARE=0.0)
    sync = _row(M3, "after_sync", AFTER_SYNC_SHARE=0.9)
    got = {v[col.MEMBER_ID]: str(v["check"]) for v in commit_path_verdicts([both, after, sync])}
    assert got[M1].endswith("group_replication_consistency = BEFORE_AND_AFTER")
    assert got[M2].endswith("group_replication_consistency = AFTER")
    assert "sessions wait as" not in got[M3]  # the AFTER transactions are another member's


def test_explain_names_members_host_port_in_that_order() -> None:
    labels = {M1: "db3:3306", M2: "db2:3306", M3: "db1:3306"}
    text = commit_path_text(ROWS, labels)
    assert [line.split(": ")[0] for line in text.splitlines() if not line.startswith(" ")] == [
        "db1:3306",
        "db2:3306",
        "db3:3306",
    ]
    assert "(db1:3306: rounds 50.0 ms, round trips 62.5 ms)" in text
    assert M3 not in text
