"""The inputs of a `grstats simulate` run: the group's ids and the plan of its days.

Strategy: every member-day a run writes is a pure function of a `SimulatePlan`
and the day's index, so a worker process given the plan rebuilds what it
needs (`offline.dayfill.plan_model`) and writes the same files as the parent
would. Member UUIDs and incarnations derive from the seed, and each
member-day's segment name from the plan, so re-running into the same
directory replaces the files instead of duplicating rows. Light: no numpy, no
pyarrow (the CLI imports it for `grstats --help`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass

from grstats.core.flowcontrol import FlowControlSettings

__all__ = [
    "DAY_HOURS",
    "SECONDS_PER_DAY",
    "SimulatePlan",
    "default_group",
    "incarnation_of",
    "member_ids",
    "model_group",
]

_NAMESPACE = uuid.UUID("0f6d8f3a-2c51-5c1e-b7a4-9e2a61d0c3b7")
SECONDS_PER_DAY = 86_400
DAY_HOURS = 26  # workload hours a model keeps: a day, the hour before it, one spare


def member_ids(seed: int, count: int) -> list[str]:
    """The deterministic server UUIDs of a simulated group.

    Args:
        seed: the simulation seed.
        count: number of members.

    Returns:
        `count` UUID texts, the same for the same seed.
    """
    return [str(uuid.uuid5(_NAMESPACE, f"{seed}/member/{i}")) for i in range(1, count + 1)]


def default_group(seed: int) -> str:
    """The group name (a UUID) used when --group is not given."""
    return str(uuid.uuid5(_NAMESPACE, f"{seed}/group"))


def model_group(group: str) -> str:
    """The group UUID the model uses for GTIDs: `group` itself when it is a UUID.

    GR group names are UUIDs; for any other text a UUID is derived from it, so
    the GTID columns stay valid while `group_name` keeps the text given.
    """
    try:
        return str(uuid.UUID(group))
    except ValueError:
        return str(uuid.uuid5(_NAMESPACE, f"group/{group}"))


def incarnation_of(seed: int, member_id: str) -> int:
    """One daemon incarnation (u64) per simulated member, derived from the seed."""
    digest = hashlib.sha256(f"{seed}/incarnation/{member_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True, slots=True)
class SimulatePlan:
    """The inputs of a run: every member-day is a function of these and its day (picklable:
    a worker process gets the plan and rebuilds the model from it)."""

    group: str
    members: tuple[str, ...]
    seed: int
    start: dt.date
    days: int
    slow_member: bool
    flow_control: FlowControlSettings
    slow_link_hours: tuple[int, int] | None
    version: str | None
    epoch_s: int | None = None  # the group's start ([simulated] epoch); None: the model's

    def day_start_s(self, day_index: int) -> int:
        """Unix second at which day `day_index` of the run begins."""
        day = self.start + dt.timedelta(days=day_index)
        return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())

    def slow_link(self) -> tuple[tuple[int, int], ...] | None:
        """[start, end) Unix seconds of the last member's slow link, every day; None: never."""
        if self.slow_link_hours is None:
            return None
        first, end = self.slow_link_hours
        return tuple(
            (self.day_start_s(d) + 3600 * first, self.day_start_s(d) + 3600 * end)
            for d in range(self.days)
        )

    def segment(self, member: str, day_index: int) -> str:
        """The member-day's segment id (its file name derives from it)."""
        day = self.start + dt.timedelta(days=day_index)
        segment = f"simulate|{self.seed}|{self.group}|{member}|{day.isoformat()}"
        segment += f"|{int(self.slow_member)}"
        if self.slow_link_hours is not None:  # names of runs without it stay as they were
            segment += f"|slow-link={self.slow_link_hours[0]}-{self.slow_link_hours[1]}"
        if self.version is not None:
            segment += f"|version={self.version}"
        if self.epoch_s is not None:
            segment += f"|epoch={self.epoch_s}"
        return segment
