"""The SQL endpoint in-process for tests: a fixed two-member snapshot, a server on its own loop.

The server runs on its own event loop in a thread (PyMySQL and the Debian
clients are synchronous or separate processes).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grstats.core import columns
from grstats.core.snapshot import DaemonSnapshot, SqlFigures
from grstats.sql import SqlOptions
from grstats.sql.server import SqlServer

LOCAL = "11111111-1111-1111-1111-111111111111"
REMOTE = "22222222-2222-2222-2222-222222222222"


@dataclass
class Running:
    server: SqlServer
    port: int
    history: Path
    loop: asyncio.AbstractEventLoop

    def figures(self) -> SqlFigures:
        """The server's figures, read on its own loop."""

        async def read() -> SqlFigures:
            return self.server.figures()

        return asyncio.run_coroutine_threadsafe(read(), self.loop).result(10)


def snapshot() -> DaemonSnapshot:
    def stats(member: str, checked: int) -> dict[str, object]:
        row: dict[str, object] = dict.fromkeys(columns.MEMBER_STATS.names, 0)
        row.update(
            {
                columns.CHANNEL_NAME: columns.GROUP_REPLICATION_CHANNEL,
                columns.VIEW_ID: "1:2",
                columns.MEMBER_ID: member,
                columns.COUNT_TRANSACTIONS_CHECKED: checked,
                columns.TRANSACTIONS_COMMITTED_ALL_MEMBERS: "",
                columns.LAST_CONFLICT_FREE_TRANSACTION: "",
            }
        )
        return row

    def member(member: str, host: str, port: int, state: str) -> dict[str, object]:
        return {
            columns.CHANNEL_NAME: columns.GROUP_REPLICATION_CHANNEL,
            columns.MEMBER_ID: member,
            columns.MEMBER_HOST: host,
            columns.MEMBER_PORT: port,
            columns.MEMBER_STATE: state,
            columns.MEMBER_ROLE: "PRIMARY",
            columns.MEMBER_VERSION: "8.4.3",
            columns.MEMBER_COMMUNICATION_STACK: "MySQL",
        }

    return DaemonSnapshot(
        taken_at_us=0,
        group_name="g",
        local_member_id=LOCAL,
        tables={
            "replication_group_member_stats": (stats(LOCAL, 5), stats(REMOTE, 7)),
            "replication_group_members": (
                member(LOCAL, "db1", 3306, "ONLINE"),
                member(REMOTE, "db2", 3307, "UNREACHABLE"),
            ),
        },
    )


def serve(
    options: SqlOptions, get_snapshot: Callable[[], DaemonSnapshot] = snapshot
) -> Iterator[Running]:
    """Start a server with `options` on its own loop; close it at the end."""
    loop = asyncio.new_event_loop()
    server = SqlServer(options, get_snapshot)
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield Running(server, server.port, Path(options.history_dir), loop)
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
