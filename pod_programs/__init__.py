"""Programs that run inside the pods, shipped verbatim by the job-scripts ConfigMap (workloads/job_scripts.py).

They import neither Pulumi nor `core` nor `workloads`: each runs in an image, with what that image has (the
standard library, its shipped siblings, and the image's own packages; tests/test_pod_programs.py parses every
import). The Ray head mounts the ConfigMap read-only at core.recipes SCRIPTS_DIR; the prefetch and data staging
Jobs mount it too.

`SHIPPED` is the one list of what the ConfigMap ships, in the ConfigMap's order. A file's name is its ConfigMap
key and appears in the RayJob's entrypoint (whose change replaces a running job): never rename one. Its content
is the ConfigMap's data, so any edit, a comment included, changes what `pulumi preview` shows for the ConfigMap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DIR = Path(__file__).resolve().parent

# The images a program runs in (tests/test_pod_programs.py checks each program's imports against them):
# - NEMO_RL_IMAGE: NeMo-RL's own image, run with its `uv run python` from /opt/nemo-rl, i.e. in NeMo-RL's
#   environment (the release's uv.lock; tests/oracles/nemo_rl_environment/<release>.txt);
# - PREFETCH_IMAGE: the pinned slim Python image (core.catalog PREFETCH_PYTHON_PIN) with the hash-pinned packages of
#   prefetch-requirements.txt installed by the prefetch Job's init container (`prefetchImage: python`).
NEMO_RL_IMAGE = "nemo-rl"
PREFETCH_IMAGE = "python-prefetch"
# - PYTHON_IMAGE: the same pinned slim Python image with nothing installed (the standard library only).
PYTHON_IMAGE = "python"


@dataclass(frozen=True)
class Shipped:
    """One file of the ConfigMap."""

    name: str  # file name = ConfigMap key = the name the entrypoint runs
    images: tuple[str, ...]  # the images it runs in (empty: a data file, not a program)
    what: str


GSM8K_PREP = Shipped("prepare_gsm8k.py", (NEMO_RL_IMAGE,), "GSM8K as JSONL on Lustre; stage_data.py imports it")
STAGE_DATA = Shipped(
    "stage_data.py", (NEMO_RL_IMAGE,), "the data staging Job: datasets staged and checked on Lustre, before any GPU"
)
READINESS_GATE = Shipped("readiness_gate.py", (NEMO_RL_IMAGE,), "the readiness gate, first in the entrypoint")
GATE_CHECKS = Shipped("gate_checks.py", (NEMO_RL_IMAGE,), "the gate's decisions; readiness_gate.py imports it")
PREFETCH = Shipped("prefetch_hf.py", (PREFETCH_IMAGE, NEMO_RL_IMAGE), "the weights prefetch (download / wait)")
PREFETCH_REQUIREMENTS = Shipped("prefetch-requirements.txt", (), "the prefetch's hash-pinned packages")
EXPORT = Shipped(
    "export_checkpoints.py", (PREFETCH_IMAGE, NEMO_RL_IMAGE), "the checkpoint export, after training (a CPU Job)"
)
ATTEMPTS = Shipped("attempts.py", (NEMO_RL_IMAGE,), "bounded attempts of a standing-cluster job")
MEGATRON_GUARD = Shipped(
    "megatron_import_guard.py", (NEMO_RL_IMAGE,), "removes an interrupted HF -> Megatron conversion"
)
STAGE_WEIGHTS = Shipped(
    "stage_weights.py", (PREFETCH_IMAGE,), "weightsPath bucket-import: the model's files into the bucket (a CPU Job)"
)
LUSTRE_IMPORT = Shipped(
    "lustre_import.py", (PREFETCH_IMAGE,), "weightsPath bucket-import: Managed Lustre importData, waited on (a CPU Job)"
)
USER_CONFIGS = Shipped(
    "install_configs.py", (NEMO_RL_IMAGE,), "installs the user's own config files (jobConfigFiles) before training"
)

SHIPPED: tuple[Shipped, ...] = (
    GSM8K_PREP,
    STAGE_DATA,
    READINESS_GATE,
    GATE_CHECKS,
    PREFETCH,
    PREFETCH_REQUIREMENTS,
    EXPORT,
    MEGATRON_GUARD,
    ATTEMPTS,
    USER_CONFIGS,
    STAGE_WEIGHTS,
    LUSTRE_IMPORT,
)

# Programs that run in a Cloud Run job, not a pod: given to `python -c` as the job's arguments (infra/image_copy.py).
# Not in the ConfigMap; the same import rule holds.
PREWARM = Shipped("prewarm_image.py", (PYTHON_IMAGE,), "prewarms the image-streaming cache after the image copy")
CLOUD_RUN: tuple[Shipped, ...] = (PREWARM,)
