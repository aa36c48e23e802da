"""The SQL endpoint's process: started by a client, restarted after a fault, never the daemon's
(issues 22, 44).

One real daemon per test (`tests.fixtures.sql_daemon`); each starts the
child with a first query (`wake`: it starts on the first connection). A
killed child shows in /healthz and is started again at once (after the
backoff), on the same port, its counters added to the first's; a child past
its CPU limit or silent past child_timeout is ended with the reason; a
stopped child costs dropped snapshots, never the daemon's publishing; live
tables past the snapshot cap are refused and counted; the child ends with
its daemon.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import DaemonProc, wait_for
from tests.fixtures.sql_daemon import (
    gone,
    health,
    metric,
    query_until,
    select_server_uuid,
    sql_daemon,
    sql_port,
    wake,
)

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # bounds a delay: run alone


def restarted(daemon: DaemonProc, child: int) -> dict[str, Any]:
    """/healthz's "sql" once a new child replaced `child` (first restart) and serves."""

    def serving_again() -> dict[str, Any] | None:
        sql = health(daemon)["sql"]
        again = sql["restarts"] == 1 and sql["pid"] not in (0, child)
        return sql if again and sql["process"] == "up" and sql["serving"] else None

    return wait_for(serving_again, 90, f"a child started again in place of {child}")


def test_a_killed_sql_child_is_restarted_and_healthz_says_so(
    broker: Broker, tmp_path: Path
) -> None:
    with sql_daemon(broker, tmp_path) as (daemon, _):
        port = sql_port(daemon)
        child = wake(daemon)  # one query before: the daemon's total must keep it
        first = health(daemon)["sql"]
        assert first["process"] == "up" and first["restarts"] == 0, first
        assert child != daemon.process.pid
        limits = Path(f"/proc/{child}/limits").read_text()
        assert re.search(rf"Max address space\s+{2 << 30}\s+{2 << 30}\s", limits), limits
        assert re.search(r"Max cpu time\s+\d+\s+\d+\s", limits), limits  # the default 3600 s
        assert int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[16]) == 10
        queries = "grstats_sql_queries_total"
        wait_for(lambda: metric(daemon, queries) == 1, 30, "the first child's query in /metrics")
        os.kill(child, signal.SIGKILL)
        sql = restarted(daemon, child)  # at once (after the backoff), not by the next client
        assert sql["last_exit"] == "killed by SIGKILL", sql
        select_server_uuid(port)  # the same port, served by the new child
        wait_for(lambda: metric(daemon, queries) == 2, 30, "both children's queries in /metrics")
        assert metric(daemon, "grstats_sql_process_restarts_total") == 1
        assert daemon.alive()


def test_a_child_past_its_cpu_limit_is_restarted_with_the_reason(
    broker: Broker, tmp_path: Path
) -> None:
    endless = (
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
        "WHERE n < 1000000000000) SELECT COUNT(*) FROM r"
    )
    with sql_daemon(broker, tmp_path, max_cpu_seconds=3, query_timeout=120) as (daemon, _):
        port = sql_port(daemon)
        child = wake(daemon)
        thread = threading.Thread(
            target=query_until, args=(port, time.monotonic() + 60, endless), daemon=True
        )
        thread.start()
        sql = restarted(daemon, child)  # past its CPU limit
        assert sql["last_exit"] == "CPU time limit reached (max_cpu_seconds)", sql
        thread.join(70)
        select_server_uuid(port)
        assert daemon.alive()


def test_a_stopped_child_costs_dropped_snapshots_then_a_restart_never_a_blocked_loop(
    broker: Broker, tmp_path: Path
) -> None:
    with sql_daemon(broker, tmp_path, period=0.25, child_timeout=20) as (daemon, _):
        child = wake(daemon)
        os.kill(child, signal.SIGSTOP)  # alive, reads nothing: the pipe fills
        try:

            def unresponsive() -> list[str] | None:
                details = health(daemon)["details"]
                return details if any("process unresponsive" in d for d in details) else None

            wait_for(unresponsive, 30, "/healthz to call the stopped child unresponsive")
            assert metric(daemon, 'grstats_sql_process_state{state="unresponsive"}') == 1
            dropped = 'grstats_sql_snapshots_dropped_total{reason="child_slow"}'
            wait_for(lambda: metric(daemon, dropped) >= 1, 30, "a snapshot dropped, child slow")
            # and the daemon goes on publishing (0.25 s period: 8 in 2 s)
            published = daemon.counters()["messages_published"]
            wait_for(
                lambda: daemon.counters()["messages_published"] >= published + 8,
                10,
                "the daemon to publish while the child is stopped",
            )

            sql = restarted(daemon, child)  # killed past child_timeout
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        assert sql["last_exit"].startswith("killed by SIGKILL (no figures for "), sql


def test_live_tables_past_the_snapshot_cap_are_refused_counted_and_degrade_health(
    broker: Broker, tmp_path: Path
) -> None:
    with sql_daemon(broker, tmp_path, max_snapshot_bytes=1024) as (daemon, _):
        wake(daemon)  # snapshots are built and sent only while the child runs

        def stale() -> dict[str, Any] | None:
            body = health(daemon)
            return body if "sql_stale" in body["reasons"] else None

        got = wait_for(stale, 30, "/healthz to report sql_stale")
        assert any(
            d.startswith("sql: the live tables are not sent (too_large: ") for d in got["details"]
        ), got
        assert got["sql"]["serving"], got  # the history side still serves
        too_large = 'grstats_sql_snapshots_dropped_total{reason="too_large"}'
        assert metric(daemon, too_large) >= 1


def test_the_child_ends_with_the_daemon_on_sigterm_and_on_sigkill(
    broker: Broker, tmp_path: Path
) -> None:
    for stop in ("terminate", "kill9"):
        with sql_daemon(broker, tmp_path / stop) as (daemon, _):
            child = wake(daemon)
            started = time.monotonic()
            if stop == "terminate":
                assert daemon.terminate() == 0
                assert time.monotonic() - started < 6.0  # the unit's TimeoutStopSec margin
            else:
                daemon.kill9()  # the child asked the kernel for SIGKILL when its parent dies
            wait_for(lambda pid=child: gone(pid), 10, "the child gone")
