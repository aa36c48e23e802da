"""`grstats demo` end to end (short live part, one backfilled day) and on Ctrl-C.

One day is the whole path (simulate, rollup, report, findings) as well as a
week: `--days` only sets how many dates each step goes through.

Leftovers are checked through the PID file the demo writes (`pid name` per
child; each child except `watch` leads its own process group): after the demo
exits no recorded PID may still run, and no process may remain in a recorded
process group (Spark's JVM would be there).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.broker import find_mosquitto

pytestmark = pytest.mark.demo

GRSTATS = [sys.executable, "-c", "from grstats.cli.main import main; main()"]


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()  # state, ppid, pgrp, ...


def _recorded(pid_file: Path) -> dict[int, str]:
    entries = {}
    for line in pid_file.read_text().splitlines():
        pid, name = line.split(" ", 1)
        entries[int(pid)] = name
    return entries


def _leftovers(pid_file: Path) -> list[str]:
    children = {pid: name for pid, name in _recorded(pid_file).items() if name != "demo"}
    found = []
    for pid, name in children.items():
        fields = _stat_fields(pid)
        if fields is not None and fields[0] != "Z":
            found.append(f"{name} pid {pid}")
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) in children:
                found.append(f"pid {entry.name} in the group of {children[int(fields[2])]}")
    return found


def _env(seconds: str) -> dict[str, str]:
    return {**os.environ, "GRSTATS_DEMO_SECONDS": seconds, "SPARK_LOCAL_IP": "127.0.0.1"}


def _needs_mosquitto() -> None:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_demo_end_to_end_writes_the_report_and_leaves_nothing_running(tmp_path: Path) -> None:
    _needs_mosquitto()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    if importlib.util.find_spec("spark_rollups.__main__") is None:
        pytest.skip("python -m spark_rollups is not part of this build yet")
    out = tmp_path / "demo-out"
    result = subprocess.run(
        [*GRSTATS, "demo", "--days", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        env=_env("5"),
        timeout=840,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = out / "report"
    suffixes = {p.suffix for p in report.rglob("*") if p.is_file()}
    assert {".md", ".html", ".png", ".csv"} <= suffixes, sorted(suffixes)
    assert str(report) in result.stdout
    assert re.search(
        r"the group's live page, in a browser: http://127\.0\.0\.1:\d+/\n", result.stdout
    )
    # the report's findings, printed: the slow member, by host:port, held the group back
    assert "Findings (" in result.stdout
    assert "1. 127.0.0.1:3308 held the group back: it caused" in result.stdout
    assert "**" not in result.stdout
    assert list((out / "history").rglob("*.parquet"))
    assert _leftovers(out / "demo.pids") == []
    names = set(_recorded(out / "demo.pids").values())
    assert {"mosquitto", "member1", "member2", "member3", "watch", "simulate"} <= names
    assert {"rollup", "report"} <= names


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ctrl_c_during_the_live_part_stops_every_process(tmp_path: Path) -> None:
    _needs_mosquitto()
    out = tmp_path / "demo-out"
    pid_file = out / "demo.pids"
    demo = subprocess.Popen(
        [*GRSTATS, "demo", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env("120"),
        start_new_session=True,  # our SIGINT goes to the demo alone, as a test controls it
    )
    try:
        deadline = time.monotonic() + 90
        while not (pid_file.exists() and "watch" in _recorded(pid_file).values()):
            assert demo.poll() is None, demo.stderr.read() if demo.stderr else ""
            assert time.monotonic() < deadline, "the live part did not start"
            time.sleep(0.2)
        demo.send_signal(signal.SIGINT)
        status = demo.wait(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert status == 130
    assert _leftovers(pid_file) == []
