"""Three real daemons on a real broker; the local daemon's [sql] read by the Debian clients.

The `mariadb` command-line client and `prometheus-mysqld-exporter` connect to
the endpoint of member 1 as they would to a MySQL server. Expected member ids
are the configured ones; nothing is computed by the code under test.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.broker import Broker, make_test_ca
from tests.fixtures.daemons import M1, M2, M3, daemon_config, daemons, wait_for
from tests.grstats.sql.exporter import exporter_lines

PASSWORD = "s3cret"
MEMBERS = (M1, M2, M3)

pytestmark = pytest.mark.slow


def _sql_port(daemon: object) -> int:
    for event in daemon.events():  # type: ignore[attr-defined]
        if event.get("event") == "daemon.started":
            return int(event["sql_port"])
    raise AssertionError("no daemon.started event")


def _configs(broker: Broker, tmp_path: Path) -> list[dict[str, object]]:
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    configs = [daemon_config(broker.port, m, MEMBERS) for m in MEMBERS]
    configs[0]["sql"] = {"listen": "127.0.0.1:0", "password_file": str(secret)}
    return configs


def _mariadb(
    port: int, sql: str, password: str = PASSWORD, tls: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(port), "-u", "grstats",
         f"-p{password}", *(tls or ["--skip-ssl"]), "-B", "-e", sql],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("mariadb") is None, reason="needs the mariadb client")
def test_mariadb_client_sees_every_member_and_wrong_password_gets_1045(
    broker: Broker, tmp_path: Path
) -> None:
    with daemons(tmp_path, _configs(broker, tmp_path)) as (d1, _, _):
        port = _sql_port(d1)
        query = "SELECT MEMBER_ID FROM performance_schema.replication_group_member_stats"

        def three() -> set[str] | None:
            out = _mariadb(port, query)
            assert out.returncode == 0, out.stderr
            ids = set(out.stdout.split()[1:])
            return ids if ids == set(MEMBERS) else None

        wait_for(three, 30, "a row per member")
        star = _mariadb(port, "SELECT * FROM performance_schema.replication_group_member_stats\\G")
        assert star.returncode == 0, star.stderr
        assert star.stdout.count(". row ***") == 3
        assert star.stdout.count("COUNT_TRANSACTIONS_CHECKED:") == 3
        for m in MEMBERS:
            assert f"MEMBER_ID: {m}" in star.stdout
        # the lag table too (TIMESTAMP(6) columns; the model reports every member's lag)
        lag_query = (
            "SELECT MEMBER_ID, LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"
            " FROM grstats.member_lag"
            " WHERE CHANNEL_NAME = 'group_replication_applier'"
        )

        def lag_rows() -> str | None:
            out = _mariadb(port, lag_query)
            assert out.returncode == 0, out.stderr
            return out.stdout if all(m in out.stdout for m in MEMBERS) else None

        assert wait_for(lag_rows, 30, "a lag row per member").count("\n") >= 3
        denied = _mariadb(port, "SELECT 1", password="wrong")
        assert denied.returncode != 0
        assert "ERROR 1045 (28000)" in denied.stderr


def _no_scrape_errors(lines: list[str]) -> None:
    assert "mysql_up 1" in lines
    assert "mysql_exporter_last_scrape_error 0" in lines
    errors = [ln for ln in lines if ln.startswith("mysql_exporter_scrape_errors_total")]
    assert all(ln.endswith(" 0") for ln in errors), errors


def _checked(lines: list[str]) -> list[float]:
    prefix = "mysql_perf_schema_transactions_checked_total "
    return [float(ln.removeprefix(prefix)) for ln in lines if ln.startswith(prefix)]


@pytest.mark.skipif(
    shutil.which("prometheus-mysqld-exporter") is None, reason="needs prometheus-mysqld-exporter"
)
def test_mysqld_exporter_exports_every_member_without_scrape_errors(
    broker: Broker, tmp_path: Path
) -> None:
    with daemons(tmp_path, _configs(broker, tmp_path)) as (d1, _, _):
        port = _sql_port(d1)

        def every_member(lines: list[str]) -> bool:
            return all(any(f'member_id="{m}"' in ln for ln in lines) for m in MEMBERS)

        lines = exporter_lines(tmp_path, port, "grstats", PASSWORD, every_member)
        _no_scrape_errors(lines)
        info = [
            ln for ln in lines if ln.startswith("mysql_perf_schema_replication_group_member_info")
        ]
        assert {m for m in MEMBERS if any(m in ln for ln in info)} == set(MEMBERS)
        # the stock stats query filters on MEMBER_ID=@@server_uuid: the local member's
        assert len(_checked(lines)) == 1, lines[-50:]
        # one exporter per member, logged in as grstats+<member>: each member's stats,
        # between that member's value just before and just after the scrape (the
        # endpoint's process gets the live tables once a period: a scrape may see the
        # previous period's, so the exporter scrapes until it has caught up)
        for m in MEMBERS:
            before = d1.rows_by_member()[m]["COUNT_TRANSACTIONS_CHECKED"]
            lines = exporter_lines(
                tmp_path,
                port,
                f"grstats+{m}",
                PASSWORD,
                lambda ls, b=before: bool(_checked(ls)) and _checked(ls)[0] >= b,
            )
            after = d1.rows_by_member()[m]["COUNT_TRANSACTIONS_CHECKED"]
            _no_scrape_errors(lines)
            (value,) = _checked(lines)
            assert before <= value <= after, (m, before, value, after)


@pytest.mark.skipif(
    shutil.which("mariadb") is None or shutil.which("openssl") is None,
    reason="needs the mariadb client and openssl",
)
def test_daemon_with_tls_in_its_config_is_verified_by_the_mariadb_client(
    broker: Broker, tmp_path: Path
) -> None:
    ca, cert, key = make_test_ca(tmp_path)
    configs = _configs(broker, tmp_path)
    configs[0]["sql"] = {
        **configs[0]["sql"],  # type: ignore[dict-item]
        "tls_cert_file": str(cert),
        "tls_key_file": str(key),
        "tls_required": True,
    }
    with daemons(tmp_path, configs) as (d1, _, _):
        port = _sql_port(d1)
        query = "SELECT MEMBER_ID FROM performance_schema.replication_group_members"
        tls = ["--ssl-ca", str(ca), "--ssl-verify-server-cert"]

        def three() -> set[str] | None:
            out = _mariadb(port, query, tls=tls)
            assert out.returncode == 0, out.stderr
            ids = set(out.stdout.split()[1:])
            return ids if ids == set(MEMBERS) else None

        wait_for(three, 30, "every member over TLS")
        plain = _mariadb(port, query)  # --skip-ssl
        assert plain.returncode != 0
        assert "ERROR 3159 (HY000)" in plain.stderr
