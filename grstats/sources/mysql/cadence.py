"""When a read of something that changes only with the group or the server is due again.

Strategy: what changes only with a view change, a role change, a restart or an
operator's action (the group communication information; whether the server
has WL#15620's applier tables) need not be read every poll. A `Cadence` says
it is due on the first poll, on a new session (a restarted server, a recycled
session, a failed read: a failed read drops the connection, so the next poll
has a new one), whenever the member's view id, state or role seen in the same
poll differ from those of the last read, when the wall clock stepped back
past the last read, and otherwise every `REREAD_S`. Nothing a table shows as a
per-second figure goes through it.
"""

from __future__ import annotations

from grstats.core.sample import LocalMember

# How stale such a read may get when nothing the poll sees changed: only an
# operator's action changes it without a view, state or role change, and an
# operator who just acted can wait half a minute. A module constant, not a
# setting: there is nothing to tune (a shorter period costs a query per poll).
REREAD_S = 30.0
_REREAD_US = int(REREAD_S * 1_000_000)


class Cadence:
    """The schedule of one slowly-changing read."""

    def __init__(self) -> None:
        self._key: tuple[object, str, str, str] | None = None
        self._read_us = 0

    def due(self, session: object, now_us: int, member: LocalMember) -> bool:
        """True when the read must be made in this poll (see the module docstring).

        Args:
            session: the connection the poll reads on (a new one: due).
            now_us: the poll's wall clock, µs.
            member: the local member as this poll read it.
        """
        key = (session, member.view_id, member.state, member.role)
        age_us = now_us - self._read_us
        return key != self._key or not 0 <= age_us < _REREAD_US

    def read(self, session: object, now_us: int, member: LocalMember, *, ok: bool) -> None:
        """Record a read made now; a failed one (`ok` False) leaves the next poll due."""
        self._key = (session, member.view_id, member.state, member.role) if ok else None
        self._read_us = now_us
