"""The extras of a sample: what `MySQLSource` reads after the stats, never at their cost.

Strategy: lag (WL#7374, lag.py), applier metrics (WL#15620, applier.py), the
Gr_* status variables (flow control and commit path: flowstats.py,
commitstats.py) and the group communication information are read after the
stats under one deadline: the poll's, less a margin of ``poll_timeout``, so
that theirs fires first and the stats sample is still returned. The lag's
four tables and the Gr_* status go in the stats' own round trip, after them
(`Extras.every_poll`: the results are kept as they arrive, so a hang or a
break after the stats costs only what comes after), and so do
replication_applier_metrics and _progress_by_worker once a read found them. `Extras` owns that
policy; the module functions below it only query and build.

Invariants: no read raises for a server problem. A read that times out or
breaks the connection drops it (a timed-out or broken stream cannot be
reused; the next sample reconnects at once) and gives its empty value; once
the connection is gone the reads after it give theirs without querying. Each
failure reason is logged once per source (``mysql.lag_unavailable``).

What changes only with the group or the server is read at a cadence
(cadence.py: first poll, new session, a change of the member's view id, state
or role seen in the same poll, a failed read, a clock step back, else every
``cadence.REREAD_S``), not every poll:

- replication_group_communication_information: the table changes only by an
  operator's UDF call (group_replication_set_write_concurrency,
  _set_communication_protocol, _set_as_primary) or a view / primary change;
  between reads the sample carries the last value read;
- whether the server has replication_applier_metrics (WL#15620: 9.1
  Enterprise with its component, every edition from 9.7): a server without it
  refused that SELECT every poll (ER_NO_SUCH_TABLE) before its derived
  figures were read. While it is known absent the derived figures come from
  the replication_applier_status_by_worker rows the lag read in the same poll
  (the same query; it was sent twice), so only the probe goes on the cadence.
  A server with the table has it read every poll: its figures are per second.

A failed read gives None (counted as any extra's) and the next poll reads again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncmy
import structlog

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.lag import ChannelLag
from grstats.core.sample import LocalMember, ServerFlowControl
from grstats.sources.mysql import applier, channels, commitstats, flowstats, lag
from grstats.sources.mysql.cadence import Cadence
from grstats.sources.mysql.connection import Connection
from grstats.sources.mysql.values import PollFailed, Result, dict_rows
from protocol import CommitPathCounters, GroupCommunication, MirroredTables

log = structlog.get_logger("grstats.sources.mysql")

T = TypeVar("T")

# Read every poll in one round trip (connection.Connection.batch), in this order:
# the lag's four tables (every channel: they are also four of the six WL#3656 channel
# tables, channels.py), the two channel configuration tables, then the Gr_* status
# variables (last: gr_status reads it there).
_EVERY_POLL = (
    ("lag_connection", lag.SQL_CONNECTION),
    ("lag_applier", lag.SQL_APPLIER),
    ("lag_coordinator", lag.SQL_COORDINATOR),
    ("lag_workers", lag.SQL_WORKERS),
    *channels.SQL_CONFIGURATION,
    ("flow_stats", commitstats.SQL_GR_STATUS),
)
_LAG_RESULTS = 4
# the channel tables in _EVERY_POLL's order, the lag's four then the configuration two
_CHANNEL_TABLES = (
    col.CONNECTION_STATUS,
    col.APPLIER_STATUS,
    col.APPLIER_STATUS_BY_COORDINATOR,
    col.APPLIER_STATUS_BY_WORKER,
    col.CONNECTION_CONFIGURATION,
    col.APPLIER_CONFIGURATION,
)
# after them when the last read found replication_applier_metrics (9.x): its two reads
_METRICS_READS = (
    ("applier_metrics", applier.SQL_METRICS),
    ("applier_progress", applier.SQL_PROGRESS),
)

# Share of poll_timeout kept back from the extras, so that their own deadline
# fires first and the stats sample is still returned.
_MARGIN = 0.1


class Extras:
    """The reads after the stats, sharing one deadline per sample.

    Args:
        db: the source's connection (dropped here when an extra fails).
    """

    def __init__(self, db: Connection) -> None:
        self._db = db
        self._deadline = 0.0  # loop time by which this sample's extras must be done
        self._failures_logged: set[str] = set()
        # the communication information last read, and when it is due again
        self._communication: GroupCommunication | None = None
        self._communication_cadence = Cadence()
        # replication_applier_metrics: absent at the last probe, and when to probe again
        self._no_metrics = False
        self._metrics_cadence = Cadence()
        self._metrics_seen = False  # the last read found it: read in every_poll's trip
        self._workers: Result | None = None  # this sample's lag read of the workers
        self._polled: list[Result | None] = []  # this sample's _EVERY_POLL results, as read

    def start(self, poll_deadline: float, poll_timeout: float) -> None:
        """Begin a sample: its extras must be done a margin before `poll_deadline`."""
        self._deadline = poll_deadline - _MARGIN * poll_timeout
        self._workers = None
        self._polled = []

    async def every_poll(
        self, conn: asyncmy.Connection, head: tuple[tuple[str, str], ...]
    ) -> list[Result | None]:
        """Run `head` (the stats' statements) and ``_EVERY_POLL`` in one round trip.

        Before the lag's timestamps the session's time zone is set to UTC, once
        per connection (first in the same round trip). Everything is read
        within the extras' deadline, each result kept as it arrives: a failure
        after `head`'s results keeps them (and the lag's, when it comes after
        them: ``flow_stats_*``), drops the connection and logs as any extra's.

        Returns:
            `head`'s results.

        Raises:
            TimeoutError, PollFailed: `head`'s results could not all be read.
        """
        db = self._db
        tz = () if db.utc_session else (("lag_time_zone", lag.SQL_UTC_SESSION),)
        metrics = _METRICS_READS if self._metrics_seen else ()
        queries = (*tz, *head, *_EVERY_POLL, *metrics)
        got: list[Result | None] = []
        stats = len(tz) + len(head)
        try:
            async with asyncio.timeout_at(self._deadline):
                await db.batch(conn, queries, got, missing_ok=_METRICS_READS[0][0])
        except (TimeoutError, PollFailed) as exc:
            if len(got) < stats:
                raise
            # the read it stopped at (the last one when it stopped closing the cursor)
            what = _family(queries[min(len(got), len(queries) - 1)][0])
            failure = "timeout" if isinstance(exc, TimeoutError) else "query_failed"
            self._failed(f"{what}_{failure}", None if isinstance(exc, TimeoutError) else exc)
        if tz:
            db.utc_session = bool(got) and got[0] is not None
        self._polled = got[stats:]
        return got[len(tz) : stats]

    def lag(self, state: str) -> tuple[ChannelLag, ...]:
        """The GR channels' stage lag from `every_poll`'s read; () when it was not read."""
        got = self._polled
        if len(got) < _LAG_RESULTS or not self._db.utc_session:
            return ()  # not read, or the time zone was refused (logged): wrong zone
        connection, applier_status, coordinator, workers = got[:_LAG_RESULTS]
        self._workers = lag.gr_channels_only(workers)
        return lag.build_lag(
            state,
            dict_rows(connection),
            dict_rows(applier_status),
            dict_rows(coordinator),
            dict_rows(workers),
        )

    def channels(self, now_us: int) -> MirroredTables | None:
        """The six channel tables from `every_poll`'s read; None when it was not read.

        Not in a session whose time zone could not be set to UTC: the timestamps
        would be in the server's zone (logged once, as for the lag).
        """
        got = self._polled
        if len(got) < len(_CHANNEL_TABLES) or not self._db.utc_session:
            return None
        return channels.build_channels(now_us, list(zip(_CHANNEL_TABLES, got, strict=False)))

    async def applier(
        self, conn: asyncmy.Connection, now_us: int, member: LocalMember, applier_queue: int
    ) -> MemberApplier | None:
        """WL#15620's tables, or what 8.0's tell (applier.py); None when unreadable.

        replication_applier_metrics is probed only when its `Cadence` is due while
        the last probe found it absent (module docstring).
        """
        probe = not self._no_metrics or self._metrics_cadence.due(conn, now_us, member)
        got = await self._guarded(
            conn, "applier", lambda: self._read_applier(conn, now_us, probe, applier_queue), None
        )
        if probe:
            self._metrics_cadence.read(conn, now_us, member, ok=conn is self._db.conn)
        return got

    def gr_status(self) -> tuple[ServerFlowControl | None, CommitPathCounters | None]:
        """The Gr_* status variables in one query: the flow-control figures
        (flowstats.py) and the commit-path ones (commitstats.py); None for each
        the server does not show or when they cannot be read.

        Built from `every_poll`'s round trip; when that stopped before
        global_status, it dropped the connection (logged) and this is empty.
        """
        if len(self._polled) < len(_EVERY_POLL):
            return None, None
        return _gr_status(self._polled[len(_EVERY_POLL) - 1])

    async def communication(
        self, conn: asyncmy.Connection, now_us: int, member: LocalMember
    ) -> GroupCommunication | None:
        """replication_group_communication_information (commitstats.py) as last read;
        None when the server has no such table or row, or it cannot be read.

        Read when its `Cadence` is due (module docstring).
        """
        cadence = self._communication_cadence
        if not cadence.due(conn, now_us, member):
            return self._communication
        got = await self._guarded(
            conn, "communication", lambda: _read_communication(self._db, conn), None
        )
        # a failed read dropped the connection: nothing kept, the next poll reads
        cadence.read(conn, now_us, member, ok=conn is self._db.conn)
        self._communication = got
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

    async def _read_applier(
        self, conn: asyncmy.Connection, now_us: int, probe: bool, applier_queue: int
    ) -> MemberApplier | None:
        db = self._db
        metrics = None
        batched = self._polled[len(_EVERY_POLL) :]  # every_poll read both when it was seen
        if probe:
            if batched:
                metrics = batched[0]
            else:
                metrics = await db.query(
                    conn, "applier_metrics", applier.SQL_METRICS, missing_ok=True
                )
            self._no_metrics = metrics is None
            self._metrics_seen = metrics is not None
        if metrics is not None:
            if batched:
                progress = batched[1]
            else:
                progress = await db.query(conn, "applier_progress", applier.SQL_PROGRESS)
            rows = dict_rows(metrics)
            if not db.utc_session:  # LAST_APPLIER_START would be in the wrong zone
                rows = [{**r, col.LAST_APPLIER_START: None} for r in rows]
            return applier.build_native(now_us, rows, dict_rows(progress))
        # the lag's read of the same table in this poll, when it made one
        workers = self._workers
        if workers is None:
            workers = await db.query(conn, "applier_by_worker", lag.SQL_WORKERS)
        if workers is None:
            return None
        return applier.build_derived(now_us, dict_rows(workers), max(0, applier_queue))

    def _failed(self, reason: str, exc: BaseException | None) -> None:
        # A timed-out or broken stream cannot be reused: drop it, reconnect at
        # the next call; the stats just read are still good.
        if reason not in self._failures_logged:
            self._failures_logged.add(reason)
            log.warning("mysql.lag_unavailable", reason=reason)
        self._db.lost(reason, exc, retry_now=True)


def _family(what: str) -> str:
    """The failure reason's family of the read named `what`: lag, flow_stats or applier."""
    return what if what == "flow_stats" else what.partition("_")[0]


def _gr_status(
    result: Result | None,
) -> tuple[ServerFlowControl | None, CommitPathCounters | None]:
    rows = dict_rows(result)
    commit_path = commitstats.build_commit_path(rows)
    return (
        flowstats.build_server_flow_control(rows),
        commit_path if commit_path.shown() else None,
    )


async def _read_communication(
    db: Connection, conn: asyncmy.Connection
) -> GroupCommunication | None:
    result = await db.query(conn, "communication", commitstats.SQL_COMMUNICATION, missing_ok=True)
    return commitstats.build_communication(dict_rows(result))
