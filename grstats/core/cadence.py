"""A section's cadence at the receiver: extras dropped before they cost anything (issue 39).

Strategy: a member sends its GTID state once per `gtid_interval`
(`core.sections`: cadence GTID_INTERVAL); parsing a 24 KiB set of single
GTIDs and judging it against every member costs far more than the envelope
that carried it, so a member that sends it more often could make every
receiver do that work at its own rate. Admission asks, before decoding such
a section, whether it is due. Each member has a bucket of `BURST` copies,
refilled by one every `Section.min_gap_s` (half the interval) by our clock,
never the sender's: a copy is due while the bucket holds one; the copy of a
seq already taken (the same envelope on the gtids topic, a retained copy) or
an older one is a repeat, skipped silently (the registry would not apply it);
anything else is an extra, dropped unread and counted. The burst is room for
what a sound member does: it resends its sets at once after a reconnect, and
again on the next tick when a publish timed out under load. A member's first
copy, and the first of a new incarnation, are always due.

Invariants: what is remembered lives in the member's `Remote` (gone with
it); the verdict reads only the member's bucket, so it costs O(1) per
message whatever the group; a member's decodes of the section are at most
`BURST` plus one per `min_gap_s`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["BURST", "Due", "Heard", "OverCadence", "heard", "judge"]

#: Copies of a section a member may send back to back before its cadence applies.
BURST = 4


class Due(enum.Enum):
    """Whether a section of one envelope is to be decoded."""

    YES = "yes"
    REPEAT = "repeat"  # a seq already taken, or older: skipped, not counted
    EARLY = "early"  # sooner than its cadence allows: dropped unread, counted


@dataclass(frozen=True, slots=True)
class Heard:
    """The last copy of a section taken from a member, and its bucket after it."""

    incarnation: int
    seq: int
    at_us: int  # our clock when it was received
    tokens: float  # copies the member may still send now (refilled from at_us)


@dataclass(slots=True)
class OverCadence:
    """A member's extras of one section: how many, and when the last one came (our clock)."""

    count: int = 0
    last_us: int = 0


def _tokens(last: Heard, at_us: int, min_gap_us: int) -> float:
    refill = (at_us - last.at_us) / min_gap_us if min_gap_us > 0 else float(BURST)
    return min(float(BURST), last.tokens + max(0.0, refill))


def judge(last: Heard | None, incarnation: int, seq: int, at_us: int, min_gap_us: int) -> Due:
    """Whether a section of the envelope (`incarnation`, `seq`) received at `at_us` is due.

    Args:
        last: the last copy taken from the member (None: none yet).
        incarnation, seq: the envelope's.
        at_us: when it was received (our clock).
        min_gap_us: the time one copy of the bucket takes to refill.

    Returns:
        Due.YES, Due.REPEAT or Due.EARLY.
    """
    if last is None or last.incarnation != incarnation:
        return Due.YES
    if seq <= last.seq:
        return Due.REPEAT
    return Due.YES if _tokens(last, at_us, min_gap_us) >= 1.0 else Due.EARLY


def heard(last: Heard | None, incarnation: int, seq: int, at_us: int, min_gap_us: int) -> Heard:
    """The member's bucket after a copy of (`incarnation`, `seq`) was taken at `at_us`."""
    if last is None or last.incarnation != incarnation:
        return Heard(incarnation, seq, at_us, float(BURST - 1))
    return Heard(incarnation, seq, at_us, max(0.0, _tokens(last, at_us, min_gap_us) - 1.0))
