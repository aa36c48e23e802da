"""A mysql-mimic "local MySQL" in its own thread, for the CLI commands run as subprocesses.

The tables and variables are those of tests/fixtures/fake_mysql.py's
FakeMySQL (performance_schema columns as MySQL 8.4 declares them in
storage/perfschema/table_*.cc; unknown @@variables are error 1193 as on
MySQL), plus what `grstats init` / `check` read: @@report_host (NULL unless
set) and @@report_port (the server's port unless set), as sql/sys_vars.cc
declares them. A table named in `denied` answers error 1142
(ER_TABLEACCESS_DENIED_ERROR) as MySQL does for a user without SELECT on it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mysql_mimic import MysqlServer
from mysql_mimic.errors import MysqlError
from sqlglot import expressions as exp

from tests.fixtures.fake_mysql import (
    PASSWORD,
    USER,
    FakeMySQL,
    _FakeSession,
    _OneUser,
)

ER_TABLEACCESS_DENIED = 1142

__all__ = ["PASSWORD", "USER", "GrantedMySQL", "mimic_mysql"]


class GrantedMySQL(FakeMySQL):
    """FakeMySQL whose account lacks SELECT on the tables in `denied`."""

    def __init__(self) -> None:
        super().__init__()
        self.variables.update(report_host=None, report_port=self.variables["port"])
        self.denied: set[str] = set()

    async def start(self, unix_socket: str | None = None) -> None:
        server = MysqlServer(
            session_factory=lambda: _GrantedSession(self), identity_provider=_OneUser()
        )
        await server.start_server(host="127.0.0.1", port=self.port)
        self.port = server.sockets()[0].getsockname()[1]
        self._server = server


class _GrantedSession(_FakeSession):
    def __init__(self, fake: GrantedMySQL) -> None:
        super().__init__(fake)
        self._denied = fake.denied

    async def query(self, expression: exp.Expression, sql: str, attrs: dict[str, str]) -> Any:
        table = expression.find(exp.Table)
        if table is not None and table.name.lower() in self._denied:
            raise MysqlError(
                f"SELECT command denied to user '{USER}'@'localhost' for table '{table.name}'",
                code=ER_TABLEACCESS_DENIED,  # type: ignore[arg-type]  # an int goes on the wire
            )
        return await super().query(expression, sql, attrs)


@contextmanager
def mimic_mysql(
    *, gr: bool = True, denied: set[str] | None = None, **variables: Any
) -> Iterator[GrantedMySQL]:
    """Serve a GrantedMySQL on a loopback port from a thread until the block ends."""
    fake = GrantedMySQL()
    if not gr:
        del fake.variables["group_replication_group_name"]
    fake.variables.update(variables)
    fake.denied |= denied or set()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: asyncio.Event | None = None

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        await fake.start()
        ready.set()
        await stop.wait()
        await fake.stop()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise AssertionError("the mimic MySQL did not start")
    try:
        yield fake
    finally:
        assert stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
