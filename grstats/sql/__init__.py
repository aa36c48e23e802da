"""MySQL-protocol endpoint over the live all-member tables and the Parquet history.

Strategy: mysql-mimic speaks the wire protocol (handshake, auth, SHOW,
information_schema, session variables); each statement is checked and
translated (`engine.prepare`) and runs on DuckDB in a bounded thread pool
(`engine.Engine`), so the daemon's event loop never waits for a query. Only
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
