"""How the daemon's parts are put together: tables, bus, subscriptions.

A member daemon subscribes to its group and leaves a Will; a collector
subscribes to every group, on an MQTT 5 shared subscription when several
collectors split the load ([bus] shared_group), and reads the retained stats
through a plain subscription on every connect (shared subscriptions get no
retained messages).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from grstats.bus.client import Bus, MessageHandler
from grstats.bus.options import max_packet_size_for
from grstats.config import Settings
from grstats.core import topics
from grstats.core.snapshot import DaemonSnapshot
from grstats.core.tables import Limits, MemberTables, RegistryLimits
from grstats.daemon.publisher import Publisher

if TYPE_CHECKING:  # imported with [sql] only
    from grstats.daemon.sqlchild import SqlChild

# A shared collector sees about 1/N of each member's stats (N collectors, the
# broker's pick per message): a gap of a few periods is normal, not silence.
SHARED_SILENCE_FACTOR = 10


def make_tables(settings: Settings, *, group: str | None, member_id: str | None) -> MemberTables:
    """The daemon's tables with the configured timing and bounds (group None: collector).

    A collector on a shared subscription hears about 1/N of each member's
    messages, so it waits SHARED_SILENCE_FACTOR times longer before calling a
    member unreachable (a member that says `offline` still goes at once).
    """
    p = settings.publish
    lim = settings.limits
    shared = group is None and bool(settings.bus.shared_group)
    return MemberTables(
        group=group,
        local_member_id=member_id,
        registry_limits=RegistryLimits(
            period_s=p.period,
            unreachable_after=p.unreachable_after * (SHARED_SILENCE_FACTOR if shared else 1),
            forget_after_s=p.forget_after,
            max_members_per_group=lim.max_members_per_group,
            max_groups=lim.max_groups,
        ),
        limits=Limits(
            max_envelope_size=lim.max_envelope_size,
            max_status_size=lim.max_status_size,
            max_clock_skew_s=lim.max_clock_skew,
        ),
        flow_control=settings.flow_control.core(),
        catch_up_limit_s=settings.flow_control.failover_catch_up_limit,
        gtid_interval_s=p.gtid_interval,
        clone_threshold=settings.recovery.clone_threshold,
    )


def collector_subscriptions(prefix: str, shared_group: str) -> tuple[list[str], list[str]]:
    """The collector's topic filters: (subscriptions, snapshot filters).

    Args:
        prefix: the topic prefix.
        shared_group: "" for a collector that takes every message, else the
            MQTT 5 shared-subscription group its stats are split in.

    Returns:
        The filters to keep subscribed, and those to read the retained
        messages of on every connect (`Bus` snapshot_filters).
    """
    if not shared_group:
        return [topics.collector_filter(prefix)], []
    stats = topics.topic(prefix, "+", "+", topics.STATS_KIND)
    unshared = [topics.topic(prefix, "+", "+", k) for k in (topics.STATUS_KIND, topics.GTIDS_KIND)]
    return [f"$share/{shared_group}/{stats}", *unshared], [stats]


def make_bus(
    settings: Settings,
    publisher: Publisher | None,
    handler: MessageHandler,
    on_connect: Callable[[], Awaitable[None]],
) -> Bus:
    """The daemon's bus: a member's (its group, its Will) or a collector's (every group)."""
    # The broker never sends us a packet an envelope at our limit could not fill.
    b = dataclasses.replace(
        settings.bus, max_packet_size=max_packet_size_for(settings.limits.max_envelope_size)
    )
    if publisher is None:
        subscriptions, snapshot = collector_subscriptions(b.prefix, b.shared_group)
        return Bus(
            b,
            subscriptions=subscriptions,
            snapshot_filters=snapshot,
            handler=handler,
            on_connect=on_connect,
        )
    options = dataclasses.replace(b, client_id=b.client_id or f"grstats-{publisher.member_id}")
    return Bus(
        options,
        subscriptions=[topics.member_filter(b.prefix, publisher.group)],
        handler=handler,
        will=publisher.will(),
        on_connect=on_connect,
    )


def make_sql(settings: Settings, snapshot: Callable[[], DaemonSnapshot]) -> SqlChild | None:
    """The supervisor of the SQL endpoint's process ([sql]), not started; None without [sql].

    `snapshot` gives a child that has just started the live tables (it starts on
    the first connection).

    Its own process (DESIGN.md: nothing a client does reaches the loop). Not fatal:
    the daemon serves its other duties and /healthz says "sql_down" while the child
    cannot listen (it tries again) or is restarted.
    """
    if not settings.sql.enabled:
        return None
    # deferred: a daemon without [sql] never loads the endpoint's side (no cycle)
    from grstats.daemon.sqlchild import SqlChild, child_config  # noqa: PLC0415

    return SqlChild(child_config(settings), snapshot, child_timeout=settings.sql.child_timeout)
