"""What the receive path counted: every outcome of one bus message, by kind.

Strategy: `MemberTables.receive` hands each admitted message (`admitted`) and
each outcome (`outcome`) here; these totals are the receive half of
`DaemonCounters` (the bus, publish and pending-GTID figures are filled in by
their owners). Counting is kept apart from applying so that what a message
*did* to the tables and what it *counts as* are each stated once.

Invariants: every total only grows; `rejected` has every reason of
`REJECT_REASONS`; the unknown `ext` section names come from the bus
(untrusted), so at most `MAX_DROPPED_NAMES` distinct ones are kept and the
rest share `OTHER_SECTION`.
"""

from __future__ import annotations

from grstats.core.admission import Admitted, Ignored, Rejected
from grstats.core.columns import REJECT_REASONS
from grstats.core.registry import Applied
from grstats.core.sections import declared
from grstats.core.snapshot import DaemonCounters
from grstats.core.topics import STATS_KIND

__all__ = [
    "MAX_DROPPED_NAMES",
    "OTHER_SECTION",
    "ReceiveCounts",
    "ReceiveResult",
    "count_dropped_ext",
]

ReceiveResult = Applied | Rejected | Ignored
#: Distinct unknown `ext` section names counted one by one; later ones share OTHER_SECTION.
MAX_DROPPED_NAMES = 32
OTHER_SECTION = "(other)"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class ReceiveCounts:
    """The receive path's totals since start (see `DaemonCounters` for each meaning)."""

    def __init__(self) -> None:
        self.accepted = 0
        self.own = 0
        self.clamped = 0
        # by each section's counter (core.sections), every declared one from zero
        self.malformed: dict[str, int] = dict.fromkeys(declared().counters, 0)
        # sections dropped unread past their cadence, by section (core.cadence)
        self.over_cadence: dict[str, int] = dict.fromkeys(declared().gated_names, 0)
        self.rejected: dict[str, int] = dict.fromkeys(REJECT_REASONS, 0)
        self.ext_dropped: dict[str, int] = {}

    def admitted(self, msg: Admitted) -> None:
        """Count what admission reported of a well-formed message: skipped sections (unknown,
        or past their cadence), clamps."""
        for name in msg.dropped_ext:
            count_dropped_ext(self.ext_dropped, name)
        if msg.clamped:
            self.clamped += 1
        for name in msg.over_cadence:
            self.over_cadence[name] = self.over_cadence.get(name, 0) + 1

    def outcome(self, result: ReceiveResult) -> None:
        """Count the outcome of one message (a section refused on an applied envelope too)."""
        if isinstance(result, Applied):
            if result.kind == STATS_KIND:
                self.accepted += 1
            # stats (or a gtids envelope's GTID sets) applied, a section refused
            for counter in result.errors:
                self.malformed[counter] = self.malformed.get(counter, 0) + 1
        elif isinstance(result, Rejected):
            self.rejected[result.reason] += 1
        elif result.why == "own":
            self.own += 1

    def counters(self) -> DaemonCounters:
        """These totals as `DaemonCounters` (its other fields at their defaults)."""
        return DaemonCounters(
            envelopes_accepted=self.accepted,
            envelopes_own=self.own,
            envelopes_clamped=self.clamped,
            malformed=dict(self.malformed),
            over_cadence=dict(self.over_cadence),
            rejected=dict(self.rejected),
            ext_dropped=dict(self.ext_dropped),
        )


def count_dropped_ext(counts: dict[str, int], name: str) -> None:
    """Count one unknown `ext` section by name, the names themselves bounded.

    The names come from the bus (untrusted): at most `MAX_DROPPED_NAMES`
    distinct ones of 1-64 characters `[A-Za-z0-9_.-]` are counted one by one;
    any other (too long, other characters, or past the bound) counts as
    `OTHER_SECTION`, so neither memory nor /metrics label values grow with them.
    """
    if not (0 < len(name) <= 64 and _NAME_CHARS.issuperset(name)) or (
        name not in counts and len(counts) >= MAX_DROPPED_NAMES
    ):
        name = OTHER_SECTION
    counts[name] = counts.get(name, 0) + 1
