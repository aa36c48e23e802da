"""The wheel stands alone: built from the checkout, installed into a fresh venv outside it.

The venv gets the wheel with --no-deps, as the operator guide's node install. Its
dependencies are not downloaded again (minutes of a shared CPU): a `.pth`
line puts the test interpreter's own site-packages (installed from the same
lock by `make install`) after the venv's. A `.pth` line adds the directory
only: the checkout's editable-install hook there is not run, so `grstats`
can only come from the wheel (the first test checks that). Every command
runs from a directory outside the checkout, without PYTHONPATH: `grstats
init` (against a mysql-mimic server) writes a config,
`grstats init --print` writes the shipped files, `grstats check` passes, and
`grstats run` with the simulated source answers /healthz.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import GROUP, M1, M2, http_get, render_toml, wait_for
from tests.fixtures.mimic_server import PASSWORD, USER, mimic_mysql
from tests.fixtures.paths import REPO_ROOT

pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(kwargs.pop("env", {}))  # type: ignore[call-overload]
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False,
        timeout=kwargs.pop("timeout", 600),  # type: ignore[arg-type]
    )  # fmt: skip
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv holding the runtime lock and the wheel built now."""
    work = tmp_path_factory.mktemp("wheel")
    dist = work / "dist"
    built = _run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(dist),
         str(REPO_ROOT)],
        work,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("grstats-*.whl")
    venv = work / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], work).returncode == 0
    pip = str(venv / "bin" / "pip")
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "zz-test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    own = _run([pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)], work)
    assert own.returncode == 0, own.stderr[-3000:]
    return venv / "bin"


def test_the_installed_wheel_imports_from_itself(installed: Path, tmp_path: Path) -> None:
    done = _run(
        [str(installed / "python"), "-c", "import grstats; print(grstats.__file__)"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert str(REPO_ROOT) not in done.stdout and "site-packages" in done.stdout


def test_the_wheel_prints_the_shipped_files(installed: Path, tmp_path: Path) -> None:
    for name, relative in (
        ("grstats.service", "systemd/grstats.service"),
        ("grstats-rollup.timer", "systemd/grstats-rollup.timer"),
        ("mosquitto.conf", "config/mosquitto.conf"),
        ("prometheus-rules.yml", "config/prometheus/grstats-rules.yml"),
        ("grafana-dashboard.json", "config/grafana-dashboard.json"),
        ("grstats.toml", "config/grstats.toml"),
    ):
        done = _run([str(installed / "grstats"), "init", "--print", name], tmp_path)
        assert done.returncode == 0, (name, done.stderr)
        assert done.stdout == (REPO_ROOT / relative).read_text(encoding="utf-8"), name


def test_the_wheel_runs_init_check_and_run(installed: Path, broker: Broker, tmp_path: Path) -> None:
    grstats = str(installed / "grstats")
    with mimic_mysql() as fake:
        done = _run(
            [grstats, "init", "--mysql", f"mysql://{USER}@127.0.0.1:{fake.port}",
             "--mysql-password-env", "PW", "--no-input", "--bus-no-tls",
             "--bus", f"127.0.0.1:{broker.port}", "--history-dir", str(tmp_path / "history"),
             "--out", str(tmp_path / "mysql.toml")],
            tmp_path, env={"PW": PASSWORD},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert tomllib.loads((tmp_path / "mysql.toml").read_text())["member"]["group"] == GROUP
    config = tmp_path / "grstats.toml"
    config.write_text(
        render_toml(
            {
                "member": {"group": GROUP, "id": M1, "host": "127.0.0.1", "port": 3306},
                "source": {"kind": "simulated"},
                "simulated": {"members": [M1, M2]},
                "bus": {"host": "127.0.0.1", "port": broker.port},
                "publish": {"period": 0.25},
                "api": {"listen": "127.0.0.1:0"},
                "history": {"dir": str(tmp_path / "history")},
                "log": {"format": "json"},
            }
        )
    )
    check = _run([grstats, "check", "--config", str(config), "--format", "json"], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert {r["status"] for r in json.loads(check.stdout)} <= {"OK", "WARN"}
    log = tmp_path / "daemon.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [grstats, "run", "--config", str(config)], cwd=tmp_path, env=env,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:

        def api_port() -> int | None:
            assert daemon.poll() is None, log.read_text()[-2000:]
            for line in log.read_text().splitlines():
                if '"daemon.started"' in line:
                    return int(json.loads(line)["api_port"])
            return None

        port = wait_for(api_port, 60, "the daemon to start")
        wait_for(lambda: http_get(port, "/healthz")[0] == 200, 30, "/healthz ok")
        # the live page and the files it loads, from the wheel's package data
        status, page = http_get(port, "/")
        assert status == 200 and b"127.0.0.1:3306" in page
        for name in ("page.css", "page.js", "icon.svg"):
            assert http_get(port, f"/static/{name}")[0] == 200, name
    finally:
        daemon.terminate()
        assert daemon.wait(timeout=30) == 0
