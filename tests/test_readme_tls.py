"""The operator guide's TLS recipe, run as written on loopback, makes a broker a client can verify.

The block after `<!-- tls-recipe ... -->` is run by bash with only what a
test must change: no `sudo`, the lab line's `BROKER_SAN` (the one the
README gives for loopback), and the two directories moved under tmp_path
(`~/grstats-ca` -> the admin side, `/etc/mosquitto` -> the broker side;
`systemctl restart` dropped). Then the shipped config/mosquitto.conf runs
with the files the recipe put on the broker side, and `grstats members --bus`
verifies it by IP, with the recipe's ca.crt. The CA key must not be there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grstats.cli.demo.mosquitto import SecureFiles, find_mosquitto
from tests.fixtures.broker import ACCOUNTS, READER, Broker, free_port
from tests.fixtures.paths import REPO_ROOT

GRSTATS = str(Path(sys.executable).parent / "grstats")


def _recipe() -> str:
    text = (REPO_ROOT / "docs" / "operator-guide.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- tls-recipe[^>]*-->\n```sh\n(.*?)```", text, re.DOTALL)
    assert match, "docs/operator-guide.md has no tls-recipe block"
    return match.group(1)


def test_the_readme_tls_recipe_works_on_loopback(tmp_path: Path) -> None:
    binary = find_mosquitto()
    if binary is None or shutil.which("openssl") is None or not shutil.which("mosquitto_passwd"):
        pytest.skip("mosquitto, mosquitto_passwd and openssl are needed")
    recipe = _recipe()
    lab = re.search(r'# loopback lab: (BROKER_SAN="IP:127\.0\.0\.1")', recipe)
    assert lab, "the recipe names the loopback lab's IP SAN"
    admin, etc = tmp_path / "admin", tmp_path / "etc-mosquitto"
    script = (
        recipe.replace("sudo ", "")
        .replace("systemctl restart mosquitto", "true")
        .replace("~/grstats-ca", str(admin))
        .replace("/etc/mosquitto", str(etc))
        .replace('BROKER_SAN="DNS:mqtt.example"', lab.group(1))
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    certs = etc / "certs"
    assert sorted(p.name for p in certs.iterdir()) == ["broker.crt", "broker.key", "ca.crt"]
    assert (certs / "broker.key").stat().st_mode & 0o777 == 0o600
    (etc / "state").mkdir()
    passwd = etc / "grstats.passwd"
    subprocess.run(
        ["mosquitto_passwd", "-c", "-b", str(passwd), READER, ACCOUNTS[READER]], check=True
    )
    acl = etc / "grstats.acl"
    shutil.copyfile(REPO_ROOT / "config" / "mosquitto.acl.example", acl)
    files = SecureFiles(
        shipped_config=(REPO_ROOT / "config" / "mosquitto.conf").read_text(encoding="utf-8"),
        cafile=certs / "ca.crt",
        certfile=certs / "broker.crt",
        keyfile=certs / "broker.key",
        password_file=passwd,
        acl_file=acl,
        state_dir=etc / "state",
    )
    (tmp_path / "broker").mkdir()
    broker = Broker(binary, tmp_path / "broker", free_port(), secure=files)
    broker.start()
    try:
        read = subprocess.run(
            [GRSTATS, "members", "--bus", f"127.0.0.1:{broker.port}", "--bus-tls",
             "--bus-ca-file", str(admin / "ca.crt"), "--bus-user", READER,
             "--bus-password-env", "TEST_BUS_PW", "--format", "json", "--timeout", "30"],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "TEST_BUS_PW": ACCOUNTS[READER]},
        )  # fmt: skip
    finally:
        broker.stop()
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == "[]"
