"""The `mysql` source: poll the local MySQL server's Group Replication tables (asyncmy).

Strategy / invariants
---------------------
One asyncmy connection is kept open and every `sample()` call reads, with plain
text-protocol SELECTs:

1. ``SELECT @@server_uuid, @@group_replication_group_name`` (without the GR
   variable when the plugin is not installed: error 1193) -- the liveness check
   and the configured group name;
2. ``SELECT * FROM performance_schema.replication_group_member_stats WHERE
   MEMBER_ID = @@server_uuid OR MEMBER_ID = ''`` -- the local row, which has an
   empty MEMBER_ID before Group Replication ever started (ps_information.cc,
   plugin never initialised); columns are matched by name from the result's
   description on every read, so servers without the newer columns (5.7 and
   early 8.0 lack COUNT_TRANSACTIONS_REMOTE_* / _LOCAL_*) simply yield 0 for them;
3. the same for ``performance_schema.replication_group_members`` (MEMBER_ROLE,
   MEMBER_VERSION and MEMBER_COMMUNICATION_STACK may be missing);
4. ``SELECT @@group_replication_flow_control_mode`` (QUOTA -> 1, DISABLED -> 0,
   unknown variable or NULL -> 1, MySQL's default);
5. replication lag by stage (`LocalSample.lag`, WL#7374; rows to values in
   mysql_lag.py): the four replication_* tables of the GR channels, after
   ``SET @@session.time_zone = '+00:00'`` once per connection so that their
   TIMESTAMP(6) columns come back in UTC whatever the server's or the
   daemon's zone. Lag is an extra: it is read after the stats, within what is
   left of ``poll_timeout`` minus a margin; a lag query that times out or
   breaks the connection drops the connection (reconnected at once by the
   next call) but the stats sample is still returned, with lag (); a table
   the server does not have gives no rows. Each such failure is logged once.

The sample shows exactly what the server shows, nothing invented: MEMBER_ID,
MEMBER_HOST, VIEW_ID as shown (possibly ""), MEMBER_PORT NULL -> None, state,
role, version and communication stack as shown ("" where the column is absent
or empty; an 8.0 server whose GR never started shows MEMBER_ID "", port NULL,
state OFFLINE; a 2024+ one shows its own identity with state OFFLINE in
replication_group_members but still MEMBER_ID "" in the stats row).

P_S shows every counter as BIGINT UNSIGNED; the wire message carries signed
two's complement (PROTOCOL.md §4, §8). `wire_int64` maps the unsigned value back
(>= 2**63 wraps negative), so a counter the server shows round-trips to the
bytes the server itself would broadcast. The two queue sizes are int32 on the
wire and `wire_int32` clamps them to [0, 2**31 - 1] rather than wrapping (see
its docstring for why).

`sample()` never raises for a server problem and returns within
``poll_timeout`` seconds: the whole call (a reconnect attempt included) runs
under one deadline. A query that times out or a broken connection drops the
connection; reconnect attempts are made by later `sample()` calls once a
capped, jittered exponential backoff (``retry_initial`` doubling up to
``retry_max``) has elapsed -- there is no background task to own. After a
working connection breaks, one immediate reconnect is tried in the same call
(a killed or recycled session heals without a gap). While unreachable the last
good sample is returned (restamped with the caller's ``now_us``) until
``offline_after`` seconds of the caller's clock have passed since it; then a
sample whose member is OFFLINE (identifiers kept; role, view id, counters and
GTID texts empty or 0, as MySQL shows an OFFLINE member). A server that answers
but has no GR rows (plugin not installed) gives state OFFLINE with empty
identifiers, as the row MySQL shows before GR starts, and the configured group
name (empty when not configured).
A query that the server rejects (missing table or variable, missing privilege)
is treated as absent and logged once per connection.

`stats.transaction_gtids_present` is always False: the sample carries the
current GTID texts and the publisher decides when a message carries them.

Settings (`MySQLSettings`, frozen; the config module fills it from ``[mysql]``)
--------------------------------------------------------------------------
``dsn``              str, ``mysql://USER@HOST[:PORT][?PARAMS]`` -- port defaults
                     to 3306; no password and no database path in it.
                     PARAMS: ``unix_socket=/path`` (connect through the socket
                     instead of TCP), ``charset=NAME`` (default utf8mb4).
                     Validated by `parse_dsn` (ValueError with the reason).
``password``         str, the resolved secret (config reads it from
                     ``password_env`` or ``password_file``, never inline in the
                     TOML); hidden from repr. Default "" (no password).
``poll_timeout``     float s > 0, default 2.0: bound of one `sample()` call.
``connect_timeout``  float s > 0, default 2.0: bound of one connect attempt.
``offline_after``    float s >= 0, default 10.0: grace while unreachable before
                     the local member shows OFFLINE.
``retry_initial``    float s > 0, default 0.5: first reconnect backoff.
``retry_max``        float s >= retry_initial, default 10.0: backoff cap.

The grstats MySQL account needs SELECT on performance_schema only, e.g.
``CREATE USER grstats@localhost IDENTIFIED BY '...'; GRANT SELECT ON
performance_schema.* TO grstats@localhost;``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import asyncmy  # the only asyncmy importer (STYLE.md §4)
import asyncmy.errors
import structlog

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.columns import STATS_ITEM_COLUMNS
from grstats.core.lag import ChannelLag
from grstats.core.sample import MEMBER_ROLES, MEMBER_STATES, LocalMember, LocalSample
from grstats.sources import mysql_applier, mysql_lag
from protocol import FLOW_CONTROL_DISABLED, FLOW_CONTROL_QUOTA, PipelineStats

__all__ = ["MySQLSettings", "MySQLSource", "parse_dsn", "wire_int32", "wire_int64"]

log = structlog.get_logger("grstats.sources.mysql")

DEFAULT_PORT = 3306
DSN_PARAMS = ("charset", "unix_socket")

# MySQL client-side error numbers (CR_*) live in 2000-2999: the connection is gone.
# These server errors also end the session (shutdown, KILL, wait_timeout expiry).
_CONNECTION_ENDING_ERRORS = frozenset({1053, 1927, 3169, 4031})
_ER_UNKNOWN_SYSTEM_VARIABLE = 1193
_ER_NO_SUCH_TABLE = 1146  # expected for WL#15620's tables before 9.7: not logged

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
# Share of poll_timeout kept back from the lag queries, so that their own
# deadline fires first and the stats sample is still returned.
_LAG_MARGIN = 0.1

# PipelineStats field <- replication_group_member_stats column (PROTOCOL.md §4), from
# the column registry; the two queue items are int32 on the wire, the rest int64.
_INT32_ITEMS = frozenset({"transactions_waiting_certification", "transactions_waiting_apply"})
_INT32_COLUMNS = {
    str(c.item): c.name for c in STATS_ITEM_COLUMNS if c.numeric and c.item in _INT32_ITEMS
}
_INT64_COLUMNS = {
    str(c.item): c.name for c in STATS_ITEM_COLUMNS if c.numeric and c.item not in _INT32_ITEMS
}
_TEXT_COLUMNS = {str(c.item): c.name for c in STATS_ITEM_COLUMNS if not c.numeric}

_INT32_MAX = (1 << 31) - 1


def wire_int64(value: int) -> int:
    """Map a P_S BIGINT UNSIGNED counter to the int64 MySQL puts on the wire.

    Args:
        value: the column value (any int; only its low 64 bits matter).

    Returns:
        The two's-complement int64: values >= 2**63 wrap to negative.
    """
    low = value & 0xFFFF_FFFF_FFFF_FFFF
    return low - (1 << 64) if low >= (1 << 63) else low


def wire_int32(value: int) -> int:
    """Map a P_S queue size to the int32 item of the wire message, clamped, never wrapped.

    MySQL's sender (pipeline_stats.cc, send_stats_member_message) puts
    ``static_cast<int32>(applier_module->get_message_queue_size())`` on the
    wire, which would wrap a size >= 2**31 into a negative number; and before
    MySQL fixed it, the waiting-apply counter could go negative (it is an
    int32 that P_S shows as 2**64 - |x|) -- the fix makes
    ``get_transactions_waiting_apply_during_recovery`` return 0 rather than go
    negative. A queue size is never negative, so a wrapped value would only
    show operators a nonsense number. Decision: read the column as the signed
    64-bit value P_S was given and clamp it to [0, 2**31 - 1]: a wrapped
    negative (>= 2**63) becomes 0, as fixed MySQL reports it, and a size too
    large for int32 saturates at 2**31 - 1 instead of wrapping.

    Args:
        value: the column value (BIGINT UNSIGNED; any int is accepted).

    Returns:
        An int32 in [0, 2**31 - 1].
    """
    return max(0, min(wire_int64(value), _INT32_MAX))


def parse_dsn(dsn: str) -> tuple[str, str, int, dict[str, str]]:
    """Split ``mysql://USER@HOST[:PORT][?charset=..&unix_socket=..]``.

    Args:
        dsn: the ``mysql.dsn`` setting.

    Returns:
        ``(user, host, port, params)``; port defaults to 3306, params holds only
        the known keys (`DSN_PARAMS`).

    Raises:
        ValueError: with a message naming what is wrong (scheme, user, inline
            password, host, port, path or parameter).
    """
    if not isinstance(dsn, str) or not dsn.strip():
        raise ValueError("expected a URL like mysql://grstats@127.0.0.1:3306, got an empty value")
    parts = urlsplit(dsn.strip())
    if parts.scheme.lower() != "mysql":
        shown = parts.scheme or "none"
        raise ValueError(f"expected the mysql:// scheme, got {shown!r} in {dsn!r}")
    if parts.password is not None:
        raise ValueError(
            "the password must not be written in the DSN; use mysql.password_env "
            "or mysql.password_file"
        )
    if not parts.username:
        raise ValueError(f"missing the user name (mysql://USER@host:port), got {dsn!r}")
    user = unquote(parts.username)
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"missing the host (mysql://user@HOST:port), got {dsn!r}")
    try:
        port = parts.port
    except ValueError:
        raw = parts.netloc.rpartition(":")[2]
        raise ValueError(f"port must be an integer 1-65535, got {raw!r}") from None
    if port is None:
        port = DEFAULT_PORT
    elif not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer 1-65535, got {port}")
    if parts.path not in ("", "/"):
        raise ValueError(
            f"unexpected path {parts.path!r}: grstats reads performance_schema and "
            "needs no database name"
        )
    if parts.fragment:
        raise ValueError(f"unexpected fragment {'#' + parts.fragment!r}")
    params: dict[str, str] = {}
    if parts.query:
        try:
            pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise ValueError(f"malformed parameters {parts.query!r}") from None
        for key, value in pairs:
            if key not in DSN_PARAMS:
                known = ", ".join(DSN_PARAMS)
                raise ValueError(f"unknown parameter {key!r} (known: {known})")
            if key in params:
                raise ValueError(f"parameter {key!r} given twice")
            if not value:
                raise ValueError(f"parameter {key!r} has an empty value")
            params[key] = value
    return user, host, port, params


@dataclass(frozen=True, slots=True)
class MySQLSettings:
    """How to reach and poll the local server; field meanings in the module docstring."""

    dsn: str = f"mysql://grstats@127.0.0.1:{DEFAULT_PORT}"
    password: str = field(default="", repr=False)
    poll_timeout: float = 2.0
    connect_timeout: float = 2.0
    offline_after: float = 10.0
    retry_initial: float = 0.5
    retry_max: float = 10.0

    def __post_init__(self) -> None:
        parse_dsn(self.dsn)
        for name in ("poll_timeout", "connect_timeout", "retry_initial"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name}: expected a positive number of seconds, got {value!r}")
        if not isinstance(self.offline_after, int | float) or not self.offline_after >= 0:
            raise ValueError(
                f"offline_after: expected a number of seconds >= 0, got {self.offline_after!r}"
            )
        if not isinstance(self.retry_max, int | float) or not self.retry_max >= self.retry_initial:
            raise ValueError(
                f"retry_max: expected seconds >= retry_initial ({self.retry_initial}), "
                f"got {self.retry_max!r}"
            )


class _PollFailed(Exception):
    """The connection is unusable (lost, timed out, or the server cannot identify itself)."""


class MySQLSource:
    """Fulfils `grstats.sources.base.Source` by polling one MySQL server."""

    def __init__(self, settings: MySQLSettings) -> None:
        self._settings = settings
        self._user, self._host, self._port, self._params = parse_dsn(settings.dsn)
        self._conn: asyncmy.Connection | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._ever_connected = False
        self._failures = 0  # consecutive failed connect attempts (backoff exponent)
        self._next_attempt = 0.0  # loop time before which no connect is tried
        self._last_good: LocalSample | None = None
        self._offline_logged = False
        self._logged_errors: set[tuple[str, int]] = set()
        self._utc_session = False  # the session's time_zone is '+00:00'
        self._lag_deadline = 0.0  # loop time by which the lag queries must be done
        self._lag_failures_logged: set[str] = set()

    @property
    def connected(self) -> bool:
        """True while a connection to the server is open."""
        return self._conn is not None and bool(self._conn.connected)

    async def start(self) -> None:
        """Try a first connection (bounded by ``connect_timeout``); never raises."""
        async with self._lock:
            await self._ensure_connection()

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
                self._lost("poll_timeout", None, retry_now=False)
                fresh = None
            if fresh is not None:
                self._last_good = fresh
                self._offline_logged = False
                return fresh
            return self._unreachable_sample(now_us)

    async def close(self) -> None:
        """Close the connection (QUIT, bounded by ``connect_timeout``); idempotent."""
        async with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                async with asyncio.timeout(self._settings.connect_timeout):
                    await conn.ensure_closed()
            except (TimeoutError, OSError, asyncmy.errors.MySQLError):
                conn.close()
            log.info("mysql.closed", host=self._host, port=self._port)

    # -- connection management -------------------------------------------------

    async def _read_with_one_retry(self, now_us: int) -> LocalSample | None:
        for _ in range(2):
            was_open = self.connected
            conn = await self._ensure_connection()
            if conn is None:
                return None
            try:
                return await self._read(conn, now_us)
            except _PollFailed as exc:
                # A session that worked until now (killed, recycled) gets one
                # immediate reconnect; a fresh one that fails backs off.
                self._lost("query_failed", exc, retry_now=was_open)
                if not was_open:
                    return None
        return None

    async def _ensure_connection(self) -> asyncmy.Connection | None:
        if self.connected:
            return self._conn
        loop = asyncio.get_running_loop()
        if self._closed or loop.time() < self._next_attempt:
            return None
        s = self._settings
        try:
            async with asyncio.timeout(s.connect_timeout):
                conn = await asyncmy.connect(
                    host=self._host,
                    port=self._port,
                    user=self._user,
                    password=s.password,
                    unix_socket=self._params.get("unix_socket"),
                    charset=self._params.get("charset", "utf8mb4"),
                    connect_timeout=s.connect_timeout,
                    autocommit=True,
                    program_name="grstats",
                )
        except (TimeoutError, OSError, asyncmy.errors.MySQLError) as exc:
            self._log_connect_failed(
                self._schedule_retry(), _errno(exc), str(exc) or type(exc).__name__
            )
            return None
        self._conn = conn
        self._logged_errors.clear()
        self._utc_session = False
        event = "mysql.reconnected" if self._ever_connected else "mysql.connected"
        log.info(event, host=self._host, port=self._port, attempts=self._failures + 1)
        self._ever_connected = True
        self._failures = 0
        return conn

    def _schedule_retry(self) -> float:
        """Count a failure; the next connect waits a capped, jittered exponential delay."""
        self._failures += 1
        s = self._settings
        ceiling = min(s.retry_max, s.retry_initial * 2 ** min(self._failures - 1, 32))
        delay = float(ceiling * random.uniform(0.5, 1.0))
        self._next_attempt = asyncio.get_running_loop().time() + delay
        return delay

    def _log_connect_failed(self, delay: float, errno: int | None, error: str) -> None:
        log.warning(
            "mysql.connect_failed",
            host=self._host,
            port=self._port,
            attempt=self._failures,
            retry_in=round(delay, 3),
            errno=errno,
            error=error,
        )

    def _lost(self, reason: str, exc: BaseException | None, *, retry_now: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # a timed-out or broken stream cannot be reused
        delay = 0.0
        if retry_now:
            self._next_attempt = 0.0
        else:
            delay = self._schedule_retry()
        if conn is None:  # the deadline hit while connecting
            self._log_connect_failed(delay, None, reason)
            return
        log.warning(
            "mysql.disconnected",
            host=self._host,
            port=self._port,
            reason=reason,
            error=None if exc is None else str(exc.__cause__ or exc),
        )

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
        identity = await self._query(conn, "identity", _SQL_IDENTITY)
        group_name: Any = None
        if identity is None:
            identity = await self._query(conn, "identity", _SQL_IDENTITY_NO_GR)
            if identity is None:
                raise _PollFailed("the server did not answer the identity query")
            server_uuid = _first_row(identity[1], 1)[0]
        else:
            server_uuid, group_name = _first_row(identity[1], 2)[:2]
        stats_row = _local_row(await self._query(conn, "member_stats", _SQL_MEMBER_STATS))
        member_row = _local_row(await self._query(conn, "members", _SQL_MEMBERS))
        mode_result = await self._query(conn, "flow_control_mode", _SQL_FLOW_CONTROL)
        mode = _flow_control_mode(_first_row(mode_result[1], 1)[0] if mode_result else None)

        # No members row (plugin not installed): the row MySQL shows before GR starts.
        state = _text(member_row.get(col.MEMBER_STATE)).upper() or "OFFLINE"
        if state not in MEMBER_STATES:
            log.warning("mysql.unknown_member_state", state=state)
            state = "ERROR"
        role = _text(member_row.get(col.MEMBER_ROLE)).upper()
        member_id = _text(member_row.get(col.MEMBER_ID))
        stats_member_id = _text(stats_row.get(col.MEMBER_ID)) if stats_row else member_id
        port = member_row.get(col.MEMBER_PORT)
        member = LocalMember(
            group_name=_text(group_name),
            member_id=member_id,
            host=_text(member_row.get(col.MEMBER_HOST)),
            port=None if port is None else _integer(port),
            state=state,
            role=role if role in MEMBER_ROLES else "",
            version=_text(member_row.get(col.MEMBER_VERSION)),
            view_id=_text(stats_row.get(col.VIEW_ID)),
            communication_stack=_text(member_row.get(col.MEMBER_COMMUNICATION_STACK)),
            stats_member_id=None if stats_member_id == member_id else stats_member_id,
            server_uuid=_text(server_uuid),
        )
        values: dict[str, Any] = {
            name: wire_int32(_integer(stats_row.get(col))) for name, col in _INT32_COLUMNS.items()
        }
        values.update(
            (name, wire_int64(_integer(stats_row.get(col)))) for name, col in _INT64_COLUMNS.items()
        )
        values.update((name, _raw(stats_row.get(col))) for name, col in _TEXT_COLUMNS.items())
        stats = PipelineStats(**values, transaction_gtids_present=False, flow_control_mode=mode)
        lag = await self._read_lag(conn, state)
        applier = await self._read_applier(conn, now_us, stats.transactions_waiting_apply)
        return LocalSample(
            member=member, stats=stats, sampled_at_us=now_us, lag=lag, applier=applier
        )

    async def _read_applier(
        self, conn: asyncmy.Connection, now_us: int, applier_queue: int
    ) -> MemberApplier | None:
        """WL#15620's tables, or what 8.0's tell (mysql_applier); None when unreadable.

        Never raises; shares the lag queries' deadline, so the stats sample survives.
        """
        if conn is not self._conn:  # the lag read failed and dropped the connection
            return None
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                metrics = await self._query(
                    conn, "applier_metrics", mysql_applier.SQL_METRICS, missing_ok=True
                )
                if metrics is not None:
                    progress = await self._query(
                        conn, "applier_progress", mysql_applier.SQL_PROGRESS
                    )
                    rows = _dict_rows(metrics)
                    if not self._utc_session:  # LAST_APPLIER_START would be in the wrong zone
                        rows = [{**r, col.LAST_APPLIER_START: None} for r in rows]
                    return mysql_applier.build_native(now_us, rows, _dict_rows(progress))
                workers = await self._query(conn, "applier_by_worker", mysql_lag.SQL_WORKERS)
        except TimeoutError:
            self._lag_failed("applier_timeout", None)
            return None
        except _PollFailed as exc:
            self._lag_failed("applier_query_failed", exc)
            return None
        if workers is None:
            return None
        return mysql_applier.build_derived(now_us, _dict_rows(workers), max(0, applier_queue))

    async def _read_lag(self, conn: asyncmy.Connection, state: str) -> tuple[ChannelLag, ...]:
        """The GR channels' stage lag; () when it cannot be read. Never raises."""
        try:
            async with asyncio.timeout_at(self._lag_deadline):
                if not self._utc_session:
                    if await self._query(conn, "lag_time_zone", mysql_lag.SQL_UTC_SESSION) is None:
                        return ()  # rejected (logged): timestamps would be in the wrong zone
                    self._utc_session = True
                tables = []
                for what, sql in (
                    ("lag_connection", mysql_lag.SQL_CONNECTION),
                    ("lag_applier", mysql_lag.SQL_APPLIER),
                    ("lag_coordinator", mysql_lag.SQL_COORDINATOR),
                    ("lag_workers", mysql_lag.SQL_WORKERS),
                ):
                    result = await self._query(conn, what, sql)
                    tables.append(_dict_rows(result))
        except TimeoutError:
            self._lag_failed("lag_timeout", None)
            return ()
        except _PollFailed as exc:
            self._lag_failed("lag_query_failed", exc)
            return ()
        return mysql_lag.build_lag(state, *tables)

    def _lag_failed(self, reason: str, exc: BaseException | None) -> None:
        # A timed-out or broken stream cannot be reused: drop it, reconnect at
        # the next call; the stats just read are still good.
        if reason not in self._lag_failures_logged:
            self._lag_failures_logged.add(reason)
            log.warning("mysql.lag_unavailable", reason=reason)
        self._lost(reason, exc, retry_now=True)

    async def _query(
        self, conn: asyncmy.Connection, what: str, sql: str, *, missing_ok: bool = False
    ) -> tuple[list[str], list[Sequence[Any]]] | None:
        """Run one SELECT; None when the server rejected it (logged once per connection).

        Raises:
            _PollFailed: the connection is broken or ending.
        """
        try:
            async with conn.cursor() as cur:
                await cur.execute(sql)
                rows = list(await cur.fetchall())
                names = [str(d[0]).upper() for d in (cur.description or ())]
        except asyncmy.errors.MySQLError as exc:
            code = _errno(exc)
            if code is None or 2000 <= code < 3000 or code in _CONNECTION_ENDING_ERRORS:
                raise _PollFailed(what) from exc
            if missing_ok and code == _ER_NO_SUCH_TABLE:
                return None
            if (what, code) not in self._logged_errors:
                self._logged_errors.add((what, code))
                level = log.info if code == _ER_UNKNOWN_SYSTEM_VARIABLE else log.warning
                level("mysql.query_rejected", query=what, errno=code, error=str(exc))
            return None
        except OSError as exc:
            raise _PollFailed(what) from exc
        return names, rows


def _errno(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], int) and args[0] > 0:
        return args[0]
    return None


def _first_row(rows: Sequence[Sequence[Any]], width: int) -> Sequence[Any]:
    if not rows or len(rows[0]) < width:
        raise _PollFailed("unexpected result shape")
    return rows[0]


def _local_row(result: tuple[list[str], list[Sequence[Any]]] | None) -> Mapping[str, Any]:
    """The row of our UUID if the server shows one, else the empty-MEMBER_ID one, else {}."""
    if not result or not result[1]:
        return {}
    names, rows = result
    dicts = [dict(zip(names, row, strict=False)) for row in rows]
    return next((d for d in dicts if _text(d.get(col.MEMBER_ID))), dicts[0])


def _dict_rows(result: tuple[list[str], list[Sequence[Any]]] | None) -> list[dict[str, Any]]:
    if not result:
        return []
    names, rows = result
    return [dict(zip(names, row, strict=False)) for row in rows]


def _integer(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal | float):
        return int(value)
    if isinstance(value, bytes | bytearray):
        value = value.decode("ascii", "replace")
    try:
        return int(str(value).strip())
    except ValueError:
        log.warning("mysql.bad_number", value=str(value)[:40])
        return 0


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _raw(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    return str(value).encode("utf-8")


def _flow_control_mode(value: Any) -> int:
    text = _text(value).strip().upper()
    if text in ("DISABLED", "0"):
        return FLOW_CONTROL_DISABLED
    return FLOW_CONTROL_QUOTA
