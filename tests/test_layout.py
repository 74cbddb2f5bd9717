"""The layout shows the architecture, and the imports keep to it (parsed with ast, so a new module cannot slip by).

- core (settings, catalog, naming, recipes, sizing) <- infra/ (Google Cloud) and workloads/ (Kubernetes) <-
  __main__.py; infra/ and workloads/ never import each other; core imports neither.
- workloads/ holds the ComponentResources only; workloads/manifests/ the pure builders, which import no Pulumi and
  no component; pod_programs/ (run inside pods) imports nothing of ours; cli/ (the laptop CLI) no Pulumi and no
  component.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def imported(path: Path) -> set[str]:
    """Every absolute module an import statement in `path` names (top level or inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _tops(path: Path) -> set[str]:
    return {m.split(".")[0] for m in imported(path)}


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


FORBIDDEN = {
    "core": {"infra", "workloads", "cli", "synth", "tools", "policy"},
    "infra": {"workloads", "cli", "synth"},
    "workloads": {"infra", "cli", "synth"},
    "cli": {"pulumi", "pulumi_gcp", "pulumi_kubernetes", "infra", "workloads", "synth"},
    "pod_programs": {
        "pulumi",
        "pulumi_gcp",
        "pulumi_kubernetes",
        "core",
        "infra",
        "workloads",
        "cli",
        "synth",
        "tools",
        "policy",
    },
}


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_layers_import_only_downwards(folder):
    bad = {_rel(p): sorted(_tops(p) & FORBIDDEN[folder]) for p in _modules(folder)}
    assert not {k: v for k, v in bad.items() if v}


def test_manifests_import_neither_pulumi_nor_a_component():
    components = {f"workloads.{p.stem}" for p in (ROOT / "workloads").glob("*.py") if p.stem != "__init__"}
    bad = {}
    for p in _modules("workloads/manifests"):
        names = imported(p)
        hits = sorted(
            m
            for m in names
            if m.split(".")[0].startswith("pulumi") or any(m == c or m.startswith(c + ".") for c in components)
        )
        if hits:
            bad[_rel(p)] = hits
    assert not bad


def _defines_component(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            if any(ast.unparse(b) == "pulumi.ComponentResource" for b in node.bases):
                return True
    return False


def test_every_workloads_module_is_a_component():
    others = [_rel(p) for p in (ROOT / "workloads").glob("*.py") if p.stem != "__init__" and not _defines_component(p)]
    assert not others, f"not a ComponentResource module (pure builders go to workloads/manifests/): {others}"


def test_the_check_sees_a_forbidden_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    import pulumi_kubernetes as k8s\n    from workloads.ray_cluster import RayCluster\n")
    assert {"pulumi_kubernetes", "workloads.ray_cluster", "workloads.ray_cluster.RayCluster"} <= imported(bad)
