"""A process serving N fake MySQL 8.4 servers of one group, for bench_daemon's production run.

Usage: python benchmarks/_bench_mimic.py --servers N [--only I] --ready FILE [--seconds S]
                                          [--version 8.4] [--commit-path]

Each server is tests/fixtures/fake_mysql.py's FakeMySQL (performance_schema
declared from MySQL's shipped definitions) with its own @@server_uuid; every
one lists the N members in replication_group_members and
replication_group_member_stats (rows of tests/fixtures/mysql_source.py's
row_84 / member_84), and their counters grow each second as on a group
committing ~50 transactions/s. Each server's @@gtid_executed grows with them,
as a group member's does: one GTID per certified transaction, numbered under
the group's name (group replication assigns @@group_replication_group_name's
UUID to the group's transactions, whichever member commits them), so the text
stays one interval, "<group>:1-N" with N its COUNT_TRANSACTIONS_CHECKED:
bounded in length, while the daemon parses a new set every poll. It runs in
its own process so that the SQL parsing of the fakes is not charged to the
daemons; `--only I` serves only
server I (one process per server keeps a loaded machine from starving them). FILE receives the ports
and member ids as JSON once every server listens; the process ends after S
seconds or at SIGTERM.

`--version` picks the servers' shape from MySQL's definitions (8.0, 8.4, 9.x;
default 8.4). `--commit-path` makes them show issue 27's data as a server of
that version does: on 8.4 / 9.x every Gr_* status variable the version ships
(mysql_definitions.gr_status_variables) in global_status, growing each second,
and one row of replication_group_communication_information; on 8.0 no Gr_*
variable (8.0 ships none) and no communication table, as before 8.0.23 (the
simulated pair's 8.0.22). Without it the servers show neither, as before.

What each server paid for its clients goes to FILE.stats.json every second
(`ServerLoad`): COM_QUERY round trips, statements, rows sent, polls (reads
of replication_group_member_stats: one per daemon poll), the bytes its
sockets sent and received (the kernel's TCP_INFO tcpi_bytes_acked /
tcpi_bytes_received, closed connections included) and the COM_QUERY texts
with their counts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import struct
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fixtures import mysql_definitions as defs  # noqa: E402 - after the sys.path line
from tests.fixtures.fake_mysql import FakeMySQL  # noqa: E402
from tests.fixtures.mysql_source import (  # noqa: E402
    GLOBAL_STATUS_TABLE,
    MEMBERS_TABLE,
    STATS_TABLE,
    member_84,
    row_84,
)

COUNTERS = (
    "COUNT_TRANSACTIONS_CHECKED",
    "COUNT_TRANSACTIONS_REMOTE_APPLIED",
    "COUNT_TRANSACTIONS_LOCAL_PROPOSED",
)

COMM_TABLE = "replication_group_communication_information"
# per second, on a group committing ~50 transactions/s (figures of the order the
# GR tests show; only their growth matters here)
TIME_SUM_STEP_US = 50 * 800
BYTES_STEP = 50 * 900
COUNT_STEP = 50


# struct tcp_info (linux/tcp.h, append-only ABI): tcpi_bytes_acked, tcpi_bytes_received
_TCP_INFO_BYTES = struct.Struct("=QQ")
_TCP_INFO_BYTES_AT = 120


class ServerLoad:
    """What one fake server paid for its clients, cumulative (closed connections kept)."""

    def __init__(self, fake: FakeMySQL) -> None:
        self.fake = fake
        self._bytes: dict[int, tuple[int, int]] = {}  # per connection: (sent, received)

    def figures(self) -> dict[str, Any]:
        for connection in list(self.fake._connections):
            sock = connection.stream.writer.get_extra_info("socket")
            if sock is None:
                continue
            with contextlib.suppress(OSError, struct.error):
                info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
                self._bytes[id(connection)] = _TCP_INFO_BYTES.unpack_from(info, _TCP_INFO_BYTES_AT)
        fake = self.fake
        return {
            "port": fake.port,
            "round_trips": fake.round_trips,
            "statements": fake.statements,
            "rows": fake.rows_sent,
            "polls": fake.queries[STATS_TABLE],
            "bytes_sent": sum(b[0] for b in self._bytes.values()),
            "bytes_received": sum(b[1] for b in self._bytes.values()),
            "texts": [[text, n] for text, n in fake.texts.most_common()],
        }


def member_id(index: int) -> str:
    return f"dbdbdbdb-0000-4000-8000-{index:012x}"


def _shaped(fake: FakeMySQL, table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` cut to the columns `fake`'s version declares for `table`."""
    return [{c: row.get(c) for c in fake.tables[table][0]} for row in rows]


def committed(fake: FakeMySQL, stats: list[dict[str, Any]]) -> None:
    """`fake`'s @@gtid_executed: every transaction the group certified, by its name."""
    own = next(r for r in stats if r["MEMBER_ID"] == fake.variables["server_uuid"])
    group = fake.variables["group_replication_group_name"]
    fake.variables["gtid_executed"] = f"{group}:1-{own['COUNT_TRANSACTIONS_CHECKED']}"


class CommitPath:
    """A server's Gr_* status rows (growing) and communication row, as its version shows."""

    def __init__(self, fake: FakeMySQL, ids: list[str]) -> None:
        self.rows = [
            {"VARIABLE_NAME": n, "VARIABLE_VALUE": "0"}
            for n in defs.gr_status_variables(fake.version)
        ]
        fake.tables[GLOBAL_STATUS_TABLE] = (fake.tables[GLOBAL_STATUS_TABLE][0], self.rows)
        if not self.rows:  # 8.0: no Gr_* variables; the table too is left out (< 8.0.23)
            fake.tables.pop(COMM_TABLE, None)
            return
        suspicions = ",".join(f'"{m}":0' for m in ids)
        row = {
            "WRITE_CONCURRENCY": 10,
            "PROTOCOL_VERSION": "8.0.27",
            "WRITE_CONSENSUS_LEADERS_PREFERRED": ids[0],
            "WRITE_CONSENSUS_LEADERS_ACTUAL": ids[0],
            "WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE": 1,
            "MEMBER_FAILURE_SUSPICIONS_COUNT": "{" + suspicions + "}",
        }
        fake.tables[COMM_TABLE] = (fake.tables[COMM_TABLE][0], _shaped(fake, COMM_TABLE, [row]))

    def grow(self) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        for row in self.rows:
            name = row["VARIABLE_NAME"]
            if name.endswith("_timestamp"):
                row["VARIABLE_VALUE"] = now
                continue
            step = COUNT_STEP
            if name.endswith("_time_sum"):
                step = TIME_SUM_STEP_US
            elif "bytes" in name:
                step = BYTES_STEP
            row["VARIABLE_VALUE"] = str(int(row["VARIABLE_VALUE"]) + step)


async def serve(
    count: int, only: int | None, ready: Path, seconds: float, *, version: str, commit_path: bool
) -> None:
    ids = [member_id(i) for i in range(count)]
    shown = FakeMySQL(version).variables["version"]  # as the version's server says it
    members = [
        member_84(MEMBER_ID=m, MEMBER_HOST=f"db{i}.example", MEMBER_ROLE=role, MEMBER_VERSION=shown)
        for i, (m, role) in enumerate(zip(ids, ["PRIMARY"] + ["SECONDARY"] * count, strict=False))
    ]
    stats = [row_84(MEMBER_ID=m) for m in ids]
    servers, commit_paths = [], []
    served = [(i, m) for i, m in enumerate(ids) if only is None or i == only]
    for i, m in served:
        fake = FakeMySQL(version)
        fake.variables.update(server_uuid=m, hostname=f"db{i}.example")
        fake.tables[MEMBERS_TABLE] = (fake.tables[MEMBERS_TABLE][0], members)
        fake.tables[STATS_TABLE] = (fake.tables[STATS_TABLE][0], stats)
        if commit_path:
            commit_paths.append(CommitPath(fake, ids))
        committed(fake, stats)
        await fake.start()
        servers.append(fake)
    listening = [{"port": s.port, "member": m} for s, (_, m) in zip(servers, served, strict=True)]
    ready.write_text(json.dumps(listening))  # noqa: ASYNC240 - one tiny file before serving
    loads = [ServerLoad(fake) for fake in servers]
    load_file = ready.with_suffix(".stats.json")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    end = loop.time() + seconds
    while not stop.is_set() and loop.time() < end:
        for row in stats:  # shared by every fake: one group's view
            for c in COUNTERS:
                row[c] += 50
        for fake in servers:
            committed(fake, stats)
        for server in commit_paths:
            server.grow()
        # a tiny file once a second (written whole, then renamed: never read half-written)
        partial = load_file.with_suffix(".part")
        partial.write_text(json.dumps([load.figures() for load in loads]))
        partial.replace(load_file)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
    for fake in servers:
        await fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, required=True)
    parser.add_argument("--only", type=int)
    parser.add_argument("--ready", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--version", choices=defs.VERSIONS, default="8.4")
    parser.add_argument("--commit-path", action="store_true", help="show issue 27's data")
    args = parser.parse_args()
    asyncio.run(
        serve(
            args.servers,
            args.only,
            args.ready,
            args.seconds,
            version=args.version,
            commit_path=args.commit_path,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
