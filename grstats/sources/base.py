"""The contract every source fulfils: one live sample of the local member (`core.sample`)."""

from __future__ import annotations

from typing import Protocol

from grstats.core.sample import LocalSample


class Source(Protocol):
    """Async interface the daemon drives; implementations never block the loop."""

    async def start(self) -> None: ...

    async def sample(self, now_us: int) -> LocalSample: ...

    async def close(self) -> None: ...
