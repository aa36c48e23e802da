"""The group's GTID sets, kept up to date per member: what each member's verdict is made of.

Strategy: the divergence rules (`core.gtid_divergence`) compare a member's
sets with the witnesses' -- their intersection (candidates, missing), their
union (what GR counts as lacking) and each witness's purged set (donors).
Recomputing all of that for every member whenever one set changes costs
members² set operations of every set's size (issue 39: a hostile member's
24 KiB sets every fraction of a second stalled the daemon). Here a change of
one member's sets costs set operations against each other member once
(O(members x intervals)):

- `update(member)`: its pairwise "can donate" flags against every other
  member are refreshed (``P(D) - E(X)`` empty, both ways), and the
  witnesses' intersection and union are marked stale;
- the witnesses' intersection I and union U are rebuilt once per batch of
  changes, not per member judged; a member's candidates are then
  ``E(X) - I`` (De Morgan: the union of what each witness lacks of it, a
  witness X included, since ``E(X) - (I_others & E(X)) = E(X) - I``), what it
  lacks of the group ``U - E(X)``; what it misses of every *other* witness
  takes the intersection of the others, from prefix and suffix
  intersections (again O(witnesses x intervals) for all of them).

A change of state or of who is a witness (the view, a clock) refreshes the
aggregates without any pairwise work.

Invariants: pure; one entry per member given (`remove` drops one); no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from grstats.core.gtid_divergence import MemberGtids
from protocol.gtid import GtidSet

__all__ = ["GroupSets"]

_EMPTY: Final = GtidSet()


@dataclass(slots=True)
class _Aggregates:
    """What the witnesses' sets give every member, rebuilt after changes."""

    witnesses: tuple[str, ...] = ()
    common: GtidSet = _EMPTY  # intersection of every witness's executed set
    union: GtidSet = _EMPTY
    # witness -> intersection of the *other* witnesses' executed sets
    others_common: dict[str, GtidSet] = field(default_factory=dict)


class GroupSets:
    """Every member's sets and the pairwise facts between them, updated per member."""

    def __init__(self) -> None:
        self.members: dict[str, MemberGtids] = {}
        # (donor, member) -> the donor purged something the member lacks
        self._gap: dict[tuple[str, str], bool] = {}
        self._aggregates: _Aggregates | None = None
        self.set_operations = 0  # pairwise and aggregate set operations done (tests, benchmarks)

    def update(self, m: MemberGtids) -> None:
        """Take `m`'s current state; pairwise facts are refreshed only if its sets changed."""
        old = self.members.get(m.member_id)
        self.members[m.member_id] = m
        self._aggregates = None
        if old is not None and old.executed is m.executed and old.purged is m.purged:
            return
        if old is not None and old.executed == m.executed and old.purged == m.purged:
            return
        x = m.member_id
        for o_id, o in self.members.items():
            if o_id == x:
                continue
            self._gap[(o_id, x)] = not (o.purged - m.executed).is_empty()
            self._gap[(x, o_id)] = not (m.purged - o.executed).is_empty()
            self.set_operations += 2

    def remove(self, member_id: str) -> None:
        """Forget a member and its pairs."""
        if self.members.pop(member_id, None) is None:
            return
        self._aggregates = None
        for key in [k for k in self._gap if member_id in k]:
            del self._gap[key]

    def _built(self) -> _Aggregates:
        if self._aggregates is not None:
            return self._aggregates
        witnesses = tuple(sorted(m for m, g in self.members.items() if g.witness))
        sets = [self.members[w].executed for w in witnesses]
        agg = _Aggregates(witnesses)
        if sets:
            prefix = [sets[0]]
            for s in sets[1:]:
                prefix.append(prefix[-1] & s)
            suffix = [sets[-1]]
            for s in reversed(sets[:-1]):
                suffix.append(suffix[-1] & s)
            suffix.reverse()
            agg.common = prefix[-1]
            union = sets[0]
            for s in sets[1:]:
                union = union | s
            agg.union = union
            last = len(sets) - 1
            for i, w in enumerate(witnesses):
                if last == 0:
                    continue  # the only witness: no other to compare it with
                if i == 0:
                    agg.others_common[w] = suffix[1]
                elif i == last:
                    agg.others_common[w] = prefix[last - 1]
                else:
                    agg.others_common[w] = prefix[i - 1] & suffix[i + 1]
            self.set_operations += 4 * len(sets)
        self._aggregates = agg
        return agg

    def witnesses(self, excluding: str = "") -> tuple[str, ...]:
        """The witnesses' ids, sorted, `excluding` left out."""
        return tuple(w for w in self._built().witnesses if w != excluding)

    def candidates(self, member_id: str) -> GtidSet:
        """The member's GTIDs some witness lacks (`core.gtid_divergence`)."""
        agg = self._built()
        if not agg.witnesses:
            return _EMPTY
        return self.members[member_id].executed - agg.common

    def missing(self, member_id: str) -> GtidSet | None:
        """What every other witness has and it has not (None: no other witness)."""
        agg = self._built()
        others = [w for w in agg.witnesses if w != member_id]
        if not others:
            return None
        common = agg.others_common.get(member_id, agg.common)
        return common - self.members[member_id].executed

    def lacking(self, member_id: str) -> int:
        """How many GTIDs of the witnesses' union it has not (GR's missing count)."""
        return (self._built().union - self.members[member_id].executed).count()

    def donors(self, member_id: str) -> tuple[str, ...]:
        """The other witnesses that purged nothing it lacks, sorted."""
        return tuple(
            w
            for w in self.witnesses(excluding=member_id)
            if not self._gap.get((w, member_id), False)
        )
