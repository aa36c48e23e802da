"""The layering rule of DESIGN.md section 1, enforced on every module of grstats/.

protocol <- core <- {sources, bus, history, api, sql} <- config <- {daemon, offline} <- cli:
core imports only the standard library and protocol; a middle package uses
core plus its own libraries and never a sibling; config and logs sit above
the middle; daemon and offline (work without a daemon) above config, never
each other; nothing imports cli. Each library is owned
by one package (aiomqtt: bus; asyncmy: sources; pyarrow: history;
prometheus_client: api).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from grstats.core import columns

ROOT = Path(__file__).resolve().parents[2]
GRSTATS = ROOT / "grstats"
STDLIB = set(sys.stdlib_module_names)
MIDDLE = ("sources", "bus", "history", "api", "sql")
RANK = {
    "core": 0,
    **dict.fromkeys(MIDDLE, 1),
    "config": 2,
    "logs": 2,
    "daemon": 3,
    "offline": 3,
    "cli": 4,
}
# third-party libraries each layer may use (besides the standard library)
LIBRARIES: dict[str, set[str]] = {
    "core": set(),
    "sources": {"numpy", "asyncmy", "structlog"},
    "bus": {"aiomqtt", "paho", "structlog"},
    "history": {"pyarrow", "msgpack", "structlog"},
    "api": {"prometheus_client", "structlog"},
    "sql": {"mysql_mimic", "duckdb", "sqlglot", "pyarrow", "msgpack", "structlog"},
    "config": set(),
    "logs": {"structlog"},
    "daemon": {"structlog"},
    "offline": {"numpy", "pyarrow"},
    "cli": {"click", "rich", "structlog", "numpy", "pyarrow"},
}
OWNER = {"aiomqtt": "bus", "paho": "bus", "asyncmy": "sources", "prometheus_client": "api"}


def _layer(path: Path) -> str:
    rel = path.relative_to(GRSTATS)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.append(node.module)
    return names


MODULES = sorted(p for p in GRSTATS.rglob("*.py") if _layer(p) in RANK)


def test_every_module_belongs_to_a_layer() -> None:
    strays = [
        str(p.relative_to(ROOT))
        for p in GRSTATS.rglob("*.py")
        if _layer(p) not in RANK and p.name != "__init__.py"
    ]
    assert strays == []
    assert len(MODULES) > 20


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(GRSTATS)))
def test_module_imports_follow_the_layering_rule(path: Path) -> None:
    layer = _layer(path)
    bad: list[str] = []
    for name in _imports(path):
        top = name.split(".")[0]
        if top in STDLIB or top in {"protocol", "__future__"}:
            continue
        if top == "grstats":
            parts = name.split(".")
            if len(parts) == 1:
                continue  # the package itself (its version)
            target = parts[1]
            if target == layer or target not in RANK:
                continue
            if RANK[target] >= RANK[layer] and not (layer == "config" and target == "logs"):
                bad.append(name)  # same level (a sibling) or above
            continue
        owner = OWNER.get(top)
        if (owner is not None and owner != layer) or (
            layer in ("core", "sources", "bus", "history", "api", "sql")
            and (top not in LIBRARIES[layer])
        ):
            bad.append(name)
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


def test_core_imports_only_stdlib_protocol_and_itself() -> None:
    for path in GRSTATS.joinpath("core").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            assert (
                top in STDLIB
                or top in ("protocol", "__future__")
                or name.startswith("grstats.core")
            ), f"{path.name} imports {name}"


def _string_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_each_performance_schema_column_name_is_written_in_one_place() -> None:
    names = set(columns.MEMBER_STATS.names) | set(columns.MEMBERS.names)
    names |= set(columns.MEMBER_LAG.names)
    places: dict[str, list[str]] = {name: [] for name in names}
    for path in GRSTATS.rglob("*.py"):
        for literal in _string_literals(path):
            if literal in places:
                places[literal].append(str(path.relative_to(GRSTATS)))
    assert {n: p for n, p in places.items() if p != ["core/columns.py"]} == {}
