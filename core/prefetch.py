"""The weights prefetch: what it downloads, where it leaves it, and the commands that download or wait for it.

Pure code. `plan()` turns a recipe's model (at its pinned revision) into the items of `pod_programs/prefetch_hf.py`,
its completion marker and the model path the job trains from (datasets are the data staging Job's: core/data.py):

- the Hugging Face cache is `<mount>/huggingface_cache` (the job's HF_HOME), so NeMo-RL's own downloads and
  the prefetch share one copy on Lustre;
- the marker is `<mount>/prefetch/<digest>.json`, the digest naming the items, so a changed model or revision can
  never be mistaken for a finished one;
- the model path is `<mount>/models/<org>/<name>@<revision>`, a symlink the program points at the snapshot
  it downloaded. NeMo-RL has no revision setting but accepts a local path as `policy.model_name`
  (docs/research/ttfs.md §2), so the job trains from exactly the pinned revision, even when the revision is a tag;
- `job_timeout_seconds()` sizes the Job's deadline and Pulumi timeout: pulumi-kubernetes gives up on a Job after
  10 minutes unless customTimeouts says otherwise (the Pulumi registry's kubernetes batch/v1 Job page); for a model
  outside the catalog, whose size is known only in the pod, a ceiling, while the download sizes its own deadline from
  the Hub's file list.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Optional

import pod_programs
from core import catalog
from core.lustre_paths import mount_root

SCRIPT = pod_programs.PREFETCH.name
# The download's Python dependencies, pinned with hashes (tools/prefetch_requirements.py writes it).
REQUIREMENTS = pod_programs.PREFETCH_REQUIREMENTS.name
MODELS_DIR = "models"
MARKERS_DIR = "prefetch"

# Slowest Hub download the Job's timeout still tolerates, and what it adds for the image and the API calls.
SLOWEST_DOWNLOAD_BYTES_PER_S = 50e6
TIMEOUT_MARGIN_SECONDS = 30 * 60
# A model the catalog does not know has no size offline (the program has no network): the Job, Pulumi's wait and an
# own-cluster job's wait get the deadline of this many bytes, and the download itself, which reads the repository's
# real file list with sizes from the Hub API in the pod, stops at its own, tighter deadline
# (pod_programs/prefetch_hf.py) and refuses at once what would not fit in this one. 2 TB: well above the largest open
# checkpoints NeMo-RL's recipes train (a 405B model in bf16 is ~810 GB).
UNKNOWN_MODEL_CEILING_BYTES = 2_000_000_000_000


def revision_problem(revision: str) -> Optional[str]:
    """None when `revision` pins content: a 40-hex commit id (catalog HF_COMMIT_RE; branches and tags move)."""
    if re.fullmatch(catalog.HF_COMMIT_RE, revision):
        return None
    return (
        f"{revision!r} is not a commit hash (40 lowercase hex digits); pin the model by the commit of the revision "
        "you want (its commit history on the Hub): branches such as 'main' and tags can be moved"
    )


def default_revision(model_name: str) -> Optional[str]:
    facts = catalog.MODELS.get(model_name)
    return facts.revision if facts else None


@dataclass(frozen=True)
class PrefetchPlan:
    model_name: str
    revision: str
    items: tuple[str, ...]
    marker: str
    links_dir: str
    model_path: str
    download_bytes: int


def plan(*, model_name: str, revision: str, mount_path: str) -> PrefetchPlan:
    problem = revision_problem(revision)
    if problem:
        raise ValueError(problem)
    items = (f"model:{model_name}@{revision}",)
    digest = hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()[:16]
    m = mount_root(mount_path)
    facts = catalog.MODELS.get(model_name)
    return PrefetchPlan(
        model_name=model_name,
        revision=revision,
        items=items,
        marker=f"{m}/{MARKERS_DIR}/{digest}.json",
        links_dir=f"{m}/{MODELS_DIR}",
        model_path=f"{m}/{MODELS_DIR}/{model_name}@{revision}",
        download_bytes=facts.weight_bytes if facts else 0,
    )


def download_argv(
    p: PrefetchPlan, scripts_dir: str, *, in_nemo_rl_image: bool = True, imported: Optional[str] = None
) -> list[str]:
    """The download command: through `uv run` in the NeMo-RL image (its environment has huggingface_hub),
    with the image's own `python` in the small Python image (the packages come from install_argv). `imported`: the
    staging manifest's name when the model was imported into its path instead (core/weights.py)."""
    python = ["uv", "run", "python"] if in_nemo_rl_image else ["python"]
    return [
        *python,
        f"{scripts_dir}/{SCRIPT}",
        "download",
        "--marker",
        p.marker,
        "--links",
        p.links_dir,
        "--rate",
        f"{SLOWEST_DOWNLOAD_BYTES_PER_S:.0f}",
        "--margin",
        str(TIMEOUT_MARGIN_SECONDS),
        "--job-deadline",
        str(job_timeout_seconds(p.download_bytes)),
        *(["--imported", imported] if imported else []),
        *p.items,
    ]


def install_argv(scripts_dir: str, target: str) -> list[str]:
    """Install the download's dependencies into `target` in the small Python image: exactly the hash-pinned
    wheels of REQUIREMENTS (--require-hashes refuses anything else, --no-deps keeps pip from resolving more,
    --only-binary never builds), nothing cached, and no warning for running as root (the image's user)."""
    return [
        "python",
        "-m",
        "pip",
        "install",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--root-user-action=ignore",
        "--require-hashes",
        "--no-deps",
        "--only-binary=:all:",
        "--target",
        target,
        "-r",
        f"{scripts_dir}/{REQUIREMENTS}",
    ]


def wait_argv(p: PrefetchPlan, scripts_dir: str, timeout_seconds: int) -> list[str]:
    return [
        "uv",
        "run",
        "python",
        f"{scripts_dir}/{SCRIPT}",
        "wait",
        "--marker",
        p.marker,
        "--timeout",
        str(int(timeout_seconds)),
        *p.items,
    ]


def job_timeout_seconds(download_bytes: int) -> int:
    """How long the prefetch Job may run and Pulumi waits for it: the download at the slowest tolerated rate, plus
    margin; `download_bytes` 0 (a model outside the catalog) takes UNKNOWN_MODEL_CEILING_BYTES."""
    size = download_bytes or UNKNOWN_MODEL_CEILING_BYTES
    return int(size / SLOWEST_DOWNLOAD_BYTES_PER_S) + TIMEOUT_MARGIN_SECONDS
