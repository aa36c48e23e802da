"""What `grstats init` and `grstats check` ask the local server, once, outside the daemon.

Strategy: one short asyncmy session (bounded by ``connect_timeout`` per step)
reads the identity a member config needs and tries every table the source
polls with ``SELECT * ... LIMIT 0``. Trying the table, rather than parsing
``SHOW GRANTS``, gives the server's own verdict: role grants, partial
revokes and wildcards all count as the server counts them. MySQL answers a
missing privilege with error 1142 (ER_TABLEACCESS_DENIED_ERROR) and a table
this version lacks with 1146 (ER_NO_SUCH_TABLE); the replication tables are
guarded by `pfs_readonly_acl` (SELECT needed), global_status by a world
readable ACL (storage/perfschema/table_replication_group_member_stats.cc,
table_global_status.cc in mysql/mysql-server).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import asyncmy  # the only asyncmy importers: this package (STYLE.md §4)
import asyncmy.errors

from grstats.sources.mysql.settings import MySQLSettings, parse_dsn
from grstats.sources.mysql.values import errno_of

__all__ = [
    "OPTIONAL_TABLES",
    "POLLED_TABLES",
    "PreflightError",
    "ServerFacts",
    "TableAccess",
    "inspect_server",
]

# Every performance_schema table the mysql source reads (grstats/sources/mysql/).
POLLED_TABLES = (
    "replication_group_member_stats",
    "replication_group_members",
    "replication_connection_status",
    "replication_applier_status",
    "replication_applier_status_by_coordinator",
    "replication_applier_status_by_worker",
    "replication_applier_metrics",
    "replication_applier_progress_by_worker",
    "global_status",
)
# Tables a server may lack without harm (WL#15620's, 9.x only): missing is OK.
OPTIONAL_TABLES = frozenset(
    {"replication_applier_metrics", "replication_applier_progress_by_worker"}
)
_ER_UNKNOWN_SYSTEM_VARIABLE = 1193
_ER_TABLEACCESS_DENIED = 1142
_ER_NO_SUCH_TABLE = 1146


class PreflightError(Exception):
    """The server could not be reached or asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What the server says about itself.

    `group_name` is None without the Group Replication plugin (the variable is
    unknown) and "" when the plugin is there but no group is configured.
    `member_host` / `member_port` are what GR shows as MEMBER_HOST/PORT
    (report_host/report_port when set, else hostname/port).
    """

    server_uuid: str
    group_name: str | None
    member_host: str
    member_port: int
    version: str


@dataclass(frozen=True, slots=True)
class TableAccess:
    """The verdict on one polled table: "ok", "denied" or "missing" (with the error)."""

    table: str
    status: str
    error: str = ""


async def inspect_server(settings: MySQLSettings) -> tuple[ServerFacts, tuple[TableAccess, ...]]:
    """Connect once, read the server's identity and try every polled table.

    Args:
        settings: DSN, password and connect timeout.

    Returns:
        The facts and one verdict per table of POLLED_TABLES.

    Raises:
        PreflightError: the server refused or could not be reached in time.
    """
    user, host, port, params = parse_dsn(settings.dsn)
    where = params.get("unix_socket") or f"{host}:{port}"
    try:
        async with asyncio.timeout(settings.connect_timeout):
            conn = await asyncmy.connect(
                host=host,
                port=port,
                user=user,
                password=settings.password,
                unix_socket=params.get("unix_socket"),
                connect_timeout=settings.connect_timeout,
                autocommit=True,
                program_name="grstats-preflight",
            )
    except TimeoutError:
        raise PreflightError(f"{where}: no answer within {settings.connect_timeout} s") from None
    except (OSError, asyncmy.errors.MySQLError) as exc:
        raise PreflightError(f"{where}: {_reason(exc)}") from None
    try:
        async with asyncio.timeout(settings.connect_timeout * 4):
            return await _ask(conn)
    except TimeoutError:
        raise PreflightError(f"{where}: the server stopped answering") from None
    except (OSError, asyncmy.errors.MySQLError) as exc:
        raise PreflightError(f"{where}: {_reason(exc)}") from None
    finally:
        conn.close()


async def _ask(conn: Any) -> tuple[ServerFacts, tuple[TableAccess, ...]]:
    (uuid, hostname, port, version, report_host, report_port) = await _one(
        conn, "SELECT @@server_uuid, @@hostname, @@port, @@version, @@report_host, @@report_port"
    )
    try:
        (group,) = await _one(conn, "SELECT @@group_replication_group_name")
    except asyncmy.errors.MySQLError as exc:
        if errno_of(exc) != _ER_UNKNOWN_SYSTEM_VARIABLE:
            raise
        group = None
    facts = ServerFacts(
        server_uuid=str(uuid),
        group_name=None if group is None else str(group),
        member_host=str(report_host or hostname or ""),
        member_port=int(report_port or port or 0),
        version=str(version),
    )
    verdicts = []
    for table in POLLED_TABLES:
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"SELECT * FROM performance_schema.{table} LIMIT 0")
                await cur.fetchall()
        except asyncmy.errors.MySQLError as exc:
            code = errno_of(exc)
            if code == _ER_TABLEACCESS_DENIED:
                verdicts.append(TableAccess(table, "denied", _reason(exc)))
                continue
            if code == _ER_NO_SUCH_TABLE:
                verdicts.append(TableAccess(table, "missing", _reason(exc)))
                continue
            raise
        verdicts.append(TableAccess(table, "ok"))
    return facts, tuple(verdicts)


async def _one(conn: Any, sql: str) -> tuple[Any, ...]:
    async with conn.cursor() as cur:
        await cur.execute(sql)
        row = await cur.fetchone()
    return tuple(row)


def _reason(exc: BaseException) -> str:
    args: tuple[Any, ...] = tuple(exc.args)
    if len(args) >= 2 and isinstance(args[0], int):
        return f"error {args[0]}: {args[1]}"
    return str(exc) or type(exc).__name__
