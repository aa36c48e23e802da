"""The tables' own health checks: what the receive side itself can be degraded by.

Strategy: the daemon checks its parts (`daemon/health.py`); `MemberTables`
adds these two to every snapshot's `Health`, each checked every time (so
`grstats_health_status` shows the code at 0 while it holds): the pending GTID
sets at their byte bound (newcomers refused), and the local server's view of
a member disagreeing with what its daemon published (`core.oracle`; which
members and columns: the details and grstats_member_status
SERVER_DISAGREEMENTS). Pure: reads its arguments only.
"""

from __future__ import annotations

from grstats.core.health import PENDING_GTIDS_FULL, SERVER_ORACLE, Health
from grstats.core.oracle import ServerOracle
from grstats.core.pending_gtids import PendingGtidsTable

__all__ = ["tables_health"]


def tables_health(
    health: Health, pending: PendingGtidsTable, oracle: ServerOracle | None
) -> Health:
    """`health` with the tables' checks added.

    Args:
        health: the daemon's checks so far.
        pending: the registry's pending GTID sets.
        oracle: the server oracle (None for a collector: not checked).

    Returns:
        A new Health.
    """
    held = f"bus: pending gtids hold {pending.bytes} of {pending.max_bytes} bytes"
    full = (f"{held} (newcomers refused)",) if pending.full() else ()
    health = health.check(PENDING_GTIDS_FULL, *full)
    if oracle is None:
        return health
    return health.check(SERVER_ORACLE, *oracle.reasons())
