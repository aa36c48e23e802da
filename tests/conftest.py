"""Shared test configuration: fixtures live in tests/fixtures/ as plugins."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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


# The checkout under test. pytest puts it on this process's sys.path, but a child
# (a daemon, a CLI command, Spark's Python workers) gets only PYTHONPATH, and
# without it imports whatever the venv has installed: in a worktree sharing a
# venv, another checkout's editable install. The three-daemon commit-path test
# then read /metrics of daemons running that other checkout's code.
CHECKOUT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Every child process imports grstats, protocol and spark_rollups from `CHECKOUT`."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not paths or Path(paths[0]).resolve() != CHECKOUT:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT), *paths])


# A Spark test's limit (setup included: a module's rollup): the JVMs of the
# workers share the machine's two cores.
SPARK_TIMEOUT_S = 900


# `make test` runs two pytest-xdist workers with `--dist loadfile` (a module's
# fixtures are built once, on one worker) and `--no-loadscope-reorder`: xdist then
# hands modules out in the order collected here instead of the most tests first
# (which put the few-test modules that start daemons or Spark at the very end,
# one worker finishing alone). The longest kinds come first, so that the short
# modules fill in around them and both workers end together: the demo (daemons
# and a Spark job in subprocesses), the standalone cluster, the Spark session,
# then the `slow` and `soak` ones (real daemons), then the rest, each kind in
# collection order (xdist's `loadgroup` cannot be used: with pytest 9 it no
# longer groups, its worker hook writes a node attribute pytest 9 does not read).
def _kind(item: pytest.Item) -> int:
    """The rank of `item`'s kind in the hand-out order (lower: handed out first)."""
    if item.get_closest_marker("demo"):
        return 0
    if "spark_cluster" in getattr(item, "fixturenames", ()):
        return 1
    if item.get_closest_marker("spark"):
        return 2
    if item.get_closest_marker("slow") or item.get_closest_marker("soak"):
        return 3
    return 4


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
        heavy = item.get_closest_marker("spark") or item.get_closest_marker("demo")
        if heavy and item.get_closest_marker("timeout") is None:  # JVMs share two cores
            item.add_marker(pytest.mark.timeout(SPARK_TIMEOUT_S))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank: dict[Path, int] = {}  # whole modules: a module's rank is its longest kind's
        for item in items:
            rank[item.path] = min(rank.get(item.path, 4), _kind(item))
        items.sort(key=lambda item: rank[item.path])  # stable: collection order within


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    """A CLI command run in-process configures logging for the process (level, sink);
    undo it after each test so that the next test sees structlog's defaults."""
    yield
    structlog.reset_defaults()


@pytest.fixture(autouse=True)
def _no_daemon_left_behind() -> Iterator[None]:
    """SIGKILL, by PID, every `grstats run/collect` a test started and left running."""
    from tests.fixtures.daemons import SPAWNED  # noqa: PLC0415

    # Daemons of wider-scoped fixtures (a module's shared cluster) are set up
    # before this fixture: only those started during the test itself are ours.
    first = len(SPAWNED)
    yield
    while len(SPAWNED) > first:
        daemon = SPAWNED.pop()
        if daemon.alive():
            daemon.kill9()
