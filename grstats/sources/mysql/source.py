"""`MySQLSource`: one `sample()` call reads the local member within ``poll_timeout``.

Strategy: the whole call (a reconnect attempt included) runs under one
deadline; after a working connection breaks, one immediate reconnect is tried
in the same call. While the server is unreachable the last good sample is
returned (restamped) until ``offline_after``; then an OFFLINE member. Lag
(WL#7374), applier metrics (WL#15620) and the server's flow-control figures
(Gr_flow_control_throttle_*) are extras read after the stats
within what is left of the deadline minus a margin: their failure never loses
the stats sample (see the package docstring for the queries).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import asyncmy
import structlog

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.lag import ChannelLag
from grstats.core.sample import (
    LocalMember,
    LocalSample,
    ServerFlowControl,
    ServerViewMember,
    in_group,
)
from grstats.sources.mysql import applier, commitstats, flowstats, gtidstate, lag
from grstats.sources.mysql.connection import Connection
from grstats.sources.mysql.settings import MySQLSettings
from grstats.sources.mysql.values import (
    PollFailed,
    dict_rows,
    first_row,
    flow_control_mode,
    local_row,
    member_and_stats,
    server_view,
)
from protocol import (
    FLOW_CONTROL_QUOTA,
    CommitPathCounters,
    GroupCommunication,
    GtidState,
    PipelineStats,
)

log = structlog.get_logger("grstats.sources.mysql")

_SQL_IDENTITY = "SELECT @@server_uuid, @@group_replication_group_name"
_SQL_IDENTITY_NO_GR = "SELECT @@server_uuid"
# The local row: ours by UUID, or the one with an empty MEMBER_ID that MySQL
# shows before GR ever started (ps_information.cc: plugin never initialised).
_SQL_MEMBER_STATS = (
    "SELECT * FROM performance_schema.replication_group_member_stats"
    " WHERE MEMBER_ID = @@server_uuid OR MEMBER_ID = ''"
)
_SQL_MEMBERS = (
    "SELECT * FROM performance_schema.replication_group_members"
    " WHERE MEMBER_ID = @@server_uuid OR MEMBER_ID = ''"
)
_SQL_FLOW_CONTROL = "SELECT @@group_replication_flow_control_mode"
# Every member of the server's view (WL#10380: the server receives every member's
# stats itself): the members a daemon may not publish for, and the oracle.
_SQL_VIEW_STATS = "SELECT * FROM performance_schema.replication_group_member_stats"
_SQL_VIEW_MEMBERS = "SELECT * FROM performance_schema.replication_group_members"
# Share of poll_timeout kept back from the lag queries, so that their own
# deadline fires first and the stats sample is still returned.
_LAG_MARGIN = 0.1


class MySQLSource:
    """Fulfils `grstats.sources.base.Source` by polling one MySQL server."""

    def __init__(self, settings: MySQLSettings) -> None:
        self._settings = settings
        self._db = Connection(settings)
        self._lock = asyncio.Lock()
        self._last_good: LocalSample | None = None
        self._offline_logged = False
        self._lag_deadline = 0.0  # loop time by which the lag queries must be done
        self._lag_failures_logged: set[str] = set()

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
            self._lag_deadline = deadline - _LAG_MARGIN * poll_timeout
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
        identity = await self._db.query(conn, "identity", _SQL_IDENTITY)
        group_name: Any = None
        if identity is None:
            identity = await self._db.query(conn, "identity", _SQL_IDENTITY_NO_GR)
            if identity is None:
                raise PollFailed("the server did not answer the identity query")
            server_uuid = first_row(identity[1], 1)[0]
        else:
            server_uuid, group_name = first_row(identity[1], 2)[:2]
        stats_row = local_row(await self._db.query(conn, "member_stats", _SQL_MEMBER_STATS))
        member_row = local_row(await self._db.query(conn, "members", _SQL_MEMBERS))
        mode_result = await self._db.query(conn, "flow_control_mode", _SQL_FLOW_CONTROL)
        mode = flow_control_mode(first_row(mode_result[1], 1)[0] if mode_result else None)

        member, stats = member_and_stats(server_uuid, group_name, stats_row, member_row, mode)
        lag = await self._read_lag(conn, member.state)
        applier = await self._read_applier(conn, now_us, stats.transactions_waiting_apply)
        flow, commit_path = await self._read_gr_status(conn)
        view = await self._read_server_view(conn, server_uuid, group_name, mode, member.state)
        return LocalSample(
            member=member,
            stats=stats,
            sampled_at_us=now_us,
            lag=lag,
            flow_control=flow,
            applier=applier,
            gtid_state=await self._read_gtid_state(conn, now_us),
            server_view=view,
            commit_path=commit_path,
            communication=await self._read_communication(conn),
        )

    async def _read_server_view(
        self, conn: asyncmy.Connection, server_uuid: Any, group: Any, mode: int, state: str
    ) -> tuple[ServerViewMember, ...]:
        """Every other member of the server's view; () when alone or unreadable.

        Never raises; shares the lag queries' deadline, so the stats sample survives.
        """
        if conn is not self._db.conn or not in_group(state):
            return ()
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                stats = await self._db.query(conn, "view_stats", _SQL_VIEW_STATS)
                members = await self._db.query(conn, "view_members", _SQL_VIEW_MEMBERS)
        except TimeoutError:
            self._lag_failed("server_view_timeout", None)
            return ()
        except PollFailed as exc:
            self._lag_failed("server_view_query_failed", exc)
            return ()
        return server_view(server_uuid, group, dict_rows(stats), dict_rows(members), mode)

    async def _read_gtid_state(self, conn: asyncmy.Connection, now_us: int) -> GtidState | None:
        """@@gtid_executed / @@gtid_purged (gtidstate.py); None when unreadable. Never
        raises; shares the lag queries' deadline.
        """
        if conn is not self._db.conn:  # an earlier extra dropped the connection
            return None
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                result = await self._db.query(conn, "gtids", gtidstate.SQL_GTIDS)
        except TimeoutError:
            self._lag_failed("gtids_timeout", None)
            return None
        except PollFailed as exc:
            self._lag_failed("gtids_query_failed", exc)
            return None
        rows = result[1] if result else ()
        return gtidstate.build_gtid_state(rows[0] if rows else None, now_us)

    async def _read_gr_status(
        self, conn: asyncmy.Connection
    ) -> tuple[ServerFlowControl | None, CommitPathCounters | None]:
        """The Gr_* status variables in one query: the flow-control figures
        (flowstats.py) and the commit-path ones (commitstats.py); None for each
        the server does not show or when they cannot be read. Never raises;
        shares the lag queries' deadline.
        """
        if conn is not self._db.conn:  # an earlier extra dropped the connection
            return None, None
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                result = await self._db.query(conn, "flow_stats", commitstats.SQL_GR_STATUS)
        except TimeoutError:
            self._lag_failed("flow_stats_timeout", None)
            return None, None
        except PollFailed as exc:
            self._lag_failed("flow_stats_query_failed", exc)
            return None, None
        rows = dict_rows(result)
        commit_path = commitstats.build_commit_path(rows)
        return (
            flowstats.build_server_flow_control(rows),
            commit_path if commit_path.shown() else None,
        )

    async def _read_communication(self, conn: asyncmy.Connection) -> GroupCommunication | None:
        """replication_group_communication_information (commitstats.py); None when the
        server has no such table or row, or it cannot be read. Never raises; shares
        the lag queries' deadline.
        """
        if conn is not self._db.conn:  # an earlier extra dropped the connection
            return None
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                result = await self._db.query(
                    conn, "communication", commitstats.SQL_COMMUNICATION, missing_ok=True
                )
        except TimeoutError:
            self._lag_failed("communication_timeout", None)
            return None
        except PollFailed as exc:
            self._lag_failed("communication_query_failed", exc)
            return None
        return commitstats.build_communication(dict_rows(result))

    async def _read_applier(
        self, conn: asyncmy.Connection, now_us: int, applier_queue: int
    ) -> MemberApplier | None:
        """WL#15620's tables, or what 8.0's tell (applier.py); None when unreadable.

        Never raises; shares the lag queries' deadline, so the stats sample survives.
        """
        if conn is not self._db.conn:  # the lag read failed and dropped the connection
            return None
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                metrics = await self._db.query(
                    conn, "applier_metrics", applier.SQL_METRICS, missing_ok=True
                )
                if metrics is not None:
                    progress = await self._db.query(conn, "applier_progress", applier.SQL_PROGRESS)
                    rows = dict_rows(metrics)
                    if not self._db.utc_session:  # LAST_APPLIER_START would be in the wrong zone
                        rows = [{**r, col.LAST_APPLIER_START: None} for r in rows]
                    return applier.build_native(now_us, rows, dict_rows(progress))
                workers = await self._db.query(conn, "applier_by_worker", lag.SQL_WORKERS)
        except TimeoutError:
            self._lag_failed("applier_timeout", None)
            return None
        except PollFailed as exc:
            self._lag_failed("applier_query_failed", exc)
            return None
        if workers is None:
            return None
        return applier.build_derived(now_us, dict_rows(workers), max(0, applier_queue))

    async def _read_lag(self, conn: asyncmy.Connection, state: str) -> tuple[ChannelLag, ...]:
        """The GR channels' stage lag; () when it cannot be read. Never raises."""
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                if not self._db.utc_session:
                    if await self._db.query(conn, "lag_time_zone", lag.SQL_UTC_SESSION) is None:
                        return ()  # rejected (logged): timestamps would be in the wrong zone
                    self._db.utc_session = True
                tables = []
                for what, sql in (
                    ("lag_connection", lag.SQL_CONNECTION),
                    ("lag_applier", lag.SQL_APPLIER),
                    ("lag_coordinator", lag.SQL_COORDINATOR),
                    ("lag_workers", lag.SQL_WORKERS),
                ):
                    result = await self._db.query(conn, what, sql)
                    tables.append(dict_rows(result))
        except TimeoutError:
            self._lag_failed("lag_timeout", None)
            return ()
        except PollFailed as exc:
            self._lag_failed("lag_query_failed", exc)
            return ()
        return lag.build_lag(state, *tables)

    def _lag_failed(self, reason: str, exc: BaseException | None) -> None:
        # A timed-out or broken stream cannot be reused: drop it, reconnect at
        # the next call; the stats just read are still good.
        if reason not in self._lag_failures_logged:
            self._lag_failures_logged.add(reason)
            log.warning("mysql.lag_unavailable", reason=reason)
        self._db.lost(reason, exc, retry_now=True)
