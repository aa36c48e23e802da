"""`grstats init` against a mysql-mimic server: the file it writes is a usable config."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from grstats.config import load_config
from tests.fixtures.mimic_server import PASSWORD, USER, mimic_mysql
from tests.fixtures.paths import REPO_ROOT

GRSTATS = str(Path(sys.executable).parent / "grstats")
UUID = "11111111-1111-1111-1111-111111111111"  # the mimic's @@server_uuid
GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"  # ... and its group name


def _init(
    port: int, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GRSTATS, "init", "--mysql", f"mysql://{USER}@127.0.0.1:{port}",
         "--mysql-password-env", "TEST_MYSQL_PW", "--no-input", *args],
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "TEST_MYSQL_PW": PASSWORD, **(env or {})},
    )  # fmt: skip


def test_init_writes_the_servers_identity_and_the_given_broker(tmp_path: Path) -> None:
    out = tmp_path / "grstats.toml"
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    with mimic_mysql(hostname="db1", port=3307, report_port=3307) as fake:
        done = _init(
            fake.port, "--bus", "mqtt.example:8883", "--bus-ca-file", str(ca),
            "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = tomllib.loads(out.read_text())
    assert doc["member"] == {"group": GROUP, "id": UUID, "host": "db1", "port": 3307}
    assert doc["bus"]["host"] == "mqtt.example" and doc["bus"]["port"] == 8883
    assert doc["bus"]["tls"] is True and doc["bus"]["username"] == UUID
    assert doc["mysql"]["password_env"] == "TEST_MYSQL_PW"
    assert PASSWORD not in out.read_text()
    assert out.stat().st_mode & 0o777 == 0o640
    env = {"TEST_MYSQL_PW": PASSWORD, "GRSTATS_BUS_PASSWORD": "x"}
    os.environ.update(env)
    try:
        settings = load_config(out)
    finally:
        for key in env:
            os.environ.pop(key)
    assert settings.source_kind == "mysql"
    assert settings.member.id == UUID and settings.bus.password == "x"


def test_init_uses_report_host_when_the_server_has_one() -> None:
    with mimic_mysql(hostname="db1", report_host="db1.example") as fake:
        done = _init(fake.port)
    assert done.returncode == 0, done.stderr
    assert tomllib.loads(done.stdout)["member"]["host"] == "db1.example"


def test_init_without_group_replication_says_so_and_writes_a_usable_file(tmp_path: Path) -> None:
    with mimic_mysql(gr=False) as fake:
        done = _init(fake.port)
    assert done.returncode == 0, done.stderr
    assert "Group Replication is not installed" in done.stderr
    doc = tomllib.loads(done.stdout)
    assert doc["member"]["group"] == "" and doc["member"]["id"] == UUID
    path = tmp_path / "grstats.toml"
    path.write_text(done.stdout)
    os.environ["TEST_MYSQL_PW"] = PASSWORD
    os.environ["GRSTATS_BUS_PASSWORD"] = "x"
    try:
        load_config(path)
    finally:
        del os.environ["TEST_MYSQL_PW"], os.environ["GRSTATS_BUS_PASSWORD"]


def test_init_refused_login_is_one_line_and_status_1() -> None:
    with mimic_mysql() as fake:
        done = _init(fake.port, env={"TEST_MYSQL_PW": "wrong"})
    assert done.returncode == 1
    assert done.stderr.startswith("grstats init: cannot read the local server:"), done.stderr
    assert "1045" in done.stderr and "Traceback" not in done.stderr


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "grstats.toml"
    out.write_text("keep me")
    with mimic_mysql() as fake:
        done = _init(fake.port, "--out", str(out))
    assert done.returncode == 1 and out.read_text() == "keep me"


def test_init_prints_the_shipped_files() -> None:
    for name, relative in (
        ("grstats.service", "systemd/grstats.service"),
        ("mosquitto.conf", "config/mosquitto.conf"),
    ):
        done = subprocess.run(
            [GRSTATS, "init", "--print", name], capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == (REPO_ROOT / relative).read_text()
