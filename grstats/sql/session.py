"""One client connection's session: MySQL's variables and SHOW over our catalog, queries to DuckDB.

Strategy: mysql-mimic's `Session` already answers SET, SHOW, USE and
DESCRIBE, and replaces `@@variables` and `DATABASE()` in a statement before
it reaches `query()`. This subclass adds: the server's variables
(`@@server_uuid` is the local member), NOW()/NOW(6) with MySQL's precision,
`USE` of an unknown database refused (1049), parse errors as 1064, and every
`SqlError` as an error packet with its MySQL code.

Bounds (nothing of a client's statement is heavy on the event loop): a
statement past `max_statement_bytes` is refused before parsing (1153); the
parse, the rewrites that print SQL and a cap on the tree's size
(`MAX_STATEMENT_NODES`) run in a worker thread; information_schema and SHOW
go to DuckDB in a worker like any query (mysql-mimic answered them with
sqlglot's executor on the loop, outside every limit); the DESCRIBE / SHOW
FIELDS / SHOW KEYS forms sqlglot misreads (`DESCRIBE history` is a keyword
form to it) are rewritten to the SHOW it reads (`rewrite`).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import structlog
from mysql_mimic import Session
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.session import Query
from mysql_mimic.variables import SessionVariables, Variables
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from grstats.core.ratelimit import RateLimit
from grstats.sql import catalog
from grstats.sql.errors import BAD_DB, OUT_OF_MEMORY, PACKET_TOO_LARGE, PARSE, UNKNOWN, SqlError
from grstats.sql.options import perspective

if TYPE_CHECKING:
    from mysql_mimic.connection import Connection

log = structlog.get_logger("grstats.sql")

_NOW = {"NOW", "SYSDATE", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP", "UTC_TIMESTAMP"}

Execute = Callable[[exp.Expression, str | None], Awaitable[Any]]
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]

MAX_STATEMENT_NODES = 10_000  # a statement's parse tree, walked on the loop by mysql-mimic

_NAME = r"(?:`[^`]{1,64}`|[A-Za-z0-9_$]{1,64})"
# the statement forms sqlglot's MySQL dialect misreads, as the SHOW it understands
_REWRITES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    # DESCRIBE t [col]: sqlglot reads DESCRIBE HISTORY as a keyword form (1064 for `history`)
    (
        re.compile(
            rf"^\s*(?:DESC|DESCRIBE|EXPLAIN)\s+(?P<t>{_NAME}(?:\.{_NAME})?)"
            rf"(?:\s+(?P<c>{_NAME}|'[^']*'))?\s*;?\s*$",
            re.IGNORECASE,
        ),
        lambda m: (
            f"SHOW COLUMNS FROM {m['t']}"
            + (f" LIKE '{m['c'].strip(chr(39)).strip('`')}'" if m["c"] else "")
        ),
    ),
    (
        re.compile(r"^\s*SHOW\s+(FULL\s+)?FIELDS\b", re.IGNORECASE),
        lambda m: f"SHOW {m[1] or ''}COLUMNS",
    ),
    (re.compile(r"^\s*SHOW\s+(?:KEYS|INDEXES)\b", re.IGNORECASE), lambda m: "SHOW INDEX"),
)


def rewrite(sql: str) -> str:
    """`sql` with a DESCRIBE / SHOW FIELDS / SHOW KEYS form as the SHOW sqlglot reads."""
    for pattern, replace in _REWRITES:
        m = pattern.match(sql)
        if m:
            return replace(m) + sql[m.end() :]
    return sql


def _fsp(node: exp.Expression) -> int:
    arg = node.this if isinstance(node, exp.CurrentTimestamp) else None
    if isinstance(node, exp.Anonymous) and node.expressions:
        arg = node.expressions[0]
    if isinstance(arg, exp.Literal) and arg.is_int:
        return max(0, min(6, int(arg.this)))
    return 0


def _now_text(now: dt.datetime, fsp: int) -> str:
    text = now.strftime("%Y-%m-%d %H:%M:%S")
    return text + now.strftime(".%f")[: fsp + 1] if fsp else text


class GrstatsSession(Session):
    """A session of the endpoint.

    Args:
        global_variables: the server's variables (shared, read-only here).
        execute: runs a checked statement off the event loop -> (rows, columns).
        offload: runs a function in a worker thread (parsing is never done on the loop).
        local_member: the local member's server UUID ("" without one).
        user: the configured account; a login `<user>+<member_id>` sees
            `@@server_uuid` = that member (`options.perspective`).
    """

    def __init__(
        self,
        global_variables: Variables,
        execute: Execute,
        offload: Offload,
        local_member: Callable[[], str],
        user: str = "",
        *,
        max_statement_bytes: int = 64 << 10,
    ) -> None:
        super().__init__(SessionVariables(global_variables))
        self.warnings: tuple[str, ...] = ()  # the last statement's, for SHOW WARNINGS
        self._max_statement_bytes = max_statement_bytes
        self._execute = execute
        self._offload = offload
        self._local_member = local_member
        self._user = user

    def _set_server_uuid(self) -> None:
        member = perspective(self.username or "", self._user) if self._user else None
        self.variables.set("server_uuid", member or self._local_member(), force=True)

    async def init(self, connection: Connection) -> None:
        await super().init(connection)
        self._set_server_uuid()

    async def reset(self) -> None:
        await super().reset()
        self._set_server_uuid()  # COM_CHANGE_USER may have changed the login

    async def query(self, expression: exp.Expression, sql: str, attrs: dict[str, str]) -> Any:
        return await self._answer(expression)

    async def _answer(self, expression: exp.Expression) -> Any:
        self.warnings = ()
        rows, columns, self.warnings = await self._execute(expression, self.database)
        return rows, columns

    def _show_warnings(self, show: exp.Show) -> Any:
        # MySQL's SHOW WARNINGS: the previous statement's (it does not clear them itself)
        return [("Warning", UNKNOWN, text) for text in self.warnings], ["Level", "Code", "Message"]

    async def use(self, database: str) -> None:
        if database.lower() not in catalog.DATABASES:
            # COM_INIT_DB calls this outside handle_query: raise the packet's error here
            raise _mysql_error(SqlError(BAD_DB, f"Unknown database '{database}'"))
        self.database = database.lower()

    async def _query_info_schema(self, expression: exp.Expression) -> Any:
        # DuckDB in a worker, under the limits, not mysql-mimic's sqlglot executor on the loop
        return await self._answer(expression)

    async def _static_query_middleware(self, q: Query) -> Any:
        # mysql-mimic evaluates FROM-less SELECTs with sqlglot's executor, which lacks
        # GTID_SUBTRACT & co.: DuckDB runs them like any other statement.
        return await q.next()

    def _parse_in_worker(self, sql: str, now: dt.datetime) -> list[exp.Expression]:
        # worker thread: parse, bound the tree, and the rewrites that print SQL (slow on a
        # large tree) -- the loop then only walks a tree of at most MAX_STATEMENT_NODES
        expressions: list[exp.Expression] = self._parse(rewrite(sql))
        for expression in expressions:
            nodes = sum(1 for _ in expression.walk())
            if nodes > MAX_STATEMENT_NODES:
                raise SqlError(
                    PARSE,
                    f"The statement is too complex: {nodes} expression nodes "
                    f"(at most {MAX_STATEMENT_NODES})",
                )
            _mysql_names(expression, now)
        return expressions

    async def _run(self, sql: str, attrs: dict[str, str]) -> Any:
        # mysql-mimic's handle_query, with the parse in a worker thread
        # the wall clock through time.time(), as the history's timestamps
        self.timestamp = datetime.fromtimestamp(time.time(), tz=self.timezone())
        now = self.timestamp.astimezone(dt.UTC)
        parse = functools.partial(self._parse_in_worker, sql, now)
        result = None
        for expression in await self._offload(parse):
            q = Query(expression, sql, attrs, _middlewares=self.middlewares, _query=self.query)
            result = await q.start()
        return result

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        if (
            len(sql) > self._max_statement_bytes // 4
            and len(sql.encode()) > self._max_statement_bytes
        ):
            log.debug("sql.refused", code=PACKET_TOO_LARGE, reason="max_statement_bytes")
            raise _mysql_error(
                SqlError(
                    PACKET_TOO_LARGE,
                    f"The statement is longer than max_statement_bytes={self._max_statement_bytes}",
                )
            )
        try:
            return await self._run(sql, attrs)
        except RecursionError:  # a statement nested past the parser's depth: MySQL says 1064
            log.debug("sql.refused", code=PARSE, reason="nested too deeply")
            raise _mysql_error(
                SqlError(
                    PARSE,
                    "You have an error in your SQL syntax: the statement is nested too "
                    f"deeply near '{sql.strip()[:80]}' at line 1",
                )
            ) from None
        except MemoryError:  # Python's or Arrow's (a subclass): a limit, not a bug
            _OOM_LOG.emit()
            raise _mysql_error(
                SqlError(
                    OUT_OF_MEMORY,
                    "Out of memory: the statement needs more memory than the endpoint has; "
                    "add a LIMIT, aggregate or select fewer columns",
                )
            ) from None
        except (ParseError, TokenError) as exc:
            near = sql.strip()[:80]
            raise _mysql_error(
                SqlError(
                    PARSE,
                    "You have an error in your SQL syntax; check the manual that corresponds "
                    f"to your MySQL server version for the right syntax to use near '{near}' "
                    f"at line 1 ({str(exc).splitlines()[0][:120]})",
                )
            ) from None
        except SqlError as exc:
            log.debug("sql.refused", code=exc.code, reason=exc.message)
            raise _mysql_error(exc) from None
        except MysqlError:
            raise
        except Exception:  # a client must get an error packet, never a dropped connection
            log.exception("sql.statement_failed")  # a bug: its traceback is for us, not the client
            raise _mysql_error(
                SqlError(
                    UNKNOWN, "Internal error in the SQL endpoint (logged as sql.statement_failed)"
                )
            ) from None


class _OomLog:
    """`sql.out_of_memory` at most once per interval (a line, no traceback; each is
    counted as error 1041 in the endpoint's figures)."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self._limit = RateLimit(interval_s)

    def emit(self) -> None:
        held = self._limit.admit(time.monotonic())
        if held is not None:
            log.warning("sql.out_of_memory", suppressed=held)


_OOM_LOG = _OomLog()


def _mysql_names(expression: exp.Expression, now: dt.datetime) -> None:
    """MySQL's names for computed columns (their text) and NOW(fsp) as the statement's time.

    (mysql-mimic replaces NOW() too, later, without the fraction: this goes first.)
    """

    def now_literal(node: exp.Expression) -> exp.Expression:
        name = node.name.upper() if isinstance(node, exp.Anonymous) else ""
        if name in _NOW or isinstance(node, (exp.CurrentTimestamp, exp.UtcTimestamp)):
            return exp.cast(exp.Literal.string(_now_text(now, _fsp(node))), "DATETIME")
        return node

    if isinstance(expression, exp.Select):  # MySQL names a computed column by its text
        for i, e in enumerate(expression.expressions):
            if not isinstance(e, (exp.Alias, exp.Column, exp.Star)):
                expression.expressions[i] = exp.alias_(e, exp.to_identifier(e.sql("mysql")))
    expression.transform(now_literal, copy=False)


def _mysql_error(exc: SqlError) -> MysqlError:
    return MysqlError(exc.message, code=cast(ErrorCode, exc.code))
