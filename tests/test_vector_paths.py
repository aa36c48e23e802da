"""Golden vectors missing: a skip on a developer's machine, a failure under CI=true.

Each case runs pytest in a subprocess on a fake layout (a copy of
tests/fixtures/paths.py in a scratch repository, with or without
../shared/vectors beside it), so that the real ../shared is not touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# past the collection error of the module-level load, so the fixture's test runs too
PYTEST = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
PYTEST += ["--continue-on-collection-errors"]
PATHS = Path(__file__).resolve().parent / "fixtures" / "paths.py"

MODULE_LEVEL = """\
from tests.fixtures.paths import load_vectors

VECTORS = load_vectors("golden.json")


def test_module_vectors() -> None:
    assert VECTORS == {"ok": 1}
"""

FIXTURE = """\
from pathlib import Path


def test_fixture_vectors(vectors_dir: Path) -> None:
    assert (vectors_dir / "golden.json").is_file()
"""

# a test parametrized by the vector file's case names, read at collection
CASES = """\
import pytest

from tests.fixtures.paths import vector_case_names


@pytest.mark.parametrize("name", vector_case_names("golden_cases.json"))
def test_case_vectors(name: str) -> None:
    assert name == "one"
"""


def _layout(root: Path, *, vectors: bool) -> Path:
    repo = root / "repo"
    (repo / "tests" / "fixtures").mkdir(parents=True)
    (repo / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (repo / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "tests" / "fixtures" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(PATHS, repo / "tests" / "fixtures" / "paths.py")
    (repo / "tests" / "conftest.py").write_text(
        'pytest_plugins = ["tests.fixtures.paths"]\n', encoding="utf-8"
    )
    (repo / "tests" / "test_module.py").write_text(MODULE_LEVEL, encoding="utf-8")
    (repo / "tests" / "test_fixture.py").write_text(FIXTURE, encoding="utf-8")
    (repo / "tests" / "test_cases.py").write_text(CASES, encoding="utf-8")
    if vectors:
        (root / "shared" / "vectors").mkdir(parents=True)
        (root / "shared" / "vectors" / "golden.json").write_text('{"ok": 1}', encoding="utf-8")
        cases = root / "shared" / "vectors" / "golden_cases.json"
        cases.write_text('[{"name": "one"}]', encoding="utf-8")
    return repo


def _pytest(repo: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(repo)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # pytest alone: faster, nothing else involved
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [*PYTEST, "tests"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_missing_vectors_skip_outside_ci(tmp_path: Path) -> None:
    run = _pytest(_layout(tmp_path, vectors=False), ci=None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 skipped" in run.stdout  # the cases' test: an empty parameter set
    assert "golden vectors not found" in run.stdout


@pytest.mark.parametrize("ci", ["true", "1"])
def test_missing_vectors_fail_under_ci(tmp_path: Path, ci: str) -> None:
    run = _pytest(_layout(tmp_path, vectors=False), ci=ci)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "skipped" not in run.stdout
    assert "golden vectors not found" in run.stdout
    # the module-level load and the case names err at collection, the fixture at setup
    assert "3 errors" in run.stdout
    assert "no tests ran" not in run.stdout


def test_present_vectors_pass_under_ci(tmp_path: Path) -> None:
    run = _pytest(_layout(tmp_path, vectors=True), ci="true")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout
