"""`MySQLSource`: one `sample()` call reads the local member within ``poll_timeout``.

Strategy: the whole call (a reconnect attempt included) runs under one
deadline; after a working connection breaks, one immediate reconnect is tried
in the same call. While the server is unreachable the last good sample is
returned (restamped) until ``offline_after``; then an OFFLINE member. Lag
(WL#7374), applier metrics (WL#15620) and the server's flow-control figures
(Gr_flow_control_throttle_*) are extras read after the stats
within what is left of the deadline minus a margin: their failure never loses
the stats sample (`extras.Extras`; the package docstring lists the queries).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import asyncmy
import structlog

from grstats.core.sample import LocalMember, LocalSample, ServerViewMember, in_group
from grstats.sources.mysql.connection import Connection
from grstats.sources.mysql.extras import Extras
from grstats.sources.mysql.gtidstate import GTID_VARIABLES, build_gtid_state
from grstats.sources.mysql.settings import MySQLSettings
from grstats.sources.mysql.values import (
    PollFailed,
    Result,
    dict_rows,
    first_row,
    flow_control_mode,
    local_row,
    member_and_stats,
    server_view,
)
from protocol import FLOW_CONTROL_QUOTA, PipelineStats

log = structlog.get_logger("grstats.sources.mysql")

# The two tables whole: the local member's rows (ours by UUID, or the one with an
# empty MEMBER_ID that MySQL shows before GR ever started -- ps_information.cc:
# plugin never initialised) and every other member of the server's view
# (WL#10380: the server receives every member's stats) from one read each.
_SQL_MEMBER_STATS = "SELECT * FROM performance_schema.replication_group_member_stats"
_SQL_MEMBERS = "SELECT * FROM performance_schema.replication_group_members"
# The variables in one round trip, read after the stats so that @@gtid_executed
# holds every transaction their TRANSACTIONS_COMMITTED_ALL_MEMBERS names; without
# the GR plugin its variables are unknown (error 1193): then without them.
_SQL_VARIABLES = (
    "SELECT @@server_uuid, @@group_replication_group_name,"
    f" @@group_replication_flow_control_mode, {GTID_VARIABLES}"
)
_SQL_VARIABLES_NO_GR = f"SELECT @@server_uuid, {GTID_VARIABLES}"
_SQL_IDENTITY = "SELECT @@server_uuid"
# the three in one round trip, in this order, before the extras' every-poll reads
# (extras.Extras.every_poll, connection.Connection.batch)
_STATS_BATCH = (
    ("member_stats", _SQL_MEMBER_STATS),
    ("members", _SQL_MEMBERS),
    ("variables", _SQL_VARIABLES),
)


class MySQLSource:
    """Fulfils `grstats.sources.base.Source` by polling one MySQL server."""

    def __init__(self, settings: MySQLSettings) -> None:
        self._settings = settings
        self._db = Connection(settings)
        self._lock = asyncio.Lock()
        self._last_good: LocalSample | None = None
        self._offline_logged = False
        self._extras = Extras(self._db)

    @property
    def connected(self) -> bool:
        """True while a connection to the server is open."""
        return self._db.connected

    async def start(self) -> None:
        """Try a first connection (bounded by ``connect_timeout``); never raises."""
        async with self._lock:
            await self._db.ensure()

    async def sample(self, now_us: int) -> LocalSample:
        """Read the local member; returns within ``poll_timeout`` and never raises.

        Args:
            now_us: the caller's wall clock, µs since the epoch (also the clock
                of the ``offline_after`` grace).

        Returns:
            A fresh sample, the last good one restamped (server unreachable,
            grace running) or an OFFLINE sample (grace over, or never reached).
        """
        loop = asyncio.get_running_loop()
        async with self._lock:
            poll_timeout = self._settings.poll_timeout
            deadline = loop.time() + poll_timeout
            self._extras.start(deadline, poll_timeout)
            try:
                async with asyncio.timeout_at(deadline):
                    fresh = await self._read_with_one_retry(now_us)
            except TimeoutError:
                self._db.lost("poll_timeout", None, retry_now=False)
                fresh = None
            if fresh is not None:
                self._last_good = fresh
                self._offline_logged = False
                return fresh
            return self._unreachable_sample(now_us)

    async def close(self) -> None:
        """Close the connection (QUIT, bounded by ``connect_timeout``); idempotent."""
        async with self._lock:
            await self._db.close()

    # -- connection management -------------------------------------------------

    async def _read_with_one_retry(self, now_us: int) -> LocalSample | None:
        for _ in range(2):
            was_open = self.connected
            conn = await self._db.ensure()
            if conn is None:
                return None
            try:
                return await self._read(conn, now_us)
            except PollFailed as exc:
                # A session that worked until now (killed, recycled) gets one
                # immediate reconnect; a fresh one that fails backs off.
                self._db.lost("query_failed", exc, retry_now=was_open)
                if not was_open:
                    return None
        return None

    def _unreachable_sample(self, now_us: int) -> LocalSample:
        last = self._last_good
        grace_us = int(self._settings.offline_after * 1_000_000)
        if last is not None and now_us - last.sampled_at_us < grace_us:
            return replace(last, sampled_at_us=now_us)
        if last is None:
            # never reached: nothing shown, as for a server whose GR never started
            member = LocalMember(
                group_name="",
                member_id="",
                host="",
                port=None,
                state="OFFLINE",
                role="",
                version="",
                communication_stack="",
            )
            mode = FLOW_CONTROL_QUOTA
        else:
            member = replace(last.member, state="OFFLINE", role="", view_id="")
            mode = last.stats.flow_control_mode
            if not self._offline_logged:
                log.warning(
                    "mysql.member_offline", member_id=member.member_id, reason="unreachable"
                )
                self._offline_logged = True
        return LocalSample(
            member=member, stats=PipelineStats(flow_control_mode=mode), sampled_at_us=now_us
        )

    # -- reading ---------------------------------------------------------------

    async def _read(self, conn: asyncmy.Connection, now_us: int) -> LocalSample:
        extras = self._extras
        got = await extras.every_poll(conn, _STATS_BATCH)  # the lag's, the Gr_* too: one trip
        stats_rows, member_rows = dict_rows(got[0]), dict_rows(got[1])
        server_uuid, group_name, mode, gtids = await self._variables(conn, got[2])
        member, stats = member_and_stats(
            server_uuid,
            group_name,
            local_row(server_uuid, stats_rows),
            local_row(server_uuid, member_rows),
            mode,
        )
        view: tuple[ServerViewMember, ...] = ()
        if in_group(member.state):
            view = server_view(server_uuid, group_name, stats_rows, member_rows, mode)
        # who the server's replication_group_members lists: the others' word counts only
        # for them (core.gtid_watch); outside the group, only itself
        listed = frozenset({member.member_id, *(v.member.member_id for v in view)} - {""})
        lag = extras.lag(member.state)
        applier = await extras.applier(conn, now_us, member, stats.transactions_waiting_apply)
        flow, commit_path = extras.gr_status()
        return LocalSample(
            member=member,
            stats=stats,
            sampled_at_us=now_us,
            lag=lag,
            flow_control=flow,
            applier=applier,
            gtid_state=None if gtids is None else build_gtid_state(gtids, now_us),
            server_view=view,
            view=listed,
            commit_path=commit_path,
            communication=await extras.communication(conn, now_us, member),
        )

    async def _variables(
        self, conn: asyncmy.Connection, got: Result | None
    ) -> tuple[Any, Any, int, Sequence[Any] | None]:
        """(@@server_uuid, group name or None, flow-control mode, the GTID sets' row or None)
        from `got`, the answer to ``_SQL_VARIABLES``, or the fallbacks when it was refused."""
        db = self._db
        if got is not None:
            uuid, group, mode, *gtids = first_row(got[1], 5)[:5]
            return uuid, group, flow_control_mode(mode), gtids
        got = await db.query(conn, "variables", _SQL_VARIABLES_NO_GR)
        if got is not None:
            uuid, *gtids = first_row(got[1], 3)[:3]
            return uuid, None, FLOW_CONTROL_QUOTA, gtids
        got = await db.query(conn, "identity", _SQL_IDENTITY)
        if got is None:
            raise PollFailed("the server did not answer the identity query")
        return first_row(got[1], 1)[0], None, FLOW_CONTROL_QUOTA, None
