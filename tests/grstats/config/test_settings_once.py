"""Settings once: the runtime dataclass owns each default, config adds the checks.

A config section whose runtime twin lives below config inherits it (the
`BusSettings(BusOptions)` pattern) and declares none of its fields again;
[limits] and [publish] take core's defaults. Each test fails when a default
is declared a second time (and so can drift).
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from grstats.api.options import ApiOptions
from grstats.bus.options import BusOptions
from grstats.config import ConfigError, load_client_settings
from grstats.config._settings import (
    ApiSettings,
    BusSettings,
    FlowControlConfig,
    LimitSettings,
    PublishSettings,
    SqlSettings,
)
from grstats.core.admission import Limits
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.registry import RegistryLimits
from grstats.sql.options import SqlOptions

# config section -> its runtime dataclass, and the fields config may state
# again because they are not TOML keys of their own (derived from `listen`)
PAIRS = [
    (BusSettings, BusOptions, set()),
    (ApiSettings, ApiOptions, set()),
    (SqlSettings, SqlOptions, {"host", "port"}),  # "" / 0: [sql] is off unless `listen`
    (FlowControlConfig, FlowControlSettings, set()),
]


@pytest.mark.parametrize(("config", "runtime", "derived"), PAIRS)
def test_a_section_inherits_its_runtime_fields_and_declares_none_again(
    config: type, runtime: type, derived: set[str]
) -> None:
    assert issubclass(config, runtime)
    own = set(inspect.get_annotations(config))
    assert own & {f.name for f in dataclasses.fields(runtime)} == derived


@pytest.mark.parametrize(
    ("config_field", "runtime", "runtime_field"),
    [
        ("max_envelope_size", Limits(), "max_envelope_size"),
        ("max_status_size", Limits(), "max_status_size"),
        ("max_clock_skew", Limits(), "max_clock_skew_s"),
        ("max_members_per_group", RegistryLimits(), "max_members_per_group"),
        ("max_groups", RegistryLimits(), "max_groups"),
    ],
)
def test_limits_defaults_are_cores(config_field: str, runtime: object, runtime_field: str) -> None:
    assert getattr(LimitSettings(), config_field) == getattr(runtime, runtime_field)
    # and stated there, not here: a changed core default moves the config's
    field = next(f for f in dataclasses.fields(LimitSettings) if f.name == config_field)
    assert field.default is getattr(runtime, runtime_field)


def test_publish_timing_defaults_are_the_registrys() -> None:
    registry = RegistryLimits()
    publish = PublishSettings()
    assert (publish.period, publish.unreachable_after, publish.forget_after) == (
        registry.period_s,
        registry.unreachable_after,
        registry.forget_after_s,
    )


def test_a_client_reading_flow_control_gets_the_daemons_checks(tmp_path: Path) -> None:
    path = tmp_path / "grstats.toml"
    path.write_text("[flow_control]\nmin_quota = 10\nmax_quota = 5\n")
    with pytest.raises(ConfigError, match=r"flow_control\.min_quota: must not exceed max_quota"):
        load_client_settings(path, bus=False)
