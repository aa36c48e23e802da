"""SimulatedSource: the `Source` of one member, sampling the group model."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from grstats.core.sample import LocalSample

if TYPE_CHECKING:
    from grstats.sources.simulated.model import GroupModel

__all__ = ["SimulatedSource"]


class SimulatedSource:
    """The `Source` of one member of a simulated group."""

    def __init__(self, model: GroupModel, member_id: str) -> None:
        """Bind the model to the local member.

        Args:
            model: the group model (shared settings).
            member_id: the local member's UUID.

        Raises:
            ValueError: member_id is not a member of the model.
        """
        self._model = model
        self._member_id = model.member_at(member_id, 0).member_id

    async def start(self) -> None:
        """Warm the model's caches for the current hour off the event loop."""
        now_us = time.time_ns() // 1000
        await asyncio.to_thread(self._model.stats_at, self._member_id, now_us)

    async def sample(self, now_us: int) -> LocalSample:
        """The local member at `now_us` (cheap: cached per hour, O(1) per tick)."""
        return LocalSample(
            member=self._model.member_at(self._member_id, now_us),
            stats=self._model.stats_at(self._member_id, now_us),
            sampled_at_us=now_us,
            lag=self._model.lag_at(self._member_id, now_us),
            applier=self._model.applier_at(self._member_id, now_us),
        )

    async def close(self) -> None:
        """Nothing to release."""
