"""Where things live on the Lustre mount, for every program that reads or writes there: defined once."""

from __future__ import annotations

HF_CACHE_DIR = "huggingface_cache"


def mount_root(mount_path: str) -> str:
    """The Lustre mount path without a trailing slash; refuses a relative one."""
    m = mount_path.rstrip("/")
    if not m.startswith("/"):
        raise ValueError(f"mount_path must be absolute, got {mount_path!r}")
    return m


def hf_home(mount_path: str) -> str:
    """HF_HOME on Lustre: a model or dataset downloads once for every node and survives pod restarts (the GKE
    tutorial and the codelab put it on their shared volume for that reason)."""
    return f"{mount_root(mount_path)}/{HF_CACHE_DIR}"


# An experiment of a team platform mounts only these (core/settings/tenancy.py, enforced at admission by
# workloads/manifests/tenancy.py): its own directory read-write, at the mount root, so every path above (checkpoints,
# logs, attempts, datasets, prefetch markers and links) lands in it unchanged; the shared Hugging Face cache at its
# usual place, read-only for its Ray pods and written only by its prefetch Job.
EXPERIMENTS_DIR = "experiments"


def experiment_dir(experiment: str) -> str:
    """The experiment's own directory, relative to the volume's root (a `subPath`)."""
    return f"{EXPERIMENTS_DIR}/{experiment}"
