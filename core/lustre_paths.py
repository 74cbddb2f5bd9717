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
