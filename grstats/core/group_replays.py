"""The flow-control replays of the groups a daemon or a collector holds.

Strategy: a daemon replays its one group (`own`), stepped by its local
samples (`local`: as MySQL steps, then hears its own stats come back, trap
21); a collector replays every group its registry holds, one
`FlowReplay` each, made when a group's first stats message is accepted and
stepped by the collector's own clock (`tick`, once a period) as a member
steps on its own timer. The registry decides who is a member: a replay
forgets whoever the registry no longer holds.

Invariants: a collector's replays are bounded by the registry's caps
(`max_groups`; members by `max_members_per_group`); a group's replay goes
with its last member; the local member is never forgotten by `tick` (it is
not in the registry).
"""

from __future__ import annotations

from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.flowreplay import FlowReplay
from grstats.core.registry import MemberRegistry
from grstats.core.sample import LocalSample, in_group
from protocol import MemberStatsState

__all__ = ["GroupReplays"]


class GroupReplays:
    """One `FlowReplay` per group held (a daemon: its own group only).

    Args:
        registry: the member registry whose groups and members are replayed.
        settings: the flow-control variables every replay runs with.
        catch_up_limit_s: applier catch-up time above which a member is not
            failover-ready.
        group: a daemon's group; None for a collector (every group held).
    """

    def __init__(
        self,
        registry: MemberRegistry,
        settings: FlowControlSettings,
        catch_up_limit_s: float,
        *,
        group: str | None,
    ) -> None:
        self._registry = registry
        self._settings = settings
        self._catch_up_limit_s = catch_up_limit_s
        self.group = group
        # a daemon's replay of its group; a collector's are in _replays
        self.own: FlowReplay | None = None if group is None else self._new()
        self._replays: dict[str, FlowReplay] = {}
        self._local_state = MemberStatsState()  # the local member's stats as the replay has them

    def _new(self) -> FlowReplay:
        return FlowReplay(self._settings, self._catch_up_limit_s)

    def get(self, group: str) -> FlowReplay | None:
        """The replay of `group` (None: none yet, or not ours)."""
        if self.group is not None:
            return self.own if group == self.group else None
        return self._replays.get(group)

    def for_stats(self, group: str) -> FlowReplay | None:
        """The replay an accepted stats message of `group` feeds (a collector's made here)."""
        if self.group is not None:
            return self.own
        replay = self._replays.get(group)
        if replay is None and self._registry.group_size(group):
            replay = self._replays[group] = self._new()
        return replay

    def local(self, sample: LocalSample, own: str) -> None:
        """A daemon's local sample: step its replay, then feed it our own stats (in a group).

        Args:
            sample: the local member's latest sample.
            own: the local member's id.
        """
        if self.own is None or not in_group(sample.member.state):
            return
        # MySQL steps, then sends its own stats, which come back to it (trap 21)
        self.own.step(sample.sampled_at_us)
        self._local_state = self._local_state.apply(sample.stats)
        self.own.receive(own, self._local_state, sample.sampled_at_us)

    def forget(self, group: str, member_id: str) -> None:
        """`member_id` of `group` left: its replay forgets it."""
        replay = self.get(group)
        if replay is not None:
            replay.forget(member_id)

    def tick(self, now_us: int, local_member_id: str | None) -> None:
        """Once a period: forget whom the registry no longer holds; a collector steps its own."""
        if self.group is None:
            for group in [g for g in self._replays if not self._registry.group_size(g)]:
                del self._replays[group]  # its last member left: bounded by the registry
        replays = dict(self._replays)
        if self.group is not None and self.own is not None:
            replays[self.group] = self.own
        for group, replay in replays.items():
            for member_id in replay.members():  # departed (offline, ERROR): gone here too
                if member_id != local_member_id and not self._registry.get((group, member_id)):
                    replay.forget(member_id)
            if self.group is None:
                replay.step(now_us)  # a member steps on its local samples (set_local)
