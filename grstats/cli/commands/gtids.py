"""`grstats gtids`: each member's GTID state, its errant and missing GTIDs, how it would rejoin.

Strategy: like the other table commands (`grstats.cli.commands.tables`): the
grstats_member_gtids table from the local daemon's API or the broker
(`--bus`), as a table, `--vertical`, json or csv. `--explain` says, per
member, what is errant and since when, what it lacks, whether it could rejoin
by incremental recovery (and from which donors) or needs clone -- and what an
operator can do: inject empty transactions with the errant GTIDs on the
primary (they replicate to every member that lacks them; the member that has
them skips them), or rebuild the member by clone.

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero -- never a traceback; every text from a row is shown through
`render.visible`; at most `MAX_STATEMENTS` injection statements per member.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import click

from grstats.cli import render
from grstats.cli.commands.tables import show_table, wide_option
from grstats.cli.readers import TableReader, output_options, read_options
from grstats.core import columns as col
from grstats.core.snapshot import MEMBER_GTIDS_TABLE
from protocol import GtidSet, ProtocolError

__all__ = ["MAX_STATEMENTS", "explain_text", "gtids_command", "inject_statements"]

#: GTIDs written out as statements per member; the rest are counted
MAX_STATEMENTS: Final = 20


def inject_statements(errant: GtidSet, limit: int = MAX_STATEMENTS) -> tuple[list[str], int]:
    """Empty transactions that give the others `errant`: (statements, GTIDs left out).

    One ``SET GTID_NEXT='<gtid>'; BEGIN; COMMIT;`` per GTID (MySQL's documented
    way to skip or inject a transaction), then ``SET GTID_NEXT='AUTOMATIC';``.
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
    return "NULL" if value is None else render.visible(str(value))


def _member_text(row: Mapping[str, object]) -> list[str]:
    member = _shown(row.get(col.MEMBER_ID))
    method = row.get(col.RECOVERY_METHOD)
    if method is None:
        return [f"{member}: no other ONLINE member with GTID state to compare with"]
    count = row.get(col.ERRANT_COUNT)
    out = [f"{member}: {_shown(count)} errant, {_shown(row.get(col.MISSING_COUNT))} missing"]
    text = str(row.get(col.ERRANT_TRANSACTIONS) or "")
    try:
        errant = GtidSet.parse(text)
    except ProtocolError:
        errant = GtidSet()
        out.append(f"  errant: unreadable ({render.visible(text[:200])})")
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
        out.append(f"  missing: first UUID {_shown(missing_uuid)}")
    donors = str(row.get(col.DONORS) or "")
    if method == "INCREMENTAL":
        out.append(f"  recovery: INCREMENTAL from {render.visible(donors)}")
    elif errant:
        out.append("  recovery: CLONE (distributed recovery refuses a member with extra GTIDs)")
    else:
        out.append("  recovery: CLONE (every donor purged a GTID this member lacks)")
    return out


def explain_text(rows: Sequence[Mapping[str, object]]) -> str:
    """The divergence of every member, with the commands an operator can run."""
    out: list[str] = []
    for row in sorted(rows, key=lambda r: str(r.get(col.MEMBER_ID))):
        out.extend(_member_text(row))
    if not out:
        out.append("no GTID state from any member")
    return "\n".join(out) + "\n"


@click.command(
    name="gtids",
    help="Show grstats_member_gtids for every member: @@gtid_executed, @@gtid_purged, "
    "errant transactions (executed there and on no other ONLINE member beyond the grace "
    "window), missing ones, and whether it could rejoin by INCREMENTAL recovery (from "
    "which donors) or needs CLONE.\n\n"
    "\b\nExamples:\n"
    "  grstats gtids --vertical                # one member per block\n"
    "  grstats gtids --explain                 # what is errant, since when, what to do\n"
    "  grstats gtids --bus 127.0.0.1:1883 --format json",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@read_options
@output_options
@click.option(
    "--explain",
    "explain_",
    is_flag=True,
    help="Per member: errant GTIDs and since when, the SQL to inject them as empty "
    "transactions or how to rebuild it, missing GTIDs and the recovery method.",
)
@wide_option
def gtids_command(
    *, reader: TableReader, fmt: str, vertical: bool, explain_: bool, wide: bool
) -> None:
    rows = reader.read([MEMBER_GTIDS_TABLE])[MEMBER_GTIDS_TABLE]
    if explain_:
        click.echo(explain_text(rows), nl=False)
        return
    show_table(reader, MEMBER_GTIDS_TABLE, fmt=fmt, vertical=vertical, wide=wide, rows=rows)
