"""The test lanes: `make test-fast` leaves out Spark and the demo; unknown markers fail.

One `pytest --collect-only` of the whole suite, in a subprocess with the
repository's configuration, records each test's markers as `-m` sees them
(tests/fixtures/collected_markers.py); each lane's marker expression, read from
the Makefile, is then evaluated per test by pytest's own `-m` evaluator. One
collection (seconds) instead of one per lane and case (a minute and a half).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from tests.fixtures.collected_markers import ENV

COLLECT = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"]
ROOT = Path(__file__).resolve().parents[1]
# tests that start Spark only through a fixture of another fixture, or run the demo
SPARK_AND_DEMO = [
    "tests/faults/test_rollup_faults.py",  # `spark`, not marked slow
    "tests/spark_rollups/test_cluster.py",  # `spark_cluster`, through a module fixture
    "tests/test_demo.py",
]
SPARK_FIXTURES = {"spark", "spark_cluster"}  # tests/fixtures/spark.py


@dataclass(frozen=True)
class Collected:
    """One test as the collection saw it."""

    markers: frozenset[str]
    fixtures: frozenset[str]


def _makefile() -> str:
    return (ROOT / "Makefile").read_text(encoding="utf-8")


def _fast_markers() -> str:
    m = re.search(r"^FAST_MARKERS := (.+)$", _makefile(), re.MULTILINE)
    assert m is not None, "FAST_MARKERS is not in the Makefile"
    return m.group(1).strip()


def _pytest_recipe_markers() -> list[str]:
    recipe = re.search(r"^pytest:.*\n((?:\t.*\n)+)", _makefile(), re.MULTILINE)
    assert recipe is not None, "no pytest target in the Makefile"
    return re.findall(r'-m "([^"]+)"', recipe.group(1))


def _collect(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS" and "XDIST" not in k}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), base.get("PYTHONPATH")]))
    return subprocess.run(
        [*COLLECT, *args],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Collected]:
    """Every test id of the suite with its markers and fixtures, from one collection."""
    out = tmp_path_factory.mktemp("lanes") / "collected.json"
    run = _collect("-p", "tests.fixtures.collected_markers", env={ENV: str(out)})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    rows = json.loads(out.read_text(encoding="utf-8"))
    return {
        row["id"]: Collected(frozenset(row["markers"]), frozenset(row["fixtures"])) for row in rows
    }


def _selected(suite: Mapping[str, Collected], expression: str) -> set[str]:
    """The ids `pytest -m expression` keeps (the evaluator of `_pytest.mark`)."""
    compiled = Expression.compile(expression)
    selected = set()
    for test_id, collected in suite.items():

        def has(name: str, /, **kwargs: object) -> bool:
            assert not kwargs, f"{expression!r}: marker arguments are not recorded"
            return name in collected.markers  # noqa: B023 (called at once, below)

        if compiled.evaluate(has):
            selected.add(test_id)
    return selected


def _in(suite: Mapping[str, Collected], module: str) -> set[str]:
    return {test_id for test_id in suite if test_id.split("::")[0] == module}


def test_the_fast_lane_deselects_spark_and_the_demo(suite: dict[str, Collected]) -> None:
    fast = _selected(suite, _fast_markers())
    every = set().union(*(_in(suite, module) for module in SPARK_AND_DEMO))
    cluster = "tests/spark_rollups/test_cluster.py::test_cluster_table_equals_local_mode["
    assert any(test_id.startswith(cluster) for test_id in every)
    assert sorted(every & fast) == []
    # any test using a Spark fixture, directly or through another fixture
    spark = {test_id for test_id, c in suite.items() if SPARK_FIXTURES & c.fixtures}
    assert len(spark) > len(_in(suite, SPARK_AND_DEMO[0]))
    assert sorted(spark & fast) == []


def test_the_fast_lane_keeps_the_tests_without_spark(suite: dict[str, Collected]) -> None:
    rollup = _in(suite, "tests/spark_rollups/test_rollup.py")
    assert "tests/spark_rollups/test_rollup.py::test_manifest_round_trips" in rollup
    assert rollup <= _selected(suite, _fast_markers())


def test_make_test_runs_every_test_once_across_its_parallel_and_timing_parts(
    suite: dict[str, Collected],
) -> None:
    parts = _pytest_recipe_markers()
    assert parts == ["not timing", "timing"], parts
    parallel, timing = (_selected(suite, part) for part in parts)
    assert parallel | timing == set(suite) and not parallel & timing
    modules = {test_id.split("::")[0] for test_id in timing}
    assert "tests/faults/test_sql_isolation.py" in modules
    assert "tests/grstats/sql/test_publish_cadence.py" in modules


def test_an_undeclared_marker_is_an_error(tmp_path: Path) -> None:
    stray = tmp_path / "test_stray.py"
    stray.write_text(
        "import pytest\n\n\n@pytest.mark.spraak\ndef test_typo() -> None:\n    pass\n",
        encoding="utf-8",
    )
    run = _collect("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(stray))
    assert run.returncode != 0, run.stdout + run.stderr
    assert "'spraak' not found in `markers`" in run.stdout + run.stderr
