"""`grstats check`: each failure mode against the real thing.

The broker is the shipped secure Mosquitto config (TLS, accounts, ACL), MySQL
a mysql-mimic server (tests/fixtures/mimic_server.py) with or without a
grant, the history directory a real file system (a read-only and a full
tmpfs where mounting is permitted).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import ACCOUNTS, MEMBER_A, MEMBER_B, Broker, SecureBroker, free_port
from tests.fixtures.daemons import GROUP as DAEMON_GROUP
from tests.fixtures.daemons import M1, M2, daemon_config, daemons, render_toml
from tests.fixtures.mimic_server import PASSWORD, USER, mimic_mysql

GRSTATS = str(Path(sys.executable).parent / "grstats")
GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def _config(
    tmp_path: Path,
    broker: SecureBroker,
    *,
    member: str = MEMBER_A,
    user: str = MEMBER_A,
    mysql_port: int | None = None,
    history: Path | None = None,
    sql_port: int | None = None,
) -> Path:
    doc: dict[str, Any] = {
        "member": {"group": GROUP, "id": member, "host": "db1", "port": 3306},
        "bus": {
            "host": broker.host, "port": broker.port, "tls": True, "ca_file": broker.ca_file,
            "username": user, "password_env": "TEST_BUS_PW",
        },
        "api": {"listen": f"127.0.0.1:{free_port()}"},
        "history": {"dir": str(history or tmp_path / "history")},
    }  # fmt: skip
    if mysql_port is None:
        doc["source"] = {"kind": "simulated"}
        doc["simulated"] = {"members": [member]}
    else:
        doc["source"] = {"kind": "mysql"}
        doc["mysql"] = {
            "dsn": f"mysql://{USER}@127.0.0.1:{mysql_port}",
            "password_env": "TEST_MYSQL_PW",
        }
    if sql_port is not None:
        secret = tmp_path / "sql.password"
        secret.write_text("pw\n")
        doc["sql"] = {"listen": f"127.0.0.1:{sql_port}", "password_file": str(secret)}
    path = tmp_path / "grstats.toml"
    path.write_text(render_toml(doc), encoding="utf-8")
    return path


def _check(
    config: Path, *, bus_password: str | None = None, fmt: str = "json"
) -> tuple[int, dict[str, dict[str, str]]]:
    env = {
        **os.environ,
        "TEST_MYSQL_PW": PASSWORD,
        "TEST_BUS_PW": bus_password or ACCOUNTS[MEMBER_A],
    }
    done = subprocess.run(
        [GRSTATS, "check", "--config", str(config), "--format", fmt],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    if fmt != "json":
        return done.returncode, {"text": {"out": done.stdout}}
    rows = json.loads(done.stdout)
    return done.returncode, {r["check"]: r for r in rows}


def test_a_ready_node_passes_every_check(secure_broker: SecureBroker, tmp_path: Path) -> None:
    with mimic_mysql(server_uuid=MEMBER_A) as fake:
        status, rows = _check(_config(tmp_path, secure_broker, mysql_port=fake.port))
    assert status == 0, rows
    assert {r["status"] for r in rows.values()} <= {"OK", "WARN"}, rows
    assert rows["bus"]["status"] == "OK" and rows["bus acl"]["status"] == "OK"
    assert rows["grant replication_group_member_stats"]["status"] == "OK"
    assert rows["history"]["status"] == "OK"
    assert rows["clock"]["status"] == "WARN"  # nobody else on the bus yet


def test_text_output_is_one_line_per_check(secure_broker: SecureBroker, tmp_path: Path) -> None:
    status, out = _check(_config(tmp_path, secure_broker), fmt="text")
    lines = out["text"]["out"].splitlines()
    assert status == 0
    assert [line.split()[1] for line in lines][:3] == ["config", "bus", "bus"]
    assert all(line.split()[0] in ("OK", "WARN", "FAIL") for line in lines)


def test_a_missing_grant_is_named(secure_broker: SecureBroker, tmp_path: Path) -> None:
    denied = {"replication_group_member_stats", "replication_applier_status_by_worker"}
    with mimic_mysql(server_uuid=MEMBER_A, denied=denied) as fake:
        status, rows = _check(_config(tmp_path, secure_broker, mysql_port=fake.port))
    assert status == 1
    failed = {name for name, r in rows.items() if r["status"] == "FAIL"}
    assert failed == {f"grant {t}" for t in denied}
    assert (
        "GRANT SELECT ON performance_schema.replication_group_member_stats"
        in (rows["grant replication_group_member_stats"]["detail"])
    )


def test_a_config_for_another_server_fails(secure_broker: SecureBroker, tmp_path: Path) -> None:
    with mimic_mysql() as fake:  # its @@server_uuid is not MEMBER_A
        status, rows = _check(_config(tmp_path, secure_broker, mysql_port=fake.port))
    assert status == 1 and rows["member id"]["status"] == "FAIL"


def test_a_refused_bus_login_says_what_the_broker_said(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    status, rows = _check(_config(tmp_path, secure_broker), bus_password="wrong")
    assert status == 1 and rows["bus"]["status"] == "FAIL"
    assert "Bad user name or password" in rows["bus"]["detail"] or (
        "Not authorized" in rows["bus"]["detail"]
    ), rows["bus"]


def test_the_acl_dropping_our_writes_fails(secure_broker: SecureBroker, tmp_path: Path) -> None:
    # logged in as member A but configured as member B: the ACL lets A write only under A
    status, rows = _check(_config(tmp_path, secure_broker, member=MEMBER_B))
    assert status == 1
    assert rows["bus"]["status"] == "OK" and rows["bus acl"]["status"] == "FAIL"


def test_an_sql_port_in_use_fails(secure_broker: SecureBroker, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, rows = _check(_config(tmp_path, secure_broker, sql_port=port))
    assert status == 1 and rows["sql port"]["status"] == "FAIL"


def test_an_invalid_config_fails_first(tmp_path: Path) -> None:
    path = tmp_path / "grstats.toml"
    path.write_text('[bus]\nport = "abc"\n')
    status, rows = _check(path)
    assert status == 1 and list(rows) == ["config"]
    assert "bus.port" in rows["config"]["detail"]


@contextmanager
def _tmpfs(mount_point: Path, options: str) -> Iterator[Path]:
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)],
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def test_a_read_only_history_directory_fails(secure_broker: SecureBroker, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "size=4m,ro") as history:
        status, rows = _check(_config(tmp_path, secure_broker, history=history))
    assert status == 1 and rows["history"]["status"] == "FAIL"
    assert "not writable" in rows["history"]["detail"]


def test_a_full_history_file_system_fails(secure_broker: SecureBroker, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "full", "size=2m") as mount:
        (mount / "filler").write_bytes(b"\0" * (1 << 20))
        status, rows = _check(_config(tmp_path, secure_broker, history=mount / "history"))
    assert status == 1 and rows["history"]["status"] == "FAIL", rows["history"]


def test_the_clock_is_compared_with_a_live_member(broker: Broker, tmp_path: Path) -> None:
    """A member daemon publishing on the bus: its offset is measured and small (same host)."""
    with daemons(tmp_path / "d", [daemon_config(broker.port, M2, [M1, M2], period=0.25)]):
        config = tmp_path / "grstats.toml"
        config.write_text(
            render_toml(
                {
                    "member": {"group": DAEMON_GROUP, "id": M1, "host": "db1", "port": 3306},
                    "source": {"kind": "simulated"},
                    "simulated": {"members": [M1, M2]},
                    "bus": {"host": broker.host, "port": broker.port},
                    "api": {"listen": "127.0.0.1:0"},
                    "history": {"dir": str(tmp_path / "history")},
                }
            ),
            encoding="utf-8",
        )
        status, rows = _check(config)
    assert status == 0, rows
    assert rows["clock"]["status"] == "OK", rows["clock"]
    assert M2 in rows["clock"]["detail"] and "1 member(s)" in rows["clock"]["detail"]
