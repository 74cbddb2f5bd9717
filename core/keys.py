"""The project's config namespace and how a config key is written in messages: defined once."""

from __future__ import annotations

# Pulumi project name = config namespace (`nemo-rl-gke:<key>`); Pulumi.yaml's `name`.
PROJECT = "nemo-rl-gke"


def key(k: str) -> str:
    """`gpuNodes` -> `nemo-rl-gke:gpuNodes`, as `pulumi config` names it."""
    return f"{PROJECT}:{k}"
