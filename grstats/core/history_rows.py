"""The history row of one member: one builder, for the local member and a remote one alike.

Strategy: a row is the member's envelope and stats (`core.rows.history_row`)
with every figure beyond them: each `ext` section's block from what is kept
of the member (`core.sections.history_figures`: the local member's view is
kept by the rule a receiver keeps a remote member's, so both rows follow one
rule, the commit path's "first report of its bucket" included), the
flow-control replay's figures for it and the GTID verdict as the snapshot
would show it. `MemberTables.history_row` picks the member's inputs; the
publisher (local) and the receiver (remote) only call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grstats.core.records import HistoryRow
from grstats.core.rows import history_row
from grstats.core.sections import HistoryContext, history_figures
from protocol import Envelope, PipelineStats

__all__ = ["MemberFigures", "member_history_row"]


@dataclass(frozen=True, slots=True)
class MemberFigures:
    """What a member's row carries beyond its envelope.

    Attributes:
        kept: section name -> what is kept of the member (`core.sections`).
        offset_s: its clock minus ours (0.0 for the local member; None unknown).
        flow: its flow-control columns (`core.rows.flow_history`).
        gtids: its GTID verdict columns (None: no verdict, a collector).
    """

    kept: Mapping[str, Any]
    offset_s: float | None
    flow: Mapping[str, Any]
    gtids: Mapping[str, Any] | None


def member_history_row(
    envelope: Envelope, stats: PipelineStats, sampled_at_us: int, figures: MemberFigures
) -> HistoryRow:
    """The history row of one member's envelope.

    Args:
        envelope: the envelope (the local member's: as published).
        stats: its stats.
        sampled_at_us: when it was sampled.
        figures: what the row carries beyond them.

    Returns:
        The HistoryRow.
    """
    kept = figures.kept
    columns = history_figures(kept, HistoryContext(figures.offset_s)) if kept else {}
    columns.update(figures.flow)
    if figures.gtids is not None:
        columns.update(figures.gtids)
    return history_row(envelope, stats, sampled_at_us, columns)
