"""Each simulated member's @@gtid_executed and @@gtid_purged, with scripted divergence.

Strategy: a member has executed every transaction certified up to the second
whose certified total is its applier queue short of now: the ledger's
GTID-set text (`gtids.GtidLedger.set_text`) at that second. So sets only
grow, a member with an empty queue has the group's whole certified set, and
a slow member's set is the group's set of some seconds ago -- never a GTID
the others lack. The script adds what the group never certified:

* "errant_write": `member` commits `count` transactions with sql_log_bin on
  and super_read_only off: GTIDs ``<member uuid>:n`` numbered on from its last;
* "inject_errant": the others receive `member`'s errant GTIDs written before
  then (empty transactions injected on the primary, replicated to all);
* "purge": `member` purges its binary logs: @@gtid_purged becomes its
  @@gtid_executed of that second (until then it purged nothing);
* "restore_backup": `member` is restored from a backup `duration_s` old: from
  then on its executed and purged sets are the group's certified set of that
  earlier second (it stays behind; the model does not run its recovery);
* "provision_from": `member` is re-provisioned from `donor`, as by a clone:
  its executed and purged sets become the donor's of that second -- the
  donor's GTIDs the group never certified (errant ones) included, its own
  earlier ones gone -- and it goes on applying the group's transactions.

Invariants: a pure function of (settings, time); purged is within executed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grstats.sources.simulated.gtids import GtidLedger
from grstats.sources.simulated.settings import SimulationSettings
from grstats.sources.simulated.workload import Workload
from protocol import GtidSet, GtidState

__all__ = ["GTID_ACTIONS", "GtidStates"]

GTID_ACTIONS = ("errant_write", "inject_errant", "purge", "restore_backup", "provision_from")
_EMPTY = GtidSet()


class GtidStates:
    """@@gtid_executed / @@gtid_purged per member and second.

    Args:
        settings: the group's knobs (script events of GTID_ACTIONS).
        workload: the group's (possibly throttled) workload.
        ledger: the GTID ledger of that workload.
        queue: (member index, second) -> its applier queue then.
    """

    def __init__(
        self,
        settings: SimulationSettings,
        workload: Workload,
        ledger: GtidLedger,
        queue: Callable[[int, int], int],
    ) -> None:
        self._members = settings.members
        self._w = workload
        self._ledger = ledger
        self._queue = queue
        self._events = sorted(
            (int(ev.at_s), ev.action, settings.members.index(ev.member.lower()), ev)
            for ev in settings.script
            if ev.action in GTID_ACTIONS
        )

    def _certified(self, s: int, short_by: int = 0) -> GtidSet:
        """The group's certified GTIDs at the latest second whose total is `short_by` fewer."""
        w = self._w
        ok = w.ok_at(s)
        total = int(ok.sum())
        if short_by >= total:
            return _EMPTY
        if short_by > 0:
            s = w.first_exceeding(np.ones_like(ok), total - short_by, s) - 1
            ok = w.ok_at(s)
        return GtidSet.parse(self._ledger.set_text(ok, s))

    def _errant(self, m: int, s: int) -> GtidSet:
        n = sum(
            ev.count
            for at, action, who, ev in self._events
            if who == m and at <= s and action == "errant_write"
        )
        return GtidSet([(self._members[m], "", 1, n)]) if n else _EMPTY

    def _reset(self, m: int, s: int) -> tuple[int, str, int] | None:
        """Member m's last restore or re-provisioning by second s: (second, action, donor)."""
        last = None
        for at, action, who, ev in self._events:
            if who == m and at <= s and action in ("restore_backup", "provision_from"):
                if action == "provision_from":
                    last = (at, action, self._members.index(ev.donor))
                else:  # restored to the group's set of the backup's second
                    last = (at - int(ev.duration_s), action, -1)
        return last

    def executed(self, m: int, s: int) -> GtidSet:
        """Member m's @@gtid_executed at second s."""
        reset = self._reset(m, s)
        own = self._errant(m, s)
        if reset is not None and reset[1] == "restore_backup":
            base = self._certified(reset[0])
        else:
            base = self._certified(s, max(0, self._queue(m, s)))
        out = base
        if reset is not None and reset[1] == "provision_from":
            at, _, donor = reset
            own = own - self._errant(m, at)  # the clone replaced what it had written
            out = out | (self.executed(donor, at) - self._certified(at))
        out = out | own
        for at, action, who, _ev in self._events:
            if action == "inject_errant" and at <= s and who != m:
                out = out | self._errant(who, at)
        return out

    def purged(self, m: int, s: int, executed: GtidSet) -> GtidSet:
        """Member m's @@gtid_purged at second s (`executed`: its executed set then)."""
        last = None
        for at, action, who, ev in self._events:
            if who == m and at <= s and action in ("purge", "restore_backup", "provision_from"):
                last = (at, action, ev)
        if last is None:
            return _EMPTY
        at, action, ev = last
        if action == "provision_from":
            donor = self._members.index(ev.donor)
            return self.purged(donor, at, self.executed(donor, at)) & executed
        return self.executed(m, at) & executed

    def state(self, m: int, t_us: int) -> GtidState:
        """Both sets of member m at t_us, read at t_us."""
        s = t_us // 1_000_000
        executed = self.executed(m, s)
        return GtidState(t_us, executed, self.purged(m, s, executed))
