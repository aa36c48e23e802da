"""Slow SQL queries must not stall the member's broadcast: they run off the event loop.

A real daemon with `[sql]` and a real history (`grstats simulate`), five
clients running heavy GROUP BY queries over that history at once, and a plain
MQTT subscriber timing the daemon's own stats envelopes on the bus. The bound
is one period late at most (gap between two envelopes <= 2 periods): a tick
that waited for a query would show a gap of the query's length (seconds).
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import threading
from pathlib import Path

import aiomqtt
import pymysql
import pytest

from protocol import decode_envelope
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import GROUP, M1, M2, daemon_config, daemons, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # bounds a delay: run alone

PASSWORD = "s3cret"
PERIOD = 0.5
GRSTATS = str(Path(sys.executable).parent / "grstats")
HEAVY = (
    "SELECT member_id, date_trunc('minute', sampled_at) AS m,"
    " quantile_cont(count_transactions_in_queue, 0.99) AS p99,"
    " SUM(count_transactions_checked) FROM grstats.history"
    " GROUP BY member_id, m ORDER BY p99 DESC LIMIT 5"
)


async def _envelope_times(broker: Broker, topic: str, count: int) -> list[int]:
    times: list[int] = []
    async with aiomqtt.Client(broker.host, broker.port) as client:
        await client.subscribe(topic)
        async with asyncio.timeout(60):
            async for message in client.messages:
                if message.retain or not isinstance(message.payload, bytes):
                    continue
                if message.payload:
                    times.append(decode_envelope(message.payload).sent_us)
                if len(times) >= count:
                    break
    return times


def test_slow_history_queries_do_not_delay_the_members_envelopes(
    broker: Broker, tmp_path: Path
) -> None:
    history = tmp_path / "history"
    subprocess.run(
        [GRSTATS, "simulate", "--members", "3", "--days", "2", "--start", "2024-03-04",
         "--group", GROUP, "--out", str(history)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    config = daemon_config(broker.port, M1, [M1, M2], period=PERIOD)
    config["sql"] = {
        "listen": "127.0.0.1:0",
        "password_file": str(secret),
        "history_dir": str(history),
        "query_timeout": 120,
        "max_logins_per_address": 5,  # five clients from this one address, all let in
    }
    with daemons(tmp_path / "d", [config]) as (d1,):
        port = next(int(e["sql_port"]) for e in d1.events() if e.get("event") == "daemon.started")
        stop = threading.Event()
        done: list[int] = []

        failed: list[BaseException] = []

        def client() -> None:
            try:
                conn = pymysql.connect(
                    host="127.0.0.1", port=port, user="grstats", password=PASSWORD
                )
            except pymysql.MySQLError as exc:  # the load this test means is five clients
                failed.append(exc)
                raise
            with conn, conn.cursor() as cur:
                while not stop.is_set():
                    cur.execute(HEAVY)
                    cur.fetchall()
                    done.append(1)

        clients = [threading.Thread(target=client, daemon=True) for _ in range(5)]
        for c in clients:
            c.start()
        wait_for(lambda: len(done) >= 1, 120, "a first heavy query to finish")
        topic = f"grstats/v1/{GROUP}/{M1}/stats"
        times = asyncio.run(_envelope_times(broker, topic, 20))
        stop.set()
        for c in clients:
            c.join(timeout=180)
        gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(times)]
        print(f"envelope gaps under 5 heavy SQL clients: max {max(gaps):.3f} s, period {PERIOD}")
        assert failed == []
        assert max(gaps) <= 2 * PERIOD, gaps
        assert d1.alive()
