"""Which commit cost dominates a member's commits: only an abnormal one, never on a tie.

Strategy: a member's row (`core.commitpath`) gives its overhead per
transaction and the share of each cost in it (its transactions' round trips,
the consistency waits, the flow-control holds). On a healthy group every
member spends its overhead on consensus rounds of about the same length:
that is the group working, not a fault to name. A cost is *abnormal* when it
is over `ABNORMAL_FACTOR` times, and at least `ABNORMAL_FLOOR_S` above, a
reference: the median of the other (not idle) members' same cost -- a slow
link, a member whose sessions wait for consistency -- or the member's own
baseline, the median of its last hour (one period a minute) -- a cost that
grew on it. DOMINANT names the largest abnormal cost; none when two of them
are within `TIE` of each other (a tie names nobody), none for an idle member
(no transaction of its own: its rounds are the group's stats messages).

Invariants: pure (time is an argument); `Baselines` keeps at most
`BASELINE_PERIODS` figures per member and cost, for the members of its last
call only.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from grstats.core import columns as col

__all__ = [
    "ABNORMAL_FACTOR",
    "ABNORMAL_FLOOR_S",
    "BASELINE_PERIODS",
    "BASELINE_STEP_US",
    "TIE",
    "Baselines",
    "costs_of",
    "dominant",
]

ABNORMAL_FACTOR: Final = 2.0  # a cost this many times its reference is abnormal ...
ABNORMAL_FLOOR_S: Final = 0.001  # ... and at least this much above it (0.2 ms is noise)
TIE: Final = 0.05  # two abnormal costs within 5 % of each other: no single one dominates
BASELINE_STEP_US: Final = 60_000_000  # a member's baseline takes one period a minute ...
BASELINE_PERIODS: Final = 60  # ... over the last hour
_SHARED: Final = tuple(op.lower() for op in col.COMMIT_PATH_SHARED)

Costs = Mapping[str, float]


def costs_of(row: Mapping[str, object]) -> dict[str, float] | None:
    """A row's cost per transaction of each shared operation, seconds; None when idle or
    not known (no period yet, no transaction of its own)."""
    overhead = row.get(col.COMMIT_PATH_OVERHEAD)
    if not isinstance(overhead, int | float) or isinstance(overhead, bool):
        return None
    out = {}
    for op in _SHARED:
        share = row.get(f"{op.upper()}_SHARE")
        if isinstance(share, int | float) and not isinstance(share, bool):
            out[op] = share * overhead
    return out


def _abnormal(cost: float, references: Sequence[float]) -> bool:
    return any(
        cost > ABNORMAL_FACTOR * ref and cost - ref >= ABNORMAL_FLOOR_S for ref in references
    )


def dominant(costs: Costs | None, others: Sequence[Costs], baseline: Costs) -> str:
    """The member's dominant cost ("" when none is abnormal, it is idle, or on a tie).

    Args:
        costs: its costs per transaction (`costs_of`), None when idle.
        others: the other non-idle members' costs.
        baseline: its own baseline per cost (missing: not known yet).

    Returns:
        The lower-case operation name, or "".
    """
    if not costs:
        return ""
    found = []
    for op, cost in costs.items():
        references = [b for b in (baseline.get(op),) if b is not None]
        theirs = [o[op] for o in others if op in o]
        if theirs:
            references.append(statistics.median(theirs))
        if _abnormal(cost, references):
            found.append((cost, op))
    if not found:
        return ""
    found.sort(reverse=True)
    if len(found) > 1 and found[1][0] >= (1 - TIE) * found[0][0]:
        return ""  # a tie names nobody
    return found[0][1]


@dataclass(slots=True)
class _History:
    last_us: int = 0
    figures: dict[str, deque[float]] = field(default_factory=dict)


class Baselines:
    """Each member's costs over its last hour, one period a minute: its own reference."""

    def __init__(self) -> None:
        self._members: dict[str, _History] = {}

    def of(self, member_id: str) -> dict[str, float]:
        """The member's baseline per cost: the median of what was taken (none: absent)."""
        history = self._members.get(member_id)
        if history is None:
            return {}
        return {op: statistics.median(values) for op, values in history.figures.items() if values}

    def take(self, member_id: str, costs: Costs | None, at_us: int) -> None:
        """Keep `costs` as of `at_us` when a minute has passed since the last taken."""
        if costs is None:
            return
        history = self._members.setdefault(member_id, _History())
        if history.figures and at_us - history.last_us < BASELINE_STEP_US:
            return
        history.last_us = at_us
        for op, cost in costs.items():
            history.figures.setdefault(op, deque(maxlen=BASELINE_PERIODS)).append(cost)

    def keep(self, members: set[str]) -> None:
        """Forget every member not in `members`."""
        for gone in [m for m in self._members if m not in members]:
            del self._members[gone]
