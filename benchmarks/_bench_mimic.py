"""A process serving N fake MySQL 8.4 servers of one group, for bench_daemon's production run.

Usage: python benchmarks/_bench_mimic.py --servers N [--only I] --ready FILE [--seconds S]

Each server is tests/fixtures/fake_mysql.py's FakeMySQL (performance_schema
declared from MySQL's shipped definitions) with its own @@server_uuid; every
one lists the N members in replication_group_members and
replication_group_member_stats (rows of tests/fixtures/mysql_source.py's
row_84 / member_84), and their counters grow each second as on a group
committing ~50 transactions/s. It runs in its own process so that the SQL
parsing of the fakes is not charged to the daemons; `--only I` serves only
server I (one process per server keeps a loaded machine from starving them). FILE receives the ports
and member ids as JSON once every server listens; the process ends after S
seconds or at SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fixtures.fake_mysql import FakeMySQL  # noqa: E402 - after the sys.path line
from tests.fixtures.mysql_source import MEMBERS_TABLE, STATS_TABLE, member_84, row_84  # noqa: E402

COUNTERS = (
    "COUNT_TRANSACTIONS_CHECKED",
    "COUNT_TRANSACTIONS_REMOTE_APPLIED",
    "COUNT_TRANSACTIONS_LOCAL_PROPOSED",
)


def member_id(index: int) -> str:
    return f"dbdbdbdb-0000-4000-8000-{index:012x}"


async def serve(count: int, only: int | None, ready: Path, seconds: float) -> None:
    ids = [member_id(i) for i in range(count)]
    members = [
        member_84(MEMBER_ID=m, MEMBER_HOST=f"db{i}.example", MEMBER_ROLE=role)
        for i, (m, role) in enumerate(zip(ids, ["PRIMARY"] + ["SECONDARY"] * count, strict=False))
    ]
    stats = [row_84(MEMBER_ID=m) for m in ids]
    servers = []
    served = [(i, m) for i, m in enumerate(ids) if only is None or i == only]
    for i, m in served:
        fake = FakeMySQL("8.4")
        fake.variables.update(server_uuid=m, hostname=f"db{i}.example")
        fake.tables[MEMBERS_TABLE] = (fake.tables[MEMBERS_TABLE][0], members)
        fake.tables[STATS_TABLE] = (fake.tables[STATS_TABLE][0], stats)
        await fake.start()
        servers.append(fake)
    listening = [{"port": s.port, "member": m} for s, (_, m) in zip(servers, served, strict=True)]
    ready.write_text(json.dumps(listening))  # noqa: ASYNC240 - one tiny file before serving
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    end = loop.time() + seconds
    while not stop.is_set() and loop.time() < end:
        for row in stats:  # shared by every fake: one group's view
            for c in COUNTERS:
                row[c] += 50
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
    args = parser.parse_args()
    asyncio.run(serve(args.servers, args.only, args.ready, args.seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
