"""The SQL endpoint's server: listen, authenticate, bound connections, run queries off the loop.

Strategy: lifecycle `start()` (bind, or raise OSError) and `close()` (stop
listening, interrupt running statements, end connections). Statements run in a
thread pool of `max_connections` workers, each with its own DuckDB database
(`engine.Engine`); the event loop only awaits the result, so the daemon's
tick loop and bus keep their cadence while a query scans the history.

Bounds: `max_connections` connections (the next one gets error 1040 and is
counted in `refused_connections`); one statement at a time per connection
(the protocol's own rule) and so at most `max_connections` statements; each
stopped at `query_timeout`; results refused past `max_rows` /
`max_result_bytes` (the encoded bytes); the per-connection bounds
(packets, statement size, handshake and idle timeouts, failed logins) are
the wire's (`wire.WireLimits`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import ssl
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog
from mysql_mimic import IdentityProvider, NativePasswordAuthPlugin, User
from mysql_mimic.auth import AuthPlugin
from mysql_mimic.control import LocalControl, TooManyConnections
from mysql_mimic.results import ResultColumn
from mysql_mimic.types import ColumnType
from mysql_mimic.variables import SYSTEM_VARIABLES, GlobalVariables, VariableSchema
from sqlglot import exp

from grstats.core.snapshot import DaemonSnapshot, SqlFigures
from grstats.sql import statements
from grstats.sql.engine import Engine, HistoryTail
from grstats.sql.errors import READ_ONLY, SqlError, register_sqlstates
from grstats.sql.listener import Acceptor, bind, port_of
from grstats.sql.options import SqlOptions, perspective
from grstats.sql.results import column
from grstats.sql.session import GrstatsSession
from grstats.sql.statements import prepare
from grstats.sql.values import column_kind, is_unsigned
from grstats.sql.wire import GrstatsMysqlServer, WireLimits, WireStats

log = structlog.get_logger("grstats.sql")

SERVER_VERSION = "8.4.0-grstats"


class _Accounts(IdentityProvider):
    """The one configured user; any other name fails like a wrong password (1045)."""

    def __init__(self, user: str, password_hash: str) -> None:
        self._plugin = NativePasswordAuthPlugin()
        self._user = user
        self._hash = password_hash.removeprefix("*")
        self._decoy = secrets.token_hex(20)  # no name probing: unknown users get 1045 too

    def get_plugins(self) -> list[AuthPlugin]:
        return [self._plugin]

    async def get_user(self, username: str) -> User | None:
        # the account, or the account seen as one member (`options.perspective`)
        known = username == self._user or perspective(username, self._user) is not None
        auth = self._hash if known else self._decoy
        return User(name=username, auth_string=auth, auth_plugin=self._plugin.name)


class _BoundedControl(LocalControl):
    def __init__(self, max_connections: int) -> None:
        super().__init__()
        self.max_connections = max_connections

    async def add(self, connection: Any) -> int:
        if len(self._connections) >= self.max_connections:
            raise TooManyConnections()
        connection_id: int = await super().add(connection)
        return connection_id

    def connections(self) -> list[Any]:
        """The connections holding a slot now."""
        return list(self._connections.values())

    def kill_all(self) -> None:
        for conn in list(self._connections.values()):
            conn.kill()


def _variables(local_member: str, port: int) -> GlobalVariables:
    extra: dict[str, VariableSchema] = {
        "version": (str, SERVER_VERSION, False),
        "version_comment": (str, "grstats SQL endpoint (read-only)", False),
        "server_uuid": (str, local_member, False),
        "hostname": (str, "", False),
        "port": (int, port, False),
        "read_only": (bool, True, False),
        "super_read_only": (bool, True, False),
        "transaction_read_only": (bool, True, True),
        "performance_schema": (bool, True, False),
        "lock_wait_timeout": (int, 31536000, True),
        "log_slow_filter": (str, "", True),
        "sql_mode": (str, "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES", True),
        "default_storage_engine": (str, "PERFORMANCE_SCHEMA", True),
    }
    return GlobalVariables({**SYSTEM_VARIABLES, **extra})


class SqlServer:
    """The MySQL-protocol endpoint.

    Args:
        options: the settings.
        get_snapshot: the daemon's current snapshot (called on the event loop),
            or None to serve the history only (live tables empty).
        tail: the history's rows not yet in Parquet (`grstats.history.tail.tail_of`),
            or None to show the Parquet files only.
    """

    def __init__(
        self,
        options: SqlOptions,
        get_snapshot: Callable[[], DaemonSnapshot] | None = None,
        tail: HistoryTail | None = None,
    ) -> None:
        self.options = options
        self._get_snapshot = get_snapshot
        self.engine = Engine(
            history_dir=options.history_dir,
            rollups_dir=options.rollups_dir,
            query_timeout=options.query_timeout,
            max_rows=options.max_rows,
            max_result_bytes=options.max_result_bytes,
            threads=options.threads,
            memory_limit=options.memory_limit,
            tail=tail,
        )
        self._pool = ThreadPoolExecutor(options.max_connections, thread_name_prefix="grstats-sql")
        self._control = _BoundedControl(options.max_connections)
        self._server: GrstatsMysqlServer | None = None
        self._acceptor: Acceptor | None = None
        self.port = options.port
        self.queries = 0
        self.failed = 0
        self.wire = WireStats()
        self.limit_hits: dict[str, int] = dict.fromkeys(
            ("query_timeout", "max_rows", "max_result_bytes"), 0
        )
        self.failure = ""  # why the endpoint is not serving ("" while it is or before start)

    @property
    def refused_connections(self) -> int:
        """Connections refused at max_connections."""
        return self.wire.refused

    @property
    def serving(self) -> bool:
        """True while the endpoint accepts connections."""
        return self._acceptor is not None and self._acceptor.accepting

    def idle_s(self, now: float) -> float:
        """Seconds without a client connection (0 while one is open); `now`: time.monotonic()."""
        return self._acceptor.idle_s(now) if self._acceptor is not None else 0.0

    def stop_accepting(self) -> None:
        """Accept no more connections, at once (those queued stay for the sockets' next owner)."""
        if self._acceptor is not None:
            self._acceptor.stop()

    def figures(self) -> SqlFigures:
        """The endpoint's counters and state now (event loop only)."""
        serving = self.serving
        reason = "" if serving else (self.failure or "not listening")
        errors = dict(sorted(self.wire.errors.items()))
        skipped, skipped_total = self.engine.tail_figures()
        return SqlFigures(
            serving=serving,
            reason=reason,
            connections_open=self.wire.open,
            max_connections=self.options.max_connections,
            connections_accepted=self.wire.accepted,
            connections_refused=self.wire.refused,
            tls_handshake_failures=self.wire.tls_failures,
            queries=self.queries,
            queries_interrupted=self.limit_hits["query_timeout"],
            results_refused={
                "max_rows": self.limit_hits["max_rows"],
                "max_result_bytes": self.limit_hits["max_result_bytes"],
            },
            writes_refused=errors.get(READ_ONLY, 0),
            errors=errors,
            handshake_timeouts=self.wire.handshake_timeouts,
            logins_delayed=self.wire.logins_delayed,
            connections_evicted=self.wire.evicted,
            tail_skipped_files=skipped,
            tail_skipped_total=skipped_total,
        )

    def _local_member(self) -> str:
        return self._get_snapshot().local_member_id if self._get_snapshot else ""

    def _session(self) -> GrstatsSession:
        return GrstatsSession(
            self._globals,
            self._execute,
            self._offload,
            self._local_member,
            self.options.user,
            max_statement_bytes=self.options.max_statement_bytes,
        )

    def _ssl(self) -> ssl.SSLContext | None:
        if not (self.options.tls_cert_file and self.options.tls_key_file):
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.options.tls_cert_file, self.options.tls_key_file)
        return ctx

    async def start(self, sockets: list[socket.socket] | None = None) -> None:
        """Listen: on `sockets` when given (a daemon's, inherited by its child), else bind.

        Raises:
            OSError: the address cannot be bound or the TLS files read (also
                kept in `failure`).
        """
        register_sqlstates()
        # mysql-mimic logs every refused statement at ERROR; ours are logged as events.
        logging.getLogger("mysql_mimic").setLevel(logging.CRITICAL)
        self._globals = _variables(self._local_member(), self.options.port)
        # the function allowlist is built once, in a worker, before the first client
        await asyncio.get_running_loop().run_in_executor(self._pool, statements.allowed)
        try:
            context = self._ssl()
        except OSError as exc:  # ssl.SSLError too
            self.failure = f"cannot load tls_cert_file / tls_key_file: {exc.strerror or exc}"
            raise
        server = GrstatsMysqlServer(
            session_factory=self._session,
            require_tls=self.options.tls_required,
            stats=self.wire,
            limits=WireLimits(
                handshake_timeout=self.options.handshake_timeout,
                idle_timeout=self.options.idle_timeout,
                max_packet=self.options.max_statement_bytes + (16 << 10),
                max_logins_per_address=self.options.max_logins_per_address,
            ),
            identity_provider=_Accounts(self.options.user, self.options.password_hash),
            control=self._control,
            ssl=context,
        )
        if sockets is None:
            try:
                sockets = bind(self.options.host, self.options.port)
            except OSError as exc:
                where = f"{self.options.host}:{self.options.port}"
                self.failure = f"cannot listen on {where}: {exc.strerror or exc}"
                raise
        self.failure = ""
        self._server = server
        # our own accepting (not asyncio's server): it stops at once, no connection half-taken
        self._acceptor = Acceptor(sockets, server.connected)
        self._acceptor.start()
        self.port = port_of(sockets) or self.port
        self._globals.set("port", self.port, force=True)
        log.info("sql.listening", host=self.options.host, port=self.port)

    async def _offload(self, work: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    async def _execute(self, expression: exp.Expression, database: str | None) -> Any:
        snapshot = self._get_snapshot() if self._get_snapshot else None
        loop = asyncio.get_running_loop()
        self.queries += 1
        try:
            return await loop.run_in_executor(
                self._pool, self._work, expression, database, snapshot
            )
        except SqlError as exc:
            self.failed += 1
            if exc.limit:
                self.limit_hits[exc.limit] += 1
            raise
        except Exception:
            self.failed += 1
            raise

    def _work(
        self, expression: exp.Expression, database: str | None, snapshot: DaemonSnapshot | None
    ) -> tuple[list[tuple[Any, ...]], list[ResultColumn], tuple[str, ...]]:
        # worker thread: translate, run, convert (the loop only writes the packets)
        sql = prepare(expression, database, self.engine.known_tables())
        result = self.engine.run(sql, snapshot)
        cols = [
            column(name, ColumnType[column_kind(t)], unsigned=is_unsigned(t))
            for name, t in zip(result.names, result.types, strict=True)
        ]
        return result.rows, cols, result.warnings  # MySQL's values already (`engine._fetch`)

    async def close(self) -> None:
        """Stop listening, interrupt running statements and end every connection."""
        if self._acceptor is not None:
            self._acceptor.close()
            self.engine.interrupt_all()
            self._control.kill_all()
            await self._acceptor.wait_served(2.0)
            if self._acceptor.pending:
                log.warning("sql.close_timeout")
            self._acceptor = self._server = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        log.info("sql.closed", queries=self.queries, failed=self.failed)
