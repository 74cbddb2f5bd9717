"""requirements.txt is the program's (what `pulumi up` installs): the design card's packages and what the program
imports; the tests' own packages are in requirements-test.txt. Judged by the installed distributions' metadata
(importlib.metadata) and every import statement of the code (ast).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
# The design card (the user's words): the packages the product is built on.
DESIGN_CARD = {"pulumi", "pulumi-gcp", "pulumi-kubernetes", "pydantic", "ray", "pytest"}
# What `pulumi up` runs (__main__.py and what it imports), the offline synth (`make synth`) and the laptop CLI.
PROGRAM = ("__main__.py", "core", "infra", "workloads", "synth", "cli")
# Our own modules, whatever folder a test puts on sys.path (the policy pack, the pod programs, test helpers).
_FOLDERS = ("core", "infra", "workloads", "synth", "cli", "tools", "policy", "pod_programs", "tests")
OURS = set(_FOLDERS) | {p.stem for folder in _FOLDERS for p in (ROOT / folder).rglob("*.py")}
# Command-line tools `make test` runs before pytest; no test imports them.
TOOLS = {"ruff", "mypy"}
# Test programs run in the NeMo-RL releases' `datasets` environments (tests/datasets_envs.py), not in .venv: their
# imports come from those environments' lists (tests/datasets_envs/<tag>.txt).
DATASETS_ENV_PROGRAMS = ("tests/standin/nemo_rl_data.py",)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)", line.strip())
        if m:
            out[_norm(m.group(1))] = m.group(3)
    return out


@functools.cache
def third_party_imports(paths: tuple[str, ...], skip: tuple[str, ...] = ()) -> frozenset[str]:
    out = set()
    for top in paths:
        p = ROOT / top
        for f in [p] if p.is_file() else sorted(p.rglob("*.py")):
            if str(f.relative_to(ROOT)) in skip:
                continue
            for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else ([node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
                )
                out |= {n.split(".")[0] for n in names}
    return frozenset(m for m in out if m not in sys.stdlib_module_names and m not in OURS)


@functools.cache
def _packages_distributions() -> dict:
    return metadata.packages_distributions()  # reads every installed distribution's file list: once


@pytest.fixture(scope="module", autouse=True)
def _installed_distributions():
    # Read once before the tests that read them: every installed distribution's files, the metadata of both lists'
    # dependency trees, and the imports of the program and of the tests.
    _packages_distributions()
    closure(set(pinned(ROOT / "requirements.txt")) | set(pinned(ROOT / "requirements-test.txt")))
    third_party_imports(PROGRAM)
    third_party_imports(("tests",), DATASETS_ENV_PROGRAMS)


def distributions_of(modules: set[str]) -> set[str]:
    by_module = _packages_distributions()
    return {_norm(d) for m in modules for d in by_module.get(m, [m])}


@functools.cache
def _requires(name: str) -> list[str] | None:
    try:
        return metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return None


def closure(names: set[str]) -> set[str]:
    """The distributions `names` install, theirs included (every requirement, extras too: a superset)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        requires = _requires(name)
        if requires is None:
            continue  # an optional extra's package, not installed
        for req in requires:
            todo.append(_norm(re.split(r"[\s\[<>=!~;(]", req, maxsplit=1)[0]))
    return seen


def test_every_pin_is_exact_and_installed():
    for f in ("requirements.txt", "requirements-test.txt"):
        for name, version in pinned(ROOT / f).items():
            try:
                installed = metadata.version(name)
            except metadata.PackageNotFoundError:
                assert name in TOOLS, f"{f}: {name} is not installed"
                continue
            assert installed.split("+")[0] == version, (f, name)


def test_the_program_list_is_the_design_card_plus_what_the_program_imports():
    program = pinned(ROOT / "requirements.txt")
    imported = distributions_of(third_party_imports(PROGRAM))
    assert DESIGN_CARD <= set(program)
    assert set(program) - DESIGN_CARD <= imported, "requirements.txt holds a package the program does not import"
    assert imported <= closure(set(program)), f"the program imports {sorted(imported - closure(set(program)))}"


def test_test_only_packages_stay_out_of_the_program_list():
    program, tests = pinned(ROOT / "requirements.txt"), pinned(ROOT / "requirements-test.txt")
    assert "-r requirements.txt" in (ROOT / "requirements-test.txt").read_text().splitlines()
    assert not set(program) & set(tests)
    for heavy in ("torch", "numpy", "hydra-core", "huggingface-hub", "kubernetes-validate", "jsonschema", "mypy"):
        assert heavy in tests and heavy not in program
    # Everything the tests import comes from one of the two lists ...
    used = distributions_of(third_party_imports(("tests",), DATASETS_ENV_PROGRAMS))
    assert used <= closure(set(program) | set(tests)), sorted(used - closure(set(program) | set(tests)))
    # ... or, for a program run in a release's `datasets` environment, from every one of those environments' lists.
    envs = [pinned(f) for f in sorted((ROOT / "tests" / "datasets_envs").glob("*.txt"))]
    for program_file in DATASETS_ENV_PROGRAMS:
        imported = {_norm(m) for m in third_party_imports((program_file,))}
        assert envs and all(imported <= set(env) for env in envs), (program_file, imported)
