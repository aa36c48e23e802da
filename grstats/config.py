"""TOML configuration -> frozen, typed, validated settings.

Strategy: `load_config(path)` reads the file with tomllib, then walks a fixed
schema section by section. Every value is checked where it is read and every
problem raises one `ConfigError` whose message names the file and the dotted
key (`grstats.toml: bus.port: expected an integer 1-65535, got "abc"`), so the
CLI prints one line and exits 2. Unknown sections and keys are errors too: a
typo must not silently fall back to a default.

Source-specific sections ([simulated], [mysql]) are parsed into the settings
types their source modules own (`SimulationSettings`, `MySQLSettings`); those
modules are imported only for the source actually configured.

`[publish] gtid_interval` is 30-60 s as MySQL (about 30 ticks). Tests need a
faster cadence: values 1-29 are accepted only together with the explicit
test-only key `allow_short_gtid_interval = true`.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.bus.options import BusOptions

if TYPE_CHECKING:  # the source modules are imported only for the configured source
    from grstats.sources.mysql import MySQLSettings
    from grstats.sources.simulated.model import SimulationSettings

DEFAULT_CONFIG_PATH = Path("/etc/grstats/grstats.toml")


class ConfigError(Exception):
    """A configuration mistake; str() is the one line shown to the user."""


@dataclass(frozen=True, slots=True)
class MemberSettings:
    group: str = ""
    id: str = ""
    host: str = "127.0.0.1"
    port: int = 3306


@dataclass(frozen=True, slots=True)
class BusSettings(BusOptions):
    """The broker to reach and the topic prefix (password from password_env / _file)."""

    prefix: str = "grstats/v1"


@dataclass(frozen=True, slots=True)
class PublishSettings:
    period: float = 1.0
    gtid_interval: float = 30.0
    unreachable_after: int = 5
    forget_after: float = 60.0


@dataclass(frozen=True, slots=True)
class ApiSettings:
    host: str = "127.0.0.1"
    port: int = 8437


@dataclass(frozen=True, slots=True)
class HistorySettings:
    dir: str = ""  # empty: history disabled
    scope: str = "local"
    retention_days: int = 30
    flush_interval: float = 60.0


@dataclass(frozen=True, slots=True)
class LimitSettings:
    max_envelope_size: int = 65536


@dataclass(frozen=True, slots=True)
class LogSettings:
    level: str = "info"
    format: str = "auto"


@dataclass(frozen=True, slots=True)
class Settings:
    """The whole validated configuration.

    `source_settings` is a `SimulationSettings` for kind "simulated", a
    `MySQLSettings` for kind "mysql", None in collector use without a source.
    """

    path: str
    member: MemberSettings = field(default_factory=MemberSettings)
    source_kind: str = "simulated"
    source_settings: SimulationSettings | MySQLSettings | None = None
    bus: BusSettings = field(default_factory=BusSettings)
    publish: PublishSettings = field(default_factory=PublishSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    history: HistorySettings = field(default_factory=HistorySettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    log: LogSettings = field(default_factory=LogSettings)


_SECTIONS = (
    "member",
    "source",
    "simulated",
    "mysql",
    "bus",
    "publish",
    "api",
    "history",
    "limits",
    "log",
)
_LOG_LEVELS = ("debug", "info", "warning", "error")


class _Section:
    """Typed reads from one TOML table; tracks which keys were consumed."""

    def __init__(self, file: str, name: str, data: Mapping[str, Any]) -> None:
        self.file = file
        self.name = name
        self.data = data
        self.used: set[str] = set()

    def fail(self, key: str, message: str) -> ConfigError:
        where = f"{self.name}.{key}" if self.name else key
        return ConfigError(f"{self.file}: {where}: {message}")

    def _get(self, key: str) -> Any:
        self.used.add(key)
        return self.data.get(key)

    def string(self, key: str, default: str, *, choices: tuple[str, ...] = ()) -> str:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_show(value)}")
        if choices and value not in choices:
            allowed = ", ".join(f'"{c}"' for c in choices)
            raise self.fail(key, f"expected one of {allowed}, got {_show(value)}")
        return value

    def optional_string(self, key: str) -> str | None:
        value = self.string(key, "")
        return value or None

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"expected an integer {low}-{high}, got {_show(value)}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = self._get(key)
        if value is None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not low <= value <= high
        ):
            raise self.fail(key, f"expected a number {low:g}-{high:g}, got {_show(value)}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_show(value)}")
        return value

    def raw(self, key: str) -> Any:
        return self._get(key)

    def check_unknown(self) -> None:
        for key in self.data:
            if key not in self.used:
                raise self.fail(key, "unknown key")


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def read_secret(section: _Section, env_key: str, file_key: str) -> str | None:
    """A password from an environment variable or a file, never inline.

    Args:
        section: the section holding `<env_key>` and `<file_key>`.
        env_key: key naming the environment variable.
        file_key: key naming the file (first line is the secret).

    Returns:
        The secret, or None if neither key is set.

    Raises:
        ConfigError: the variable is unset or the file cannot be read.
    """
    env_name = section.optional_string(env_key)
    file_name = section.optional_string(file_key)
    if env_name and file_name:
        raise section.fail(file_key, f"set either {env_key} or {file_key}, not both")
    if env_name:
        value = os.environ.get(env_name)
        if value is None:
            raise section.fail(env_key, f"environment variable {env_name} is not set")
        return value
    if file_name:
        try:
            text = Path(file_name).read_text(encoding="utf-8")
        except OSError as exc:
            raise section.fail(file_key, f"cannot read {file_name}: {exc.strerror}") from None
        return text.splitlines()[0] if text else ""
    return None


def _parse_listen(section: _Section) -> ApiSettings:
    listen = section.string("listen", "127.0.0.1:8437")
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise section.fail("listen", f'expected "host:port" (port 0-65535), got {_show(listen)}')
    return ApiSettings(host=host.strip("[]"), port=int(port_text))


def _table(file: str, doc: Mapping[str, Any], name: str) -> _Section:
    data = doc.get(name, {})
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: {name}: expected a table, got {_show(data)}")
    return _Section(file, name, data)


def parse_config(doc: Mapping[str, Any], *, file: str, require_member: bool = True) -> Settings:
    """Validate a parsed TOML document.

    Args:
        doc: the tomllib result.
        file: the file name shown in error messages.
        require_member: False for the collector: [member] group/id are not
            required and no source settings are built. (The mysql source never
            requires them: it reads them from the server.)

    Returns:
        The frozen Settings.

    Raises:
        ConfigError: the first problem found, naming the file and key.
    """
    for name in doc:
        if name not in _SECTIONS:
            raise ConfigError(f"{file}: {name}: unknown section")

    s = _table(file, doc, "source")
    source_kind = s.string("kind", "simulated", choices=("simulated", "mysql"))
    s.check_unknown()

    s = _table(file, doc, "member")
    member = MemberSettings(
        group=s.string("group", "").lower(),
        id=s.string("id", "").lower(),
        host=s.string("host", "127.0.0.1"),
        port=s.integer("port", 3306, 1, 65535),
    )
    s.check_unknown()
    if require_member and source_kind == "simulated":
        if not member.group:
            raise ConfigError(f"{file}: member.group: required (the GR group name UUID)")
        if not member.id:
            raise ConfigError(f"{file}: member.id: required (the server UUID)")
    for key, value in (("group", member.group), ("id", member.id)):
        if "/" in value or "+" in value or "#" in value:
            raise ConfigError(f"{file}: member.{key}: must not contain '/', '+' or '#'")

    s = _table(file, doc, "bus")
    bus = BusSettings(
        host=s.string("host", "127.0.0.1"),
        port=s.integer("port", 1883, 1, 65535),
        prefix=s.string("prefix", "grstats/v1").strip("/"),
        username=s.optional_string("username"),
        password=read_secret(s, "password_env", "password_file"),
        tls=s.boolean("tls", False),
        ca_file=s.optional_string("ca_file"),
        cert_file=s.optional_string("cert_file"),
        key_file=s.optional_string("key_file"),
        keepalive=s.integer("keepalive", 10, 1, 3600),
        client_id=s.string("client_id", ""),
    )
    if not bus.prefix or any(c in bus.prefix for c in "+#"):
        raise s.fail(
            "prefix", f"expected a topic prefix without wildcards, got {_show(bus.prefix)}"
        )
    if (bus.cert_file is None) != (bus.key_file is None):
        raise s.fail("key_file", "cert_file and key_file go together")
    s.check_unknown()

    s = _table(file, doc, "publish")
    allow_short = s.boolean("allow_short_gtid_interval", False)
    low_gtid = 0.1 if allow_short else 30.0
    publish = PublishSettings(
        period=s.number("period", 1.0, 0.05, 3600.0),
        gtid_interval=s.number("gtid_interval", 30.0, low_gtid, 60.0),
        unreachable_after=s.integer("unreachable_after", 5, 1, 1_000_000),
        forget_after=s.number("forget_after", 60.0, 0.1, 30 * 86400.0),
    )
    if publish.forget_after <= publish.unreachable_after * publish.period:
        raise s.fail(
            "forget_after",
            f"must be longer than unreachable_after x period "
            f"({publish.unreachable_after * publish.period:g} s), got {publish.forget_after:g}",
        )
    s.check_unknown()

    s = _table(file, doc, "api")
    api = _parse_listen(s)
    s.check_unknown()

    s = _table(file, doc, "history")
    history = HistorySettings(
        dir=s.string("dir", ""),
        scope=s.string("scope", "local", choices=("local", "all")),
        retention_days=s.integer("retention_days", 30, 1, 36500),
        flush_interval=s.number("flush_interval", 60.0, 0.1, 86400.0),
    )
    s.check_unknown()

    s = _table(file, doc, "limits")
    limits = LimitSettings(max_envelope_size=s.integer("max_envelope_size", 65536, 256, 1 << 24))
    s.check_unknown()

    s = _table(file, doc, "log")
    log = LogSettings(
        level=s.string("level", "info", choices=_LOG_LEVELS),
        format=s.string("format", "auto", choices=("auto", "json", "console")),
    )
    s.check_unknown()

    simulated = _table(file, doc, "simulated")
    mysql = _table(file, doc, "mysql")
    source_settings: SimulationSettings | MySQLSettings | None = None
    if not require_member:  # the collector has no local source
        _check_keys_only(mysql, _MYSQL_KEYS)
        _check_keys_only(simulated, _SIMULATED_KEYS)
    elif source_kind == "simulated":
        source_settings = _parse_simulated(simulated, member)
        _check_keys_only(mysql, _MYSQL_KEYS)
    else:
        source_settings = _parse_mysql(mysql)
        _check_keys_only(simulated, _SIMULATED_KEYS)

    return Settings(
        path=file,
        member=member,
        source_kind=source_kind,
        source_settings=source_settings,
        bus=bus,
        publish=publish,
        api=api,
        history=history,
        limits=limits,
        log=log,
    )


def load_config(path: str | Path, *, require_member: bool = True) -> Settings:
    """Read and validate a configuration file.

    Args:
        path: the TOML file.
        require_member: see `parse_config`.

    Returns:
        The frozen Settings.

    Raises:
        ConfigError: unreadable file, TOML syntax error or an invalid key.
    """
    file = Path(path)
    name = file.name
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: invalid TOML: {exc}") from None
    return parse_config(doc, file=name, require_member=require_member)


# -- source sections ----------------------------------------------------------

_MYSQL_KEYS = (
    "dsn",
    "password_env",
    "password_file",
    "poll_timeout",
    "connect_timeout",
    "offline_after",
    "retry_initial",
    "retry_max",
)
_SIMULATED_KEYS = (
    "members",
    "seed",
    "mode",
    "write_rate",
    "conflict_probability",
    "hot_hours",
    "hot_factor",
    "weekend_factor",
    "slow_member",
    "slow_capacity",
    "applier_capacity",
    "version",
    "epoch",
    "stop_at",
    "scripted",
    "script",
)
_SCRIPT_KEYS = ("at", "member", "action", "count", "duration", "state")


def _check_keys_only(section: _Section, allowed: tuple[str, ...]) -> None:
    for key in section.data:
        if key not in allowed:
            raise section.fail(key, "unknown key")


def _parse_mysql(section: _Section) -> MySQLSettings:
    from grstats.sources.mysql import MySQLSettings  # noqa: PLC0415 - asyncmy only when used

    kwargs: dict[str, Any] = {
        "dsn": section.string("dsn", "mysql://grstats@127.0.0.1:3306"),
        "password": read_secret(section, "password_env", "password_file") or "",
    }
    for key, default in (
        ("poll_timeout", 2.0),
        ("connect_timeout", 2.0),
        ("offline_after", 10.0),
        ("retry_initial", 0.5),
        ("retry_max", 10.0),
    ):
        kwargs[key] = section.number(key, default, 0.0, 86400.0)
    section.check_unknown()
    try:
        return MySQLSettings(**kwargs)
    except ValueError as exc:
        message = str(exc)
        key, sep, rest = message.partition(": ")
        if sep and key in _MYSQL_KEYS:
            raise section.fail(key, rest) from None
        raise section.fail("dsn", message) from None


def _timestamp(section: _Section, key: str, value: Any) -> float:
    """Absolute time: Unix seconds (number) or a TOML offset date-time."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise section.fail(key, "a date-time needs an offset (e.g. 2026-01-01T10:00:00Z)")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise section.fail(key, f"expected Unix seconds or an offset date-time, got {_show(value)}")
    return float(value)


def _parse_script(section: _Section) -> tuple[Any, ...]:
    from grstats.sources.simulated.model import ScriptEvent  # noqa: PLC0415 - numpy only when used

    raw = section.raw("script")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise section.fail("script", "expected an array of tables ([[simulated.script]])")
    events = []
    for index, entry in enumerate(raw):
        item = _Section(section.file, f"simulated.script[{index}]", entry)
        if "at" not in entry:
            raise item.fail("at", "required")
        at_s = _timestamp(item, "at", item.raw("at"))
        member = item.string("member", "").lower()
        if not member:
            raise item.fail("member", "required")
        action = item.string(
            "action",
            "",
            choices=("commit", "conflict", "applier_stop", "set_state", "certifier_queue"),
        )
        events.append(
            ScriptEvent(
                at_s=at_s,
                member=member,
                action=action,
                count=item.integer("count", 1, 1, 1_000_000_000),
                duration_s=item.number("duration", 0.0, 0.0, 86400.0 * 365),
                state=item.string("state", "ONLINE"),
            )
        )
        item.check_unknown()
    return tuple(events)


def _parse_simulated(section: _Section, member: MemberSettings) -> SimulationSettings:
    from grstats.sources.simulated.model import SimulationSettings  # noqa: PLC0415 - numpy only when used

    members_raw = section.raw("members")
    if members_raw is None:
        members: tuple[str, ...] = (member.id,) if member.id else ()
    elif isinstance(members_raw, list) and all(isinstance(m, str) for m in members_raw):
        members = tuple(m.lower() for m in members_raw)
    else:
        raise section.fail(
            "members", f"expected an array of UUID strings, got {_show(members_raw)}"
        )
    if member.id and member.id not in members:
        raise section.fail("members", f"must include member.id ({member.id})")
    hot_raw = section.raw("hot_hours")
    if hot_raw is not None and (
        not isinstance(hot_raw, list)
        or not all(isinstance(h, int) and not isinstance(h, bool) for h in hot_raw)
    ):
        raise section.fail(
            "hot_hours", f"expected an array of UTC hours 0-23, got {_show(hot_raw)}"
        )
    kwargs: dict[str, Any] = {
        "group": member.group or "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
        "members": members,
        "seed": section.integer("seed", 1, 0, (1 << 63) - 1),
        "mode": section.string(
            "mode", "multi-primary", choices=("multi-primary", "single-primary")
        ),
        "write_rate": section.number("write_rate", 20.0, 0.0, 1e6),
        "conflict_probability": section.number("conflict_probability", 0.01, 0.0, 1.0),
        "hot_factor": section.number("hot_factor", 3.0, 0.001, 1000.0),
        "weekend_factor": section.number("weekend_factor", 0.6, 0.001, 1000.0),
        "version": section.string("version", "8.4.3"),
        "scripted": section.boolean("scripted", False),
        "script": _parse_script(section),
        "hosts": {member.id: (member.host, member.port)} if member.id else {},
    }
    if hot_raw is not None:
        kwargs["hot_hours"] = tuple(hot_raw)
    slow = section.optional_string("slow_member")
    if slow is not None:
        kwargs["slow_member"] = slow.lower()
    for key in ("slow_capacity", "applier_capacity"):
        if section.raw(key) is not None:
            kwargs[key] = section.number(key, 1.0, 1e-9, 1e12)
    if section.raw("stop_at") is not None:
        kwargs["stop_at_s"] = _timestamp(section, "stop_at", section.raw("stop_at"))
    if section.raw("epoch") is not None:
        kwargs["epoch_s"] = int(_timestamp(section, "epoch", section.raw("epoch")))
    section.check_unknown()
    if not members:
        raise section.fail("members", "at least one member is required")
    try:
        return SimulationSettings(**kwargs)
    except ValueError as exc:
        key, sep, rest = str(exc).partition(": ")
        if sep and key in _SIMULATED_KEYS:
            raise section.fail(key, rest) from None
        raise section.fail("members", str(exc)) from None
