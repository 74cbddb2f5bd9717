"""No import cycle among the program's modules: no module reaches itself through the imports it runs.

Counted as an import of module B by module A (parsed with ast, so a new module cannot slip by):
- `import B`, `from B import name`, and `from P import B` where B is a submodule of package P (which also imports
  P: its `__init__` is a module like any other, so `from core.settings import job` inside a module that
  `core/settings/__init__.py` imports is a cycle);
- wherever the statement is: at module level, inside a function or a class. A function-level import that only
  breaks a cycle at import time still ties the two modules together, so it counts;
- but not under `if TYPE_CHECKING:`: those run only for the type checker (annotations name the settings model).

Relative imports are resolved against the importing module's package. Only modules of the program's packages are
nodes; everything else (the standard library, pydantic, pulumi) is not followed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "infra", "workloads", "synth", "cli", "tools", "policy", "pod_programs")


def modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, a package's `__init__.py` under the package's own name."""
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The program modules `name` (at `path`) imports, wherever the import statement is."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for stmt in child.orelse:
                    visit_one(stmt)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target in known:
                out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known)
        else:
            visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    out.discard(name)
    return out


def cycles(root: Path, packages=PACKAGES) -> list[list[str]]:
    """Every group of modules that import each other, directly or around a loop (strongly connected components of
    the import graph, Tarjan), each sorted."""
    known = modules(root, packages)
    graph = {m: sorted(imports(m, p, known)) for m, p in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            connect(v)
    return sorted(found)


def test_no_module_of_the_program_imports_itself_around_a_loop():
    assert cycles(ROOT) == []


def test_the_check_sees_each_kind_of_cycle(tmp_path):
    pkg = tmp_path / "toy"
    (pkg / "settings").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # A package's __init__ and a submodule that imports its sibling through the package.
    (pkg / "settings" / "__init__.py").write_text("from toy.settings import job\n")
    (pkg / "settings" / "job.py").write_text("from toy.settings import base\n")
    (pkg / "settings" / "base.py").write_text("")
    # A function-level import that breaks the cycle at import time only; a relative one.
    (pkg / "a.py").write_text("def f():\n    from toy import b\n")
    (pkg / "b.py").write_text("from . import a\n")
    # Not a cycle: an import only the type checker runs.
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy import d\n")
    (pkg / "d.py").write_text("import toy.c\n")
    assert cycles(tmp_path, ("toy",)) == [["toy.a", "toy.b"], ["toy.settings", "toy.settings.job"]]
