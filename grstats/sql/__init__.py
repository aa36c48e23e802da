"""MySQL-protocol endpoint over the live all-member tables and the Parquet history.

Strategy: mysql-mimic speaks the wire protocol (handshake, auth, session
variables), with its unbounded pieces replaced (`wire`, `stream`); each
statement is parsed in a worker, checked against allowlists and translated
(`statements.prepare`) and runs on DuckDB in a bounded thread pool
(`engine.Engine`), information_schema and SHOW included, so the daemon's
event loop never waits for a query. Only
this package imports mysql-mimic and DuckDB; `SqlServer` is imported lazily
so that a daemon without [sql] never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grstats.sql.options import SqlOptions, native_password_hash

if TYPE_CHECKING:
    from grstats.sql.server import SqlServer

__all__ = ["SqlOptions", "SqlServer", "native_password_hash"]


def __getattr__(name: str) -> Any:
    if name == "SqlServer":
        from grstats.sql.server import SqlServer  # noqa: PLC0415 - heavy libraries, when serving

        return SqlServer
    raise AttributeError(name)
