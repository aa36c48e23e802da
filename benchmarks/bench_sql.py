"""The SQL endpoint against DuckDB directly, and the daemon's publish cadence under SQL load.

Usage: python benchmarks/bench_sql.py [--days 7] [--members 9] [--queries 200]

(a) latency p50/p99 of the same queries through the endpoint (PyMySQL over
    loopback, MySQL wire protocol, DuckDB behind) and in DuckDB directly, in
    the same process and run: a point query on the live member stats and a
    week-of-history aggregation. The ratio is endpoint / direct.
(b) the same two queries through a real `grstats run` daemon's endpoint (a
    child process of the daemon, the live tables sent to it every period)
    against DuckDB directly: the ratio after the move to a child process,
    next to (a)'s in-process ratio.
(c) publish jitter: that daemon's own stats envelopes timed on the bus while
    10 clients run the history aggregation; the gaps between envelopes
    against the configured period.

Prints figures and ratios; asserts nothing. Every loop is bounded in count
and time; everything runs on 127.0.0.1 and is stopped by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import aiomqtt
import duckdb
import pyarrow as pa
import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine

from grstats.cli.demo.mosquitto import find_mosquitto, write_loopback_config
from grstats.core import columns
from grstats.core.snapshot import DaemonSnapshot
from grstats.sql import SqlServer
from grstats.sql.options import SqlOptions, native_password_hash
from protocol import decode_envelope

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
PASSWORD = "bench"
GRSTATS = str(Path(sys.executable).parent / "grstats")
POINT = (
    "SELECT COUNT_TRANSACTIONS_CHECKED FROM performance_schema.replication_group_member_stats"
    " WHERE MEMBER_ID = '{member}'"
)
WEEK = (
    "SELECT member_id, date_trunc('hour', sampled_at) AS h,"
    " MAX(count_transactions_checked) - MIN(count_transactions_checked) AS checked,"
    " MAX(count_transactions_in_queue) AS queue_max"
    " FROM {source} GROUP BY member_id, h ORDER BY member_id, h"
)


def member(i: int) -> str:
    return f"{i + 1:08x}-1111-4111-8111-{i + 1:012x}"


def snapshot(members: int) -> DaemonSnapshot:
    rows = []
    for i in range(members):
        row: dict[str, object] = dict.fromkeys(columns.MEMBER_STATS.names, 0)
        row.update(
            {
                columns.CHANNEL_NAME: columns.GROUP_REPLICATION_CHANNEL,
                columns.VIEW_ID: "17000000000000000:3",
                columns.MEMBER_ID: member(i),
                columns.COUNT_TRANSACTIONS_CHECKED: 1000 + i,
                columns.TRANSACTIONS_COMMITTED_ALL_MEMBERS: "",
                columns.LAST_CONFLICT_FREE_TRANSACTION: "",
            }
        )
        rows.append(row)
    return DaemonSnapshot(
        taken_at_us=0,
        group_name=GROUP,
        local_member_id=member(0),
        tables={
            "replication_group_member_stats": tuple(rows),  # type: ignore[arg-type]
        },
    )


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def timed(run: object, count: int, budget_s: float) -> list[float]:
    out: list[float] = []
    deadline = time.monotonic() + budget_s
    for _ in range(count):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        out.append(time.perf_counter() - start)
        if time.monotonic() > deadline:
            break
    return out


def serve(options: SqlOptions, snap: DaemonSnapshot) -> tuple[SqlServer, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    server = SqlServer(options, lambda: snap)
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    if not ready.wait(30):
        raise SystemExit("the SQL endpoint did not start")
    return server, loop


def print_latency(title: str, rows: list[tuple[str, float, float, float, float, int]]) -> None:
    print(title)
    print(f"    {'query':32} {'endpoint p50/p99 ms':>22} {'duckdb p50/p99 ms':>20} ratio p50")
    for name, e50, e99, d50, d99, n in rows:
        print(
            f"    {name:32} {e50 * 1e3:9.2f} / {e99 * 1e3:8.2f} "
            f"{d50 * 1e3:9.2f} / {d99 * 1e3:8.2f} {e50 / d50:8.2f}x  (n={n})"
        )


def compare(
    port: int, history: Path, snap: DaemonSnapshot, who: str, queries: int
) -> list[tuple[str, float, float, float, float, int]]:
    """The point and week queries through the endpoint at `port` and in DuckDB directly."""
    conn = pymysql.connect(host="127.0.0.1", port=port, user="grstats", password=PASSWORD)
    direct = duckdb.connect()
    direct.execute("SET threads = 1")  # the endpoint runs each query on one DuckDB thread
    stats_arrow = pa.Table.from_pylist(
        [dict(r) for r in snap.table("replication_group_member_stats")]
    )
    direct.register("member_stats", stats_arrow)
    parquet = f"read_parquet('{history}/*/*/*.parquet', hive_partitioning = true)"
    rows = []
    try:
        with conn.cursor() as cur:

            def via_endpoint_point() -> None:
                cur.execute(POINT.format(member=who))
                cur.fetchall()

            def via_endpoint_week() -> None:
                cur.execute(WEEK.format(source="grstats.history"))
                cur.fetchall()

            def direct_point() -> None:
                direct.execute(
                    POINT.format(member=who).replace(
                        "performance_schema.replication_group_member_stats", "member_stats"
                    )
                ).fetchall()

            def direct_week() -> None:
                direct.sql(WEEK.format(source=parquet)).to_arrow_table()

            for name, endpoint, reference, count in (
                ("point query, live stats", via_endpoint_point, direct_point, queries),
                ("week of history by member-hour", via_endpoint_week, direct_week, 10),
            ):
                endpoint()
                reference()  # warm both
                e = timed(endpoint, count, 60)
                d = timed(reference, count, 60)
                (e50, e99), (d50, d99) = percentiles(e), percentiles(d)
                rows.append((name, e50, e99, d50, d99, len(e)))
    finally:
        conn.close()
    return rows


def latency(history: Path, members: int, queries: int) -> None:
    snap = snapshot(members)
    options = SqlOptions(
        port=0,
        password_hash=native_password_hash(PASSWORD),
        history_dir=str(history),
        query_timeout=120,
        max_connections=4,
    )
    server, loop = serve(options, snap)
    try:
        rows = compare(server.port, history, snap, member(members // 2), queries)
        print_latency("(a) latency, in-process endpoint vs DuckDB directly (same run)", rows)
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)


async def envelope_times(port: int, topic: str, count: int, budget_s: float) -> list[int]:
    times: list[int] = []
    async with aiomqtt.Client("127.0.0.1", port) as client:
        await client.subscribe(topic)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(budget_s):
                async for message in client.messages:
                    if message.retain or not isinstance(message.payload, bytes):
                        continue
                    if message.payload:
                        times.append(decode_envelope(message.payload).sent_us)
                    if len(times) >= count:
                        break
    return times


def free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def jitter(history: Path, work: Path, clients: int, period: float, queries: int) -> None:
    binary = find_mosquitto()
    if binary is None:
        print("(b) skipped: no mosquitto")
        return
    broker_port = free_port()
    conf = write_loopback_config(work / "mosquitto", broker_port)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(
            subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        )  # fmt: skip
        secret = work / "sql.password"
        secret.write_text(PASSWORD + "\n")
        me = member(0)
        (work / "grstats.toml").write_text(
            f'[member]\ngroup = "{GROUP}"\nid = "{me}"\n'
            f"[simulated]\nmembers = {json.dumps([me, member(1)])}\n"
            f"[bus]\nport = {broker_port}\n[publish]\nperiod = {period}\n"
            f'[api]\nlisten = "127.0.0.1:0"\n[log]\nformat = "json"\n'
            f'[sql]\nlisten = "127.0.0.1:0"\npassword_file = "{secret}"\n'
            f'history_dir = "{history}"\nquery_timeout = 300\nmax_connections = {clients + 2}\n'
        )
        log = work / "daemon.log"
        with log.open("wb") as out:
            procs.append(
                subprocess.Popen([GRSTATS, "run", "--config", str(work / "grstats.toml")],
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            )  # fmt: skip
        sql_port = 0
        deadline = time.monotonic() + 60
        while not sql_port and time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines():
                if '"daemon.started"' in line:
                    sql_port = int(json.loads(line)["sql_port"])
            time.sleep(0.1)
        if not sql_port:
            print("(b), (c) skipped: the daemon did not start")
            return
        # the daemon's live stats (simulated, two members): the direct reference
        # reads the same rows from its HTTP API
        api_port = 0
        for line in log.read_text(errors="replace").splitlines():
            if '"daemon.started"' in line:
                api_port = int(json.loads(line)["api_port"])
        with urllib.request.urlopen(
            f"http://127.0.0.1:{api_port}/v1/tables/replication_group_member_stats", timeout=10
        ) as answer:
            live = json.loads(answer.read())
        snap = DaemonSnapshot(
            taken_at_us=0,
            group_name=GROUP,
            local_member_id=me,
            tables={"replication_group_member_stats": tuple(live)},
        )
        rows = compare(sql_port, history, snap, me, queries)
        print_latency("(b) latency, the daemon's endpoint process vs DuckDB directly", rows)
        topic = f"grstats/v1/{GROUP}/{me}/stats"
        quiet = asyncio.run(envelope_times(broker_port, topic, 30, 60))
        stop = threading.Event()
        finished = itertools.count()

        def client() -> None:
            conn = pymysql.connect(
                host="127.0.0.1", port=sql_port, user="grstats", password=PASSWORD
            )
            with conn, conn.cursor() as cur:
                while not stop.is_set():
                    cur.execute(WEEK.format(source="grstats.history"))
                    cur.fetchall()
                    next(finished)

        threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
        for t in threads:
            t.start()
        loaded = asyncio.run(envelope_times(broker_port, topic, 30, 120))
        stop.set()
        for t in threads:
            t.join(timeout=300)
        print(f"(c) publish cadence, period {period} s, {clients} clients running the week query")
        for name, times in (("no SQL load", quiet), (f"{clients} SQL clients", loaded)):
            gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(times)]
            if not gaps:
                print(f"    {name}: no envelopes")
                continue
            jit = [abs(g - period) for g in gaps]
            print(
                f"    {name:16}: gaps p50 {statistics.median(gaps):.3f} s, max {max(gaps):.3f} s;"
                f" jitter p50 {statistics.median(jit) * 1e3:.1f} ms, max {max(jit) * 1e3:.1f} ms"
                f" ({len(gaps)} gaps)"
            )
        print(f"    queries finished meanwhile: {next(finished)}")
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--members", type=int, default=9)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--period", type=float, default=1.0)
    args = parser.parse_args()
    print(machine(f"duckdb {duckdb.__version__}", f"load average {os.getloadavg()[0]:.2f}"))
    with tempfile.TemporaryDirectory(prefix="bench-sql-") as tmp:
        work = Path(tmp)
        history = work / "history"
        started = time.monotonic()
        subprocess.run(
            [GRSTATS, "simulate", "--members", str(args.members), "--days", str(args.days),
             "--start", "2026-11-09", "--group", GROUP, "--out", str(history)],
            check=True, capture_output=True,
        )  # fmt: skip
        took = time.monotonic() - started
        print(f"history: {args.members} members x {args.days} days in {took:.1f} s")
        latency(history, args.members, args.queries)
        jitter(history, work, args.clients, args.period, args.queries)


if __name__ == "__main__":
    main()
