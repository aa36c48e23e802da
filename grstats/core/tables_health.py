"""The tables' own health checks: what the receive side itself can be degraded by.

Strategy: the daemon checks its parts (`daemon/health.py`); `MemberTables`
adds these to every snapshot's `Health`, each checked every time (so
`grstats_health_status` shows the code at 0 while it holds): the pending GTID
sets at their byte bound (newcomers refused), a member sending a section
faster than its cadence within the last minute (`core.cadence`: the extras
are dropped unread; named by host:port), and the local server's view of
a member disagreeing with what its daemon published (`core.oracle`; which
members and columns: the details and grstats_member_status
SERVER_DISAGREEMENTS). Pure: reads its arguments only. `snapshot_figures`
joins them, with the tables' counters and gauges, to the daemon's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from grstats.core.cadence import OverCadence
from grstats.core.health import PENDING_GTIDS_FULL, SECTIONS_OVER_CADENCE, SERVER_ORACLE, Health
from grstats.core.oracle import ServerOracle
from grstats.core.pending_gtids import PendingGtidsTable
from grstats.core.registry import MemberRegistry, Remote
from grstats.core.snapshot import DaemonCounters, DaemonFigures

__all__ = ["OVER_CADENCE_WINDOW_US", "over_cadence", "snapshot_figures", "tables_health"]

#: A member's extras degrade /healthz while the last one is younger than this.
OVER_CADENCE_WINDOW_US = 60_000_000


def over_cadence(registry: MemberRegistry, now_us: int) -> list[tuple[Remote, str, OverCadence]]:
    """The members that sent a section past its cadence within `OVER_CADENCE_WINDOW_US`."""
    since = now_us - OVER_CADENCE_WINDOW_US
    return [
        (remote, name, extras)
        for _, remote in registry.items()
        for name, extras in sorted(remote.extras.items())
        if extras.last_us >= since
    ]


def tables_health(
    health: Health,
    pending: PendingGtidsTable,
    oracle: ServerOracle | None,
    over_cadence: Sequence[tuple[Remote, str, OverCadence]] = (),
) -> Health:
    """`health` with the tables' checks added.

    Args:
        health: the daemon's checks so far.
        pending: the registry's pending GTID sets.
        oracle: the server oracle (None for a collector: not checked).
        over_cadence: the members whose sections came faster than their cadence
            within the last `OVER_CADENCE_WINDOW_US` (`MemberRegistry.over_cadence`).

    Returns:
        A new Health.
    """
    held = f"bus: pending gtids hold {pending.bytes} of {pending.max_bytes} bytes"
    full = (f"{held} (newcomers refused)",) if pending.full() else ()
    health = health.check(PENDING_GTIDS_FULL, *full)
    health = health.check(SECTIONS_OVER_CADENCE, *map(_over_cadence, over_cadence))
    if oracle is None:
        return health
    return health.check(SERVER_ORACLE, *oracle.reasons())


def snapshot_figures(
    counters: DaemonCounters,
    own: DaemonFigures,
    registry: MemberRegistry,
    oracle: ServerOracle | None,
    now_us: int,
) -> tuple[DaemonCounters, dict[str, float], Health]:
    """A snapshot's counters, gauges and health: the tables' with the daemon's own.

    Args:
        counters: the tables' receive-path totals (`MemberTables.counters`).
        own: the daemon's own counters, gauges and checks.
        registry: the member registry (its pending GTID sets, its members' cadences).
        oracle: the server oracle (None for a collector).
        now_us: wall clock, microseconds.

    Returns:
        The counters with the daemon's added, the gauges, the health with the
        tables' checks (`tables_health`).
    """
    counters = dataclasses.replace(
        counters,
        bus_reconnects=own.bus_reconnects,
        messages_published=own.messages_published,
        left_out=dict(own.left_out),
        sections_unsendable=dict(own.sections_unsendable),
    )
    pending = registry.pending_gtids
    gauges = {**own.gauges, "pending_gtids_bytes": float(pending.bytes)}
    over = over_cadence(registry, now_us)
    return counters, gauges, tables_health(own.health, pending, oracle, over)


def _over_cadence(extra: tuple[Remote, str, OverCadence]) -> str:
    remote, name, counts = extra
    m = remote.envelope.member
    return (
        f"bus: {m.host}:{m.port} sends ext.{name} more often than its cadence "
        f"({counts.count} dropped unread)"
    )
