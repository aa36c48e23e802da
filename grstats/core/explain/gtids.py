"""`grstats gtids --explain`: each member's errant and missing GTIDs, and what to do.

Strategy: per member (host:port order), what is errant and since when, what
it lacks, whether it could rejoin by incremental recovery (and from which
donors) or needs clone -- and what an operator can do: inject empty
transactions with the errant GTIDs on the primary (they replicate to every
member that lacks them; the member that has them skips them), or rebuild
the member by clone.

Invariants: at most `MAX_STATEMENTS` injection statements per member; every
text from a row is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from grstats.core import columns as col
from grstats.core.explain.names import NO_LABELS, who
from grstats.core.visible import visible
from protocol import GtidSet, ProtocolError

__all__ = ["MAX_STATEMENTS", "gtids_text", "inject_statements"]

#: GTIDs written out as statements per member; the rest are counted
MAX_STATEMENTS: Final = 20


def inject_statements(errant: GtidSet, limit: int = MAX_STATEMENTS) -> tuple[list[str], int]:
    """Empty transactions that give the others `errant`: (statements, GTIDs left out).

    One ``SET GTID_NEXT='<gtid>'; BEGIN; COMMIT;`` per GTID (MySQL's documented
    way to skip or inject a transaction), then ``SET GTID_NEXT='AUTOMATIC';``.

    Args:
        errant: the GTIDs to inject.
        limit: statements written at most.

    Returns:
        The statements and how many GTIDs of `errant` they leave out.
    """
    out: list[str] = []
    total = 0
    for uuid, tag, first, last in errant.intervals():
        prefix = f"{uuid}:{tag}:" if tag else f"{uuid}:"
        total += last - first + 1
        for gno in range(first, last + 1):
            if len(out) >= limit:
                break
            out.append(f"SET GTID_NEXT='{prefix}{gno}'; BEGIN; COMMIT;")
    written = len(out)
    if out:
        out.append("SET GTID_NEXT='AUTOMATIC';")
    return out, total - written


def _shown(value: object) -> str:
    return "NULL" if value is None else visible(str(value))


def _donors(text: str, labels: Mapping[str, str]) -> str:
    return ",".join(who(d, labels) for d in text.split(",") if d)


def _member_text(row: Mapping[str, object], labels: Mapping[str, str]) -> list[str]:
    member = who(row.get(col.MEMBER_ID), labels)
    method = row.get(col.RECOVERY_METHOD)
    testimony = row.get(col.TESTIMONY)
    if method is None:
        return [f"{member}: no witness besides it to compare with"]
    count = row.get(col.ERRANT_COUNT)
    out = [f"{member}: {_shown(count)} errant, {_shown(row.get(col.MISSING_COUNT))} missing"]
    if testimony:
        out.append(f"  its sets prove nothing about the others: {_shown(testimony)}")
    text = str(row.get(col.ERRANT_TRANSACTIONS) or "")
    try:
        errant = GtidSet.parse(text)
    except ProtocolError:
        errant = GtidSet()
        out.append(f"  errant: unreadable ({visible(text[:200])})")
    if errant:
        out.append(f"  errant since {_shown(row.get(col.ERRANT_SINCE))}:")
        out.extend(f"    {line}" for line in str(errant).splitlines())
        out.append("  what to do, either:")
        out.append("   a) keep them: on the PRIMARY, inject one empty transaction per GTID")
        out.append("      (it replicates to every member; this one already has it and skips it):")
        statements, left = inject_statements(errant)
        out.extend(f"        {s}" for s in statements)
        if left:
            out.append(f"        ... and {left} more GTIDs of the set above")
        out.append("   b) discard them: rebuild this member from a donor by clone, e.g. in")
        out.append(f"      MySQL Shell: cluster.removeInstance('{member}'); then")
        out.append("      cluster.addInstance('<host:port>', {recoveryMethod: 'clone'})")
    missing_uuid = row.get(col.MISSING_FIRST_UUID)
    if missing_uuid:
        # each member's sets are read at its own moment, gtid_interval apart at most: on a
        # member that keeps up, what the others' newer sets hold is still in flight to it
        out.append(
            f"  missing: first UUID {_shown(missing_uuid)} (in the others' sets; normal in flight"
            " while they are applied by its next reading, a lag if the count keeps growing)"
        )
    donors = _donors(str(row.get(col.DONORS) or ""), labels)
    if method == "INCREMENTAL":
        out.append(f"  recovery: INCREMENTAL from {donors}")
    elif method == "REPROVISION":
        out.append(
            "  recovery: REPROVISION: Group Replication refuses a member with extra GTIDs "
            '("This member has more executed transactions than those present in the '
            'group"): inject them (a) or rebuild it (b) before it rejoins'
        )
    elif donors:
        out.append(
            "  recovery: CLONE (it lacks group_replication_clone_threshold GTIDs or more; "
            f"incremental donors: {donors})"
        )
    else:
        out.append("  recovery: CLONE (every donor purged a GTID this member lacks)")
    return out


def gtids_text(rows: Sequence[Mapping[str, object]], labels: Mapping[str, str] = NO_LABELS) -> str:
    """The divergence of every member, with the commands an operator can run.

    Args:
        rows: grstats_member_gtids rows.
        labels: member_labels() of the group (MEMBER_ID -> host:port).

    Returns:
        The text, one block per member in host:port order.
    """
    out: list[str] = []
    for row in sorted(rows, key=lambda r: who(r.get(col.MEMBER_ID), labels)):
        out.extend(_member_text(row, labels))
    if not out:
        out.append("no GTID state from any member")
    return "\n".join(out) + "\n"
