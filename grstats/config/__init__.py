"""TOML configuration -> frozen, typed, validated settings.

Strategy: `load_config(path)` reads the file with the one TOML reader
(`_reader.read_toml`), then walks a fixed schema section by section
(`_load`). Each key's default and check are stated once, on its settings
dataclass (`_settings`); the parser derives the keys from the fields. Every
problem raises one `ConfigError` carrying the file, the dotted key and the
problem (`grstats.toml: bus.port: expected an integer 1-65535, got "abc"`), so
the CLI prints one line and exits 2. Unknown sections and keys are errors too:
a typo must not silently fall back to a default.

Source-specific sections ([simulated], [mysql]) are parsed into the settings
types their source modules own (`SimulationSettings`, `MySQLSettings`); those
modules are imported only for the source actually configured (`_sources`).

`[publish] gtid_interval` is 30-60 s as MySQL (about 30 ticks). Tests need a
faster cadence: values 0.1-29 are accepted only together with the explicit
test-only key `allow_short_gtid_interval = true`.
"""

from grstats.config._files import LocalInputError, read_local_file
from grstats.config._load import ClientSettings, load_client_settings, load_config, parse_config
from grstats.config._reader import ConfigError, read_toml
from grstats.config._settings import (
    DEFAULT_CONFIG_PATH,
    ApiSettings,
    BusSettings,
    HistorySettings,
    LimitSettings,
    LogSettings,
    MemberSettings,
    PublishSettings,
    Settings,
    SqlSettings,
)

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "ApiSettings",
    "BusSettings",
    "ClientSettings",
    "ConfigError",
    "HistorySettings",
    "LimitSettings",
    "LocalInputError",
    "LogSettings",
    "MemberSettings",
    "PublishSettings",
    "Settings",
    "SqlSettings",
    "load_client_settings",
    "load_config",
    "parse_config",
    "read_local_file",
    "read_toml",
]
