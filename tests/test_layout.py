"""tests/ mirrors the packages: tests/grstats/X/ tests grstats/X/, and is a package itself.

integration/ is the one directory of its own (tests running several daemons);
helpers used by more than one module live in tests/fixtures/.
"""

from __future__ import annotations

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
