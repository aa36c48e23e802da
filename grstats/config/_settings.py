"""The typed settings: each key's check stated once, here; its default once, below.

A field declared with `setting(default, spec)` is the TOML key of the same
name in its section; the parser (`grstats.config._load`) reads the fields, so
adding a key is adding a field. Fields without a spec are derived (`password`
from password_env / password_file, `[api] host/port` from `listen`).

The runtime owns the defaults: a section whose runtime dataclass lives below
config inherits it (`BusSettings(BusOptions)`, `ApiSettings(ApiOptions)`,
`SqlSettings(SqlOptions)`, `FlowControlConfig(FlowControlSettings)`) and
adds only the checks of the inherited keys (`*_SPECS`); [limits] and
[publish] take their defaults from core's `Limits` and `RegistryLimits`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grstats.api.options import ApiOptions
from grstats.bus.options import BusOptions
from grstats.config._reader import (
    Section,
    Spec,
    flag,
    integer,
    number,
    optional_text,
    setting,
    show,
    text,
)
from grstats.core.admission import Limits
from grstats.core.flowcontrol import FLOW_CONTROL_BOUNDS, FLOW_CONTROL_MODES, FlowControlSettings
from grstats.core.flowreplay import DEFAULT_CATCH_UP_LIMIT_S
from grstats.core.gtid_divergence import DEFAULT_CLONE_THRESHOLD
from grstats.core.registry import RegistryLimits
from grstats.sql.options import SqlOptions

if TYPE_CHECKING:  # the source modules are imported only for the configured source
    from grstats.sources.mysql import MySQLSettings
    from grstats.sources.simulated.settings import SimulationSettings

__all__ = [
    "API_SPECS",
    "BUS_SPECS",
    "DEFAULT_CONFIG_PATH",
    "FLOW_CONTROL_SPECS",
    "SQL_SPECS",
    "ApiSettings",
    "BusSettings",
    "HistorySettings",
    "LimitSettings",
    "LogSettings",
    "MemberSettings",
    "PublishSettings",
    "Settings",
    "SqlSettings",
]

DEFAULT_CONFIG_PATH = Path("/etc/grstats/grstats.toml")
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")
_ADMISSION = Limits()  # the runtime bounds whose defaults [limits] and [publish] take
_REGISTRY = RegistryLimits()


@dataclass(frozen=True, slots=True)
class MemberSettings:
    group: str = setting("", text(lower=True))
    id: str = setting("", text(lower=True))
    host: str = setting("127.0.0.1", text())
    port: int = setting(3306, integer(1, 65535))


# The checks of the fields BusSettings inherits from grstats.bus.options.BusOptions
# (whose defaults are the defaults); `password` comes from password_env / password_file.
BUS_SPECS: dict[str, Spec] = {
    "host": text(nonempty=True),
    "port": integer(1, 65535),
    "username": optional_text(),
    "tls": flag(),
    "ca_file": optional_text(),
    "cert_file": optional_text(),
    "key_file": optional_text(),
    "keepalive": integer(1, 3600),
    "client_id": text(),
}


@dataclass(frozen=True, slots=True)
class BusSettings(BusOptions):
    """The broker to reach and the topic prefix (password from password_env / _file)."""

    prefix: str = setting("grstats/v1", text())
    # collector only: "" for a plain subscription, else the MQTT 5 shared-subscription group
    shared_group: str = setting("", text())


@dataclass(frozen=True, slots=True)
class PublishSettings:
    """[publish]: the timing defaults are core.registry's `RegistryLimits`' (in seconds)."""

    period: float = setting(_REGISTRY.period_s, number(0.05, 3600.0))
    # 30-60 s as MySQL; 0.1 s and up only with allow_short_gtid_interval (tests)
    gtid_interval: float = setting(30.0, number(30.0, 60.0))
    unreachable_after: int = setting(_REGISTRY.unreachable_after, integer(1, 1_000_000))
    forget_after: float = setting(_REGISTRY.forget_after_s, number(0.1, 30 * 86400.0))


# The checks of the fields ApiSettings inherits from grstats.api.options.ApiOptions
# (whose defaults are the defaults); host/port come from `listen = "host:port"`.
API_SPECS: dict[str, Spec] = {
    "max_connections": integer(1, 10_000),
    "head_timeout": number(0.1, 600.0),
    "write_timeout": number(0.1, 600.0),
    "max_request_bytes": integer(1024, 1 << 20),
    "write_buffer_bytes": integer(4096, 1 << 24),
    "page_series_bytes": integer(0, 1 << 30),
}


@dataclass(frozen=True, slots=True)
class ApiSettings(ApiOptions):
    """[api]: the local HTTP API (`listen` gives host and port)."""


@dataclass(frozen=True, slots=True)
class HistorySettings:
    dir: str = setting("", text())  # empty: history disabled
    scope: str = setting("local", text(choices=("local", "all")))
    retention_days: int = setting(30, integer(1, 36500))
    flush_interval: float = setting(900.0, number(0.1, 86400.0))
    # and as soon as the WAL holds this much: half the SQL view's 64 MiB read of it
    flush_bytes: int = setting(32 << 20, integer(0, 1 << 40))
    fsync_interval: float = setting(1.0, number(0.01, 60.0))
    # ~490 bytes a row in memory: 200,000 rows ~ 100 MB, ~2.5 h of 9 members at 1 Hz
    max_buffer_rows: int = setting(200_000, integer(1_000, 50_000_000))
    retry_max: float = setting(30.0, number(0.05, 3600.0))
    log_interval: float = setting(60.0, number(1.0, 86400.0))


_SIZE = re.compile(r"^([0-9]{1,12}(?:\.[0-9]{1,3})?)\s?(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$")
_UNITS = {
    "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}  # fmt: skip


def size_bytes(text: str) -> int | None:
    """The bytes of a DuckDB memory size ("256MB", "2GiB"), None when not one."""
    m = _SIZE.match(text)
    return None if m is None else int(float(m[1]) * _UNITS[m[2]])


def memory_size(low: int, high: int) -> Spec:
    """A DuckDB memory size of `low`-`high` bytes, kept as written (DuckDB reads it)."""

    def read(section: Section, key: str, default: Any) -> Any:
        value = section.string(key, default)
        n = size_bytes(value)
        if n is None or not low <= n <= high:
            raise section.fail(
                key,
                f'expected a size of {low >> 20} MiB-{high >> 30} GiB such as "256MB" or '
                f'"1GiB", got {show(value)}',
            )
        return value

    return Spec(read)


# The checks of the fields SqlSettings inherits from grstats.sql.options.SqlOptions
# (whose defaults are the defaults); host/port come from `listen`, password_hash
# from password_env / password_file.
SQL_SPECS: dict[str, Spec] = {
    "user": text(nonempty=True),
    "max_connections": integer(1, 1024),
    "query_timeout": number(0.05, 3600.0),
    "max_rows": integer(1, 100_000_000),
    "max_result_bytes": integer(1024, 1 << 34),
    "history_dir": text(),
    "rollups_dir": text(),
    "tls_cert_file": text(),
    "tls_key_file": text(),
    "tls_required": flag(),
    "threads": integer(1, 256),
    "memory_limit": memory_size(16 << 20, 64 << 30),
    "handshake_timeout": number(0.1, 3600.0),
    "idle_timeout": number(1.0, 31536000.0),
    "max_statement_bytes": integer(256, 1 << 30),
    "max_logins_per_address": integer(1, 1024),
}


@dataclass(frozen=True, slots=True)
class SqlSettings(SqlOptions):
    """[sql]: the MySQL-protocol endpoint (off unless `listen` is set).

    `host`/`port` come from `listen`; `password_hash` from password_env /
    password_file (the password itself or its `*`+40-hex mysql_native_password
    hash); an empty `history_dir` means [history] dir.
    """

    # [sql] listen = "host:port"; "" = off (the endpoint alone defaults to a port)
    host: str = ""
    port: int = 0
    # the endpoint's own process under `grstats run` / `collect` (0: no limit)
    max_address_space: int = setting(8 << 30, integer(0, 1 << 48))  # RLIMIT_AS, bytes
    max_cpu_seconds: int = setting(3600, integer(0, 1 << 31))  # RLIMIT_CPU, then a restart
    nice: int = setting(10, integer(0, 19))  # the process's niceness; the daemon keeps 0
    max_snapshot_bytes: int = setting(32 << 20, integer(1024, 1 << 30))  # live tables
    child_timeout: float = setting(30.0, number(2.0, 3600.0))  # silent this long: restarted
    # no client this long: the process ends (started again by the next connection); 0: never
    child_idle_stop: float = setting(300.0, number(0.0, 86400.0))

    @property
    def enabled(self) -> bool:
        """True when `listen` is set."""
        return bool(self.host)

    def options(self) -> SqlOptions:
        """The endpoint's own options (without the process's), as sent to its process."""
        return SqlOptions(**{f.name: getattr(self, f.name) for f in fields(SqlOptions)})


@dataclass(frozen=True, slots=True)
class LimitSettings:
    """[limits]: core.admission's `Limits` and core.registry's `RegistryLimits` own
    the defaults (their field names differ: `_s` for seconds), config the checks."""

    max_envelope_size: int = setting(_ADMISSION.max_envelope_size, integer(256, 1 << 24))
    max_status_size: int = setting(_ADMISSION.max_status_size, integer(16, 4096))
    max_members_per_group: int = setting(_REGISTRY.max_members_per_group, integer(1, 100_000))
    max_groups: int = setting(_REGISTRY.max_groups, integer(1, 1_000_000))
    max_clock_skew: float = setting(_ADMISSION.max_clock_skew_s, number(1.0, 86400.0))


# The checks of the fields FlowControlConfig inherits from core.flowcontrol's
# FlowControlSettings, whose defaults (and ranges) are MySQL's.
FLOW_CONTROL_SPECS: dict[str, Spec] = {
    "mode": text(choices=FLOW_CONTROL_MODES),
    **{name: integer(lo, hi) for name, (lo, hi) in FLOW_CONTROL_BOUNDS.items()},
}


@dataclass(frozen=True, slots=True)
class FlowControlConfig(FlowControlSettings):
    """[flow_control]: MySQL's group_replication_flow_control_* variables (prefix
    dropped, MySQL's defaults) that the flow-control replay (and the simulated
    group) use, plus grstats' failover catch-up limit."""

    failover_catch_up_limit: float = setting(DEFAULT_CATCH_UP_LIMIT_S, number(0.0, 86400.0))

    def core(self) -> FlowControlSettings:
        """The core settings (everything but failover_catch_up_limit)."""
        return FlowControlSettings(
            **{f.name: getattr(self, f.name) for f in fields(FlowControlSettings)}
        )


@dataclass(frozen=True, slots=True)
class RecoverySettings:
    """[recovery]: how grstats_member_gtids judges a member's way back into the group,
    with MySQL's default: group_replication_clone_threshold (a member lacking this many
    GTIDs or more rejoins by clone whatever the donors hold)."""

    clone_threshold: int = setting(DEFAULT_CLONE_THRESHOLD, integer(1, DEFAULT_CLONE_THRESHOLD))


@dataclass(frozen=True, slots=True)
class LogSettings:
    level: str = setting("info", text(choices=LOG_LEVELS))
    format: str = setting("auto", text(choices=LOG_FORMATS))


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
    sql: SqlSettings = field(default_factory=SqlSettings)
    log: LogSettings = field(default_factory=LogSettings)
    flow_control: FlowControlConfig = field(default_factory=FlowControlConfig)
    recovery: RecoverySettings = field(default_factory=RecoverySettings)
