"""The gIB NCCL RDMA installer DaemonSet, as a manifest dict (no Pulumi resources).

On every A4 / A3 Ultra node it copies the gIB NCCL plugin and its NCCL build into the host directories
/home/kubernetes/bin/gib and /home/kubernetes/bin/nvidia/lib64, which the GPU pods mount read-only
(workloads/rdma.py). The program renders it instead of `kubectl apply -f <url>` so the image is pinned
and the object is part of the graph.

Reproduced from GoogleCloudPlatform/container-engine-accelerators (read via the code index):
- standard:  gpudirect-rdma/nccl-rdma-installer.yaml at commit 155bfa49b7459a55c2352495d3eeb46a55637be6
- autopilot: gpudirect-rdma/nccl-rdma-installer-autopilot.yaml at commit
  0920249dd823fd507b5e9c5d41fb5ec5cb224ce9
Both pin `nccl-plugin-gib:v1.1.1`. Older revisions (e.g. 2c776f7e9656a2b6476f19938b738b4186000ce3,
`v1.0.6`) also ran a privileged `alpine:latest` init container that only silenced martian-packet logging
on the RDMA NICs; upstream dropped it, and so do we. The two variants differ only in namespace (Autopilot
uses its own `rdma-system` namespace) and in `priorityClassName: system-node-critical` (Standard only).

The installer itself is privileged with hostNetwork/hostPID (it writes to the host); on Autopilot such a
pod is admitted only when it matches Google's allowlist for this workload, which is one more reason to keep
the spec identical to upstream.
"""
from __future__ import annotations

from typing import Literal

from core.catalog import NCCL_GIB_INSTALLER_IMAGE

Mode = Literal["standard", "autopilot"]

NAME = "nccl-rdma-installer"
NAMESPACES: dict[str, str] = {"standard": "kube-system", "autopilot": "rdma-system"}

# GPU types whose nodes carry MRDMA NICs and need the plugin (upstream's node affinity).
RDMA_GPU_TYPES = ("nvidia-h200-141gb", "nvidia-b200")

# Upstream's pause container, pinned by digest upstream.
PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"

_INSTALL_SCRIPT = (
    "set -ex\n"
    "/scripts/container_entry.sh install --install-nccl\n"
    "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
    "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
    'echo "installation finishes"\n'
)


def installer_namespace(mode: Mode) -> str:
    return NAMESPACES[mode]


def namespace_manifest() -> dict:
    """The `rdma-system` Namespace that the Autopilot variant ships alongside its DaemonSet."""
    ns = NAMESPACES["autopilot"]
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"name": ns}}}


def installer_daemonset(mode: Mode = "standard", image: str = NCCL_GIB_INSTALLER_IMAGE) -> dict:
    """The installer DaemonSet for a Standard or Autopilot cluster; `image` is the nccl-plugin-gib image."""
    if mode not in NAMESPACES:
        raise ValueError(f"mode must be 'standard' or 'autopilot' (got {mode!r})")
    labels = {"k8s-app": NAME}
    pod_spec: dict = {}
    if mode == "standard":
        # Standard only: Autopilot reserves system-node-critical for its own components.
        pod_spec["priorityClassName"] = "system-node-critical"
    pod_spec.update({
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [
                {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": list(RDMA_GPU_TYPES)},
            ]},
        ]}}},
        # Tolerate every taint (GPU, spot, impending termination): the plugin must be on every GPU node.
        "tolerations": [{"operator": "Exists"}],
        "hostNetwork": True,
        "hostPID": True,
        "volumes": [
            {"name": "library-dir-host",
             "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64", "type": "DirectoryOrCreate"}},
            {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}},
        ],
        "initContainers": [{
            "image": image,
            "name": NAME,
            "resources": {"requests": {"cpu": "150m"}},
            "securityContext": {"privileged": True},
            "volumeMounts": [
                {"name": "library-dir-host", "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
                {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"},
            ],
            "command": ["/bin/sh", "-c"],
            "args": [_INSTALL_SCRIPT],
        }],
        # The work is done in the init container; pause keeps the pod (and so the DaemonSet) Ready.
        "containers": [{"image": PAUSE_IMAGE, "name": "pause"}],
    })
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACES[mode], "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": NAME, **labels}},
                "spec": pod_spec,
            },
        },
    }
