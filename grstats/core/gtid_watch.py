"""What grstats_member_gtids is fed: every member's last GTID state, once per tick.

Strategy: the remote members' states come from the registry (their last good
`ext.gtids`; a member silent past the unreachable window is judged
UNREACHABLE); the local member's comes from its own samples, but is taken
only once per `gtid_interval` -- the cadence at which the others see it -- so
every member is judged with the same staleness and the divergence rule runs
once per interval, not once per tick. Each state goes in with the applied
and queued counts of the sample it was read in (the divergence rule follows
the peers by them).

Invariants: pure (time is an argument); a daemon only (one group).
"""

from __future__ import annotations

from dataclasses import replace

from grstats.core.gtidrows import GtidDivergenceTable, MemberGtidInput
from grstats.core.registry import MemberRegistry
from grstats.core.sample import LocalSample
from protocol import GtidState, PipelineStats

__all__ = ["GtidWatch"]


class GtidWatch:
    """The GTID divergence table and what it is fed.

    Args:
        registry: the remote members.
        gtid_interval_s: seconds between GTID sets on the bus.
    """

    def __init__(self, registry: MemberRegistry, gtid_interval_s: float) -> None:
        self.table = GtidDivergenceTable(gtid_interval_s)
        self._registry = registry
        # our own GTID state as the others see it: taken once per gtid_interval
        self._local: MemberGtidInput | None = None
        self._interval_us = round(gtid_interval_s * 1_000_000)

    def observe(self, sample: LocalSample, own: str) -> None:
        """Feed the table every member's state at the local sample's time.

        Args:
            sample: the local member's latest sample.
            own: the local member's id ("" when not known yet: no own row).
        """
        self.table.observe(self._inputs(sample, own), sample.sampled_at_us)

    def _inputs(self, sample: LocalSample, own: str) -> list[MemberGtidInput]:
        """Every member's last GTID state (ours from the sample), unreachable ones marked."""
        inputs = []
        fresh, last = sample.gtid_state, self._local
        if fresh is not None and (
            last is None or fresh.at_us - last.gtids.at_us >= self._interval_us
        ):
            self._local = _input("", "", fresh, sample.stats)
        if self._local is not None and own:
            inputs.append(replace(self._local, member_id=own, state=sample.member.state))
        for _key, remote in self._registry.items():
            if remote.gtid_state is None:
                continue
            state = remote.envelope.member.state
            if self._registry.unreachable(remote, sample.sampled_at_us):
                state = "UNREACHABLE"
            member_id = remote.envelope.member.id
            inputs.append(_input(member_id, state, remote.gtid_state, remote.gtid_stats))
        return inputs


def _input(
    member_id: str, state: str, gtids: GtidState, stats: PipelineStats | None
) -> MemberGtidInput:
    """A member's input: its sets with the counts of the sample they were read in."""
    if stats is None:
        return MemberGtidInput(member_id, state, gtids)
    queued = stats.transactions_waiting_certification + stats.transactions_waiting_apply
    return MemberGtidInput(member_id, state, gtids, stats.transactions_applied, queued)
