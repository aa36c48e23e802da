"""Configuration: defaults, the documented file, and one clear line per mistake."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grstats.config import ConfigError, load_client_settings, load_config
from tests.fixtures.paths import REPO_ROOT

GRSTATS = str(Path(sys.executable).parent / "grstats")
MINIMAL = """
[member]
group = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
id = "11111111-1111-1111-1111-111111111111"
[simulated]
members = ["11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grstats.toml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return str(info.value)


def test_documented_config_file_loads_with_documented_defaults() -> None:
    settings = load_config(REPO_ROOT / "config" / "grstats.toml")
    assert settings.bus.port == 8883 and settings.bus.tls  # the shipped broker's listener
    assert settings.bus.prefix == "grstats/v1"
    assert settings.publish.period == 1.0
    assert settings.publish.gtid_interval == 30.0
    assert settings.publish.unreachable_after == 5
    assert settings.publish.forget_after == 60.0
    assert (settings.api.host, settings.api.port) == ("127.0.0.1", 8437)
    assert settings.limits.max_envelope_size == 65536
    assert settings.history.dir == ""


def test_minimal_config_gets_defaults(tmp_path: Path) -> None:
    settings = load_config(write(tmp_path, MINIMAL))
    assert settings.source_kind == "simulated"
    assert settings.source_settings.members[1] == "22222222-2222-2222-2222-222222222222"
    assert settings.history.scope == "local"
    assert settings.log.format == "auto"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('[bus]\nport = "abc"', 'grstats.toml: bus.port: expected an integer 1-65535, got "abc"'),
        ("[bus]\nport = 0", "grstats.toml: bus.port: expected an integer 1-65535, got 0"),
        ("[bus]\ntls = 1", "grstats.toml: bus.tls: expected true or false, got 1"),
        ("[bus]\nprefix = 'a/#'", "grstats.toml: bus.prefix:"),
        ("[bus]\npasword_env = 'X'", "grstats.toml: bus.pasword_env: unknown key"),
        (
            "[bus]\npassword_env = 'GRSTATS_SURELY_UNSET_VAR'",
            "grstats.toml: bus.password_env: environment variable GRSTATS_SURELY_UNSET_VAR",
        ),
        (
            "[bus]\npassword_file = '/nonexistent/pw'",
            "grstats.toml: bus.password_file: cannot",
        ),
        ("[bus]\ncert_file = 'c.pem'", "grstats.toml: bus.key_file:"),
        ("[bus]\nshared_group = 'a/b'", "grstats.toml: bus.shared_group: expected a name"),
        ("[bus]\nshared_group = 1", "grstats.toml: bus.shared_group: expected a string"),
        ("[publish]\nperiod = -1", "grstats.toml: publish.period: expected a number"),
        ("[publish]\nperiod = true", "grstats.toml: publish.period: expected a number"),
        (
            "[publish]\ngtid_interval = 10",
            "grstats.toml: publish.gtid_interval: expected a number 30",
        ),
        ("[publish]\ngtid_interval = 61", "grstats.toml: publish.gtid_interval:"),
        ("[publish]\nunreachable_after = 0", "grstats.toml: publish.unreachable_after:"),
        ("[publish]\nforget_after = 2", "grstats.toml: publish.forget_after: must be longer"),
        ("[api]\nlisten = 'localhost'", 'grstats.toml: api.listen: expected "host:port"'),
        ("[api]\nlisten = '127.0.0.1:70000'", "grstats.toml: api.listen:"),
        (
            "[history]\nscope = 'some'",
            'grstats.toml: history.scope: expected one of "local"',
        ),
        ("[history]\nretention_days = 0", "grstats.toml: history.retention_days:"),
        ("[history]\nflush_interval = 'x'", "grstats.toml: history.flush_interval:"),
        ("[limits]\nmax_envelope_size = 1", "grstats.toml: limits.max_envelope_size:"),
        ("[log]\nlevel = 'loud'", "grstats.toml: log.level: expected one of"),
        ("[log]\nformat = 'xml'", "grstats.toml: log.format: expected one of"),
        (
            "[source]\nkind = 'oracle'",
            'grstats.toml: source.kind: expected one of "simulated"',
        ),
        ("[sourc]\nkind = 'mysql'", "grstats.toml: sourc: unknown section"),
        ("[source]\nkind = 'mysql'\n[mysql]\ndsn = 'postgres://x'", "grstats.toml: mysql.dsn:"),
        ("[mysql]\npoll_intervall = 1", "grstats.toml: mysql.poll_intervall: unknown key"),
        ("[api]\ncolor = 1", "grstats.toml: api.color: unknown key"),
    ],
)
def test_mistake_names_file_and_key(tmp_path: Path, extra: str, expected: str) -> None:
    message = error_of(tmp_path, MINIMAL.replace("[member]", f"{extra}\n[member]", 1))
    assert message.startswith(expected), message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("simulated", "expected"),
    [
        ("seed = 'x'", "grstats.toml: simulated.seed: expected an integer"),
        ("mode = 'ring'", "grstats.toml: simulated.mode: expected one of"),
        ("conflict_probability = 2", "grstats.toml: simulated.conflict_probability:"),
        ("hot_hours = [25]", "grstats.toml: simulated.hot_hours:"),
        ("hot_hours = 'ten'", "grstats.toml: simulated.hot_hours:"),
        ("slow_member = 'nobody'", "grstats.toml: simulated.slow_member:"),
        ("stop_at = 'soon'", "grstats.toml: simulated.stop_at: expected Unix seconds"),
        ("colour = 1", "grstats.toml: simulated.colour: unknown key"),
        ("[[simulated.script]]\nmember = 'x'", "grstats.toml: simulated.script[0].at: required"),
        (
            "[[simulated.script]]\nat = 1\nmember = '11111111-1111-1111-1111-111111111111'\n"
            "action = 'explode'",
            "grstats.toml: simulated.script[0].action: expected one of",
        ),
        (
            "[[simulated.script]]\nat = 1\nmember = '11111111-1111-1111-1111-111111111111'\n"
            "action = 'commit'\nwhen = 2",
            "grstats.toml: simulated.script[0].when: unknown key",
        ),
    ],
)
def test_simulated_mistake_names_key(tmp_path: Path, simulated: str, expected: str) -> None:
    message = error_of(tmp_path, MINIMAL + simulated + "\n")
    assert message.startswith(expected), message


def test_unknown_member_key_is_named(tmp_path: Path) -> None:
    text = MINIMAL.replace("[member]", "[member]\ncolor = 1", 1)
    assert error_of(tmp_path, text) == "grstats.toml: member.color: unknown key"


def test_members_must_include_member_id(tmp_path: Path) -> None:
    text = MINIMAL.replace('"11111111-1111-1111-1111-111111111111", ', "", 1)
    text = text.replace('["11111111', '["33333333')
    assert "simulated.members: must include member.id" in error_of(tmp_path, text)


def test_missing_member_id_is_an_error_for_the_simulated_source(tmp_path: Path) -> None:
    text = MINIMAL.replace('id = "11111111-1111-1111-1111-111111111111"\n', "", 1)
    assert error_of(tmp_path, text).startswith("grstats.toml: member.id: required")


def test_short_gtid_interval_needs_the_test_only_switch(tmp_path: Path) -> None:
    text = MINIMAL + "[publish]\ngtid_interval = 2\nallow_short_gtid_interval = true\n"
    assert load_config(write(tmp_path, text)).publish.gtid_interval == 2.0


def test_script_times_accept_offset_date_times(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + "[[simulated.script]]\nat = 2026-01-01T00:00:10Z\n"
        + "member = '11111111-1111-1111-1111-111111111111'\naction = 'conflict'\n"
    )
    event = load_config(write(tmp_path, text)).source_settings.script[0]
    assert event.at_s == 1767225610.0  # 2026-01-01T00:00:00Z is 1767225600
    assert event.action == "conflict"


def test_a_scripted_consistency_level_is_read(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + "[[simulated.script]]\nat = 100\nmember = '11111111-1111-1111-1111-111111111111'\n"
        + "action = 'consistency'\nlevel = 'before_and_after'\nduration = 600\n"
    )
    event = load_config(write(tmp_path, text)).source_settings.script[0]
    assert (event.action, event.level, event.duration_s) == ("consistency", "BEFORE_AND_AFTER", 600)


def test_a_scripted_consistency_level_must_be_mysqls(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + "[[simulated.script]]\nat = 100\nmember = '11111111-1111-1111-1111-111111111111'\n"
        + "action = 'consistency'\nlevel = 'EVENTUAL'\n"
    )
    assert "simulated.script: level 'EVENTUAL' not in BEFORE, AFTER" in error_of(tmp_path, text)


def test_bus_password_comes_from_the_named_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRSTATS_TEST_BUS_PW", "s3cret")
    text = MINIMAL + "[bus]\nusername = 'u'\npassword_env = 'GRSTATS_TEST_BUS_PW'\n"
    assert load_config(write(tmp_path, text)).bus.password == "s3cret"


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    assert error_of(tmp_path, "[bus\nport = 1").startswith("grstats.toml: invalid TOML")


def test_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + '[bus]\nport = "abc"\n')
    result = subprocess.run(
        [GRSTATS, "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == 'grstats.toml: bus.port: expected an integer 1-65535, got "abc"'
    assert "Traceback" not in result.stderr


def test_cli_missing_config_file_exits_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [GRSTATS, "collect", "--config", str(tmp_path / "none.toml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "none.toml: cannot read" in result.stderr


def test_error_carries_file_key_and_problem_as_data(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, MINIMAL + "[publish]\nperiod = 0\n"))
    assert info.value.file == "grstats.toml"
    assert info.value.key == "publish.period"
    assert info.value.problem == "expected a number 0.05-3600, got 0"


def test_empty_bus_host_is_a_config_error(tmp_path: Path) -> None:
    assert error_of(tmp_path, MINIMAL + '[bus]\nhost = ""\n') == (
        "grstats.toml: bus.host: must not be empty"
    )


@pytest.mark.parametrize("key", ["ca_file", "cert_file", "key_file"])
def test_tls_file_that_cannot_be_read_names_the_key(tmp_path: Path, key: str) -> None:
    pem = tmp_path / "present.pem"
    pem.write_text("not checked here\n")
    files = {"ca_file": pem, "cert_file": pem, "key_file": pem}
    files[key] = tmp_path / "missing.pem"
    lines = "".join(f"{k} = '{v}'\n" for k, v in files.items())
    message = error_of(tmp_path, MINIMAL + "[bus]\ntls = true\n" + lines)
    assert message == (
        f"grstats.toml: bus.{key}: cannot read {tmp_path / 'missing.pem'}: "
        "No such file or directory"
    )


def test_tls_file_without_tls_is_a_mistake(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_text("x\n")
    message = error_of(tmp_path, MINIMAL + f"[bus]\nca_file = '{pem}'\n")
    assert message.startswith("grstats.toml: bus.ca_file: set, but tls is false")


def test_readable_tls_files_are_kept(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_text("x\n")
    settings = load_config(write(tmp_path, MINIMAL + f"[bus]\ntls = true\nca_file = '{pem}'\n"))
    assert (settings.bus.tls, settings.bus.ca_file, settings.bus.cert_file) == (
        True,
        str(pem),
        None,
    )


def test_client_settings_ignore_unknown_keys_and_leave_secrets_unread(tmp_path: Path) -> None:
    text = (
        "[api]\nlisten = '0.0.0.0:9999'\nfuture_key = 1\n"
        "[bus]\nport = 1884\npassword_env = 'GRSTATS_SURELY_UNSET_VAR'\n"
        "[sql]\nlisten = '127.0.0.1:3307'\n"
    )
    client = load_client_settings(write(tmp_path, text), bus=False)
    assert (client.api.host, client.api.port) == ("0.0.0.0", 9999)
    assert (client.bus.port, client.bus.password) == (1884, None)
    with pytest.raises(ConfigError) as info:
        load_client_settings(write(tmp_path, text), bus=True)
    assert info.value.key == "bus.password_env"


def test_client_settings_check_types_like_the_daemon(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_client_settings(write(tmp_path, '[bus]\nport = "abc"\n'), bus=False)
    assert str(info.value) == 'grstats.toml: bus.port: expected an integer 1-65535, got "abc"'


def test_flow_control_keys_reach_the_simulated_group(tmp_path: Path) -> None:
    text = MINIMAL + (
        "[flow_control]\nperiod = 3\ncertifier_threshold = 900\napplier_threshold = 1100\n"
        "hold_percent = 20\nrelease_percent = 40\nmember_quota_percent = 30\nmin_quota = 7\n"
        "min_recovery_quota = 5\nmax_quota = 800\nmode = 'DISABLED'\n"
    )
    flow = load_config(write(tmp_path, text)).source_settings.flow_control
    got = {name: getattr(flow, name) for name in flow.__dataclass_fields__}
    assert got == {
        "mode": "DISABLED",
        "period": 3,
        "certifier_threshold": 900,
        "applier_threshold": 1100,
        "hold_percent": 20,
        "release_percent": 40,
        "member_quota_percent": 30,
        "min_quota": 7,
        "min_recovery_quota": 5,
        "max_quota": 800,
    }


def test_simulated_group_gets_mysqls_flow_control_defaults(tmp_path: Path) -> None:
    flow = load_config(write(tmp_path, MINIMAL)).source_settings.flow_control
    assert (flow.mode, flow.period, flow.certifier_threshold, flow.applier_threshold) == (
        "QUOTA",
        1,
        25000,
        25000,
    )
    assert (flow.hold_percent, flow.release_percent, flow.member_quota_percent) == (10, 50, 0)
    assert (flow.min_quota, flow.min_recovery_quota, flow.max_quota) == (0, 0, 0)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("applier_threshold = -1", "grstats.toml: flow_control.applier_threshold: expected"),
        ("period = 0", "grstats.toml: flow_control.period: expected an integer 1-60"),
        ("mode = 'FAST'", "grstats.toml: flow_control.mode: expected one of"),
        ("hold_percentage = 5", "grstats.toml: flow_control.hold_percentage: unknown key"),
        (
            "min_quota = 10\nmax_quota = 5",
            "grstats.toml: flow_control.min_quota: must not exceed max_quota",
        ),
    ],
)
def test_flow_control_mistake_names_key(tmp_path: Path, extra: str, expected: str) -> None:
    message = error_of(tmp_path, MINIMAL + "[flow_control]\n" + extra + "\n")
    assert message.startswith(expected), message


def test_cli_flow_control_mistake_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "[flow_control]\nmin_quota = 10\nmax_quota = 5\n")
    result = subprocess.run(
        [GRSTATS, "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip() == "grstats.toml: flow_control.min_quota: must not exceed max_quota"
    )
    assert "Traceback" not in result.stderr


def test_the_example_config_talks_to_the_shipped_broker() -> None:
    """config/grstats.toml's [bus] port and TLS are config/mosquitto.conf's only listener."""
    broker = (REPO_ROOT / "config" / "mosquitto.conf").read_text(encoding="utf-8").splitlines()
    listeners = [line.split()[1] for line in broker if line.startswith("listener ")]
    tls = any(line.startswith("certfile ") for line in broker)
    settings = load_config(REPO_ROOT / "config" / "grstats.toml")
    assert listeners == [str(settings.bus.port)]
    assert settings.bus.tls == tls


def test_simulated_members_without_a_port_each_show_their_own_host_port(tmp_path: Path) -> None:
    """Two members of one group on one host, no [member] port in either config: each
    shows the port every other member's model gives it (3306, 3307: MySQL's default plus
    its index in [simulated] members), not 3306 both; a port that is set is kept."""
    from grstats.core.labels import member_labels  # noqa: PLC0415
    from grstats.sources.simulated import GroupModel  # noqa: PLC0415

    a, b = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
    at_us = 1_796_540_000 * 1_000_000
    shown = {}
    for member in (a, b):
        settings = load_config(write(tmp_path, MINIMAL.replace(f'id = "{a}"', f'id = "{member}"')))
        assert settings.member.port is None
        model = GroupModel(settings.source_settings)
        own = model.member_at(member, at_us)  # what its daemon publishes for itself
        shown[member] = {"MEMBER_ID": member, "MEMBER_HOST": own.host, "MEMBER_PORT": own.port}
        other = b if member == a else a
        assert model.member_at(other, at_us).port == 3306 + (other == b)  # its model of the other
    assert member_labels(list(shown.values())) == {a: "127.0.0.1:3306", b: "127.0.0.1:3307"}
    text = MINIMAL.replace(f'id = "{a}"', f'id = "{b}"\nhost = "db2"\nport = 3310')
    settings = load_config(write(tmp_path, text))
    assert settings.source_settings.hosts == {b: ("db2", 3310)}
