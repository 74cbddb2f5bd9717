"""docs/architecture.md's "Where things live" table names every module of the program's packages, and no module
that is gone: a module is named in the row of its folder (`name` or `name.py`), or has a row of its own."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
# The program, its tooling and the policy pack (tests/ are described by docs/contributing.md).
PACKAGES = ("core", "infra", "workloads", "pod_programs", "cli", "synth", "tools", "policy")


def modules() -> list[str]:
    found = ["__main__.py"]
    for package in PACKAGES:
        found += [
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / package).rglob("*.py")
            if p.name != "__init__.py" and "__pycache__" not in p.parts
        ]
    return sorted(found)


def rows() -> dict[str, str]:
    """Folder or file of a row's first cell (`core/recipes`, `cli/ray_jobs.py`) -> the rest of the row."""
    section = DOC.read_text(encoding="utf-8").split("\n## Where things live\n", 1)[1].split("\n## ", 1)[0]
    out: dict[str, str] = {}
    for line in section.splitlines():
        cells = line.split("|")
        if not line.startswith("| `") or len(cells) < 3:
            continue
        for span in re.findall(r"`([^`]+)`", cells[1]):
            out[span.rstrip("/")] = "|".join(cells[2:])
    return out


def test_the_architecture_guide_names_every_module_in_the_row_of_its_folder():
    table = rows()
    missing = []
    for path in modules():
        if path in table:
            continue
        row = table.get(posixpath.dirname(path))
        stem = posixpath.basename(path)[: -len(".py")]
        if row is None or not re.search(rf"`{re.escape(stem)}(\.py)?`", row):
            missing.append(path)
    assert not missing, f"docs/architecture.md (Where things live) does not name: {missing}"


def test_every_module_a_folder_row_names_exists():
    existing = set(modules())
    stale = []
    for folder, row in rows().items():
        if not (ROOT / folder).is_dir() or folder.split("/")[0] not in PACKAGES:
            continue
        for name in re.findall(r"`([a-z_][a-z0-9_]*)(?:\.py)?`", row):
            if f"{folder}/{name}.py" not in existing and not (ROOT / folder / name).is_dir():
                stale.append(f"{folder}/{name}")
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"
