"""The prefetch Job's small-image runtime (`prefetchImage: python`): the rendered pod, and the promise that the
hash-pinned requirements file alone is enough to run the download.

Oracles: the installed distributions' own metadata (importlib.metadata; huggingface_hub and hf-xet are the
versions requirements-test.txt pins, those NeMo-RL's images lock), a bare interpreter that sees nothing but the
packages the file lists, and the loopback Hub (tests/hub_server.py) with the real client.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from core import catalog, images, prefetch
from tests.hub_server import FakeHub, Repo
from workloads import job_scripts as scripts

JOB = "kubernetes:batch/v1:Job"
REQUIREMENTS = Path(__file__).resolve().parents[1] / "pod_programs" / prefetch.REQUIREMENTS
COMMIT = "5" * 40
TOKEN = "hf_loopback_token_runtime_0123"


def pinned() -> dict[str, tuple[str, list[str]]]:
    """Project -> (version, hashes), parsed the way pip reads a hash-checking requirements file."""
    text = re.sub(r"\\\n\s*", " ", REQUIREMENTS.read_text(encoding="utf-8"))
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        spec, *opts = line.split()
        name, _, version = spec.partition("==")
        out[canonicalize_name(name)] = (version, [o.split("sha256:", 1)[1] for o in opts])
    return out


@pytest.mark.unit
def test_every_requirement_is_exact_and_hash_pinned():
    for name, (version, hashes) in pinned().items():
        assert version, name
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name


@pytest.mark.unit
def test_the_file_pins_the_clients_nemo_rl_locks_and_their_whole_dependency_closure():
    # pip runs with --no-deps: a dependency missing here would surface as an ImportError in the cluster.
    pins = pinned()
    for root in ("huggingface_hub", "hf-xet"):
        assert pins[canonicalize_name(root)][0] == distribution(root).version
    for name, (version, _) in pins.items():
        d = distribution(name)
        if d.version != version:
            continue  # only metadata of the very version pinned says what it requires
        for text in d.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate(catalog.PREFETCH_PYTHON_MARKERS):
                continue
            dep = canonicalize_name(req.name)
            assert dep in pins, f"{name} {version} requires {req}, missing from {REQUIREMENTS.name}"
            assert req.specifier.contains(pins[dep][0], prereleases=True), f"{name} needs {req}"


@pytest.fixture()
def prefetch_job(synth):
    r = synth("codelab")
    return r.get(JOB, "prefetch")


@pytest.mark.graph
def test_the_prefetch_job_installs_from_the_shipped_file_then_downloads_in_the_small_image(prefetch_job):
    pod = prefetch_job.inputs["spec"]["template"]["spec"]
    (install,) = pod["initContainers"]
    (download,) = pod["containers"]
    assert install["image"] == download["image"] == images.prefetch_python_image()
    assert "@sha256:" in download["image"]
    argv = install["command"]
    assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(argv)
    assert argv[argv.index("-r") + 1].endswith("/" + prefetch.REQUIREMENTS)
    # The requirements file reaches the pod in the ConfigMap the scripts come from.
    assert scripts.job_scripts()[prefetch.REQUIREMENTS] == REQUIREMENTS.read_text(encoding="utf-8")
    # Only the download sees the token and Lustre; the install sees the requirements and its target.
    assert {m["name"] for m in install["volumeMounts"]} == {"job-scripts", "prefetch-deps"}
    target = argv[argv.index("--target") + 1]
    assert {"name": "PYTHONPATH", "value": target} in download["env"]
    assert any(m["mountPath"] == target and m.get("readOnly") for m in download["volumeMounts"])


@pytest.mark.graph
def test_the_nemo_rl_image_setting_keeps_the_job_in_that_image(synth):
    r = synth("codelab", {"prefetchImage": "nemo-rl"})
    pod = r.get(JOB, "prefetch").inputs["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    (ctr,) = pod["containers"]
    # The release's image, as the Ray pods name it (imagePath streaming, the default: the stack's registry copy).
    head = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster").inputs["spec"]["headGroupSpec"]["template"]["spec"]
    assert ctr["image"] == head["containers"][0]["image"] and images.is_nemo_rl_image(ctr["image"])
    assert ctr["command"][:3] == ["uv", "run", "python"]


@pytest.mark.graph
def test_unknown_prefetch_image_is_refused_naming_the_key(synth):
    r = synth("dev", {"prefetchImage": "ubuntu"})
    assert r.error is not None and r.resources == []
    assert "prefetchImage" in r.error


def _site_of(names, dest: Path) -> Path:
    """A directory holding exactly the installed files of `names` (what `pip install --target` leaves)."""
    dest.mkdir()
    for name in names:
        d = distribution(name)
        tops = {Path(str(f)).parts[0] for f in d.files or [] if not str(f).startswith("..")}
        for top in tops:
            src = Path(d.locate_file(top))
            if src.exists() and not (dest / top).exists():
                (dest / top).symlink_to(src)
    return dest


@pytest.mark.graph
def test_the_rendered_download_runs_with_nothing_but_the_pinned_packages(prefetch_job, tmp_path):
    pod = prefetch_job.inputs["spec"]["template"]["spec"]
    (download,) = pod["containers"]
    argv = download["command"]
    scripts_dir = next(m["mountPath"] for m in download["volumeMounts"] if m["name"] == "job-scripts")
    marker = argv[argv.index("--marker") + 1]
    links = argv[argv.index("--links") + 1]
    # The files the ConfigMap ships, where the pod mounts them (a temporary directory standing in).
    shipped = tmp_path / "scripts"
    shipped.mkdir()
    for name, text in scripts.job_scripts().items():
        (shipped / name).write_text(text)
    deps = _site_of(pinned(), tmp_path / "deps")
    lustre = tmp_path / "lustre"
    token_file = tmp_path / "hf-token"
    token_file.write_text(TOKEN)
    with FakeHub(token=TOKEN) as hub:
        hub.add(
            Repo(
                "model",
                "acme/tiny-llm",
                COMMIT,
                {"config.json": b"{}", "model.safetensors": os.urandom(4096)},
                branches={"main": COMMIT},
            )
        )
        item = f"model:acme/tiny-llm@{COMMIT}"
        # The rendered command with its paths moved under tmp_path and the stack's items swapped for the
        # loopback Hub's; `python -S`: the bare interpreter without site-packages, so only PYTHONPATH counts.
        cmd = [
            sys._base_executable,
            "-S",
            str(shipped / Path(argv[1]).relative_to(scripts_dir)),
            "download",
            "--marker",
            str(lustre / Path(marker).name),
            "--links",
            str(lustre / Path(links).name),
            item,
        ]
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(deps),
            "HF_HOME": str(lustre / "hf"),
            "HF_TOKEN_PATH": str(token_file),
            "HF_ENDPOINT": hub.endpoint,
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "NO_PROXY": "127.0.0.1",
            "HOME": str(tmp_path),
        }
        assert argv[0] == "python", shlex.join(argv)
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (lustre / "models" / f"acme/tiny-llm@{COMMIT}" / "model.safetensors").is_file()
    assert TOKEN not in out.stdout + out.stderr
