"""What grstats_member_gtids is fed: every member's last GTID state and how far to trust it.

Strategy: the remote members' states come from the registry (their last good
`ext.gtids`; a member silent past the unreachable window is judged
UNREACHABLE); the local member's comes from its own samples, but is taken
only once per `gtid_interval` -- the cadence at which the others see it -- so
every member is judged with the same staleness. Each state goes in with the
applied and queued counts of the sample it was read in (the divergence rules
follow the peers by them), and with what decides whether its word counts
against another member's (`core.gtid_divergence`: only witnesses testify):

- listed: the local server's replication_group_members lists it
  (`LocalSample.view`, the last one known; a source that cannot tell lists
  everyone). A member on the bus that no server's view lists is not a member
  of this group as MySQL sees it, whatever it publishes;
- clock: its sets are not dated ahead of our clock (the time we first saw
  them) by more than the rule's slack -- the slack is what the rule allows
  between hosts' clocks, so a member further off compares reads it cannot;
- counts: every transaction a member applies adds its GTID to
  gtid_executed, so its COUNT_TRANSACTIONS_REMOTE_APPLIED never passes the
  size of its executed set, and between two of its states does not grow by
  more than the set did (plus what was queued when the first was read: the
  counts are read just before the sets). A member whose counts break that is
  no real server's (a lie, or a set restored behind the group's back): it
  proves nothing errant on another.

Invariants: pure (time is an argument); a daemon only (one group); per member
one remembered state (its sets' identity, first-seen time and counts), kept
while the registry holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from grstats.core.gtid_divergence import DEFAULT_CLONE_THRESHOLD
from grstats.core.gtidrows import GtidDivergenceTable, MemberGtidInput
from grstats.core.registry import MemberRegistry
from grstats.core.sample import LocalSample
from protocol import GtidState, PipelineStats
from protocol.humanize import duration

__all__ = ["GtidWatch"]

NOT_LISTED = "not in the server's view"
IMPOSSIBLE = "counts impossible for its sets"


@dataclass(frozen=True, slots=True)
class _Seen:
    """A member's GTID state as first seen: when, and what its counts were checked to be."""

    gtids: GtidState
    first_us: int  # our clock when we first saw these sets
    size: int  # GTIDs in its executed set
    applied: int | None
    queued: int | None
    consistent: bool


class GtidWatch:
    """The GTID divergence table and what it is fed.

    Args:
        registry: the remote members.
        gtid_interval_s: seconds between GTID sets on the bus.
        clone_threshold: group_replication_clone_threshold.
    """

    def __init__(
        self,
        registry: MemberRegistry,
        gtid_interval_s: float,
        clone_threshold: int = DEFAULT_CLONE_THRESHOLD,
    ) -> None:
        self.table = GtidDivergenceTable(gtid_interval_s, clone_threshold)
        self._registry = registry
        # our own GTID state as the others see it: taken once per gtid_interval
        self._local: MemberGtidInput | None = None
        self._interval_us = round(gtid_interval_s * 1_000_000)
        self._view: frozenset[str] | None = None  # the last view the source told
        self._seen: dict[str, _Seen] = {}

    def observe(self, sample: LocalSample, own: str) -> None:
        """Feed the table every member's state at the local sample's time.

        Args:
            sample: the local member's latest sample.
            own: the local member's id ("" when not known yet: no own row).
        """
        if sample.view is not None:
            self._view = sample.view
        self.table.observe(self._inputs(sample, own), sample.sampled_at_us)

    def _inputs(self, sample: LocalSample, own: str) -> list[MemberGtidInput]:
        """Every member's last GTID state (ours from the sample), unreachable ones marked."""
        now = sample.sampled_at_us
        inputs = []
        fresh, last = sample.gtid_state, self._local
        if fresh is not None and (
            last is None or fresh.at_us - last.gtids.at_us >= self._interval_us
        ):
            self._local = _input("", "", fresh, sample.stats)
        kept: dict[str, _Seen] = {}
        if self._local is not None and own:
            mine = replace(self._local, member_id=own, state=sample.member.state)
            inputs.append(self._judged(mine, now, kept, local=True))
        for _key, remote in self._registry.items():
            if remote.gtid_state is None:
                continue
            state = remote.envelope.member.state
            if self._registry.unreachable(remote, now):
                state = "UNREACHABLE"
            member_id = remote.envelope.member.id
            member = _input(member_id, state, remote.gtid_state, remote.gtid_stats)
            inputs.append(self._judged(member, now, kept, local=False))
        self._seen = kept
        return inputs

    def _judged(
        self, i: MemberGtidInput, now_us: int, kept: dict[str, _Seen], *, local: bool
    ) -> MemberGtidInput:
        """`i` with whether the view lists it, its clock, its counts, and the reason."""
        seen = self._seen.get(i.member_id)
        if seen is None or seen.gtids is not i.gtids:
            seen = _first_seen(i, now_us, seen)
        kept[i.member_id] = seen
        listed = self._view is None or i.member_id in self._view
        ahead_us = i.gtids.at_us - seen.first_us
        clock_ok = local or ahead_us <= self.table.slack_us
        testimony = ""
        if i.state != "ONLINE":
            testimony = i.state
        elif not listed:
            testimony = NOT_LISTED
        elif not clock_ok:
            testimony = f"sets dated {duration(ahead_us / 1e6)} ahead"
        elif not seen.consistent:
            testimony = IMPOSSIBLE
        return replace(
            i, listed=listed, clock_ok=clock_ok, consistent=seen.consistent, testimony=testimony
        )


def _first_seen(i: MemberGtidInput, now_us: int, before: _Seen | None) -> _Seen:
    """A new state of a member: its counts checked against its sets and its last state."""
    size = i.gtids.executed.count()
    consistent = i.applied is None or i.applied <= size
    if consistent and before is not None and i.applied is not None:
        previous = before.applied
        if previous is not None and i.applied >= previous:  # no restart in between
            slack = before.queued or 0
            consistent = i.applied - previous <= size - before.size + slack
    return _Seen(i.gtids, now_us, size, i.applied, i.queued, consistent)


def _input(
    member_id: str, state: str, gtids: GtidState, stats: PipelineStats | None
) -> MemberGtidInput:
    """A member's input: its sets with the counts of the sample they were read in."""
    if stats is None:
        return MemberGtidInput(member_id, state, gtids)
    queued = stats.transactions_waiting_certification + stats.transactions_waiting_apply
    return MemberGtidInput(member_id, state, gtids, stats.transactions_applied, queued)
