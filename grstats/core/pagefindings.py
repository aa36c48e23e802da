"""The live page's findings: the `--explain` verdicts that name a problem, one line each.

Strategy: the texts are the CLI's (`core.explain`: one source), taken for
the members of one group and joined onto one line: a verdict's head line and
what to do (the applier's advice, the commit path's check, the GTIDs'
recovery). Only verdicts that name a problem become findings, so a healthy
group shows none:
- GTIDs: a member with errant transactions, or one that could not rejoin by
  incremental recovery (`RECOVERY_METHOD` CLONE or REPROVISION); missing
  GTIDs alone are a lagging member;
- applier: a bottleneck verdict (`protocol.applier_verdict.BOTTLENECKS`);
  `starved` (healthy), `busy` and `unknown` name none. Judged as
  `grstats applier --explain` without `--history`: on the totals since the
  applier started (the page reads no history);
- commit path: a dominant cost other than the consensus round itself, which
  is what a healthy group's commits wait for.

Invariants: pure; every line is cut at `MAX_LINE` characters (a member's
host comes from the bus), saying how many more there were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from grstats.core import columns as col
from grstats.core.explain import applier_verdicts, commit_path_verdicts, gtids_text
from grstats.core.labels import member_labels
from grstats.core.snapshot import (
    APPLIER_METRICS_TABLE,
    COMMIT_PATH_TABLE,
    MEMBER_GTIDS_TABLE,
    MEMBER_STATUS_TABLE,
    MEMBERS_TABLE,
    DaemonSnapshot,
    Row,
)
from protocol.applier_verdict import BOTTLENECKS

__all__ = ["MAX_LINE", "group_findings"]

MAX_LINE: Final = 600
_HEALTHY_DOMINANT: Final = ("", "consensus")
_NOT_INCREMENTAL: Final = tuple(m for m in col.RECOVERY_METHODS if m != "INCREMENTAL")


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE:
        return line
    return f"{line[:MAX_LINE]}\u2026 ({len(line) - MAX_LINE:,} more characters)"


def _gtids(rows: Sequence[Row], labels: Mapping[str, str]) -> list[str]:
    out = []
    for row in sorted(rows, key=lambda r: labels.get(str(r.get(col.MEMBER_ID)), "")):
        errant = row.get(col.ERRANT_COUNT)
        method = row.get(col.RECOVERY_METHOD)
        if not (isinstance(errant, int) and errant > 0) and method not in _NOT_INCREMENTAL:
            continue
        lines = gtids_text([row], labels).splitlines()
        recovery = [line.strip() for line in lines if line.startswith("  recovery:")]
        out.append("; ".join([lines[0], *recovery]))
    return out


def _applier(rows: Sequence[Row], labels: Mapping[str, str]) -> list[str]:
    return [
        f"{v['member']} {v[col.CHANNEL_NAME]}: {v['verdict']}; advice: {v['advice']}"
        for v in applier_verdicts(rows, labels)
        if v["verdict"] in BOTTLENECKS
    ]


def _commit_path(rows: Sequence[Row], labels: Mapping[str, str]) -> list[str]:
    return [
        f"{v['member']}: {v['dominant']}; check: {v['check']}"
        for v in commit_path_verdicts(rows, labels)
        if v["dominant"] not in _HEALTHY_DOMINANT
    ]


def group_findings(snapshot: DaemonSnapshot, group: str) -> list[str]:
    """The findings of `group` in `snapshot`: GTIDs, then appliers, then commit paths.

    Args:
        snapshot: a daemon's or a collector's snapshot.
        group: the group's name.

    Returns:
        One line per verdict that names a problem (none for a healthy group).
    """
    members = {
        r.get(col.MEMBER_ID)
        for r in snapshot.table(MEMBER_STATUS_TABLE)
        if r.get(col.GROUP_NAME) == group
    }

    def of(table: str) -> list[Row]:
        return [r for r in snapshot.table(table) if r.get(col.MEMBER_ID) in members]

    labels = member_labels(of(MEMBERS_TABLE))
    lines = [
        *_gtids(of(MEMBER_GTIDS_TABLE), labels),
        *_applier(of(APPLIER_METRICS_TABLE), labels),
        *_commit_path(of(COMMIT_PATH_TABLE), labels),
    ]
    return [_cut(line) for line in lines]
