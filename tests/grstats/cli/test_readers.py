"""`--bus-*` options and the config's [bus]: one set of checks, the option named, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from grstats.cli.errors import BadArgument
from grstats.cli.main import main
from grstats.cli.readers import TableReader

UNSET = "GRSTATS_SURELY_UNSET_VAR"


def reader(**options: object) -> TableReader:
    given: dict[str, object] = {
        "api": None,
        "config": None,
        "bus": None,
        "prefix": None,
        "group": None,
        "timeout": 1.0,
    }
    given.update(options)
    return TableReader(**given)  # type: ignore[arg-type]


def error_line(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


def test_missing_ca_file_names_the_option_and_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "ca.pem"
    status, line = error_line(
        "stats", "--bus", "127.0.0.1:1883", "--bus-tls", "--bus-ca-file", str(missing)
    )
    assert status == 2
    assert line == f"Error: --bus-ca-file: cannot read {missing}: No such file or directory"


def test_unset_password_variable_names_the_option() -> None:
    status, line = error_line("members", "--bus", "127.0.0.1:1", "--bus-password-env", UNSET)
    assert status == 2
    assert line == f"Error: --bus-password-env: environment variable {UNSET} is not set"


def test_bus_options_without_bus_are_a_mistake() -> None:
    status, line = error_line("stats", "--bus-user", "alice", "--bus-tls")
    assert status == 2
    assert line == "Error: --bus-tls, --bus-user: only with --bus HOST:PORT"


def test_cert_without_key_is_a_mistake(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x\n")
    status, line = error_line(
        "stats", "--bus", "127.0.0.1", "--bus-tls", "--bus-cert-file", str(cert)
    )
    assert status == 2
    assert line == "Error: --bus-key-file: cert_file and key_file go together"


def test_there_is_no_password_option() -> None:
    result = CliRunner().invoke(main, ["stats", "--bus", "127.0.0.1", "--bus-password", "x"])
    assert result.exit_code == 2
    assert "No such option '--bus-password'" in result.output


def test_config_bus_section_gives_defaults_and_options_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRSTATS_TEST_FILE_PW", "from-config")
    monkeypatch.setenv("GRSTATS_TEST_FLAG_PW", "from-flag")
    ca = tmp_path / "ca.pem"
    ca.write_text("x\n")
    config = tmp_path / "grstats.toml"
    config.write_text(
        "[bus]\nhost = 'mqtt.example'\nusername = 'member-1'\n"
        "password_file = '/nonexistent/pw'\ntls = true\n"
        f"ca_file = '{ca}'\nprefix = 'site/a'\nclient_id = 'grstats-member-1'\nkeepalive = 30\n"
    )
    # the config's password_file is replaced by the option, not combined with it
    r = reader(config=config, bus="10.0.0.7:8883", bus_password_env="GRSTATS_TEST_FLAG_PW")
    assert r.bus is not None
    assert (r.bus.host, r.bus.port, r.bus.username, r.bus.password) == (
        "10.0.0.7",
        8883,
        "member-1",
        "from-flag",
    )
    assert (r.bus.tls, r.bus.ca_file, r.bus.keepalive) == (True, str(ca), 30)
    assert r.bus.client_id == ""  # never the daemon's: the broker would disconnect it
    assert r.prefix == "site/a"
    assert r.where == "mqtts://10.0.0.7:8883/site/a"


def test_tls_off_on_the_command_line_drops_the_config_tls_files(tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    config.write_text("[bus]\ntls = true\nca_file = '/nonexistent/ca.pem'\n")
    r = reader(config=config, bus="127.0.0.1", bus_tls=False)
    assert r.bus is not None
    assert (r.bus.tls, r.bus.ca_file) == (False, None)
    assert r.where == "mqtt://127.0.0.1:1883/grstats/v1"


def test_config_tls_file_problem_names_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    config.write_text("[bus]\ntls = true\nkey_file = 'k.pem'\ncert_file = 'c.pem'\n")
    with pytest.raises(BadArgument) as info:
        reader(config=config, bus="127.0.0.1")
    assert info.value.message == (
        "grstats.toml: bus.cert_file: cannot read c.pem: No such file or directory"
    )


def test_reading_the_api_does_not_need_the_broker_secrets(tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    config.write_text(f"[api]\nlisten = '0.0.0.0:9001'\n[bus]\npassword_env = '{UNSET}'\n")
    r = reader(config=config)
    assert (r.api, r.bus) == ("http://127.0.0.1:9001", None)


def test_empty_bus_host_in_the_config_is_a_mistake(tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    config.write_text("[bus]\nhost = ''\n")
    status, line = error_line("stats", "--config", str(config))
    assert (status, line) == (2, "Error: grstats.toml: bus.host: must not be empty")


def test_daemon_config_with_api_on_port_0_serves_a_bus_reader(tmp_path: Path) -> None:
    # A daemon listening on any free port (`127.0.0.1:0`) has no API URL a
    # client could use; with --bus the API is not needed, so its config works.
    config = tmp_path / "grstats.toml"
    config.write_text('[api]\nlisten = "127.0.0.1:0"\n[bus]\nprefix = "gr"\n')
    bus_reader = reader(config=config, bus="127.0.0.1:1883")
    assert bus_reader.where == "mqtt://127.0.0.1:1883/gr"
    with pytest.raises(BadArgument, match="port 0"):
        reader(config=config)
