"""The last 15 minutes of every member, in memory: what the live page draws its sparklines from.

Strategy: one point per member every `step_s` (5 s: 180 points draw a
15-minute line finer than the page shows it), taken from a snapshot the
daemon has anyway (`due` / `observe`, once a step from its tick): the two
queues, the three counters whose rates the page shows (checked, conflicts,
applied) and the replication lag. A counter is stored as the member reported
it, stamped with when the member's report arrived (the snapshot's time less
the report's age), so a rate is the increase between two reports over the
time between them: a step that happens to span one period more or less than
the last does not read as a jump. No history is read and nothing is computed
per page view but the reading of arrays.

Invariants: each member's points live in preallocated `array('d')` columns
of `capacity` points (a ring), so the bytes a member costs are known before
it is admitted; members are admitted while their total stays within
`max_bytes` and every one refused is counted (`refused`, per observation); a
member not observed for a whole window is dropped, freeing its room. A
counter that went down (a restarted member) gives no rate for that step,
never a negative one; an unknown value is NaN (no point drawn). Time is an
argument: nothing here reads a clock.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from grstats.core import columns as col
from grstats.core.snapshot import (
    MEMBER_LAG_TABLE,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_TABLE,
    DaemonSnapshot,
)

__all__ = [
    "FIELDS",
    "MemberPoint",
    "MemberSeries",
    "RecentSeries",
    "points_of",
]

WINDOW_S: Final = 900.0  # the 15 minutes the page draws
STEP_S: Final = 5.0
DEFAULT_MAX_BYTES: Final = 4 << 20  # ~390 members at 180 points

# What is kept per point, in column order.
FIELDS: Final = (
    "t",  # when the point was taken (the snapshot's time), Unix seconds
    "reported",  # when the member's counters were reported (t less their age)
    "certifier_queue",
    "applier_queue",
    "checked",
    "conflicts",
    "applied",
    "lag",  # seconds; NaN when unknown
)
_COUNTERS: Final = ("checked", "conflicts", "applied")
# Per member beyond its arrays: the dict entry, the key's two strings, eight
# array objects and the ring's bookkeeping (measured: tests/grstats/core/test_recent.py).
_MEMBER_OVERHEAD: Final = 2048

MemberKey = tuple[str, str]  # (group, member id)


@dataclass(frozen=True, slots=True)
class MemberPoint:
    """One member's figures at one observation (None: not known)."""

    group: str
    member_id: str
    reported_s: float
    certifier_queue: float | None
    applier_queue: float | None
    checked: float | None
    conflicts: float | None
    applied: float | None
    lag_s: float | None


@dataclass(frozen=True, slots=True)
class MemberSeries:
    """One member's recent points, oldest first, read out of the ring (a copy).

    `t` holds the points' times; every other series has one value per point
    (NaN: unknown). A rate series' first value is NaN (no earlier point).
    """

    t: tuple[float, ...]
    certifier_queue: tuple[float, ...]
    applier_queue: tuple[float, ...]
    checked_rate: tuple[float, ...]
    conflicts_rate: tuple[float, ...]
    applied_rate: tuple[float, ...]
    lag: tuple[float, ...]

    def last(self, name: str) -> float | None:
        """The newest known value of series `name` (None when there is none)."""
        values: tuple[float, ...] = getattr(self, name)
        return None if not values or math.isnan(values[-1]) else values[-1]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def points_of(snapshot: DaemonSnapshot) -> list[MemberPoint]:
    """Every member's point in `snapshot` (the member-stats rows; lag and age where known).

    Args:
        snapshot: a daemon's or a collector's snapshot.

    Returns:
        One point per replication_group_member_stats row.
    """
    taken_s = snapshot.taken_at_us / 1e6
    status = {str(r.get(col.MEMBER_ID)): r for r in snapshot.table(MEMBER_STATUS_TABLE)}
    lag = {
        str(r.get(col.MEMBER_ID)): _number(r.get(col.REPLICATION_LAG_SECONDS))
        for r in snapshot.table(MEMBER_LAG_TABLE)
        if r.get(col.CHANNEL_NAME) == col.GROUP_REPLICATION_CHANNEL
    }
    out = []
    for row in snapshot.table(MEMBER_STATS_TABLE):
        member = str(row.get(col.MEMBER_ID))
        facts = status.get(member, {})
        age = _number(facts.get(col.LAST_SEEN_AGE_SECONDS)) or 0.0
        out.append(
            MemberPoint(
                group=str(facts.get(col.GROUP_NAME) or snapshot.group_name),
                member_id=member,
                reported_s=taken_s - max(0.0, age),
                certifier_queue=_number(row.get(col.COUNT_TRANSACTIONS_IN_QUEUE)),
                applier_queue=_number(row.get(col.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE)),
                checked=_number(row.get(col.COUNT_TRANSACTIONS_CHECKED)),
                conflicts=_number(row.get(col.COUNT_CONFLICTS_DETECTED)),
                applied=_number(row.get(col.COUNT_TRANSACTIONS_REMOTE_APPLIED)),
                lag_s=lag.get(member),
            )
        )
    return out


class _Ring:
    """One member's points: FIELDS columns of `capacity` doubles, written in a circle."""

    __slots__ = ("columns", "count", "head", "last_seen")

    def __init__(self, capacity: int) -> None:
        self.columns = {name: array("d", bytes(8 * capacity)) for name in FIELDS}
        self.head = 0  # where the next point goes
        self.count = 0
        self.last_seen = 0.0

    def add(self, t: float, point: MemberPoint) -> None:
        capacity = len(self.columns["t"])
        values = {
            "t": t,
            "reported": point.reported_s,
            "certifier_queue": point.certifier_queue,
            "applier_queue": point.applier_queue,
            "checked": point.checked,
            "conflicts": point.conflicts,
            "applied": point.applied,
            "lag": point.lag_s,
        }
        for name, value in values.items():
            self.columns[name][self.head] = math.nan if value is None else value
        self.head = (self.head + 1) % capacity
        self.count = min(self.count + 1, capacity)
        self.last_seen = t

    def ordered(self, name: str) -> list[float]:
        column = self.columns[name]
        start = (self.head - self.count) % len(column)
        if start + self.count <= len(column):
            return column[start : start + self.count].tolist()
        return column[start:].tolist() + column[: self.head].tolist()


def _rates(counts: Sequence[float], times: Sequence[float]) -> tuple[float, ...]:
    out = [math.nan]
    for i in range(1, len(counts)):
        dc, dt = counts[i] - counts[i - 1], times[i] - times[i - 1]
        out.append(dc / dt if dt > 0 and dc >= 0 else math.nan)  # NaN propagates itself
    return tuple(out[: len(counts)])


class RecentSeries:
    """The last `window_s` of every member, one point per `step_s`, within `max_bytes`.

    Args:
        window_s: how far back the points go.
        step_s: seconds between points.
        max_bytes: bound on what the points of every member take together.
    """

    def __init__(
        self,
        *,
        window_s: float = WINDOW_S,
        step_s: float = STEP_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.window_s = window_s
        self.step_s = step_s
        self.capacity = int(window_s // step_s) + 1  # n + 1 counters give n rates
        self.member_bytes = len(FIELDS) * 8 * self.capacity + _MEMBER_OVERHEAD
        self.max_members = max(0, max_bytes // self.member_bytes)
        self._rings: dict[MemberKey, _Ring] = {}
        self._next_due = -math.inf
        self.refused = 0  # member observations refused at the byte bound
        self.version = 0  # bumped on every observation
        self.last_observed = 0.0  # when the newest point was taken (0: none yet)

    @property
    def bytes(self) -> int:
        """What the members held now take, as counted against `max_bytes`."""
        return len(self._rings) * self.member_bytes

    def due(self, now_s: float) -> bool:
        """Whether a point is due at `now_s` (a step since the last one)."""
        return now_s >= self._next_due

    def observe(self, now_s: float, points: Iterable[MemberPoint]) -> None:
        """Add one point per member at `now_s`; drop members silent for a whole window.

        A new member past the byte bound is refused and counted; its points
        are kept from the first observation after room is freed.
        """
        self._next_due = now_s + self.step_s
        self.last_observed = now_s
        for point in points:
            key = (point.group, point.member_id)
            ring = self._rings.get(key)
            if ring is None:
                if len(self._rings) >= self.max_members:
                    self.refused += 1
                    continue
                ring = self._rings[key] = _Ring(self.capacity)
            ring.add(now_s, point)
        stale = [k for k, r in self._rings.items() if now_s - r.last_seen > self.window_s]
        for key in stale:
            del self._rings[key]
        self.version += 1

    def series(self, group: str, member_id: str) -> MemberSeries | None:
        """The member's points, oldest first (None when none are held)."""
        ring = self._rings.get((group, member_id))
        if ring is None:
            return None
        t = ring.ordered("t")
        reported = ring.ordered("reported")
        return MemberSeries(
            t=tuple(t),
            certifier_queue=tuple(ring.ordered("certifier_queue")),
            applier_queue=tuple(ring.ordered("applier_queue")),
            checked_rate=_rates(ring.ordered("checked"), reported),
            conflicts_rate=_rates(ring.ordered("conflicts"), reported),
            applied_rate=_rates(ring.ordered("applied"), reported),
            lag=tuple(ring.ordered("lag")),
        )

    def group_series(self, group: str) -> Mapping[str, MemberSeries]:
        """Member id -> its series, for every member of `group` held."""
        out: dict[str, MemberSeries] = {}
        for g, member in self._rings:
            if g == group:
                found = self.series(g, member)
                if found is not None:
                    out[member] = found
        return out
