"""`grstats commit-path --explain`: each member's dominant commit cost and what to check.

Strategy: names each member's dominant cost over its last period (the
grstats_member_commit_path table's DOMINANT -- named only when abnormal for
this group, `core.commitjudge` -- and the shares of one transaction's commit
overhead) and what an operator would check for it; for consensus rounds it
also names the member whose rounds and message round trips are slowest,
which is where the slow link is, and who proposes the rounds: with a single
consensus leader (group_replication_paxos_single_leader, the member's
WRITE_CONSENSUS_LEADERS_ACTUAL is one member) every round goes through that
leader, so its link matters for every member's writes. A member with nothing
abnormal, or idle (no transaction of its own), gets no advice: the text says
what its figure is instead.

Invariants: reads only the rows; every text from a row is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grstats.core import columns as col
from grstats.core.explain.names import NO_LABELS, number, who

__all__ = ["commit_path_text", "commit_path_verdicts"]

_CHECK = {
    "consensus": "consensus rounds (XCom) take the time: check the network to the member "
    "whose rounds and message round trips are slowest ({slowest})",
    "before_begin": "consistency BEFORE waits take the time: sessions with "
    "group_replication_consistency BEFORE or BEFORE_AND_AFTER wait for the applier",
    "after_termination": "consistency AFTER waits take the time: sessions with "
    "group_replication_consistency AFTER or BEFORE_AND_AFTER wait for every member to prepare",
    "after_sync": "waits on the primary's AFTER transactions take the time: "
    "group_replication_consistency AFTER or BEFORE_AND_AFTER on the primary",
    "flow_control": "flow control holds the writes: find the bottleneck member with `grstats flow`",
}


def _slowest(rows: Sequence[Mapping[str, object]], labels: Mapping[str, str]) -> str:
    """The member whose consensus rounds are slowest, with its round and round trip means."""
    timed = [(number(r.get("CONSENSUS_MEAN_SECONDS")), r) for r in rows]
    known = [(t, r) for t, r in timed if t is not None]
    if not known:
        return "no member's rounds are known"
    mean, row = max(known, key=lambda tr: tr[0])
    trip = number(row.get("ROUND_TRIP_MEAN_SECONDS"))
    shown_trip = "NULL" if trip is None else f"{1000 * trip:.1f} ms"
    member = who(row.get(col.MEMBER_ID), labels)
    return f"{member}: rounds {1000 * mean:.1f} ms, round trips {shown_trip}"


def _leaders(row: Mapping[str, object], labels: Mapping[str, str]) -> str:
    """Who proposes the consensus rounds, as the member's server shows it."""
    actual = row.get(col.COMMIT_PATH_LEADERS_ACTUAL)
    if not isinstance(actual, str):
        return ""
    leaders = [u for u in actual.split(",") if u]
    if len(leaders) == 1 and row.get(col.COMMIT_PATH_SINGLE_LEADER) == 1:
        leader = who(leaders[0], labels)
        return (
            f"; single consensus leader {leader} proposes every round "
            "(group_replication_paxos_single_leader): its link counts for every member"
        )
    if leaders:
        return f"; every member proposes its own rounds ({len(leaders)} consensus leaders)"
    return ""


def _level(row: Mapping[str, object]) -> str:
    """The group_replication_consistency level the member's own waits point at."""
    before = (number(row.get("BEFORE_BEGIN_SHARE")) or 0.0) > 0
    after = (number(row.get("AFTER_TERMINATION_SHARE")) or 0.0) > 0
    if not before and not after:
        return ""  # after-sync waits alone: the AFTER transactions are another member's
    level = "BEFORE_AND_AFTER" if before and after else "BEFORE" if before else "AFTER"
    return f"; this member's sessions wait as with group_replication_consistency = {level}"


def _quiet(row: Mapping[str, object], shares: Mapping[str, float]) -> str:
    """What an idle member's or a normal member's figures are, with nothing to advise."""
    tx = number(row.get(col.COMMIT_PATH_TRANSACTIONS))
    overhead = number(row.get(col.COMMIT_PATH_OVERHEAD))
    if not tx or overhead is None:
        return (
            "nothing to check: idle, no transaction of its own in the last period (its "
            "consensus rounds carry the group's stats messages)"
        )
    largest = max(shares, key=shares.__getitem__) if shares else "consensus"
    return (
        f"nothing to check: {1000 * overhead:.1f} ms of commit overhead per transaction "
        f"({tx:,.1f}/s), most of it {largest.replace('_', ' ')}, as the other members' and "
        "its own last hour"
    )


def commit_path_verdicts(
    rows: Sequence[Mapping[str, object]], labels: Mapping[str, str] = NO_LABELS
) -> list[dict[str, object]]:
    """Per member: its dominant cost, the shares behind it and what to check.

    Args:
        rows: grstats_member_commit_path rows.
        labels: member_labels() of the group (MEMBER_ID -> host:port).

    Returns:
        One dict per row, in host:port order: MEMBER_ID, member (its label),
        dominant, shares, check.
    """
    slowest = _slowest(rows, labels)
    out: list[dict[str, object]] = []
    for row in sorted(rows, key=lambda r: who(r.get(col.MEMBER_ID), labels)):
        dominant = row.get(col.COMMIT_PATH_DOMINANT)
        shares = {
            op.lower(): share
            for op in col.COMMIT_PATH_SHARED
            if (share := number(row.get(f"{op}_SHARE"))) is not None
        }
        if isinstance(dominant, str) and dominant in _CHECK:
            check = _CHECK[dominant].format(slowest=slowest)
            if dominant == "consensus":
                check += _leaders(row, labels)
            elif dominant in ("before_begin", "after_termination", "after_sync"):
                check += _level(row)
        elif dominant == "":
            check = _quiet(row, shares)
        else:
            check = "one period is not known yet (two readings are needed)"
        out.append(
            {
                col.MEMBER_ID: row.get(col.MEMBER_ID),
                "member": who(row.get(col.MEMBER_ID), labels),
                "dominant": dominant or "",
                "shares": shares,
                "check": check,
            }
        )
    return out


def commit_path_text(
    rows: Sequence[Mapping[str, object]], labels: Mapping[str, str] = NO_LABELS
) -> str:
    """`commit_path_verdicts` as text, one block per member.

    Args:
        rows: grstats_member_commit_path rows.
        labels: member_labels() of the group.

    Returns:
        The text.
    """
    out: list[str] = []
    for verdict in commit_path_verdicts(rows, labels):
        out.append(f"{verdict['member']}: {verdict['dominant'] or 'unknown'}")
        shares = verdict["shares"]
        assert isinstance(shares, dict)
        for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
            out.append(f"    {name:<18} {100 * share:6.1f} % of a transaction's overhead")
        out.append(f"  check: {verdict['check']}")
    if not out:
        out.append("no commit-path figures from any member (MySQL 8.1.0+ shows them)")
    return "\n".join(out) + "\n"
