"""The local server as a live oracle of the bus: its view of each member against its daemon.

Strategy / invariants
---------------------
MySQL receives every member's stats message itself (WL#10380) and shows it in
its own replication_group_member_stats. Where the local server shows a remote
member that also has a daemon on the bus, both copies describe the same
member: this module compares them every local sample, column by column, and
counts the disagreements. Pure: values in, counts out; no clock, no I/O.

- Each copy is sampled at its own moment (MySQL's stats message about every
  second, the member's daemon every publish period), so instants are never
  compared. Per (member, column) the last `WINDOW` values of each copy are
  kept, and compared once each holds two or more; they agree when their
  ranges overlap (counters are monotonic: two honest copies of one counter
  sampled over the same few periods overlap even when one is a period behind;
  a copy that is off stays outside). GTID texts are compared as
  sets (`protocol.GtidSet`, so order and spacing do not matter): they agree
  when a set of one window equals a set of the other. An unparsable text is
  compared verbatim.
- Only the monotonic counters and the two GTID texts are compared: the queue
  gauges move both ways within a period, a range says nothing about them.
- Bounded: `WINDOW` values per member and column, members forgotten with the
  registry (`forget`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Final

from grstats.core import columns as col
from grstats.core.rows import stats_row
from grstats.core.sample import ServerViewMember
from protocol import GtidSet, MemberStatsState, PipelineStats, ProtocolError

__all__ = ["COMPARED", "WINDOW", "ServerOracle"]

WINDOW: Final = 3
COUNTERS: Final = (
    col.COUNT_TRANSACTIONS_CHECKED,
    col.COUNT_CONFLICTS_DETECTED,
    col.COUNT_TRANSACTIONS_REMOTE_APPLIED,
    col.COUNT_TRANSACTIONS_LOCAL_PROPOSED,
    col.COUNT_TRANSACTIONS_LOCAL_ROLLBACK,
)
TEXTS: Final = (col.TRANSACTIONS_COMMITTED_ALL_MEMBERS, col.LAST_CONFLICT_FREE_TRANSACTION)
COMPARED: Final = (*COUNTERS, *TEXTS)

Value = int | str | GtidSet
_Windows = dict[tuple[str, str], deque[Value]]


def _values(member_id: str, stats: PipelineStats | MemberStatsState) -> dict[str, Value]:
    row = stats_row("", member_id, stats)
    out: dict[str, Value] = {c: int(row[c] or 0) for c in COUNTERS}
    for c in TEXTS:
        text = str(row[c] or "")
        if not text:
            continue  # a copy without the text (not sent this period) tells nothing
        try:
            out[c] = GtidSet.parse(text)
        except ProtocolError:
            out[c] = text
    return out


def _agree(ours: Iterable[Value], theirs: Iterable[Value]) -> bool:
    a, b = list(ours), list(theirs)
    if all(isinstance(v, int) for v in (*a, *b)):
        ints_a = [v for v in a if isinstance(v, int)]
        ints_b = [v for v in b if isinstance(v, int)]
        return min(ints_a) <= max(ints_b) and min(ints_b) <= max(ints_a)
    return any(x == y for x in a for y in b)


class ServerOracle:
    """Disagreements between the local server's view of members and their daemons."""

    def __init__(self) -> None:
        self._bus: _Windows = {}
        self._server: _Windows = {}
        self.comparisons = 0
        self.disagreements: dict[str, int] = dict.fromkeys(COMPARED, 0)
        self.by_member: dict[str, int] = {}
        self.current: dict[str, tuple[str, ...]] = {}  # member -> columns disagreeing now

    def bus(self, member_id: str, state: MemberStatsState) -> None:
        """Record what the member's daemon published (an accepted stats envelope)."""
        self._push(self._bus, member_id, _values(member_id, state))

    def check(self, view: Iterable[ServerViewMember], published: Mapping[str, object]) -> None:
        """Compare the server's view with the daemons' copies, once per local sample.

        Args:
            view: the other members as the local server shows them.
            published: member id -> anything truthy for members whose daemon is
                heard (only those are compared).
        """
        for other in view:
            member_id = other.member.member_id
            if member_id not in published:
                continue
            self._push(self._server, member_id, _values(member_id, other.stats))
            wrong = []
            for column in COMPARED:
                ours = self._server.get((member_id, column))
                theirs = self._bus.get((member_id, column))
                if ours is None or theirs is None or len(ours) < 2 or len(theirs) < 2:
                    continue  # a range needs two samples of each copy
                self.comparisons += 1
                if not _agree(ours, theirs):
                    wrong.append(column)
                    self.disagreements[column] += 1
                    self.by_member[member_id] = self.by_member.get(member_id, 0) + 1
            self.by_member.setdefault(member_id, 0)
            if wrong:
                self.current[member_id] = tuple(wrong)
            else:
                self.current.pop(member_id, None)

    def forget(self, member_id: str) -> None:
        """Drop a member's windows (it left the registry)."""
        for windows in (self._bus, self._server):
            for key in [k for k in windows if k[0] == member_id]:
                del windows[key]
        self.current.pop(member_id, None)
        self.by_member.pop(member_id, None)

    def reasons(self) -> tuple[str, ...]:
        """/healthz notes: the members whose two copies disagree now, and on what."""
        return tuple(
            f"oracle: the server's view of {member} disagrees with its daemon on "
            + ", ".join(columns)
            for member, columns in sorted(self.current.items())
        )

    @staticmethod
    def _push(windows: _Windows, member_id: str, values: Mapping[str, Value]) -> None:
        for column, value in values.items():
            windows.setdefault((member_id, column), deque(maxlen=WINDOW)).append(value)
