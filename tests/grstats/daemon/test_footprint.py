"""A member daemon loads only what its configuration uses (issue 29, footprint).

The production configuration -- the mysql source (a fake MySQL 8.4 server,
tests/fixtures/fake_mysql.py), history on, the SQL endpoint on -- runs as a
real `grstats run` process on a real Mosquitto. It writes Parquet (its
segments are on disk before it stops), answers SQL, and stops cleanly; at
exit it writes the names in its own `sys.modules` to a file (an atexit hook
installed by the command line that starts it, not by grstats). numpy (the
simulated source's), pyarrow (Parquet: written by short-lived children) and
DuckDB, sqlglot and mysql-mimic (the SQL endpoint's child process) must not
be among them, nor rich and pygments (structlog's console tracebacks: 3 MB of
RSS that a daemon logging JSON lines never uses).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pymysql
import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    SPAWNED,
    DaemonProc,
    mysql_daemon_config,
    render_toml,
    wait_for,
    wait_started,
)
from tests.fixtures.fake_mysql import PASSWORD, FakeMySQL
from tests.fixtures.mysql_source import MEMBERS_TABLE, STATS_TABLE, member_84, row_84

pytestmark = pytest.mark.slow

HEAVY = ("numpy", "pyarrow", "duckdb", "sqlglot", "mysql_mimic", "rich", "pygments")
SQL_PASSWORD = "s3cret"
# `grstats run`, plus an atexit hook that lists the process's modules at exit
RUN_LISTING_MODULES = """
import atexit, sys
listing = sys.argv.pop(1)
atexit.register(lambda: open(listing, "w").write("\\n".join(sorted(sys.modules))))
from grstats.cli.main import main
main(prog_name="grstats")
"""


@pytest.fixture
async def server() -> AsyncIterator[FakeMySQL]:
    s = FakeMySQL("8.4")
    s.set_row(STATS_TABLE, **row_84())
    s.set_row(MEMBERS_TABLE, **member_84())
    await s.start()
    try:
        yield s
    finally:
        s.release.set()
        await s.stop()


def _start(workdir: Path, config: dict[str, object], listing: Path) -> DaemonProc:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "grstats.toml").write_text(render_toml(config), encoding="utf-8")
    log_path = workdir / "daemon.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", RUN_LISTING_MODULES, str(listing), "run", "--config",
             str(workdir / "grstats.toml")],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    daemon = DaemonProc("mysql", workdir, process, log_path)
    SPAWNED.append(daemon)
    return wait_started(daemon)


def _sql_port(daemon: DaemonProc) -> int:
    started = [e for e in daemon.events() if e.get("event") == "daemon.started"]
    return int(started[0]["sql_port"])


def _run_production_daemon(broker: Broker, tmp_path: Path, server: FakeMySQL) -> set[str]:
    secret = tmp_path / "mysql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    (tmp_path / "sql.password").write_text(SQL_PASSWORD + "\n", encoding="utf-8")
    history = tmp_path / "history"
    config = mysql_daemon_config(broker.port, server.port, secret)
    config["history"] = {"dir": str(history), "flush_interval": 0.5}
    config["sql"] = {"listen": "127.0.0.1:0", "password_file": str(tmp_path / "sql.password")}
    listing = tmp_path / "modules.txt"
    daemon = _start(tmp_path / "d", config, listing)
    wait_for(
        lambda: list(history.glob("group=*/date=*/part-*.parquet")),
        30,
        "the daemon's first Parquet segment",
    )
    conn = pymysql.connect(
        host="127.0.0.1", port=_sql_port(daemon), user="grstats", password=SQL_PASSWORD
    )
    with conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM performance_schema.replication_group_members")
        assert cur.fetchall()[0][0] >= 1
    assert daemon.terminate(timeout=30) == 0, daemon.log_path.read_text()[-3000:]
    return set(listing.read_text().split())


async def test_the_production_member_daemon_holds_no_numpy_pyarrow_sql_engine_or_rich(
    broker: Broker, tmp_path: Path, server: FakeMySQL
) -> None:
    import asyncio  # noqa: PLC0415 - the fake server keeps serving on this loop meanwhile

    modules = await asyncio.to_thread(_run_production_daemon, broker, tmp_path, server)
    # what it did use: the MySQL driver, the history writer, the SQL child's supervisor
    assert {"asyncmy", "grstats.history.writer", "grstats.daemon.sqlchild"} <= modules
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert loaded == []
