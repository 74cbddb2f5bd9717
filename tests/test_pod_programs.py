"""The programs the job-scripts ConfigMap ships (pod_programs/) run with what their image has, and nothing else.

Every import of every shipped program (top level or inside a function, parsed with ast) must be the standard
library, a shipped sibling, or a package of each image the program runs in (`pod_programs.Shipped` images):
NeMo-RL's environment in every release the catalog knows (tests/oracles/nemo_rl_environment, derived from each
release's uv.lock), or the prefetch image's hash-pinned requirements (pod_programs/prefetch-requirements.txt).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import pod_programs
from core.catalog import NEMO_RL_RELEASES
from workloads.job_scripts import job_scripts

pytestmark = pytest.mark.unit

ENVIRONMENTS = Path(__file__).resolve().parent / "oracles" / "nemo_rl_environment"
# Distributions whose module is not their normalised name: nvidia-ml-py ships `pynvml` (its wheel's only module).
MODULES_OF = {"nvidia-ml-py": {"pynvml"}}
OUR_PACKAGES = {"core", "infra", "workloads", "synth", "cli", "tools", "policy", "pod_programs", "pulumi"}
PROGRAMS = [f for f in (*pod_programs.SHIPPED, *pod_programs.CLOUD_RUN) if f.name.endswith(".py")]


def _modules(requirement_names) -> set[str]:
    out = set()
    for name in requirement_names:
        dist = re.sub(r"[-_.]+", "-", name).lower()
        out |= MODULES_OF.get(dist, {dist.replace("-", "_")})
    return out


def _distributions(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", text, re.M)]


def image_modules(image: str) -> set[str]:
    """Top-level modules an image's Python environment provides beyond the standard library."""
    if image == pod_programs.NEMO_RL_IMAGE:
        per_release = [_modules(_distributions((ENVIRONMENTS / f"{tag}.txt").read_text())) for tag in NEMO_RL_RELEASES]
        return set.intersection(*per_release)
    if image == pod_programs.PREFETCH_IMAGE:
        return _modules(_distributions((pod_programs.DIR / pod_programs.PREFETCH_REQUIREMENTS.name).read_text()))
    if image == pod_programs.PYTHON_IMAGE:
        return set()
    raise AssertionError(f"unknown image {image!r}")


def imports_of(source: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_every_release_has_its_environment_listed():
    assert {p.stem for p in ENVIRONMENTS.glob("*.txt")} == set(NEMO_RL_RELEASES)


def test_the_configmap_ships_exactly_the_listed_files_and_the_folder_holds_nothing_else():
    assert list(job_scripts()) == [f.name for f in pod_programs.SHIPPED]
    on_disk = {p.name for p in pod_programs.DIR.iterdir() if p.is_file() and p.name != "__init__.py"}
    assert on_disk == {f.name for f in (*pod_programs.SHIPPED, *pod_programs.CLOUD_RUN)}
    assert not {f.name for f in pod_programs.CLOUD_RUN} & set(job_scripts())


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.name)
def test_each_shipped_program_imports_only_what_its_images_have(program):
    siblings = {f.name.removesuffix(".py") for f in PROGRAMS}
    used = imports_of((pod_programs.DIR / program.name).read_text())
    assert not used & OUR_PACKAGES, f"{program.name} imports {sorted(used & OUR_PACKAGES)}"
    outside = used - set(sys.stdlib_module_names) - siblings
    assert program.images, f"{program.name} runs in no image"
    for image in program.images:
        missing = outside - image_modules(image)
        assert not missing, f"{program.name} imports {sorted(missing)}, which the {image} image does not have"


def test_the_check_sees_what_each_image_lacks():
    # The oracle can fail for the right reason: the prefetch image has no torch, NeMo-RL's environment no pulumi.
    assert "huggingface_hub" in image_modules(pod_programs.PREFETCH_IMAGE)
    assert "torch" not in image_modules(pod_programs.PREFETCH_IMAGE)
    assert {"ray", "torch", "pynvml", "datasets", "huggingface_hub"} <= image_modules(pod_programs.NEMO_RL_IMAGE)
    assert "pulumi" not in image_modules(pod_programs.NEMO_RL_IMAGE)
