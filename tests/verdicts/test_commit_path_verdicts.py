"""The commit path's dominant cost on the ground-truth scenarios, worked out by hand.

A transaction's commit overhead here is its message's round trip (the consensus
round: its member proposes, a majority answers) plus its consistency waits
(sources/simulated/commitpath.py). Links are 0.5 ms one way, so a round takes
2 x (0.5 + 0.5) = 2 ms for every member of a healthy group: consensus is 100 %
of everyone's overhead, and normal -- DOMINANT "" everywhere. In single-primary
mode the secondaries commit nothing of their own (their rounds are the stats
messages): idle, no shares at all.

- slow_link: db3's link is 25 ms one way; its nearest peer is 2 x (25 + 0.5) =
  51 ms away, while db1 and db2 still find each other in 2 ms. db3's overhead,
  51 ms, is over 2 x and 49 ms above the others' median of 2 ms: consensus
  dominates on db3 only.
- consistency_waits: db2's sessions run with BEFORE: each of its transactions
  first waits two of its rounds (2 x 2 ms = 4 ms), then its own round (2 ms):
  6 ms, 4 of them the wait (2/3). The others wait 0: before_begin dominates
  on db2 only (4 ms over 2 x 0 and 1 ms above it).
"""

from __future__ import annotations

from typing import Any

import pytest

from grstats.core.explain import commit_path_text, commit_path_verdicts
from tests.fixtures.verdict_scenarios import HEALTHY, LABELS, M1, M2, M3, MEMBERS, run

TABLE = "grstats_member_commit_path"


def _rows(name: str, viewer: str) -> dict[str, dict[str, Any]]:
    return run(name).table(viewer, TABLE)


@pytest.mark.parametrize("name", HEALTHY)
@pytest.mark.parametrize("viewer", MEMBERS)
def test_a_healthy_group_names_no_dominant_cost(name: str, viewer: str) -> None:
    for member, row in _rows(name, viewer).items():
        assert row["DOMINANT"] == "", member


@pytest.mark.parametrize("viewer", MEMBERS)
def test_single_primary_secondaries_are_idle_with_no_shares(viewer: str) -> None:
    rows = _rows("healthy_single_primary", viewer)
    assert rows[M1]["TRANSACTIONS_PER_SECOND"] > 0
    assert rows[M1]["COMMIT_OVERHEAD_SECONDS"] == pytest.approx(0.002)
    for secondary in (M2, M3):
        row = rows[secondary]
        assert row["TRANSACTIONS_PER_SECOND"] == 0.0
        assert row["CONSENSUS_SHARE"] is None and row["COMMIT_OVERHEAD_SECONDS"] is None
        assert row["CONSENSUS_PER_SECOND"] >= 1  # its stats messages' rounds go on


@pytest.mark.parametrize("viewer", MEMBERS)
def test_a_slow_link_is_named_on_its_member_only(viewer: str) -> None:
    rows = _rows("slow_link", viewer)
    assert rows[M3]["DOMINANT"] == "consensus"
    assert rows[M3]["COMMIT_OVERHEAD_SECONDS"] == pytest.approx(0.051)
    assert rows[M1]["DOMINANT"] == rows[M2]["DOMINANT"] == ""
    assert rows[M1]["COMMIT_OVERHEAD_SECONDS"] == pytest.approx(0.002)


@pytest.mark.parametrize("viewer", MEMBERS)
def test_consistency_waits_are_named_on_their_member_only(viewer: str) -> None:
    rows = _rows("consistency_waits", viewer)
    assert rows[M2]["DOMINANT"] == "before_begin"
    assert rows[M2]["COMMIT_OVERHEAD_SECONDS"] == pytest.approx(0.006)
    assert rows[M2]["BEFORE_BEGIN_SHARE"] == pytest.approx(4 / 6)
    assert rows[M1]["DOMINANT"] == rows[M3]["DOMINANT"] == ""


def test_explain_points_at_the_slow_link_by_host_port() -> None:
    group = run("slow_link")
    rows = list(group.table(M1, TABLE).values())
    verdicts = {v["MEMBER_ID"]: v for v in commit_path_verdicts(rows, group.labels(M1))}
    assert str(verdicts[M3]["check"]).startswith(
        "consensus rounds (XCom) take the time: check the network to the member whose "
        f"rounds and message round trips are slowest ({LABELS[M3]}: rounds 51.0 ms"
    )
    assert str(verdicts[M1]["check"]).startswith("nothing to check: 2.0 ms of commit overhead")
    assert M3 not in commit_path_text(rows, group.labels(M1))  # host:port, not the UUID


def test_explain_names_the_consistency_level_of_the_waiting_member() -> None:
    group = run("consistency_waits")
    rows = list(group.table(M3, TABLE).values())
    verdicts = {v["MEMBER_ID"]: v for v in commit_path_verdicts(rows, group.labels(M3))}
    assert str(verdicts[M2]["check"]).endswith("group_replication_consistency = BEFORE")
    assert verdicts[M2]["member"] == LABELS[M2]


def test_explain_says_the_idle_secondaries_are_idle() -> None:
    group = run("healthy_single_primary")
    text = commit_path_text(list(group.table(M1, TABLE).values()), group.labels(M1))
    assert text.count("nothing to check: idle") == 2
    assert "nothing to check: 2.0 ms of commit overhead per transaction" in text
