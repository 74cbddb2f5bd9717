"""Pieces several pod templates share, each a small builder the pod calls (plain dicts, no Pulumi resources).

- `cpu_node_selector()`: where CPU pods land: the Ray head, the weights prefetch and the image pre-pull;
- `hf_environment()`: the Hugging Face cache on Lustre (HF_HOME), for every pod that reads or writes it;
- `lustre_volume()` / `lustre_mounts()`: the Lustre PVC, mounted at the same path everywhere: the whole volume for
  a platform's own pods, an experiment's own directory and the shared cache (read-only) for an experiment's;
- `scripts_volume()` / `scripts_mount()`: the job-scripts ConfigMap (pod_programs/, workloads/job_scripts.py);
- `configs_volume()` / `configs_mount()`: an experiment stack's own config files (workloads/job_scripts.py JobConfigs).

Token files and security contexts, shared the same way, are in pod_security.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from core.lustre_paths import HF_CACHE_DIR, experiment_dir, hf_home, mount_root
from core.naming import HF_SECRET, JOB_SCRIPTS

if TYPE_CHECKING:
    from core.settings import Settings

# Autopilot compute class of the CPU pods (see cpu_node_selector).
HEAD_COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
HEAD_COMPUTE_CLASS = "Balanced"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"

LUSTRE_VOLUME = "lustre"
SCRIPTS_VOLUME = "job-scripts"
# The job's programs are read by `python <file>`, never executed directly, and nothing may change them in the
# pod: read-only for everyone, no execute bit.
SCRIPTS_FILE_MODE = 0o444


def cpu_node_selector(*, autopilot: bool, cpu_pool: str) -> dict[str, str]:
    """The CPU pods' node selector, so they never land on (or wait for) GPU capacity."""
    if autopilot:
        # An explicit CPU compute selection. Balanced is a CPU compute class that needs no machine-family selector
        # (Performance would need one) and gives the head (GCS, dashboard, job driver) steady CPU; it selects no
        # accelerator.
        return {HEAD_COMPUTE_CLASS_LABEL: HEAD_COMPUTE_CLASS}
    # Standard: the autoscaling CPU pool (infra/cluster.py), apart from the system pool; GPU pools are tainted.
    return {NODE_POOL_LABEL: cpu_pool}


# An experiment's own cache of processed datasets (the `datasets` library writes Arrow files and locks there), in its
# own directory: its Ray pods mount the shared Hugging Face cache read-only.
DATASETS_CACHE_DIR = "hf-datasets"


def hf_environment(mount_path: str, experiment: Optional[str] = None) -> list[dict]:
    """HF_HOME on Lustre, so a model downloads once for every node and survives pod restarts. Non-secret: the
    token's *path* comes from the pod's token file (pod_security.py). An experiment's pods (`experiment`) keep their
    processed datasets in their own directory (HF_DATASETS_CACHE; huggingface_hub's cache stays the shared one)."""
    env = [{"name": "HF_HOME", "value": hf_home(mount_path)}]
    if experiment is not None:
        env.append({"name": "HF_DATASETS_CACHE", "value": f"{mount_root(mount_path)}/{DATASETS_CACHE_DIR}"})
    return env


def lustre_volume(pvc_name: str) -> dict:
    return {"name": LUSTRE_VOLUME, "persistentVolumeClaim": {"claimName": pvc_name}}


def lustre_mount(mount_path: str) -> dict:
    return {"name": LUSTRE_VOLUME, "mountPath": mount_path}


def lustre_mounts(
    mount_path: str, experiment: Optional[str] = None, *, cache: bool = True, cache_writable: bool = False
) -> list[dict]:
    """The Lustre claim's mounts: the whole volume for a platform's own pods; for an experiment's pods its own
    directory at the mount path (so every path under the mount is its own) and, with `cache`, the shared Hugging
    Face cache at its usual place, read-only unless `cache_writable` (its prefetch Job). The experiment namespaces'
    admission policy refuses anything else (workloads/manifests/tenancy.py)."""
    if experiment is None:
        return [lustre_mount(mount_path)]
    root = mount_root(mount_path)
    mounts: list[dict] = [{"name": LUSTRE_VOLUME, "mountPath": root, "subPath": experiment_dir(experiment)}]
    if cache:
        shared: dict = {"name": LUSTRE_VOLUME, "mountPath": hf_home(root), "subPath": HF_CACHE_DIR}
        mounts.append(shared if cache_writable else {**shared, "readOnly": True})
    return mounts


def token_secret_name(s: "Settings") -> str:
    """The Secret holding the stack's tokens: the platform's static one, or an experiment stack's own (its people's
    Hugging Face token and W&B key, beside the platform's in the same namespace)."""
    return s.names.experiment_secret if s.stack.platform_stack else HF_SECRET


def scripts_volume() -> dict:
    return {"name": SCRIPTS_VOLUME, "configMap": {"name": JOB_SCRIPTS, "defaultMode": SCRIPTS_FILE_MODE}}


CONFIGS_VOLUME = "job-configs"


def configs_volume(config_map: str) -> dict:
    """An experiment stack's own config files (jobConfigFiles): read-only for everyone, like the programs."""
    return {"name": CONFIGS_VOLUME, "configMap": {"name": config_map, "defaultMode": SCRIPTS_FILE_MODE}}


def configs_mount(configs_dir: str) -> dict:
    return {"name": CONFIGS_VOLUME, "mountPath": configs_dir, "readOnly": True}


def scripts_mount(scripts_dir: str) -> dict:
    # The whole directory, not subPath files: the kubelet then refreshes the files when the ConfigMap changes.
    return {"name": SCRIPTS_VOLUME, "mountPath": scripts_dir, "readOnly": True}
