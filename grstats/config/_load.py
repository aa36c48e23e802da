"""A parsed grstats.toml -> frozen `Settings`, section by section.

Strategy: `parse_config` walks the fixed sections; each is read by
`read_fields` from its settings dataclass (defaults and checks stated there),
then the cross-key rules that no single field can check are applied here.
Unknown sections and keys are errors: a typo must not silently fall back to
a default. `load_client_settings` is the CLI's lenient view of the same file:
the same section parsers, only [api] and [bus], unknown keys ignored (a client
must work with a config written for a newer daemon).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.config._reader import (
    ConfigError,
    Section,
    number,
    read_fields,
    read_secret,
    read_toml,
    show,
    table,
    text,
)
from grstats.config._settings import (
    API_SPECS,
    BUS_SPECS,
    FLOW_CONTROL_SPECS,
    SQL_SPECS,
    ApiSettings,
    BusSettings,
    FlowControlConfig,
    HistorySettings,
    LimitSettings,
    LogSettings,
    MemberSettings,
    PublishSettings,
    RecoverySettings,
    Settings,
    SqlSettings,
    size_bytes,
)
from grstats.config._sources import (
    MYSQL_KEYS,
    check_keys_only,
    parse_mysql,
    parse_simulated,
    simulated_keys,
)

if TYPE_CHECKING:
    from grstats.sources.mysql import MySQLSettings
    from grstats.sources.simulated.settings import SimulationSettings

__all__ = ["ClientSettings", "load_client_settings", "load_config", "parse_config"]

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
    "sql",
    "log",
    "flow_control",
    "recovery",
)
_SOURCE_KINDS = ("simulated", "mysql")
_TLS_FILES = ("ca_file", "cert_file", "key_file")


def _default(cls: type[Any], name: str) -> Any:
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def _parse_member(s: Section, *, required: bool) -> MemberSettings:
    member = MemberSettings(**read_fields(s, MemberSettings))
    if required:
        if not member.group:
            raise s.fail("group", "required (the GR group name UUID)")
        if not member.id:
            raise s.fail("id", "required (the server UUID)")
    for key, value in (("group", member.group), ("id", member.id)):
        if "/" in value or "+" in value or "#" in value:
            raise s.fail(key, "must not contain '/', '+' or '#'")
    return member


def _parse_bus(s: Section, *, resolve: bool = True) -> BusSettings:
    """[bus]; `resolve` False leaves the password unread and TLS files unchecked."""
    kwargs = read_fields(s, BusSettings, BUS_SPECS)
    kwargs["prefix"] = kwargs["prefix"].strip("/")
    if resolve:
        kwargs["password"] = read_secret(s, "password_env", "password_file")
    else:
        s.optional_string("password_env")
        s.optional_string("password_file")
    bus = BusSettings(**kwargs)
    if not bus.prefix or any(c in bus.prefix for c in "+#"):
        raise s.fail("prefix", f"expected a topic prefix without wildcards, got {show(bus.prefix)}")
    if any(c in bus.shared_group for c in "/+#"):
        raise s.fail(
            "shared_group", f"expected a name without '/', '+' or '#', got {show(bus.shared_group)}"
        )
    if (bus.cert_file is None) != (bus.key_file is None):
        raise s.fail("key_file", "cert_file and key_file go together")
    for key in _TLS_FILES:
        name = getattr(bus, key)
        if name is None:
            continue
        if not bus.tls:
            raise s.fail(key, "set, but tls is false (the connection would not use it)")
        if resolve:
            try:
                Path(name).open("rb").close()
            except OSError as exc:
                raise s.fail(key, f"cannot read {name}: {exc.strerror}") from None
    return bus


def _parse_flow_control(s: Section) -> FlowControlConfig:
    """[flow_control], with the checks across keys of the core settings (min_quota must
    not exceed max_quota, as MySQL refuses) named on their key."""
    try:
        return FlowControlConfig(**read_fields(s, FlowControlConfig, FLOW_CONTROL_SPECS))
    except ValueError as exc:
        key, _, problem = str(exc).partition(": ")
        raise s.fail(key, problem) from None


def _parse_publish(s: Section) -> PublishSettings:
    allow_short = s.boolean("allow_short_gtid_interval", False)
    specs = {"gtid_interval": number(0.1, 60.0)} if allow_short else None
    publish = PublishSettings(**read_fields(s, PublishSettings, specs))
    if publish.forget_after <= publish.unreachable_after * publish.period:
        raise s.fail(
            "forget_after",
            f"must be longer than unreachable_after x period "
            f"({publish.unreachable_after * publish.period:g} s), got {publish.forget_after:g}",
        )
    return publish


def _parse_listen(s: Section) -> ApiSettings:
    listen = s.string("listen", ApiSettings().listen)
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise s.fail("listen", f'expected "host:port" (port 0-65535), got {show(listen)}')
    fields = read_fields(s, ApiSettings, API_SPECS)
    return ApiSettings(host=host.strip("[]"), port=int(port_text), **fields)


def _parse_sql(s: Section, history: HistorySettings) -> SqlSettings:
    """[sql]: off unless `listen`; a password (env or file, never inline) when on."""
    listen = s.string("listen", "")
    fields = read_fields(s, SqlSettings, SQL_SPECS)
    secret = read_secret(s, "password_env", "password_file")
    if "password" in s.data:
        raise s.fail("password", "never inline: use password_env or password_file")
    if not listen:
        return SqlSettings(**fields)
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise s.fail("listen", f'expected "host:port" (port 0-65535), got {show(listen)}')
    if not secret:
        raise s.fail("password_env", "required when listen is set (password_env or password_file)")
    if bool(fields["tls_cert_file"]) != bool(fields["tls_key_file"]):
        raise s.fail("tls_key_file", "tls_cert_file and tls_key_file go together")
    if fields["tls_required"] and not fields["tls_cert_file"]:
        raise s.fail("tls_required", "needs tls_cert_file and tls_key_file")
    from grstats.sql.options import native_password_hash  # noqa: PLC0415 - light module

    fields["history_dir"] = fields["history_dir"] or history.dir
    per_worker = size_bytes(fields["memory_limit"]) or 0
    space = fields["max_address_space"]
    if space and per_worker > space:  # DuckDB would fail its first query, not the load
        raise s.fail("memory_limit", f"over max_address_space ({space} bytes), the process's own")
    return SqlSettings(
        host=host.strip("[]"),
        port=int(port_text),
        password_hash=native_password_hash(secret),
        **fields,
    )


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
            raise ConfigError(file, name, "unknown section")

    s = table(file, doc, "source")
    source_kind = text(choices=_SOURCE_KINDS).read(s, "kind", _default(Settings, "source_kind"))
    s.check_unknown()

    s = table(file, doc, "member")
    member = _parse_member(s, required=require_member and source_kind == "simulated")
    s.check_unknown()

    parsed: dict[str, Any] = {}
    for name, parse in (
        ("bus", _parse_bus),
        ("publish", _parse_publish),
        ("api", _parse_listen),
        ("history", lambda s: HistorySettings(**read_fields(s, HistorySettings))),
        ("limits", lambda s: LimitSettings(**read_fields(s, LimitSettings))),
        ("log", lambda s: LogSettings(**read_fields(s, LogSettings))),
        ("flow_control", _parse_flow_control),
        ("recovery", lambda s: RecoverySettings(**read_fields(s, RecoverySettings))),
    ):
        s = table(file, doc, name)
        parsed[name] = parse(s)
        s.check_unknown()

    s = table(file, doc, "sql")
    parsed["sql"] = _parse_sql(s, parsed["history"])
    s.check_unknown()

    simulated = table(file, doc, "simulated")
    mysql = table(file, doc, "mysql")
    source_settings: SimulationSettings | MySQLSettings | None = None
    if not require_member:  # the collector has no local source
        check_keys_only(mysql, MYSQL_KEYS)
        check_keys_only(simulated, simulated_keys())
    elif source_kind == "simulated":
        source_settings = dataclasses.replace(
            parse_simulated(simulated, member), flow_control=parsed["flow_control"].core()
        )
        check_keys_only(mysql, MYSQL_KEYS)
    else:
        source_settings = parse_mysql(mysql)
        check_keys_only(simulated, simulated_keys())

    return Settings(
        path=file,
        member=member,
        source_kind=source_kind,
        source_settings=source_settings,
        **parsed,
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
    name, doc = read_toml(path)
    return parse_config(doc, file=name, require_member=require_member)


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """What a CLI client takes from a daemon's config file."""

    api: ApiSettings
    bus: BusSettings
    # the group's flow-control variables, for `grstats flow --bus`'s own replay
    flow_control: FlowControlConfig = field(default_factory=FlowControlConfig)


def load_client_settings(
    path: str | Path | None, *, bus: bool, bus_overrides: Mapping[str, Any] | None = None
) -> ClientSettings:
    """Read `[api]`, `[bus]` and `[flow_control]` as a client: same checks, unknown keys ignored.

    Args:
        path: the TOML file, or None for no file (defaults, then overrides).
        bus: the client will connect to the broker: read the password and check
            the TLS files (otherwise the [bus] keys are type-checked only, so
            reading the daemon's API never needs the broker's secrets).
        bus_overrides: [bus] keys given another way (command-line options), as
            TOML values; they replace the file's. Giving password_env or
            password_file replaces both of the file's; tls = false drops the
            file's ca_file, cert_file and key_file.

    Returns:
        The [api], [bus] and [flow_control] settings (defaults where absent).

    Raises:
        ConfigError: unreadable file, TOML syntax error or an invalid key
            (`key` is the dotted key, whether it came from the file or an override).
    """
    name, doc = read_toml(path) if path is not None else ("", {})
    base = dict(table(name, doc, "bus").data)
    overrides = dict(bus_overrides or {})
    if overrides.keys() & {"password_env", "password_file"}:
        base.pop("password_env", None)
        base.pop("password_file", None)
    if overrides.get("tls") is False:  # a plain connection: the file's TLS files do not apply
        for key in _TLS_FILES:
            base.pop(key, None)
    return ClientSettings(
        api=_parse_listen(table(name, doc, "api")),
        bus=_parse_bus(Section(name, "bus", {**base, **overrides}), resolve=bus),
        flow_control=_parse_flow_control(table(name, doc, "flow_control")),
    )
