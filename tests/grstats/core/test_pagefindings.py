"""core.pagefindings: the live page's findings on hand-worked groups, a healthy one silent."""

from __future__ import annotations

from typing import Any

from grstats.core.pagefindings import group_findings
from protocol.applier_verdict import ADVICE
from tests.fixtures.page_snapshot import GROUP, OTHER_GROUP, Member, group_snapshot, uuid

A, B, C, D = uuid(1), uuid(2), uuid(3), uuid(4)
GR = "group_replication_applier"
S = 1_000_000_000  # ns
REPROVISION = (
    "recovery: REPROVISION: Group Replication refuses a member with extra GTIDs "
    '("This member has more executed transactions than those present in the group"): '
    "inject them (a) or rebuild it (b) before it rejoins"
)


def _gtids(
    member: str, errant: str = "", count: int = 0, method: str = "INCREMENTAL", donors: str = ""
) -> dict[str, Any]:
    return {
        "MEMBER_ID": member,
        "GTID_EXECUTED": f"{GROUP}:1-100",
        "GTID_PURGED": "",
        "ERRANT_TRANSACTIONS": errant,
        "ERRANT_COUNT": count,
        "ERRANT_SINCE": "2026-12-06 07:00:00.000000" if count else None,
        "MISSING_COUNT": 0,
        "MISSING_FIRST_UUID": None,
        "RECOVERY_METHOD": method,
        "DONORS": donors if donors or method != "INCREMENTAL" else f"{A},{B}",
    }


def _applier(member: str, work_s: int, commit_order_s: int) -> dict[str, Any]:
    row: dict[str, Any] = {"MEMBER_ID": member, "CHANNEL_NAME": GR}
    for wait in (
        "WAITS_FOR_WORK_FROM_SOURCE",
        "WAITS_FOR_AVAILABLE_WORKER",
        "WAITS_COMMIT_SCHEDULE_DEPENDENCY",
        "WAITS_FOR_WORKER_QUEUE_MEMORY",
        "WAITS_WORKER_QUEUES_FULL",
        "WAITS_DUE_TO_COMMIT_ORDER",
    ):
        row[f"{wait}_COUNT"] = 10
        row[f"{wait}_SUM_TIME"] = 0
    row["TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME"] = 0
    row["TOTAL_ACTIVE_TIME_DURATION"] = 100 * S
    row["WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME"] = work_s * S
    row["WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME"] = commit_order_s * S
    return row


def _commit(member: str, dominant: str) -> dict[str, Any]:
    return {"MEMBER_ID": member, "DOMINANT": dominant, f"{dominant.upper()}_SHARE": 0.8}


def _group(
    gtids: list[dict[str, Any]],
    applier: list[dict[str, Any]],
    commit: list[dict[str, Any]],
    **kw: Any,
) -> Any:
    members = [
        Member(A, port=3306, local=True),
        Member(B, port=3307),
        Member(C, port=3308),
        Member(D, host="other", group=OTHER_GROUP),
    ]
    tables = {
        "grstats_member_gtids": gtids,
        "replication_applier_metrics": applier,
        "grstats_member_commit_path": commit,
    }
    return group_snapshot(members, extra_tables=tables, **kw)


def test_a_healthy_group_has_no_finding() -> None:
    snapshot = _group(
        [_gtids(m) for m in (A, B, C)],
        [_applier(m, work_s=80, commit_order_s=5) for m in (A, B, C)],  # starved: healthy
        [_commit(m, "consensus") for m in (A, B, C)] + [{"MEMBER_ID": D, "DOMINANT": ""}],
    )
    assert group_findings(snapshot, GROUP) == []


def test_errant_gtids_a_bound_applier_and_a_held_commit_path_are_one_line_each() -> None:
    snapshot = _group(
        [
            _gtids(A),
            _gtids(B),
            _gtids(C, f"{C}:1-2", 2, "REPROVISION"),
            _gtids(D, f"{D}:9", 1, "REPROVISION"),
        ],
        [_applier(A, 80, 5), _applier(B, 10, 60), _applier(C, 80, 0)],
        [_commit(A, "flow_control"), _commit(B, "consensus"), _commit(C, "consensus")],
    )
    assert group_findings(snapshot, GROUP) == [
        f"127.0.0.1:3308: 2 errant, 0 missing; {REPROVISION}",
        f"127.0.0.1:3307 {GR}: commit_order; advice: {ADVICE['commit_order']}",
        "127.0.0.1:3306: flow_control; check: flow control holds the writes: "
        "find the bottleneck member with `grstats flow`",
    ]
    # the other group's errant member is that group's finding, not this one's
    assert group_findings(snapshot, OTHER_GROUP) == [
        f"other:3306: 1 errant, 0 missing; {REPROVISION}"
    ]


def test_a_member_that_can_only_rejoin_by_clone_is_a_finding_without_errant_gtids() -> None:
    snapshot = _group(
        [_gtids(A), _gtids(B, method="CLONE"), _gtids(C, method="CLONE", donors=A)], [], []
    )
    assert group_findings(snapshot, GROUP) == [
        "127.0.0.1:3307: 0 errant, 0 missing; "
        "recovery: CLONE (every donor purged a GTID this member lacks)",
        "127.0.0.1:3308: 0 errant, 0 missing; recovery: CLONE (it lacks "
        "group_replication_clone_threshold GTIDs or more; incremental donors: 127.0.0.1:3306)",
    ]


def test_a_finding_about_a_64_kib_host_is_cut() -> None:
    members = [Member(A, host="h" * 65536, local=True)]
    snapshot = group_snapshot(
        members, extra_tables={"grstats_member_gtids": [_gtids(A, method="CLONE")]}
    )
    (line,) = group_findings(snapshot, GROUP)
    assert line.startswith("h" * 600 + "\u2026 (") and len(line) < 700
