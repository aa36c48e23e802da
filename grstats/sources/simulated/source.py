"""SimulatedSource: the `Source` of one member, sampling the group model.

Strategy: the model is cheap per second once an hour's caches are warm, but a
cold hour can cost a second or more (a slow member under flow control is
simulated second by second, flow.py). So the event loop never evaluates the
model itself: every sample runs in a worker thread (`asyncio.to_thread`), and
during the last WARM_AHEAD_S seconds of each hour a background thread warms
the next hour, so that the sample at the top of the hour finds it ready.

Invariants: the model is not thread-safe, so every evaluation holds `_lock`
(one thread in the model at a time); at most one warming task exists; a
failed warm-up is logged by nobody and only costs the next sample its time
(the sample raises the same error itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import TYPE_CHECKING

from grstats.core.sample import LocalSample
from grstats.sources.simulated.commitpath import MemberCommitPath

if TYPE_CHECKING:
    from grstats.sources.simulated.model import GroupModel

__all__ = ["WARM_AHEAD_S", "SimulatedSource"]

WARM_AHEAD_S = 300  # start warming the next hour this long before it begins
_HOUR_US = 3_600_000_000


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
        self._lock = threading.Lock()
        self._warmed_hour: int | None = None  # the next hour, once warming has started
        self._warming: asyncio.Task[LocalSample] | None = None
        self._commit_path = MemberCommitPath(model.settings, self._member_id)

    def _evaluate(self, now_us: int) -> LocalSample:
        """The sample at `now_us`, evaluated under the model lock (runs in a thread)."""
        model, member = self._model, self._member_id
        with self._lock:
            path = self._commit_path
            if path.settings is not model.settings:  # what it was made of was replaced
                path = self._commit_path = MemberCommitPath(model.settings, member)
            stats = model.stats_at(member, now_us)
            commit_path = None  # a server older than 8.1.0 shows no Gr_* counters
            if path.shown:
                commit_path = path.at(
                    now_us // 1_000_000,
                    stats.transactions_local,
                    lambda s: model.stats_at(member, s * 1_000_000).transactions_local,
                )
            return LocalSample(
                member=model.member_at(member, now_us),
                stats=stats,
                sampled_at_us=now_us,
                lag=model.lag_at(member, now_us),
                applier=model.applier_at(member, now_us),
                gtid_state=model.gtid_state_at(member, now_us),
                commit_path=commit_path,
                communication=path.communication,
                view=model.view_at(member, now_us),
            )

    async def start(self) -> None:
        """Warm the model's caches for the current hour off the event loop."""
        await asyncio.to_thread(self._evaluate, time.time_ns() // 1000)

    async def sample(self, now_us: int) -> LocalSample:
        """The local member at `now_us`, evaluated off the event loop.

        In the last WARM_AHEAD_S seconds of an hour this also starts warming the
        next hour in the background (once per hour).
        """
        hour, into_us = divmod(now_us, _HOUR_US)
        late = into_us >= _HOUR_US - WARM_AHEAD_S * 1_000_000
        idle = self._warming is None or self._warming.done()
        if late and idle and self._warmed_hour != hour + 1:
            self._warmed_hour = hour + 1
            self._warming = asyncio.create_task(
                asyncio.to_thread(self._evaluate, (hour + 1) * _HOUR_US)
            )
            self._warming.add_done_callback(_consume)
        return await asyncio.to_thread(self._evaluate, now_us)

    async def close(self) -> None:
        """Stop waiting for a warm-up still running (its thread finishes on its own)."""
        if self._warming is not None and not self._warming.done():
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._warming


def _consume(task: asyncio.Task[LocalSample]) -> None:
    """Retrieve a warm-up's outcome so that a failure is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()
