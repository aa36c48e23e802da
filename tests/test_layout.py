"""tests/ mirrors the packages: tests/grstats/X/ tests grstats/X/, and is a package itself.

integration/ is the one directory of its own (tests running several daemons);
helpers used by more than one module live in tests/fixtures/.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "grstats"


def _directories() -> list[Path]:
    return sorted(
        p.relative_to(TESTS)
        for p in TESTS.rglob("*")
        if p.is_dir() and "__pycache__" not in p.parts
    )


def test_each_directory_of_tests_grstats_mirrors_a_package_of_grstats() -> None:
    directories = _directories()
    assert Path("sources/mysql") in directories  # the walk sees nested packages
    strays = [
        d
        for d in directories
        if d.parts[0] != "integration" and not (ROOT / "grstats" / d).is_dir()
    ]
    assert strays == []


def test_each_directory_of_tests_grstats_is_a_package() -> None:
    # without __init__.py two test_x.py in different directories collide in pytest
    assert [d for d in _directories() if not (TESTS / d / "__init__.py").is_file()] == []


# STYLE.md §8: a module past ~450 lines is a sign to split (test modules along
# their sections, shared helpers to tests/fixtures/).
MAX_LINES = 450


def test_no_module_of_tests_exceeds_450_lines() -> None:
    lengths = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in (ROOT / "tests").rglob("*.py")
    }
    assert len(lengths) > 100  # the walk sees the tree
    assert {p: n for p, n in lengths.items() if n > MAX_LINES} == {}


# A test module imports shared helpers from tests/fixtures/, never from another
# test module (importing one runs its module-level code and couples the two).
TEST_MODULE_IMPORT = re.compile(r"^\s*from (tests\.[\w.]*\btest_\w+) import", re.MULTILINE)
# tests/spark_rollups/ is another engineer's area this wave: its one import stays
# until expected_applier moves to tests/fixtures/ there.
IMPORT_EXCEPTIONS = {
    "tests/spark_rollups/test_rollup_day.py": {"tests.spark_rollups.test_rollup_applier"}
}


def test_no_test_module_imports_another_test_module() -> None:
    imports = {
        str(p.relative_to(ROOT)): set(TEST_MODULE_IMPORT.findall(p.read_text(encoding="utf-8")))
        for p in (ROOT / "tests").rglob("*.py")
    }
    assert imports["tests/test_layout.py"] == set()  # the pattern below is not an import
    assert {p: m for p, m in imports.items() if m} == IMPORT_EXCEPTIONS
