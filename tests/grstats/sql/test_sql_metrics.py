"""The SQL endpoint's bounds as a daemon's /metrics and /healthz show them, provoked by PyMySQL.

One real daemon (simulated source, real broker) with a small [sql]: every
counter is provoked by a real client and the expected values are counted by
hand from the statements sent below.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import M1, daemon_config, daemons, wait_for

PASSWORD = "s3cret"

pytestmark = pytest.mark.slow


def _sql_port(daemon: Any) -> int:
    for event in daemon.events():
        if event.get("event") == "daemon.started":
            return int(event["sql_port"])
    raise AssertionError("no daemon.started event")


def _config(broker: Broker, tmp_path: Path, listen: str, **sql: object) -> dict[str, Any]:
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    config = daemon_config(broker.port, M1, (M1,))
    config["sql"] = {"listen": listen, "password_file": str(secret), **sql}
    return config


def _connect(port: int, password: str = PASSWORD) -> pymysql.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host="127.0.0.1", port=port, user="grstats", password=password, connect_timeout=10
    )


def _code(cur: Any, sql: str) -> int:
    with pytest.raises(pymysql.MySQLError) as info:
        cur.execute(sql)
    return int(info.value.args[0])


_SAMPLE = re.compile(r"^(grstats_sql_\w+?)(?:\{(.*)\})? (\S+)$")


def _sql_metrics(daemon: Any) -> dict[str, float]:
    """grstats_sql_* samples as {'name{labels}': value}."""
    _, body = daemon.get("/metrics")
    out: dict[str, float] = {}
    for line in body.decode().splitlines():
        m = _SAMPLE.match(line)
        if m:
            key = m.group(1) + (f"{{{m.group(2)}}}" if m.group(2) else "")
            out[key] = float(m.group(3))
    return out


def test_every_sql_bound_is_counted_in_metrics(broker: Broker, tmp_path: Path) -> None:
    config = _config(
        broker,
        tmp_path,
        "127.0.0.1:0",
        max_connections=2,
        query_timeout=0.3,
        max_rows=5,
        max_result_bytes=1024,
    )
    with daemons(tmp_path, [config]) as (d1,):
        port = _sql_port(d1)
        before = _sql_metrics(d1)
        assert before["grstats_sql_up"] == 1
        assert before["grstats_sql_connections_max"] == 2
        assert before["grstats_sql_queries_total"] == 0
        with _connect(port) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")  # query 1
            assert _code(cur, "INSERT INTO grstats.history (seq) VALUES (1)") == 1290  # 2
            assert _code(cur, "SELECT * FROM performance_schema.nope") == 1146  # 3
            ten_rows = (
                "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) "
                "SELECT n FROM r"
            )
            assert _code(cur, ten_rows) == 1104  # 4: 10 rows > max_rows 5
            assert _code(cur, "SELECT REPEAT('x', 2000)") == 1104  # 5: 2000 bytes > 1024
            endless = (
                "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
                "WHERE n < 1000000000) SELECT COUNT(*) FROM r"
            )
            assert _code(cur, endless) == 3024  # 6
            with pytest.raises(pymysql.MySQLError) as denied:
                _connect(port, password="wrong")  # accepted under the cap, then 1045
            assert denied.value.args[0] == 1045
            with _connect(port):  # the second of max_connections=2
                # /metrics reads a snapshot at most 0.25 s old: wait for the second one
                wait_for(
                    lambda: _sql_metrics(d1)["grstats_sql_connections_open"] == 2 or None,
                    30,
                    "two open connections in /metrics",
                )
                with pytest.raises(pymysql.MySQLError) as refused:
                    _connect(port)
                assert refused.value.args[0] == 1040
        expected = {
            "grstats_sql_up": 1,
            "grstats_sql_connections_open": 0,
            "grstats_sql_connections_accepted_total": 3,  # main, wrong password, second
            "grstats_sql_connections_refused_total": 1,
            "grstats_sql_tls_handshake_failures_total": 0,
            "grstats_sql_queries_total": 6,
            "grstats_sql_queries_interrupted_total": 1,
            'grstats_sql_results_refused_total{limit="max_rows"}': 1,
            'grstats_sql_results_refused_total{limit="max_result_bytes"}': 1,
            "grstats_sql_writes_refused_total": 1,
            'grstats_sql_errors_total{code="1040"}': 1,
            'grstats_sql_errors_total{code="1045"}': 1,
            'grstats_sql_errors_total{code="1104"}': 2,
            'grstats_sql_errors_total{code="1146"}': 1,
            'grstats_sql_errors_total{code="1290"}': 1,
            'grstats_sql_errors_total{code="3024"}': 1,
            "grstats_sql_handshake_timeouts_total": 0,
            "grstats_sql_logins_delayed_total": 0,  # one failure: under the free ones
        }

        def settled() -> dict[str, float] | None:
            got = _sql_metrics(d1)
            return got if got["grstats_sql_connections_open"] == 0 else None

        got = wait_for(settled, 30, "the connections to close")
        assert {k: got.get(k) for k in expected} == expected
        assert {k for k in got if k.startswith("grstats_sql_errors_total")} == {
            k for k in expected if k.startswith("grstats_sql_errors_total")
        }
        _, health = d1.get("/healthz")
        assert "sql_down" not in health["reasons"], health


def test_sql_that_cannot_listen_degrades_health_and_serves_once_it_can(
    broker: Broker, tmp_path: Path
) -> None:
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    try:
        with daemons(tmp_path, [_config(broker, tmp_path, f"127.0.0.1:{port}")]) as (d1,):

            def degraded() -> dict[str, Any] | None:
                status, health = d1.get("/healthz")
                return health if status == 503 and "sql_down" in health["reasons"] else None

            health = wait_for(degraded, 30, "/healthz to report sql_down")
            assert any(
                d.startswith("sql: not serving (cannot listen on 127.0.0.1:")
                for d in health["details"]
            ), health
            metrics = _sql_metrics(d1)
            assert metrics["grstats_sql_up"] == 0
            _, body = d1.get("/metrics")
            assert 'grstats_health_status{reason="sql_down"} 1.0' in body.decode()
            squatter.close()

            def serving() -> bool | None:
                _, health = d1.get("/healthz")
                return True if "sql_down" not in health["reasons"] else None

            wait_for(serving, 30, "the endpoint to listen once the port is free")
            with _connect(port) as conn, conn.cursor() as cur:
                cur.execute("SELECT @@server_uuid")
                assert cur.fetchone() == (M1,)
            assert _sql_metrics(d1)["grstats_sql_up"] == 1
    finally:
        squatter.close()


def test_unreadable_tls_files_degrade_health_with_the_reason(
    broker: Broker, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.pem"
    config = _config(
        broker, tmp_path, "127.0.0.1:0", tls_cert_file=str(missing), tls_key_file=str(missing)
    )
    with daemons(tmp_path, [config]) as (d1,):

        def degraded() -> dict[str, Any] | None:
            status, health = d1.get("/healthz")
            return health if status == 503 and "sql_down" in health["reasons"] else None

        health = wait_for(degraded, 30, "/healthz to report sql_down")
        assert "sql: not serving (cannot load tls_cert_file / tls_key_file: " in "".join(
            health["details"]
        ), health
        assert d1.alive()  # the daemon serves its other duties
        assert _sql_metrics(d1)["grstats_sql_up"] == 0
