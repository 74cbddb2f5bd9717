"""Pinned images other than NeMo-RL's (whose pins are derived from the release records, nemo_rl.py), and the
`ImagePin` record. A digest is recorded only where a public source states it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImagePin:
    """A pinned image: `repo:tag`, plus `@sha256:<digest>` when a digest is known from a citable source.

    `digest` stays empty when no source publishes one: a digest is never guessed, and the program then pins by
    tag alone (checkov CKV_K8S_43 keeps failing for that image, listed in docs/security.md).
    """

    repo: str
    tag: str
    digest: str = ""  # "sha256:<64 hex>" or "" (unknown)
    digest_source: str = ""  # where the digest comes from, or why it is empty


# --- Images other than NeMo-RL --------------------------------------------------------------------------
# gIB NCCL RDMA installer, as in container-engine-accelerators gpudirect-rdma/nccl-rdma-installer*.yaml.
# Pinned by tag; the program never applies the upstream YAML from a URL.
NCCL_GIB_INSTALLER_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"

# Upstream pins the gIB installer by tag only (container-engine-accelerators gpudirect-rdma/nccl-rdma-installer.yaml
# @155bfa49b7459a55c2352495d3eeb46a55637be6); the DaemonSet stays as upstream ships it (Autopilot's allowlist).
NCCL_GIB_INSTALLER_PIN = ImagePin(
    "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib",
    "v1.1.1",
    "",
    "upstream publishes the tag only; no public source found for its digest",
)
