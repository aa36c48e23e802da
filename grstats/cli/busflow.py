"""`grstats flow --bus`: replay MySQL's flow control over what the broker carries for a while.

Strategy: flow control is a judgement over successive stats, so one look at
the retained topics (busread.py) is not enough. `replay_flow_async` listens
(`grstats.cli.buslisten`: one group, or every group) for a bounded time,
admits every message through a collector-mode `core.tables.MemberTables`
(the daemon's validation, sequence and incarnation rules), feeds each
accepted stats message to its group's `core.flowreplay.FlowReplay` and steps
every replay once per flow-control period, as MySQL does. The retained
copies come first: each member's last message, so a member already over its
threshold shows at once; it is fed at the time it was sent (the registry's
last-seen time), not at its arrival, so the first rate after it is not
inflated.

The rows are the daemon's grstats_flow_control rows, minus the local
server's own figures (SERVER_*: NULL, the bus does not carry them), sorted by
group then member. The thresholds must be the group's (trap 20): they come
from the config's [flow_control], MySQL's defaults otherwise.

Invariants: the event loop is private to the call (`asyncio.run`); the
listening time is bounded by `seconds`; a broker that does not accept the
connection within `deadline_s` is a `ReadError` (`buslisten`), never a hang.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from grstats.bus.options import BusOptions
from grstats.cli.buslisten import listen
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.flowreplay import DEFAULT_CATCH_UP_LIMIT_S, FlowReplay
from grstats.core.snapshot import Row
from grstats.core.tables import Accepted, MemberTables
from grstats.core.topics import STATS_KIND

__all__ = ["FlowListen", "replay_flow", "replay_flow_async"]

Progress = Callable[[str], None]


def _now_us() -> int:
    return time.time_ns() // 1000


class FlowListen:
    """The replays of every group heard, fed message by message (no I/O, time is an argument).

    Args:
        settings: the group's flow-control variables.
        catch_up_limit_s: as `FlowReplay`.
    """

    def __init__(
        self, settings: FlowControlSettings, catch_up_limit_s: float = DEFAULT_CATCH_UP_LIMIT_S
    ) -> None:
        self.settings = settings
        self.catch_up_limit_s = catch_up_limit_s
        self.tables = MemberTables(group=None, local_member_id=None)
        self.replays: dict[str, FlowReplay] = {}
        self.messages = 0  # stats messages fed to a replay
        self.steps = 0

    def receive(self, topic: str, payload: bytes, now_us: int, *, retained: bool) -> None:
        """One bus message."""
        result = self.tables.receive(topic, payload, now_us, retained=retained)
        if not isinstance(result, Accepted) or result.kind != STATS_KIND:
            return
        key = (result.envelope.group, result.envelope.member.id)
        remote = self.tables.registry.get(key)
        if remote is None:
            return
        replay = self.replays.get(key[0])
        if replay is None:
            replay = self.replays[key[0]] = FlowReplay(self.settings, self.catch_up_limit_s)
        replay.receive(key[1], remote.state, remote.last_seen_us)
        self.messages += 1

    def step(self, now_us: int) -> None:
        """One flow-control period: members that left (offline) are dropped first."""
        kept = {key for key, _ in self.tables.registry.items()}
        for group, replay in self.replays.items():
            for member_id in [m for m in replay.members() if (group, m) not in kept]:
                replay.forget(member_id)
            replay.step(now_us)
        self.steps += 1

    @property
    def members(self) -> int:
        """Members currently replayed."""
        return sum(len(r.members()) for r in self.replays.values())

    def rows(self) -> list[Row]:
        """grstats_flow_control rows, by group then member."""
        return [row for group in sorted(self.replays) for row in self.replays[group].rows()]


async def replay_flow_async(
    options: BusOptions,
    *,
    prefix: str = "grstats/v1",
    group: str | None = None,
    seconds: float,
    settings: FlowControlSettings,
    catch_up_limit_s: float = DEFAULT_CATCH_UP_LIMIT_S,
    deadline_s: float = 5.0,
    progress: Progress | None = None,
) -> list[Row]:
    """Listen for `seconds`, stepping the replays every `settings.period` seconds.

    Args:
        options: the MQTT broker, credentials and TLS.
        prefix: topic prefix (`[bus] prefix`).
        group: only this group; None for every group on the broker.
        seconds: how long to listen once connected.
        settings: the group's flow-control variables (thresholds, period, ...).
        catch_up_limit_s: failover catch-up limit.
        deadline_s: give up connecting after this many seconds.
        progress: called with a one-line progress text after each step.

    Returns:
        The grstats_flow_control rows.

    Raises:
        ReadError: the broker did not accept a connection before the deadline.
    """
    flow = FlowListen(settings, catch_up_limit_s)

    def handle(topic: str, payload: bytes, retained: bool) -> None:
        flow.receive(topic, payload, _now_us(), retained=retained)

    loop = asyncio.get_running_loop()

    async def step_for_a_while() -> None:
        start = loop.time()
        end = start + seconds
        next_step = start + settings.period
        while (now := loop.time()) < end:
            await asyncio.sleep(min(next_step, end) - now)
            if loop.time() >= next_step:
                flow.step(_now_us())
                next_step += settings.period
                if progress is not None:
                    progress(
                        f"listening {min(loop.time() - start, seconds):.1f}/{seconds:g} s:"
                        f" {flow.messages} stats messages from {flow.members} members,"
                        f" {flow.steps} flow-control steps"
                    )
        if flow.steps == 0:  # shorter than one period: judge once at the end
            flow.step(_now_us())

    await listen(
        options,
        prefix=prefix,
        group=group,
        handler=handle,
        body=step_for_a_while,
        deadline_s=deadline_s,
        name="busflow",
    )
    return flow.rows()


def replay_flow(
    options: BusOptions,
    *,
    prefix: str = "grstats/v1",
    group: str | None = None,
    seconds: float,
    settings: FlowControlSettings,
    catch_up_limit_s: float = DEFAULT_CATCH_UP_LIMIT_S,
    deadline_s: float = 5.0,
    progress: Progress | None = None,
) -> list[Row]:
    """Synchronous `replay_flow_async` for the CLI (runs its own event loop).

    Args:
        options, prefix, group, seconds, settings, catch_up_limit_s, deadline_s,
        progress: as `replay_flow_async`.

    Returns:
        The grstats_flow_control rows.

    Raises:
        ReadError: the broker did not accept a connection before the deadline.
    """
    return asyncio.run(
        replay_flow_async(
            options,
            prefix=prefix,
            group=group,
            seconds=seconds,
            settings=settings,
            catch_up_limit_s=catch_up_limit_s,
            deadline_s=deadline_s,
            progress=progress,
        )
    )
