"""The test lanes: `make test-fast` leaves out Spark and the demo; unknown markers fail.

Each case runs pytest's collection in a subprocess with the repository's
configuration; the fast lane's marker expression is read from the Makefile,
which is what `make test-fast` runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

COLLECT = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"]
ROOT = Path(__file__).resolve().parents[1]
# tests that start Spark only through a fixture of another fixture, or run the demo
SPARK_AND_DEMO = [
    "tests/faults/test_rollup_faults.py",  # `spark`, not marked slow
    "tests/spark_rollups/test_cluster.py",  # `spark_cluster`, through a module fixture
    "tests/test_demo.py",
]


def _fast_markers() -> str:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    m = re.search(r"^FAST_MARKERS := (.+)$", text, re.MULTILINE)
    assert m is not None, "FAST_MARKERS is not in the Makefile"
    return m.group(1).strip()


def _collect(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [*COLLECT, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_fast_lane_deselects_spark_and_the_demo() -> None:
    every = _collect(*SPARK_AND_DEMO)
    assert every.returncode == 0, every.stdout + every.stderr
    assert "::test_cluster_table_equals_local_mode" in every.stdout
    count = sum("::" in line for line in every.stdout.splitlines())
    fast = _collect("-m", _fast_markers(), *SPARK_AND_DEMO)
    assert f"no tests collected ({count} deselected)" in fast.stdout, fast.stdout


def test_the_fast_lane_keeps_the_tests_without_spark() -> None:
    fast = _collect("-m", _fast_markers(), "tests/spark_rollups/test_rollup.py")
    assert fast.returncode == 0, fast.stdout + fast.stderr
    assert "::test_manifest_round_trips" in fast.stdout
    assert "deselected" not in fast.stdout


def _pytest_recipe_markers() -> list[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^pytest:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert recipe is not None, "no pytest target in the Makefile"
    return re.findall(r'-m "([^"]+)"', recipe.group(1))


def test_make_test_runs_every_test_once_across_its_parallel_and_timing_parts() -> None:
    parts = _pytest_recipe_markers()
    assert parts == ["not timing", "timing"], parts
    tests = ["tests/faults", "tests/grstats/sql"]
    every, *split = (_collect(*args, *tests) for args in ([], ["-m", parts[0]], ["-m", parts[1]]))
    ids = [{line for line in run.stdout.splitlines() if "::" in line} for run in (every, *split)]
    assert ids[0] == ids[1] | ids[2] and not ids[1] & ids[2]
    timing = {line.split("::")[0] for line in ids[2]}
    assert "tests/faults/test_sql_isolation.py" in timing
    assert "tests/grstats/sql/test_publish_cadence.py" in timing


def test_an_undeclared_marker_is_an_error(tmp_path: Path) -> None:
    stray = tmp_path / "test_stray.py"
    stray.write_text(
        "import pytest\n\n\n@pytest.mark.spraak\ndef test_typo() -> None:\n    pass\n",
        encoding="utf-8",
    )
    run = _collect("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(stray))
    assert run.returncode != 0, run.stdout + run.stderr
    assert "'spraak' not found in `markers`" in run.stdout + run.stderr
