"""The extras of a sample: what `MySQLSource` reads after the stats, never at their cost.

Strategy: lag (WL#7374, lag.py), applier metrics (WL#15620, applier.py), the
Gr_* status variables (flow control and commit path: flowstats.py,
commitstats.py), the group communication information, @@gtid_executed /
@@gtid_purged (gtidstate.py) and the server's view of the other members are
read after the stats under one deadline: the poll's, less a margin of
``poll_timeout``, so that theirs fires first and the stats sample is still
returned. `Extras` owns that policy; the module functions below it only query
and build.

Invariants: no read raises for a server problem. A read that times out or
breaks the connection drops it (a timed-out or broken stream cannot be
reused; the next sample reconnects at once) and gives its empty value; once
the connection is gone the reads after it give theirs without querying. Each
failure reason is logged once per source (``mysql.lag_unavailable``).

The group communication information is read at a cadence, not every poll
(`Extras.communication`): the table changes only by an operator's UDF call
(group_replication_set_write_concurrency, _set_communication_protocol,
_set_as_primary) or a view / primary change, while its query was 5.8 % of a
production daemon's working samples (benchmarks/profile_daemon.py). It is read
on the first poll, on a new session, whenever the member's view id, state or
role seen in the same poll changes, and otherwise every
`COMMUNICATION_REREAD_S`; between reads the sample carries the last value read.
A failed read gives None (counted as any extra's) and the next poll reads again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncmy
import structlog

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.lag import ChannelLag
from grstats.core.sample import LocalMember, ServerFlowControl, ServerViewMember, in_group
from grstats.sources.mysql import applier, commitstats, flowstats, gtidstate, lag
from grstats.sources.mysql.connection import Connection
from grstats.sources.mysql.values import PollFailed, dict_rows, server_view
from protocol import CommitPathCounters, GroupCommunication, GtidState

log = structlog.get_logger("grstats.sources.mysql")

T = TypeVar("T")

# Every member of the server's view (WL#10380: the server receives every member's
# stats itself): the members a daemon may not publish for, and the oracle.
_SQL_VIEW_STATS = "SELECT * FROM performance_schema.replication_group_member_stats"
_SQL_VIEW_MEMBERS = "SELECT * FROM performance_schema.replication_group_members"
# Share of poll_timeout kept back from the extras, so that their own deadline
# fires first and the stats sample is still returned.
_MARGIN = 0.1
# How stale the communication information may get when nothing the poll sees
# changed: only a UDF call changes it without a view, state or role change, and
# an operator who just made one can wait half a minute. A module constant, not a
# setting: there is nothing to tune (a shorter period costs a query per poll).
COMMUNICATION_REREAD_S = 30.0
_COMMUNICATION_REREAD_US = int(COMMUNICATION_REREAD_S * 1_000_000)


class Extras:
    """The reads after the stats, sharing one deadline per sample.

    Args:
        db: the source's connection (dropped here when an extra fails).
    """

    def __init__(self, db: Connection) -> None:
        self._db = db
        self._deadline = 0.0  # loop time by which this sample's extras must be done
        self._failures_logged: set[str] = set()
        # the communication information last read, and what it was read under
        self._communication: GroupCommunication | None = None
        self._communication_key: tuple[object, str, str, str] | None = None
        self._communication_read_us = 0

    def start(self, poll_deadline: float, poll_timeout: float) -> None:
        """Begin a sample: its extras must be done a margin before `poll_deadline`."""
        self._deadline = poll_deadline - _MARGIN * poll_timeout

    async def lag(self, conn: asyncmy.Connection, state: str) -> tuple[ChannelLag, ...]:
        """The GR channels' stage lag; () when it cannot be read."""
        return await self._guarded(conn, "lag", lambda: _read_lag(self._db, conn, state), ())

    async def applier(
        self, conn: asyncmy.Connection, now_us: int, applier_queue: int
    ) -> MemberApplier | None:
        """WL#15620's tables, or what 8.0's tell (applier.py); None when unreadable."""
        return await self._guarded(
            conn, "applier", lambda: _read_applier(self._db, conn, now_us, applier_queue), None
        )

    async def gr_status(
        self, conn: asyncmy.Connection
    ) -> tuple[ServerFlowControl | None, CommitPathCounters | None]:
        """The Gr_* status variables in one query: the flow-control figures
        (flowstats.py) and the commit-path ones (commitstats.py); None for each
        the server does not show or when they cannot be read.
        """
        return await self._guarded(
            conn, "flow_stats", lambda: _read_gr_status(self._db, conn), (None, None)
        )

    async def server_view(
        self, conn: asyncmy.Connection, server_uuid: Any, group: Any, mode: int, state: str
    ) -> tuple[ServerViewMember, ...]:
        """Every other member of the server's view; () when alone or unreadable."""
        if not in_group(state):
            return ()
        return await self._guarded(
            conn,
            "server_view",
            lambda: _read_server_view(self._db, conn, server_uuid, group, mode),
            (),
        )

    async def gtid_state(self, conn: asyncmy.Connection, now_us: int) -> GtidState | None:
        """@@gtid_executed / @@gtid_purged (gtidstate.py); None when unreadable."""
        return await self._guarded(
            conn, "gtids", lambda: _read_gtid_state(self._db, conn, now_us), None
        )

    async def communication(
        self, conn: asyncmy.Connection, now_us: int, member: LocalMember
    ) -> GroupCommunication | None:
        """replication_group_communication_information (commitstats.py) as last read;
        None when the server has no such table or row, or it cannot be read.

        Read again when `conn` is a new session, `member`'s view id, state or role
        differ from the last read's, `now_us` is `COMMUNICATION_REREAD_S` past it
        (or before it: the wall clock stepped back), or the last read failed.
        """
        key = (conn, member.view_id, member.state, member.role)
        age_us = now_us - self._communication_read_us
        if key == self._communication_key and 0 <= age_us < _COMMUNICATION_REREAD_US:
            return self._communication
        got = await self._guarded(
            conn, "communication", lambda: _read_communication(self._db, conn), None
        )
        # a failed read dropped the connection: nothing kept, the next poll reads
        read = conn is self._db.conn
        self._communication_key = key if read else None
        self._communication, self._communication_read_us = got, now_us
        return got

    async def _guarded(
        self, conn: asyncmy.Connection, what: str, read: Callable[[], Awaitable[T]], empty: T
    ) -> T:
        if conn is not self._db.conn:  # an earlier extra dropped the connection
            return empty
        try:
            async with asyncio.timeout_at(self._deadline):
                return await read()
        except TimeoutError:
            self._failed(f"{what}_timeout", None)
        except PollFailed as exc:
            self._failed(f"{what}_query_failed", exc)
        return empty

    def _failed(self, reason: str, exc: BaseException | None) -> None:
        # A timed-out or broken stream cannot be reused: drop it, reconnect at
        # the next call; the stats just read are still good.
        if reason not in self._failures_logged:
            self._failures_logged.add(reason)
            log.warning("mysql.lag_unavailable", reason=reason)
        self._db.lost(reason, exc, retry_now=True)


async def _read_lag(db: Connection, conn: asyncmy.Connection, state: str) -> tuple[ChannelLag, ...]:
    if not db.utc_session:
        if await db.query(conn, "lag_time_zone", lag.SQL_UTC_SESSION) is None:
            return ()  # rejected (logged): timestamps would be in the wrong zone
        db.utc_session = True
    tables = []
    for what, sql in (
        ("lag_connection", lag.SQL_CONNECTION),
        ("lag_applier", lag.SQL_APPLIER),
        ("lag_coordinator", lag.SQL_COORDINATOR),
        ("lag_workers", lag.SQL_WORKERS),
    ):
        tables.append(dict_rows(await db.query(conn, what, sql)))
    return lag.build_lag(state, *tables)


async def _read_applier(
    db: Connection, conn: asyncmy.Connection, now_us: int, applier_queue: int
) -> MemberApplier | None:
    metrics = await db.query(conn, "applier_metrics", applier.SQL_METRICS, missing_ok=True)
    if metrics is not None:
        progress = await db.query(conn, "applier_progress", applier.SQL_PROGRESS)
        rows = dict_rows(metrics)
        if not db.utc_session:  # LAST_APPLIER_START would be in the wrong zone
            rows = [{**r, col.LAST_APPLIER_START: None} for r in rows]
        return applier.build_native(now_us, rows, dict_rows(progress))
    workers = await db.query(conn, "applier_by_worker", lag.SQL_WORKERS)
    if workers is None:
        return None
    return applier.build_derived(now_us, dict_rows(workers), max(0, applier_queue))


async def _read_gr_status(
    db: Connection, conn: asyncmy.Connection
) -> tuple[ServerFlowControl | None, CommitPathCounters | None]:
    rows = dict_rows(await db.query(conn, "flow_stats", commitstats.SQL_GR_STATUS))
    commit_path = commitstats.build_commit_path(rows)
    return (
        flowstats.build_server_flow_control(rows),
        commit_path if commit_path.shown() else None,
    )


async def _read_server_view(
    db: Connection, conn: asyncmy.Connection, server_uuid: Any, group: Any, mode: int
) -> tuple[ServerViewMember, ...]:
    stats = await db.query(conn, "view_stats", _SQL_VIEW_STATS)
    members = await db.query(conn, "view_members", _SQL_VIEW_MEMBERS)
    return server_view(server_uuid, group, dict_rows(stats), dict_rows(members), mode)


async def _read_gtid_state(
    db: Connection, conn: asyncmy.Connection, now_us: int
) -> GtidState | None:
    result = await db.query(conn, "gtids", gtidstate.SQL_GTIDS)
    rows = result[1] if result else ()
    return gtidstate.build_gtid_state(rows[0] if rows else None, now_us)


async def _read_communication(
    db: Connection, conn: asyncmy.Connection
) -> GroupCommunication | None:
    result = await db.query(conn, "communication", commitstats.SQL_COMMUNICATION, missing_ok=True)
    return commitstats.build_communication(dict_rows(result))
