"""Issue 39 rows 7 and 8: every local input bounded, every config value that could crash checked.

Strategy: what an operator can hand grstats by mistake -- a device, a FIFO, a
file past the stated size, a config with a NUL, a TOML nested thousands deep,
a 70,000-character client id, an impossible `sql.memory_limit`, thousands of
simulated members -- is refused with one line naming the input (and the key)
and exit status 2, before anything is read past the bound. The commands run
as a user runs them (a subprocess, real exit status, real stderr); the config
checks also run in-process through `load_config`, which every command uses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from grstats.config import ConfigError, load_config
from tests.fixtures.cli import GRSTATS, grstats

pytestmark = pytest.mark.faults

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
M1 = "11111111-1111-1111-1111-111111111111"
MINIMAL = f"""
[member]
group = "{GROUP}"
id = "{M1}"
[simulated]
members = ["{M1}"]
"""


def _one_line_exit_2(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _sparse(tmp_path: Path, size: int, name: str) -> Path:
    path = tmp_path / name
    with path.open("wb") as f:
        f.truncate(size)  # no disk used: the size is what a reader must refuse
    return path


# -- row 7: decode, binlog decode, config files ---------------------------------------


@pytest.mark.parametrize("command", [["decode"], ["binlog", "decode"]])
def test_a_device_as_raw_input_is_refused_unread(command: list[str]) -> None:
    done = grstats(*command, "--file", "/dev/zero", timeout=20)
    _one_line_exit_2(done, "/dev/zero", "not a regular file")


@pytest.mark.parametrize("command", [["decode"], ["binlog", "decode"]])
def test_a_fifo_as_raw_input_is_refused_without_waiting(command: list[str], tmp_path: Path) -> None:
    done = grstats(*command, "--file", str(_fifo(tmp_path)), timeout=20)
    _one_line_exit_2(done, "not a regular file")


@pytest.mark.parametrize(
    ("command", "limit"), [(["decode"], 16 << 20), (["binlog", "decode"], 64 << 20)]
)
def test_raw_input_past_its_stated_size_is_refused(
    command: list[str], limit: int, tmp_path: Path
) -> None:
    path = _sparse(tmp_path, limit + 1, "big.bin")
    done = grstats(*command, "--file", str(path), timeout=20)
    _one_line_exit_2(done, "big.bin", f"at most {limit} bytes")


@pytest.mark.parametrize("command", ["run", "check", "collect"])
def test_a_device_or_fifo_as_config_is_refused(command: str, tmp_path: Path) -> None:
    for path in ("/dev/zero", str(_fifo(tmp_path))):
        done = grstats(command, "--config", path, timeout=20)
        assert "not a regular file" in done.stderr + done.stdout, (command, path, done)
        assert done.returncode in (1, 2) if command == "check" else done.returncode == 2
        assert "Traceback" not in done.stderr


def test_a_config_past_its_stated_size_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grstats.toml"
    path.write_text(MINIMAL + "# " + "x" * (1 << 20) + "\n", encoding="utf-8")
    done = grstats("run", "--config", str(path), timeout=20)
    _one_line_exit_2(done, "grstats.toml", f"at most {1 << 20} bytes")


# -- row 8: values that could crash the daemon, checked at load ---------------------


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "grstats.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def test_a_nul_in_a_path_is_refused_with_its_key(tmp_path: Path) -> None:
    text = MINIMAL + '[history]\ndir = "/var/lib/a\\u0000b"\n'
    assert "history.dir" in _error(tmp_path, text)
    assert "NUL" in _error(tmp_path, text)


def test_a_toml_nested_thousands_deep_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "grstats.toml"
    path.write_text(MINIMAL + "x = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    done = grstats("run", "--config", str(path), timeout=20)
    _one_line_exit_2(done, "grstats.toml", "nested")


def test_a_nesting_within_tomls_own_use_still_loads(tmp_path: Path) -> None:
    # the depth bound is far above what a config needs (an array of tables in a table)
    path = tmp_path / "grstats.toml"
    path.write_text(MINIMAL + "hot_hours = [[[[1]]]]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "simulated.hot_hours" in str(info.value)  # judged as a value, not as a depth


def test_a_client_id_past_mqtts_bound_is_refused(tmp_path: Path) -> None:
    text = MINIMAL + '[bus]\nclient_id = "' + "a" * 70_000 + '"\n'
    message = _error(tmp_path, text)
    assert "bus.client_id" in message and len(message) < 300


@pytest.mark.parametrize("value", ["1PB", "lots", "0MB", "-5GB", "1e9", "256 bananas"])
def test_an_impossible_sql_memory_limit_is_refused(tmp_path: Path, value: str) -> None:
    text = MINIMAL + f'[sql]\nlisten = "127.0.0.1:0"\nmemory_limit = "{value}"\n'
    assert "sql.memory_limit" in _error(tmp_path, text)


@pytest.mark.parametrize("value", ["256MB", "1GB", "512MiB", "2GiB"])
def test_a_sql_memory_limit_in_duckdbs_units_loads(
    tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRSTATS_TEST_SQL_PASSWORD", "s3cret")
    path = tmp_path / "grstats.toml"
    text = MINIMAL + f'[sql]\nlisten = "127.0.0.1:0"\nmemory_limit = "{value}"\n'
    text += 'password_env = "GRSTATS_TEST_SQL_PASSWORD"\n'
    path.write_text(text, encoding="utf-8")
    assert load_config(path).sql.memory_limit == value


def test_thousands_of_simulated_members_are_refused(tmp_path: Path) -> None:
    ids = [M1, *(str(uuid.UUID(int=n + 2)) for n in range(5000))]
    text = MINIMAL.replace(
        f'members = ["{M1}"]', "members = [" + ", ".join(f'"{i}"' for i in ids) + "]"
    )
    message = _error(tmp_path, text)
    assert "simulated.members" in message and "at most 64" in message


def test_a_simulated_daemon_at_the_member_cap_stops_within_a_second_of_sigterm(
    tmp_path: Path,
) -> None:
    ids = [M1, *(str(uuid.UUID(int=n + 2)) for n in range(63))]
    text = MINIMAL.replace(
        f'members = ["{M1}"]', "members = [" + ", ".join(f'"{i}"' for i in ids) + "]"
    )
    text += '[bus]\nhost = "127.0.0.1"\nport = 9\ntls = false\n[api]\nlisten = "127.0.0.1:0"\n'
    text += '[log]\nformat = "json"\n'
    path = tmp_path / "grstats.toml"
    path.write_text(text, encoding="utf-8")
    log_path = tmp_path / "daemon.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([*GRSTATS, "run", "--config", str(path)], stdout=log, stderr=log)
    try:
        end = time.monotonic() + 60
        while b"daemon.started" not in log_path.read_bytes():
            assert process.poll() is None, log_path.read_text()[-2000:]
            assert time.monotonic() < end, "the daemon did not start"
            time.sleep(0.05)
        time.sleep(1.0)  # publishing (the model stepping every member) is under way
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert took <= 1.0, f"{took:.2f} s from SIGTERM to exit"
