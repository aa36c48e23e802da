"""protocol/ imports only the standard library, msgpack and itself (STYLE.md convention 1)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PROTOCOL_DIR = Path(__file__).resolve().parents[2] / "protocol"
ALLOWED = set(sys.stdlib_module_names) | {"msgpack", "protocol"}


def _modules() -> list[Path]:
    return sorted(PROTOCOL_DIR.glob("*.py"))


def _imported_top_level_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0:
                names.append("protocol")  # relative import: the package itself
            elif node.module is not None:
                names.append(node.module.split(".")[0])
    return names


def test_protocol_package_has_modules() -> None:
    assert {path.name for path in _modules()} >= {
        "__init__.py",
        "errors.py",
        "envelope.py",
        "pipeline_stats.py",
        "member_stats.py",
        "gtid.py",
    }


@pytest.mark.parametrize("path", _modules(), ids=lambda path: path.name)
def test_module_imports_only_stdlib_msgpack_or_protocol(path: Path) -> None:
    foreign = sorted(set(_imported_top_level_names(path)) - ALLOWED)
    assert foreign == [], f"{path.name} imports {foreign}"


@pytest.mark.parametrize("path", _modules(), ids=lambda path: path.name)
def test_module_does_not_import_clock_or_logging(path: Path) -> None:
    forbidden = {"logging", "time", "datetime", "asyncio", "structlog"}
    used = sorted(set(_imported_top_level_names(path)) & forbidden)
    assert used == [], f"{path.name} imports {used}"


def test_checker_sees_a_third_party_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom click import echo\nfrom . import errors\n")
    assert _imported_top_level_names(sample) == ["os", "click", "protocol"]
