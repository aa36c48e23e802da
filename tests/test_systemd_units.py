"""systemd units in systemd/: required keys present, `systemd-analyze verify` clean.

The units name the install prefix /opt/grstats (docs/operator-guide.md);
verify checks that executables exist, so the test points that prefix at this
virtualenv in a temporary copy.
"""

from __future__ import annotations

import configparser
import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grstats.api.options import ApiOptions

UNITS_DIR = Path(__file__).resolve().parents[1] / "systemd"
UNIT_FILES = (
    "grstats.service",
    "grstats-rollup.service",
    "grstats-rollup.timer",
    "grstats-report.service",
    "grstats-report.timer",
)
INSTALL_BIN = "/opt/grstats/bin/"


def _parse(name: str) -> dict[str, dict[str, list[str]]]:
    """Unit file -> section -> key -> every value (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in (UNITS_DIR / name).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{name}: key outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"{name}: not key=value: {line}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def _one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    return unit[section][key][-1]


def test_every_unit_file_exists() -> None:
    missing = [name for name in UNIT_FILES if not (UNITS_DIR / name).is_file()]
    assert missing == []


def test_daemon_unit_is_notify_with_watchdog_and_restart() -> None:
    unit = _parse("grstats.service")
    assert _one(unit, "Service", "Type") == "notify"
    assert _one(unit, "Service", "WatchdogSec") == "30"
    assert _one(unit, "Service", "Restart") == "on-failure"
    assert _one(unit, "Service", "ExecStart").endswith(
        "grstats run --config /etc/grstats/grstats.toml"
    )
    assert _one(unit, "Install", "WantedBy") == "multi-user.target"


def test_daemon_unit_runs_unprivileged_with_its_directories() -> None:
    service = _parse("grstats.service")["Service"]
    assert service.get("DynamicUser") == ["yes"] or "User" in service
    assert service["StateDirectory"] == ["grstats"]
    assert service["ConfigurationDirectory"] == ["grstats"]


def test_daemon_unit_is_hardened() -> None:
    service = _parse("grstats.service")["Service"]
    expected = {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectControlGroups": "yes",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "yes",
        "CapabilityBoundingSet": "",
    }
    for key, value in expected.items():
        assert service.get(key, [None])[-1] == value, key
    assert set(service["RestrictAddressFamilies"][-1].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    assert service["SystemCallFilter"][0] == "@system-service"


def _bytes(size: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)


def test_daemon_unit_bounds_memory_tasks_and_files() -> None:
    service = _parse("grstats.service")["Service"]
    high, most = _bytes(service["MemoryHigh"][-1]), _bytes(service["MemoryMax"][-1])
    assert 0 < high < most
    assert int(service["TasksMax"][-1]) >= 64
    nofile = int(service["LimitNOFILE"][-1])
    # The API may hold max_connections served plus as many refused-lingering sockets.
    cap = ApiOptions().max_connections
    assert 2 * cap + 64 <= nofile


def test_timers_fire_daily_and_weekly_and_catch_up() -> None:
    rollup = _parse("grstats-rollup.timer")["Timer"]
    report = _parse("grstats-report.timer")["Timer"]
    assert rollup["OnCalendar"] == ["*-*-* 00:40:00 UTC"]  # after a 900 s flush
    assert report["OnCalendar"][0].startswith("Mon ")
    assert rollup["Persistent"] == report["Persistent"] == ["true"]
    assert rollup["Unit"] == ["grstats-rollup.service"]
    assert report["Unit"] == ["grstats-report.service"]


def test_batch_units_are_oneshot_spark_jobs_on_loopback() -> None:
    for name, verb in (("grstats-rollup.service", "rollup"), ("grstats-report.service", "report")):
        service = _parse(name)["Service"]
        assert service["Type"] == ["oneshot"], name
        assert f"-m spark_rollups {verb} " in service["ExecStart"][-1], name
        assert "SPARK_LOCAL_IP=127.0.0.1" in service["Environment"], name


def test_units_are_plain_ini_without_duplicate_sections() -> None:
    for name in UNIT_FILES:
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep key case
        parser.read_string((UNITS_DIR / name).read_text(encoding="utf-8"))
        assert parser.sections(), name


def test_systemd_analyze_verify_passes(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed (systemd is not present on this machine)")
    venv_bin = str(Path(sys.executable).parent) + "/"
    for name in UNIT_FILES:
        text = (UNITS_DIR / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text.replace(INSTALL_BIN, venv_bin), encoding="utf-8")
    result = subprocess.run(
        [analyze, "verify", *(str(tmp_path / name) for name in UNIT_FILES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_daemon_imports_and_runs_a_loop_under_memory_deny_write_execute() -> None:
    # MemoryDenyWriteExecute=yes: the kernel's PR_SET_MDWE gives the same rule
    # (no W+X mappings) to a child process; the child imports what the daemon
    # imports and runs an event loop.
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "prctl"):
        pytest.skip("no prctl in this libc")
    code = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.prctl(65, 1, 0, 0, 0) != 0: sys.exit(77)\n"  # PR_SET_MDWE, REFUSE_EXEC_GAIN
        "import asyncio, aiomqtt, msgpack, structlog, prometheus_client, pyarrow.parquet\n"
        "import grstats.api.metrics, grstats.core.snapshot, protocol\n"
        "asyncio.run(asyncio.sleep(0))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode == 77:
        pytest.skip("kernel without PR_SET_MDWE (Linux < 6.3)")
    assert result.returncode == 0, result.stderr


def test_sql_child_imports_and_queries_under_memory_deny_write_execute() -> None:
    # The SQL endpoint's child process (grstats.daemon.sqlmain) runs in the same
    # unit: DuckDB, mysql-mimic and the prctl call through ctypes must do without
    # W+X memory too.
    code = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.prctl(65, 1, 0, 0, 0) != 0: sys.exit(77)\n"  # PR_SET_MDWE, REFUSE_EXEC_GAIN
        "import grstats.daemon.sqlmain, grstats.sql.server, duckdb\n"
        "grstats.daemon.sqlmain._die_with_parent()\n"
        "assert duckdb.connect().execute('SELECT 42').fetchall() == [(42,)]\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode == 77:
        pytest.skip("kernel without PR_SET_MDWE (Linux < 6.3)")
    assert result.returncode == 0, result.stderr
