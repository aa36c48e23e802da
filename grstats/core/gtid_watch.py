"""What grstats_member_gtids is fed: every member's last GTID state, once per tick.

Strategy: the remote members' states come from the registry (their last good
`ext.gtids`; a member silent past the unreachable window is judged
UNREACHABLE); the local member's comes from its own samples, but is taken
only once per `gtid_interval` -- the cadence at which the others see it -- so
every member is judged with the same staleness and the divergence rule runs
once per interval, not once per tick. The history's GTID columns read the
table with the flow-control replay's queues and rates, as the snapshot does.

Invariants: pure (time is an argument); a daemon only (one group).
"""

from __future__ import annotations

from typing import Any

from grstats.core.flowreplay import FlowReplay
from grstats.core.gtidrows import GtidDivergenceTable, MemberGtidInput
from grstats.core.member_builders import drains
from grstats.core.registry import MemberRegistry
from grstats.core.sample import LocalSample
from protocol import GtidState

__all__ = ["GtidWatch"]


class GtidWatch:
    """The GTID divergence table and what it is fed.

    Args:
        registry: the remote members.
        gtid_interval_s: seconds between GTID sets on the bus (the errant
            transactions' grace window is built on it).
    """

    def __init__(self, registry: MemberRegistry, gtid_interval_s: float) -> None:
        self.table = GtidDivergenceTable(gtid_interval_s)
        self._registry = registry
        # our own GTID state as the others see it: taken once per gtid_interval
        self._local: GtidState | None = None
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
        if fresh is not None and (last is None or fresh.at_us - last.at_us >= self._interval_us):
            self._local = fresh
        if self._local is not None and own:
            inputs.append(MemberGtidInput(own, sample.member.state, self._local))
        for _key, remote in self._registry.items():
            if remote.gtid_state is None:
                continue
            state = remote.envelope.member.state
            if self._registry.unreachable(remote, sample.sampled_at_us):
                state = "UNREACHABLE"
            inputs.append(MemberGtidInput(remote.envelope.member.id, state, remote.gtid_state))
        return inputs

    def history(self, member_id: str, now_us: int, flow: FlowReplay) -> dict[str, Any]:
        """The history's GTID columns of `member_id` now, its grace from `flow`'s drains."""
        rows = (flow.row(m) for m in flow.members())
        return self.table.history(member_id, now_us, drains(tuple(r for r in rows if r)))
