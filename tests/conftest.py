"""Shared test configuration: fixtures live in tests/fixtures/ as plugins."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = [
    "tests.fixtures.paths",
    "tests.fixtures.broker",
    "tests.fixtures.spark",
]

# Fuzz targets are bounded: a few thousand examples each, no deadline (CI machines vary).
settings.register_profile(
    "grstats",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("grstats")
