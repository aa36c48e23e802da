"""The members' identity, state and GTID texts: live, and as history columns in bulk.

Strategy: TRANSACTIONS_COMMITTED_ALL_MEMBERS is the certifier's stable set
(the same text for every member, "" on a member still RECOVERING) and the
last conflict-free GTID is the ledger's. History rows carry the GTID texts
only on seconds divisible by `GTID_EVERY_S` (as if flag '1'); a bulk read
of each member's day builds each second's pair once for all members, from a
cache of two days of them (a few hundred KB). Identity, state, role and
VIEW_ID come from the membership; a member never scripted is ONLINE
throughout, and views that never change are read once.

Invariants: pure functions of (settings, second); the cache is bounded
(`_TEXTS_CACHED` seconds, oldest first out); not thread-safe.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from grstats.sources.simulated.certifier import Certification
from grstats.sources.simulated.gtids import GtidLedger
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.settings import SimulationSettings

__all__ = ["GTID_EVERY_S", "MemberTexts"]

GTID_EVERY_S = 30  # history rows carry GTID texts on seconds divisible by this
_TEXTS_CACHED = 2 * 86_400 // GTID_EVERY_S  # two days of GTID texts (a few hundred KB)


class MemberTexts:
    """The text columns of every member; cached, not thread-safe.

    Args:
        settings: the group's knobs (group name, members, version).
        membership: states, roles, hosts and views.
        cert: the certifier (the committed text).
        ledger: the GTID ledger (the last conflict-free GTID).
    """

    def __init__(
        self,
        settings: SimulationSettings,
        membership: Membership,
        cert: Certification,
        ledger: GtidLedger,
    ) -> None:
        self._settings, self._members, self._cert, self._ledger = (
            settings,
            membership,
            cert,
            ledger,
        )
        self._texts: OrderedDict[int, tuple[str, str]] = OrderedDict()

    def committed(self, m: int, s: int) -> str:
        """Member m's TRANSACTIONS_COMMITTED_ALL_MEMBERS at second s ("" while RECOVERING)."""
        if self._members.state(m, s) == "RECOVERING":
            return ""
        return self._cert.committed_text(s)

    def _gtid_texts(self, s: int) -> tuple[str, str]:
        """(the group's committed GTID text, last conflict-free GTID) at second s: the
        same for every member, so a bulk read of each member's day builds them once."""
        got = self._texts.get(s)
        if got is None:
            got = self._texts[s] = (
                self._cert.committed_text(s),
                self._ledger.last_conflict_free(s),
            )
            if len(self._texts) > _TEXTS_CACHED:
                self._texts.popitem(last=False)
        return got

    def columns(self, m: int, start_s: int, n_seconds: int) -> dict[str, list[Any]]:
        """Member m's text columns for seconds [start_s, start_s + n_seconds).

        Returns:
            Column name -> list of n_seconds values (identity, state, role,
            VIEW_ID, and the GTID texts: None off the `GTID_EVERY_S` seconds).
        """
        settings, ms = self._settings, self._members
        secs = range(start_s, start_s + n_seconds)
        host, port = ms.host(m)
        if ms.scripted(m):
            states = [ms.state(m, x) for x in secs]
            roles = [ms.role(m, st) for st in states]
        else:
            states, roles = ["ONLINE"] * n_seconds, [ms.role(m, "ONLINE")] * n_seconds
        if ms.views_changed():
            views = [ms.view_id(m, x) for x in secs]
        else:
            views = [ms.view_id(m, start_s)] * n_seconds
        committed: list[str | None] = [None] * n_seconds
        last_free: list[str | None] = [None] * n_seconds
        for i in range((-start_s) % GTID_EVERY_S, n_seconds, GTID_EVERY_S):
            group_text, last_free[i] = self._gtid_texts(start_s + i)
            committed[i] = "" if states[i] == "RECOVERING" else group_text  # ms.state(m, s)
        return {
            "group_name": [settings.group] * n_seconds,
            "member_id": [settings.members[m]] * n_seconds,
            "member_host": [host] * n_seconds,
            "member_port": [port] * n_seconds,
            "member_state": states,
            "member_role": roles,
            "member_version": [settings.version] * n_seconds,
            "view_id": views,
            "transactions_committed_all_members": committed,
            "last_conflict_free_transaction": last_free,
        }
