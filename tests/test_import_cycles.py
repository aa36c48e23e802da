"""No import cycle among the project's modules, deferred imports included (issue 40).

Every `import` counts wherever it stands -- at the top, inside a function (a
deferred import hides a cycle from Python, not from a reader), or under
`TYPE_CHECKING` (a cycle for type hints still ties two modules together) --
and the module graph of grstats/, protocol/ and spark_rollups/ must have no
strongly connected component of more than one module. The graph is read
from the source with `ast`, so the test imports nothing of what it checks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grstats", "protocol", "spark_rollups")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _known(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found = _known(alias.name, modules)
                if found:
                    yield found
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                found = _known(f"{base}.{alias.name}", modules)
                if found:
                    yield found


def graph() -> dict[str, set[str]]:
    """module -> the project's modules it imports anywhere in its source."""
    modules = _modules()
    return {
        name: {dep for dep in _imported(name, path, modules) if dep != name}
        for name, path in modules.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_deferred_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_finder_reads_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from grstats.core import sections\n"
        "def f():\n    from grstats.core.registry import MemberRegistry\n"
        "    from . import sibling\n",
        encoding="utf-8",
    )
    modules = dict.fromkeys(
        ("pkg.mod", "pkg.sibling", "grstats.core.sections", "grstats.core.registry"), path
    )
    found = set(_imported("pkg.mod", path, modules))
    assert found == {"grstats.core.sections", "grstats.core.registry", "pkg.sibling"}


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(graph()) == []
