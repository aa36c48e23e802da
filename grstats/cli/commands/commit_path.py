"""`grstats commit-path`: where every member's commit time went, and what to check.

Strategy: like the other table commands (`grstats.cli.commands.tables`):
grstats_member_commit_path from the local daemon's API or the broker
(`--bus`), as a table, `--vertical`, json or csv. `--explain` names each
member's dominant cost over its last period (the table's DOMINANT and shares)
and what an operator would check for it; for consensus rounds it also names
the member whose rounds and message round trips are slowest, which is where
the slow link is, and who proposes the rounds: with a single consensus leader
(group_replication_paxos_single_leader, the member's
WRITE_CONSENSUS_LEADERS_ACTUAL is one member) every round goes through that
leader, so its link matters for every member's writes.

Invariants: reads only the rows; a failure the user can cause prints one line
on stderr and exits non-zero -- never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import click

from grstats.cli import render
from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns as col
from grstats.core.snapshot import COMMIT_PATH_TABLE

__all__ = ["commit_path_command", "explain_rows", "explain_text"]

_CHECK = {
    "consensus": "consensus rounds (XCom) take the time: check the network to the member "
    "whose rounds and message round trips are slowest ({slowest})",
    "certification_gc": "the certification garbage collector takes the time: check the "
    "certification info size (COUNT_TRANSACTIONS_ROWS_VALIDATING, `grstats stats`) and "
    "group_replication_gtid_assignment_block_size",
    "before_begin": "consistency BEFORE waits take the time: sessions with "
    "group_replication_consistency BEFORE or BEFORE_AND_AFTER wait for the applier",
    "after_termination": "consistency AFTER waits take the time: sessions with "
    "group_replication_consistency AFTER or BEFORE_AND_AFTER wait for every member to prepare",
    "after_sync": "waits on the primary's AFTER transactions take the time: "
    "group_replication_consistency AFTER or BEFORE_AND_AFTER on the primary",
    "flow_control": "flow control holds the writes: find the bottleneck member with `grstats flow`",
}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _slowest(rows: Sequence[Mapping[str, object]]) -> str:
    """The member whose consensus rounds are slowest, with its round and round trip means."""
    timed = [(_number(r.get("CONSENSUS_MEAN_SECONDS")), r) for r in rows]
    known = [(t, r) for t, r in timed if t is not None]
    if not known:
        return "no member's rounds are known"
    mean, row = max(known, key=lambda tr: tr[0])
    trip = _number(row.get("ROUND_TRIP_MEAN_SECONDS"))
    shown_trip = "NULL" if trip is None else f"{1000 * trip:.1f} ms"
    member = render.visible(str(row.get(col.MEMBER_ID)))
    return f"{member}: rounds {1000 * mean:.1f} ms, round trips {shown_trip}"


def _leaders(row: Mapping[str, object]) -> str:
    """Who proposes the consensus rounds, as the member's server shows it."""
    actual = row.get(col.COMMIT_PATH_LEADERS_ACTUAL)
    if not isinstance(actual, str):
        return ""
    leaders = [u for u in actual.split(",") if u]
    if len(leaders) == 1 and row.get(col.COMMIT_PATH_SINGLE_LEADER) == 1:
        leader = render.visible(leaders[0])
        return (
            f"; single consensus leader {leader} proposes every round "
            "(group_replication_paxos_single_leader): its link counts for every member"
        )
    if leaders:
        return f"; every member proposes its own rounds ({len(leaders)} consensus leaders)"
    return ""


def _level(row: Mapping[str, object]) -> str:
    """The group_replication_consistency level the member's own waits point at."""
    before = (_number(row.get("BEFORE_BEGIN_SHARE")) or 0.0) > 0
    after = (_number(row.get("AFTER_TERMINATION_SHARE")) or 0.0) > 0
    if not before and not after:
        return ""  # after-sync waits alone: the AFTER transactions are another member's
    level = "BEFORE_AND_AFTER" if before and after else "BEFORE" if before else "AFTER"
    return f"; this member's sessions wait as with group_replication_consistency = {level}"


def explain_rows(rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Per member: its dominant cost, the shares behind it and what to check.

    Args:
        rows: grstats_member_commit_path rows.

    Returns:
        One dict per row, in member order: MEMBER_ID, dominant, shares, check.
    """
    slowest = _slowest(rows)
    out: list[dict[str, object]] = []
    for row in sorted(rows, key=lambda r: str(r.get(col.MEMBER_ID))):
        dominant = row.get(col.COMMIT_PATH_DOMINANT)
        shares = {
            op.lower(): share
            for op in col.COMMIT_PATH_SHARED
            if (share := _number(row.get(f"{op}_SHARE"))) is not None
        }
        if isinstance(dominant, str) and dominant in _CHECK:
            check = _CHECK[dominant].format(slowest=slowest)
            if dominant == "consensus":
                check += _leaders(row)
            elif dominant in ("before_begin", "after_termination", "after_sync"):
                check += _level(row)
        elif dominant == "":
            check = "no commit-path time in the last period"
        else:
            check = "one period is not known yet (two readings are needed)"
        out.append(
            {
                col.MEMBER_ID: row.get(col.MEMBER_ID),
                "dominant": dominant or "",
                "shares": shares,
                "check": check,
            }
        )
    return out


def explain_text(rows: Sequence[Mapping[str, object]]) -> str:
    """`explain_rows` as text, one block per member."""
    out: list[str] = []
    for verdict in explain_rows(rows):
        member = render.visible(str(verdict[col.MEMBER_ID]))  # untrusted: from the bus
        out.append(f"{member}: {verdict['dominant'] or 'unknown'}")
        shares = verdict["shares"]
        assert isinstance(shares, dict)
        for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
            out.append(f"    {name:<18} {100 * share:6.1f} %")
        out.append(f"  check: {verdict['check']}")
    if not out:
        out.append("no commit-path figures from any member (MySQL 8.1.0+ shows them)")
    return "\n".join(out) + "\n"


@click.command(
    name="commit-path",
    help="Show grstats_member_commit_path: where every member's commit time went over its "
    "last period (consensus rounds, message round trips, certification GC, consistency "
    "waits, flow control): per second, mean seconds, share and running totals, from "
    "MySQL's Gr_* status variables (8.1.0+).\n\n"
    "\b\nExamples:\n"
    "  grstats commit-path --vertical\n"
    "  grstats commit-path --explain      # each member's dominant cost and what to check\n"
    "  grstats commit-path --bus 127.0.0.1:1883 --format json",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@click.option(
    "--explain",
    "explain_",
    is_flag=True,
    help="Name each member's dominant cost and what to check for it.",
)
@wide_option
def commit_path_command(
    *, reader: TableReader, fmt: str, vertical: bool, explain_: bool, wide: bool
) -> None:
    rows = reader.read([COMMIT_PATH_TABLE])[COMMIT_PATH_TABLE]
    if explain_:
        if fmt == "json":
            click.echo(json.dumps(explain_rows(rows), indent=2))
        else:
            click.echo(explain_text(rows), nl=False)
        return
    show_table(reader, COMMIT_PATH_TABLE, fmt=fmt, vertical=vertical, wide=wide, rows=rows)
