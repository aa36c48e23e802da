"""One client connection's session: MySQL's variables and SHOW over our catalog, queries to DuckDB.

Strategy: mysql-mimic's `Session` already answers SET, SHOW, USE, DESCRIBE and
information_schema from `schema()`, and replaces `@@variables` and
`DATABASE()` in a statement before it reaches `query()`. This subclass adds:
the server's variables (`@@server_uuid` is the local member), NOW()/NOW(6)
with MySQL's precision, `USE` of an unknown database refused (1049), parse
errors as 1064, and every `SqlError` as an error packet with its MySQL code.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import structlog
from mysql_mimic import Session
from mysql_mimic.errors import ErrorCode, MysqlError
from mysql_mimic.schema import InfoSchema, mapping_to_columns
from mysql_mimic.session import Query
from mysql_mimic.variables import SessionVariables, Variables
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from grstats.sql.catalog import not_null_columns
from grstats.sql.errors import BAD_DB, PARSE, UNKNOWN, SqlError
from grstats.sql.options import perspective

if TYPE_CHECKING:
    from mysql_mimic.connection import Connection

log = structlog.get_logger("grstats.sql")

_NOW = {"NOW", "SYSDATE", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP", "UTC_TIMESTAMP"}

_NOT_NULL = not_null_columns()

Execute = Callable[[exp.Expression, str | None], Awaitable[Any]]


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
        schema: the catalog as {schema: {table: {column: type}}}.
        local_member: the local member's server UUID ("" without one).
        user: the configured account; a login `<user>+<member_id>` sees
            `@@server_uuid` = that member (`options.perspective`).
    """

    def __init__(
        self,
        global_variables: Variables,
        execute: Execute,
        schema: Callable[[], dict[str, dict[str, dict[str, str]]]],
        local_member: Callable[[], str],
        user: str = "",
    ) -> None:
        super().__init__(SessionVariables(global_variables))
        self._execute = execute
        self._schema = schema
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

    async def schema(self) -> InfoSchema:
        # SHOW COLUMNS / information_schema: Null as the declarations say (the
        # library's mapping form would call every column nullable)
        columns = mapping_to_columns(self._schema())
        for c in columns:
            c.is_nullable = (c.schema, c.table, c.name) not in _NOT_NULL
        return InfoSchema.from_columns(columns)

    async def query(self, expression: exp.Expression, sql: str, attrs: dict[str, str]) -> Any:
        return await self._execute(expression, self.database)

    async def use(self, database: str) -> None:
        if database.lower() not in {*self._schema(), "information_schema"}:
            # COM_INIT_DB calls this outside handle_query: raise the packet's error here
            raise _mysql_error(SqlError(BAD_DB, f"Unknown database '{database}'"))
        self.database = database.lower()

    async def _static_query_middleware(self, q: Query) -> Any:
        # mysql-mimic evaluates FROM-less SELECTs with sqlglot's executor, which lacks
        # GTID_SUBTRACT & co.: DuckDB runs them like any other statement.
        return await q.next()

    async def _set_var_middleware(self, q: Query) -> Any:
        # MySQL's NOW(fsp): mysql-mimic's replacement has no fraction; replace it first.
        now = self.timestamp.astimezone(dt.UTC)

        def now_literal(node: exp.Expression) -> exp.Expression:
            name = node.name.upper() if isinstance(node, exp.Anonymous) else ""
            if name in _NOW or isinstance(node, (exp.CurrentTimestamp, exp.UtcTimestamp)):
                return exp.cast(exp.Literal.string(_now_text(now, _fsp(node))), "DATETIME")
            return node

        if isinstance(q.expression, exp.Select):  # MySQL names a computed column by its text
            for i, e in enumerate(q.expression.expressions):
                if not isinstance(e, (exp.Alias, exp.Column, exp.Star)):
                    q.expression.expressions[i] = exp.alias_(e, exp.to_identifier(e.sql("mysql")))
        q.expression = q.expression.transform(now_literal, copy=False)
        return await super()._set_var_middleware(q)

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        try:
            return await super().handle_query(sql, attrs)
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
        except Exception as exc:  # a client must get an error packet, never a dropped connection
            log.exception("sql.statement_failed")
            raise _mysql_error(SqlError(UNKNOWN, f"{type(exc).__name__}: {exc}")) from None


def _mysql_error(exc: SqlError) -> MysqlError:
    return MysqlError(exc.message, code=cast(ErrorCode, exc.code))
