"""`make playground` as a newcomer meets it: start, the README's "try it" list, a fault, stop.

One playground for the whole module (`grstats demo --keep`, as `make
playground` runs it but with one backfilled day instead of seven, `--days 1`:
no command here reads further back than the last rolled-up hours; in a
scratch directory used as the working directory, so the README's relative
paths hold): every command of the README's "try it" list answers with data,
every other documented command that can run against a local daemon runs
(tests/fixtures/examples.py; the rest is parsed by
tests/test_docs_examples.py), a fault makes a member misbehave, and
`grstats demo --stop` leaves no process and no port. The expected values are
the playground's own facts: its members' host:port (127.0.0.1:3306-3308),
its state file's pids and ports.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import find_mosquitto
from tests.fixtures.examples import Example, examples
from tests.fixtures.paths import REPO_ROOT

pytestmark = [pytest.mark.demo, pytest.mark.slow]

BIN = Path(sys.executable).parent
LABELS = ("127.0.0.1:3306", "127.0.0.1:3307", "127.0.0.1:3308")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?!:)")


@dataclass
class Playground:
    cwd: Path
    env: dict[str, str]
    state: dict[str, Any]
    started: str  # what `grstats demo --keep` printed

    def run(self, line: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """`line` through bash in the playground's directory, as a user types it."""
        return subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return None if fields[0] == "Z" else int(fields[19])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Playground]:
    if find_mosquitto() is None:
        pytest.skip("mosquitto is not installed")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    cwd = tmp_path_factory.mktemp("playground")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "COLUMNS": "80"}
    env.update(SPARK_LOCAL_IP="127.0.0.1")
    env.pop("GRSTATS_API", None)
    keep = subprocess.run(
        [str(BIN / "grstats"), "demo", "--keep", "--days", "1"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    state_file = cwd / "demo-out" / "playground" / "state.json"
    try:
        assert keep.returncode == 0, keep.stdout[-3000:] + keep.stderr[-3000:] + _logs(cwd)
        state = json.loads(state_file.read_text())
        api = state["members"][0]["api_port"]
        if api != 8437:  # busy here: the command says what to export, and so do we
            assert f"export GRSTATS_API=http://127.0.0.1:{api}" in keep.stdout, keep.stdout
            env["GRSTATS_API"] = f"http://127.0.0.1:{api}"
        yield Playground(cwd, env, state, keep.stdout)
    finally:
        if state_file.exists():
            subprocess.run(
                [str(BIN / "grstats"), "demo", "--stop"], cwd=cwd, env=env, timeout=120, check=False
            )


def _logs(cwd: Path) -> str:
    """The tail of each playground log, for a failed start's message."""
    out = []
    for log in sorted((cwd / "demo-out" / "playground" / "logs").glob("*.log")):
        out.append(f"\n--- {log.name}\n" + log.read_text(errors="replace")[-2000:])
    return "".join(out)


def _try_list() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    _, _, rest = readme.partition("Commands worth trying")
    block = rest.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readme_try_list_is_what_the_playground_prints(playground: Playground) -> None:
    from grstats.cli.demo.keep import TRY, try_commands  # noqa: PLC0415

    assert _try_list() == TRY
    sql_port = playground.state["sql_port"]
    for line in try_commands(Path("demo-out/playground/history"), sql_port):
        assert line in playground.started, line
    assert "http://127.0.0.1:" in playground.started and "grstats demo --stop" in playground.started


def test_every_try_command_answers_with_data(playground: Playground) -> None:
    sql_port = playground.state["sql_port"]
    uuids = {str(m["id"]) for m in playground.state["members"]}
    for shown in _try_list():
        line = shown.replace("-P 3307", f"-P {sql_port}")
        result = playground.run(line)
        assert result.returncode == 0, (line, result.stdout, result.stderr)
        out = result.stdout
        assert "Empty set" not in out, (line, out)
        if line.startswith("mariadb"):
            rows = [r for r in out.splitlines()[1:] if r.strip()]
            assert len(rows) == 6, (line, out)  # LIMIT 6 of a rolled-up day (72 hours-members)
            assert all(int(r.split("\t")[-1]) > 0 for r in rows), out
        elif "--explain" in line:
            assert out.count("\n") >= 3, (line, out)
            # members named as host:port in the explanation too (not by UUID)
            assert "127.0.0.1:330" in out, (line, out)
            assert not {m.group() for m in _UUID.finditer(out)} & uuids, (line, out)
        else:
            assert all(label in out for label in LABELS), (line, out)


def test_the_live_page_it_names_answers(playground: Playground) -> None:
    url = f"http://127.0.0.1:{playground.state['members'][0]['api_port']}/"
    assert f"live page: {url}" in playground.started, playground.started
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers.get_content_type() == "text/html"


def test_no_narrow_view_shows_a_member_uuid_at_80_or_160_columns(playground: Playground) -> None:
    """Members read as host:port; the group's name (a UUID by MySQL's definition, with no
    host:port to show instead) and a GTID's source UUID are data and may show."""
    from grstats.core import columns  # noqa: PLC0415

    uuids = [str(m["id"]) for m in playground.state["members"]]
    commands = ["members", "stats", "status", "lag", "flow", "applier", "gtids", "commit-path"]
    commands.append("channels")
    commands += [f"table {name}" for name in columns.table_names()]
    for width in (80, 160):
        for command in commands:
            result = playground.run(f"COLUMNS={width} grstats {command}")
            assert result.returncode == 0, (command, result.stderr)
            lines = result.stdout.splitlines()
            assert max(len(line) for line in lines) <= width, (command, width, result.stdout)
            shown = {m.group() for m in _UUID.finditer(result.stdout)}
            assert not shown & set(uuids), (command, width, result.stdout)


def _runnable() -> list[Example]:
    return [e for e in examples() if e.runnable]


@pytest.mark.parametrize("example", _runnable(), ids=lambda e: f"{e.where}: {e.line[:50]}")
def test_every_documented_command_runs_against_the_playground(
    playground: Playground, example: Example
) -> None:
    line = example.line.replace("-P 3307", f"-P {playground.state['sql_port']}")
    result = playground.run(line)
    assert result.returncode == 0, (example.where, line, result.stdout, result.stderr)
    assert result.stdout.strip(), (example.where, line)


def test_a_slow_applier_then_a_recovery_error_fault_show(playground: Playground) -> None:
    result = playground.run("grstats demo --fault slow-applier 127.0.0.1:3307")
    assert result.returncode == 0, result.stderr
    assert "127.0.0.1:3307" in result.stdout
    deadline = time.monotonic() + 90
    queue = 0
    while queue < 200:  # its applier stopped: the others' writes queue up at ~40 tx/s
        assert time.monotonic() < deadline, f"no applier queue on 127.0.0.1:3307 ({queue})"
        time.sleep(1)
        read = playground.run("grstats flow --format json")
        members = playground.run("grstats members --format json")
        if read.returncode or members.returncode:
            continue
        port_of = {r["MEMBER_ID"]: r["MEMBER_PORT"] for r in json.loads(members.stdout)}
        queue = next(
            (
                r["APPLIER_QUEUE"] or 0
                for r in json.loads(read.stdout)
                if port_of.get(r["MEMBER_ID"]) == 3307
            ),
            0,
        )
    # the next fault replaces it (every member restarted with the new model): 127.0.0.1:3308
    # RECOVERING, its recovery channel unable to reach its donor, the first other ONLINE
    # member: 127.0.0.1:3306 (error 2003, the client's "cannot connect")
    result = playground.run("grstats demo --fault recovery-error 127.0.0.1:3308")
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 90
    explained = ""
    while "127.0.0.1:3308 (RECOVERING)" not in explained:
        assert time.monotonic() < deadline, f"not explained: {explained}"
        time.sleep(1)
        explained = playground.run("grstats channels --explain").stdout
    assert (
        "127.0.0.1:3308 (RECOVERING): its recovery channel (group_replication_recovery) "
        "cannot connect to its donor 127.0.0.1:3306: error 2003 (CR_CONN_HOST_ERROR"
    ) in explained
    overview = playground.run("grstats channels").stdout
    line = next(x for x in overview.splitlines() if "group_replication_recov" in x)
    assert "127.0.0.1:3308" in line and "CONNECTING" in line and "2003" in line, overview
    # the live page says the same at its top, and on the member's row
    url = f"http://127.0.0.1:{playground.state['members'][0]['api_port']}/"
    with urllib.request.urlopen(url, timeout=10) as response:
        page = html.unescape(response.read().decode())
    assert "127.0.0.1:3308 (RECOVERING): its recovery channel" in page
    assert "group_replication_recovery: error 2003: Error connecting to source" in page


def test_stop_leaves_no_process_and_no_port(playground: Playground) -> None:
    state = json.loads((playground.cwd / "demo-out/playground/state.json").read_text())
    result = playground.run("grstats demo --stop")
    assert result.returncode == 0, result.stderr
    for entry in state["processes"]:
        assert _ticks(entry["pid"]) != entry["ticks"], entry
        for proc in Path("/proc").iterdir():  # nothing left in its process group either
            if proc.name.isdigit():
                try:
                    stat = (proc / "stat").read_text()
                except OSError:
                    continue
                fields = stat[stat.rfind(")") + 2 :].split()
                assert fields[0] == "Z" or int(fields[2]) != entry["pid"], (entry, proc.name)
    for port in state["ports"]:
        assert not _accepts(port), port
    assert not (playground.cwd / "demo-out/playground.toml").exists()
