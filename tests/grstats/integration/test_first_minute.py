"""The first minute on a new node: every surface of a just-started daemon answers.

A member daemon and a collector start with EMPTY history directories, `[sql]`
and the HTTP API on. Within a few periods every surface answers with the
right shape: the JSON tables, /metrics, /healthz, every SQL table (the
history with its columns and, before any segment, the rows recorded so far
from the write-ahead log; the rollup tables absent while the rollups
directory is empty), `grstats sql --config` on the empty directory
and each CLI table command. Then the moments where state changes hands: the
first segments being written and rotated, and the history directory deleted
under the running daemon (recreated by the writer, which writes on).

The UTC day change: wall-clock time enters the daemon's samples, envelopes
and history only through `time.time_ns()` (`grstats.daemon.health.now_us`), so
the test shifts it from outside -- a `sitecustomize` on the daemon's
PYTHONPATH (tests/fixtures/clockshift), no production hook -- to cross the
next UTC midnight a few seconds after the start, and checks every surface on
the new day: the history partitions, the housekeeper's day (retention) and SQL
NOW() all move to it, as they all read the wall clock through `time.time()`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pymysql
import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    M1,
    M2,
    DaemonProc,
    daemon_config,
    http_get,
    render_toml,
    spawn_daemon,
    wait_for,
    wait_started,
)

pytestmark = pytest.mark.slow

PASSWORD = "first-minute"
PERIOD = 0.25
GRSTATS = str(Path(sys.executable).parent / "grstats")
# The tables docs/sql.md documents (schema, table).
DOCUMENTED = {
    ("performance_schema", "replication_group_member_stats"),
    ("performance_schema", "replication_group_members"),
    ("grstats", "member_status"),
    ("grstats", "history"),
}
ROLLUPS = ("member_minute", "member_hour", "member_day", "group_hour", "group_day")
CLI_TABLES = ("members", "stats", "status", "lag", "flow", "applier")


def _sql_section(tmp_path: Path, history: Path, rollups: Path) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    return {
        "listen": "127.0.0.1:0",
        "password_file": str(secret),
        "history_dir": str(history),
        "rollups_dir": str(rollups),
    }


def _sql_port(daemon: DaemonProc) -> int:
    return next(int(e["sql_port"]) for e in daemon.events() if e.get("event") == "daemon.started")


def _connect(port: int) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(
        host="127.0.0.1", port=port, user="grstats", password=PASSWORD, connect_timeout=5
    )


def _sql_tables(port: int) -> dict[tuple[str, str], list[str]]:
    """Every table the endpoint lists, with the column names a SELECT * returns."""
    out: dict[tuple[str, str], list[str]] = {}
    with _connect(port) as conn, conn.cursor() as cur:
        listed: set[tuple[str, str]] = set()
        for schema in ("performance_schema", "grstats"):
            cur.execute(f"SHOW TABLES FROM {schema}")
            listed |= {(schema, str(row[0])) for row in cur.fetchall()}
        for schema, table in sorted(listed):
            cur.execute(f"SELECT * FROM {schema}.{table} LIMIT 5")
            cur.fetchall()
            out[(schema, table)] = [d[0] for d in cur.description]
    return out


def _history_count(port: int) -> int:
    with _connect(port) as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM grstats.history")
        return int(cur.fetchone()[0])


def _segments(history: Path) -> list[Path]:
    return sorted(history.glob("group=*/date=*/*.parquet"))


def _check_surfaces(daemon: DaemonProc, tmp_path: Path) -> dict[tuple[str, str], list[str]]:
    """Every surface answers with the right shape; returns the SQL tables' columns."""
    status, names = daemon.get("/v1/tables")
    assert status == 200 and names, names
    for name in names:
        status, rows = daemon.get(f"/v1/tables/{name}")
        assert status == 200 and isinstance(rows, list), (name, status, rows)
    assert daemon.table("replication_group_member_stats"), "the local member's stats row"
    status, body = http_get(daemon.api_port, "/metrics")
    assert status == 200 and b"# TYPE grstats_" in body
    status, health = daemon.get("/healthz")
    assert status == 200 and health["status"] == "ok", health
    tables = _sql_tables(_sql_port(daemon))
    assert set(tables) >= DOCUMENTED, sorted(tables)
    assert not {("grstats", r) for r in ROLLUPS} & set(tables), "rollups absent while empty"
    api = f"http://127.0.0.1:{daemon.api_port}"
    for command in CLI_TABLES:
        done = subprocess.run(
            [GRSTATS, command, "--api", api, "--format", "json"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (command, done.stderr)
        assert isinstance(json.loads(done.stdout), list), (command, done.stdout[:200])
    return tables


def _start(tmp_path: Path, config: dict[str, Any], command: str) -> DaemonProc:
    daemon = wait_started(spawn_daemon(tmp_path, config, command=command))
    wait_for(lambda: daemon.table("replication_group_member_stats"), 20, "the first rows")
    return daemon


def test_member_and_collector_answer_everything_before_their_first_segment(
    broker: Broker, tmp_path: Path
) -> None:
    rollups = tmp_path / "rollups"
    rollups.mkdir()
    member_history = tmp_path / "member-history"
    member = daemon_config(broker.port, M1, [M1, M2], period=PERIOD)
    member["history"] = {"dir": str(member_history), "flush_interval": 3600}
    member["sql"] = _sql_section(tmp_path / "m", member_history, rollups)
    collector_history = tmp_path / "collector-history"
    collector = {
        "bus": {"host": "127.0.0.1", "port": broker.port, "keepalive": 5},
        "publish": {"period": PERIOD, "unreachable_after": 4},
        "api": {"listen": "127.0.0.1:0"},
        "history": {"dir": str(collector_history), "flush_interval": 3600},
        "sql": _sql_section(tmp_path / "c", collector_history, rollups),
        "log": {"format": "json"},
    }
    d1 = _start(tmp_path / "member", member, "run")
    dc = _start(tmp_path / "collector", collector, "collect")
    for daemon, history in ((d1, member_history), (dc, collector_history)):
        assert not _segments(history), "the test needs a history without segments"
        tables = _check_surfaces(daemon, tmp_path)
        port = _sql_port(daemon)  # no segment yet: what is recorded shows from the WAL
        wait_for(lambda p=port: _history_count(p) > 0, 30, "the WAL's rows in grstats.history")
        assert "sampled_at" in tables[("grstats", "history")]
        assert tables[("grstats", "history")][-1] == "date"
    # `grstats sql` alone on the same (still segment-free) directory
    config = tmp_path / "sql-only.toml"
    config.write_text(
        render_toml(
            {
                "sql": _sql_section(tmp_path / "s", tmp_path / "empty-history", rollups),
                "log": {"format": "json"},
            }
        ),
        encoding="utf-8",
    )
    (tmp_path / "empty-history").mkdir()
    log = tmp_path / "sql.log"
    with log.open("wb") as out:
        server = subprocess.Popen([GRSTATS, "sql", "--config", str(config)], stdout=out, stderr=out)
    try:

        def sql_port() -> int | None:
            assert server.poll() is None, log.read_text()
            for line in log.read_text().splitlines():
                if '"sql.started"' in line:
                    return int(json.loads(line)["port"])
            return None

        port = wait_for(sql_port, 30, "grstats sql to listen")
        alone = _sql_tables(port)
        assert set(alone) >= DOCUMENTED
        assert alone[("grstats", "history")] == tables[("grstats", "history")]
        assert _history_count(port) == 0
    finally:
        server.terminate()
        server.wait(timeout=10)
    for daemon in (d1, dc):
        assert daemon.terminate() == 0


def test_every_query_answers_across_segment_rotation_and_a_deleted_history(
    broker: Broker, tmp_path: Path
) -> None:
    history = tmp_path / "history"
    rollups = tmp_path / "rollups"
    rollups.mkdir()
    config = daemon_config(broker.port, M1, [M1, M2], period=PERIOD)
    config["history"] = {"dir": str(history), "flush_interval": 0.5, "fsync_interval": 0.1}
    config["sql"] = _sql_section(tmp_path, history, rollups)
    daemon = _start(tmp_path / "member", config, "run")
    port = _sql_port(daemon)
    empty_columns = _sql_tables(port)[("grstats", "history")]
    deadline = time.monotonic() + 60
    counts = [_history_count(port)]  # at least once, however fast the segments come
    while len(_segments(history)) < 3:  # every query answers while segments come and go
        assert time.monotonic() < deadline, "three segments within 60 s"
        counts.append(_history_count(port))
    assert counts[-1] >= 0
    wait_for(lambda: _history_count(port) > 0, 20, "the history rows over SQL")
    written = [f.name for f in pq.read_schema(_segments(history)[0])]
    assert empty_columns == [*written, "date"], "the empty history has the segments' columns"
    assert _sql_tables(port)[("grstats", "history")] == empty_columns
    before = set(_segments(history))
    shutil.rmtree(history)
    # Deleted under the running daemon: the writer recreates the directory at its
    # next tick and writes on (the rows held meanwhile land there), every surface
    # answers throughout, and the deletion moved a counter and degrades /healthz
    # with a history_data reason naming it (history was lost) and nothing else.
    wait_for(lambda: (history / "wal").is_dir() or None, 30, "the history directory recreated")
    wait_for(lambda: set(_segments(history)) - before or None, 30, "new segments written")
    wait_for(lambda: _history_count(port) > 0, 20, "the new history rows over SQL")
    tables = _sql_tables(port)
    assert tables[("grstats", "history")] == empty_columns
    assert daemon.table("replication_group_member_stats")

    def only_the_deletion() -> dict[str, Any] | None:
        status, health = daemon.get("/healthz")
        return health if status == 503 and health["reasons"] == ["history_data"] else None

    health = wait_for(only_the_deletion, 30, "/healthz degraded by the deletion only")
    assert any("history directory was deleted" in d for d in health["details"]), health
    status, body = http_get(daemon.api_port, "/metrics")
    assert status == 200
    errors = [
        float(line.split()[-1])
        for line in body.decode().splitlines()
        if line.startswith("grstats_history_errors")
    ]
    assert errors and errors[0] >= 1, "the deletion is counted"
    assert daemon.terminate() in (0, 1)


def test_every_surface_answers_across_a_utc_midnight(broker: Broker, tmp_path: Path) -> None:
    # The daemon's wall clock is shifted (tests/fixtures/clockshift) to reach the
    # next UTC midnight a few seconds after it starts: samples on both days.
    lead_s = 15.0
    now = time.time()
    midnight = (int(now) // 86_400 + 1) * 86_400  # the next UTC midnight, by hand
    shift = midnight - lead_s - now
    before_day = time.strftime("%Y-%m-%d", time.gmtime(midnight - 1))
    after_day = time.strftime("%Y-%m-%d", time.gmtime(midnight))
    history = tmp_path / "history"
    rollups = tmp_path / "rollups"
    rollups.mkdir()
    config = daemon_config(broker.port, M1, [M1, M2], period=PERIOD)
    retention = 3
    config["history"] = {
        "dir": str(history),
        "flush_interval": 0.5,
        "fsync_interval": 0.1,
        "retention_days": retention,
    }
    # A partition the housekeeper keeps on the old day and expires on the new one:
    # cutoff = day - retention, expired when older than the cutoff.
    old_day = time.strftime("%Y-%m-%d", time.gmtime(midnight - 1 - retention * 86_400))
    config["sql"] = _sql_section(tmp_path, history, rollups)
    clockshift = Path(__file__).parents[2] / "fixtures" / "clockshift"
    env = {
        "PYTHONPATH": os.pathsep.join([str(clockshift), os.environ.get("PYTHONPATH", "")]),
        "GRSTATS_TEST_CLOCK_SHIFT_S": repr(shift),
    }
    daemon = wait_started(spawn_daemon(tmp_path / "member", config, command="run", env=env))
    wait_for(lambda: daemon.table("replication_group_member_stats"), 20, "the first rows")

    def days() -> set[str]:
        return {p.parent.name.removeprefix("date=") for p in _segments(history)}

    wait_for(lambda: before_day in days() or None, 20, "a segment before midnight")
    expiring = next(iter(_segments(history))).parents[1] / f"date={old_day}"
    expiring.mkdir()
    wait_for(lambda: after_day in days() or None, 30, "a segment of the new UTC day")
    wait_for(
        lambda: not expiring.exists() or None,
        20,
        "the housekeeper of the new day expiring the partition",
    )
    with _connect(_sql_port(daemon)) as conn, conn.cursor() as cur:
        cur.execute("SELECT CAST(date AS VARCHAR), COUNT(*) FROM grstats.history GROUP BY 1")
        counted = {str(day): int(n) for day, n in cur.fetchall()}
        cur.execute("SELECT CAST(UTC_TIMESTAMP() AS VARCHAR), CAST(NOW() AS VARCHAR)")
        utc_now, now = cur.fetchone()
    assert set(counted) == {before_day, after_day} and all(counted.values()), counted
    assert str(utc_now).startswith(after_day), (utc_now, after_day)  # the shifted clock
    assert str(now)[:10] in {after_day, before_day}, now  # the session's zone may differ
    _check_surfaces(daemon, tmp_path)
    stats = daemon.table("replication_group_member_stats")
    assert stats, "the local member's stats row after midnight"
    assert daemon.terminate() in (0, 1)
