"""Membership: each member's state and role, and the group's view, at any second.

Strategy: a member is ONLINE unless a scripted set_state says otherwise
(for its duration, then ONLINE again). A member is in the group's view while
ONLINE, RECOVERING or UNREACHABLE (a suspected member stays in the view until
it is expelled); OFFLINE and ERROR are outside it. Every second at which the
set of members in the view changes installs one view (xcom delivers the
joiners and leavers of one configuration in one view).

VIEW_ID is MySQL's `<fixed>:<monotonic>` (Gcs_xcom_view_identifier): the
fixed part is chosen by the bootstrapping member as getsystime() in 100 ns
units plus rand() % 1000 and kept for the group's life; the monotonic part
is 1 in the bootstrap view and grows by one for each installed view. The
model's group is bootstrapped at `epoch_s` (fixed part = epoch_s * 10**7 +
a seed-derived 0..999) and its members joined one by one then, so the view
at the epoch is number len(members); each later view change adds one. A
member outside the view shows an empty VIEW_ID.

Joins write a View_change_log_event that every ONLINE member already in the
view applies as one transaction (counted in REMOTE_APPLIED; the joiner
applies it while RECOVERING, which is not counted). MySQL 8.3.0 and later no
longer log it when every member is 8.3.0 or later, so the model counts it
only when `version` is older than 8.3.0.

Invariants: every daemon computes the same state, role and VIEW_ID for any
(member, second); the monotonic part never decreases.
"""

from __future__ import annotations

import bisect

import numpy as np

from grstats.core.sample import in_group
from grstats.sources.simulated.hashing import I64, key, mix_py
from grstats.sources.simulated.settings import SimulationSettings, version_tuple
from grstats.sources.simulated.workload import event_second

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "IN_VIEW", "Membership", "logs_view_change_event"]

# where a member without an address in settings.hosts is: one host, MySQL's default port
# plus the member's index (each member its own host:port, as a group on one machine)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3306

IN_VIEW = ("ONLINE", "RECOVERING", "UNREACHABLE")
_TICKS_PER_S = 10_000_000  # getsystime() counts 100 ns ticks
_VCLE_REMOVED = (8, 3, 0)  # MEMBER_VERSION_REMOVING_VCLE


def logs_view_change_event(version: str) -> bool:
    """Whether members of this MySQL version log a View_change_log_event on a join."""
    parsed = version_tuple(version)
    return parsed is not None and parsed < _VCLE_REMOVED


class Membership:
    """States, roles, hosts and view ids of the members (pure; precomputed)."""

    def __init__(self, settings: SimulationSettings) -> None:
        """Precompute each member's state changes and the group's views.

        Args:
            settings: the group's knobs (script events of action set_state).
        """
        s = settings
        self.settings = s
        n = len(s.members)
        index = {m: i for i, m in enumerate(s.members)}
        states: list[list[tuple[int, int, str]]] = [[] for _ in range(n)]
        for order, ev in enumerate(s.script):
            if ev.action == "set_state":
                m, sec = index[ev.member.lower()], event_second(ev.at_s)
                states[m].append((sec, order, ev.state))
                if ev.duration_s > 0:
                    states[m].append((event_second(ev.at_s + ev.duration_s), order, "ONLINE"))
        self._state_secs = [[sec for sec, _, _ in sorted(st)] for st in states]
        self._state_vals = [[v for _, _, v in sorted(st)] for st in states]
        self._fixed = s.epoch_s * _TICKS_PER_S + mix_py(key(s.seed, s.group, "view")) % 1000
        self._view_secs: list[int] = []  # seconds at which a new view was installed
        self._vcle_secs: list[list[int]] = [[] for _ in range(n)]  # joins m applied, ONLINE
        vcle = logs_view_change_event(s.version)
        view = set(range(n))
        for sec in sorted({sec for secs in self._state_secs for sec in secs}):
            now = {m for m in range(n) if self.state(m, sec) in IN_VIEW}
            if now == view:
                continue
            self._view_secs.append(sec)
            joined = now - view
            if joined and vcle:
                for m in now - joined:
                    if self.state(m, sec) == "ONLINE":
                        self._vcle_secs[m].append(sec)
            view = now

    def state(self, m: int, s: int) -> str:
        """Member m's MEMBER_STATE at second s."""
        i = bisect.bisect_right(self._state_secs[m], s)
        return self._state_vals[m][i - 1] if i else "ONLINE"

    def scripted(self, m: int) -> bool:
        """Whether member m's state ever changes."""
        return bool(self._state_secs[m])

    def role(self, m: int, state: str) -> str:
        """MEMBER_ROLE of member m in `state` (empty outside ONLINE and RECOVERING)."""
        if not in_group(state):
            return ""
        if self.settings.mode == "multi-primary" or m == 0:
            return "PRIMARY"
        return "SECONDARY"

    def host(self, m: int) -> tuple[str, int]:
        """(MEMBER_HOST, MEMBER_PORT): from settings.hosts, else DEFAULT_HOST:DEFAULT_PORT+index."""
        member = self.settings.members[m]
        for k, value in self.settings.hosts.items():
            if k.lower() == member:
                return value[0], int(value[1])
        return DEFAULT_HOST, DEFAULT_PORT + m

    def in_view(self, m: int, s: int) -> bool:
        """Whether member m belongs to the group's view at second s."""
        return self.state(m, s) in IN_VIEW

    def view_id(self, m: int, s: int) -> str:
        """VIEW_ID member m shows at second s ("" while outside the view)."""
        if not self.in_view(m, s):
            return ""
        monotonic = len(self.settings.members) + bisect.bisect_right(self._view_secs, s)
        return f"{self._fixed}:{monotonic}"

    def views_changed(self) -> bool:
        """Whether any view is installed after the epoch's."""
        return bool(self._view_secs)

    def view_changes_applied(self, m: int, start: int, stop: int) -> I64:
        """View_change_log_event transactions member m applied, ONLINE, through each second."""
        if not self._vcle_secs[m]:
            return np.zeros(stop - start, dtype=np.int64)
        secs = np.arange(start, stop, dtype=np.int64)
        applied: I64 = np.searchsorted(np.array(self._vcle_secs[m], dtype=np.int64), secs, "right")
        return applied.astype(np.int64)
