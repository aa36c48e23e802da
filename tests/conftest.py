"""Shared test configuration: fixtures live in tests/fixtures/ as plugins."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog
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

# The fixtures that start Spark (tests/fixtures/spark.py): a test using one, even
# through another fixture, is marked `spark` (`make test-fast` deselects it).
SPARK_FIXTURES = frozenset({"spark", "spark_cluster"})


# `make test` runs two pytest-xdist workers with `--dist loadgroup`: every test
# that runs Spark (a session, the cluster, the demo's rollup) is in one group, so
# one worker runs them one after another (one JVM, two cores) while the other
# runs the rest; two Spark jobs never compete with each other for the cores.
SPARK_GROUP = pytest.mark.xdist_group("spark")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    spark_group = []
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
        if item.get_closest_marker("spark") or item.get_closest_marker("demo"):
            item.add_marker(SPARK_GROUP)
            spark_group.append(item)
    if os.environ.get("PYTEST_XDIST_WORKER") and spark_group:
        # The Spark group is the longest unit of work: handed out first, so that the
        # other worker shares out everything else meanwhile (xdist hands out units
        # in collection order; the order within the group and outside it is kept).
        grouped = set(spark_group)
        rest = [item for item in items if item not in grouped]
        items[:] = [*spark_group, *rest]


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    """A CLI command run in-process configures logging for the process (level, sink);
    undo it after each test so that the next test sees structlog's defaults."""
    yield
    structlog.reset_defaults()


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    """SIGKILL, by PID, every `grstats run/collect` a test started and left running."""
    from tests.grstats.daemon_helpers import SPAWNED  # noqa: PLC0415

    # Daemons of wider-scoped fixtures (a module's shared cluster) are set up
    # before this fixture: only those started during the test itself are ours.
    first = len(SPAWNED)
    yield
    while len(SPAWNED) > first:
        daemon = SPAWNED.pop()
        if daemon.alive():
            daemon.kill9()
