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
from collections.abc import Mapping
from dataclasses import dataclass

from grstats.core.sections import declared
from protocol import Envelope

__all__ = ["BURST", "Due", "Heard", "OverCadence", "SectionCadence", "heard", "judge"]

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


class SectionCadence:
    """The cadence rule of every section that has one, over a member's records.

    Args:
        period_s: the publish period.
        gtid_interval_s: seconds between a member's GTID sets.
    """

    def __init__(self, period_s: float, gtid_interval_s: float) -> None:
        self.period_s = period_s
        self.gtid_interval_s = gtid_interval_s

    def min_gap_us(self, name: str) -> int:
        """The refill time of section `name`'s bucket, µs (0: no cadence)."""
        gap = declared().by_name[name].min_gap_s(self.period_s, self.gtid_interval_s) or 0.0
        return int(gap * 1_000_000)

    def due(self, member: Mapping[str, Heard], envelope: Envelope, name: str, at_us: int) -> Due:
        """Whether the member's section `name` in `envelope`, received at `at_us`, is due."""
        last = member.get(name)
        return judge(last, envelope.incarnation, envelope.seq, at_us, self.min_gap_us(name))

    def took(
        self,
        member: dict[str, Heard],
        envelope: Envelope,
        values: Mapping[str, object],
        errors: Mapping[str, str],
        at_us: int,
    ) -> None:
        """Take from the member's buckets the sections with a cadence `envelope` had
        decoded (good or malformed)."""
        for section in declared().gated:
            name = section.name
            if name in values or section.counter in errors:
                last = member.get(name)
                gap = self.min_gap_us(name)
                member[name] = heard(last, envelope.incarnation, envelope.seq, at_us, gap)

    @staticmethod
    def extras(member: dict[str, OverCadence], names: tuple[str, ...], at_us: int) -> None:
        """Count the member's sections dropped past their cadence at `at_us`."""
        for name in names:
            extras = member.get(name)
            if extras is None:
                extras = member[name] = OverCadence()
            extras.count += 1
            extras.last_us = at_us
