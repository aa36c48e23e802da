"""What a receiver keeps of one remote member, and what applying an envelope says.

Strategy: `Remote` is the registry's record of a member (`core.registry`): its
last envelope and stats state, when it was heard, its replay defence, its
clock offset window, what is kept of each `ext` section (`sections`, by each
declaration's `keep`: `core.sections`) and its sections' cadence
(`core.cadence`). The named properties are how the row builders read the
sections the tables show.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grstats.core.applier import MemberApplier
from grstats.core.cadence import Heard, OverCadence
from grstats.core.lag import MemberLag
from grstats.core.replay_defence import retired_incarnations
from protocol import (
    CommitPathReport,
    Envelope,
    GroupCommunication,
    GtidState,
    MemberStatsState,
    PipelineStats,
)

__all__ = ["OFFSET_WINDOW", "Applied", "KeptSections", "Remote"]

OFFSET_WINDOW = 60  # envelopes per member the clock offset is estimated over


class KeptSections:
    """What is kept of a member's sections, read by name (a remote member's `Remote`, the
    local member's `LocalView`: one rule, one reading). The class sets `sections`."""

    __slots__ = ()
    sections: Mapping[str, Any]

    @property
    def lag(self) -> MemberLag | None:
        """The member's last ext.lag."""
        return self.sections.get("lag")

    @property
    def applier(self) -> MemberApplier | None:
        """The member's last ext.applier."""
        return self.sections.get("applier")

    @property
    def gtid_state(self) -> GtidState | None:
        """The member's last good ext.gtids."""
        kept = self.sections.get("gtids")
        return None if kept is None else kept[0]

    @property
    def gtid_stats(self) -> PipelineStats | None:
        """The stats that rode with its last good ext.gtids (same sample)."""
        kept = self.sections.get("gtids")
        return None if kept is None else kept[1]

    @property
    def commit_path(self) -> tuple[CommitPathReport, ...]:
        """Its last two ext.commit_path reports (older first): the rates of its last period."""
        kept = self.sections.get("commit_path")
        return () if kept is None else kept[0]

    @property
    def commit_path_minute(self) -> tuple[CommitPathReport, ...]:
        """Its ext.commit_path anchors of the last minute (core.commitpath), older first."""
        kept = self.sections.get("commit_path")
        return () if kept is None else kept[1]

    @property
    def communication(self) -> GroupCommunication | None:
        """The member's last ext.commit_path_comm."""
        return self.sections.get("commit_path_comm")


@dataclass(frozen=True, slots=True)
class Applied:
    """An envelope that changed the tables.

    Attributes:
        envelope, stats, kind: the envelope, its decoded stats, its topic's kind.
        errors: malformed counter -> why its section was refused (the sections
            this envelope applied: every one for stats, the GTID sets' for gtids).
    """

    envelope: Envelope
    stats: PipelineStats
    kind: str
    errors: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Remote(KeptSections):
    """What we keep about one remote member (its sections read as `KeptSections`)."""

    envelope: Envelope
    state: MemberStatsState
    last_seen_us: int  # when it was last known alive (a retained copy: when it was sent)
    last_received_us: int  # when its last accepted message reached us
    gtid_seq: int = 0
    accepted: int = 0
    retired: deque[tuple[int, int]] = field(
        default_factory=retired_incarnations
    )  # (incarnation, last seq)
    # section name -> what is kept of it (core.sections: each declaration's `keep`)
    sections: dict[str, Any] = field(default_factory=dict)
    # section name -> its last copy taken, and its extras (core.cadence)
    heard: dict[str, Heard] = field(default_factory=dict)
    extras: dict[str, OverCadence] = field(default_factory=dict)
    offsets: deque[int] = field(
        default_factory=lambda: deque(maxlen=OFFSET_WINDOW)
    )  # sent_us - received_at_us of its last live envelopes

    def clock_offset_us(self) -> int | None:
        """Its clock minus ours, estimated (None before a live envelope)."""
        return max(self.offsets) if self.offsets else None
