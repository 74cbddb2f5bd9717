"""The gIB NCCL RDMA installer DaemonSet and the Autopilot variant's Namespace, as manifest dicts (no Pulumi
resources).

On every A4 / A3 Ultra node the installer's init container runs the image's `/scripts/container_entry.sh
install` (the script ships inside the image; the upstream repository does not contain it), then copies
the image's /var/lib/gib/lib64 into the host's /home/kubernetes/bin/nvidia/lib64 and all of /var/lib/gib into
/home/kubernetes/bin/gib; the GPU pods mount those two host directories read-only (workloads/manifests/rdma.py). A pause
container keeps the pod, and so the DaemonSet, Ready. The program renders these objects instead of
`kubectl apply -f <url>`, so the image is pinned and the objects are part of the graph.

Follows GoogleCloudPlatform/container-engine-accelerators at commit 992db81257553607f1477945f1b3219632991829
(copies and their history in tests/reference/gpudirect-rdma/, compared field by field by
tests/test_nccl_installer_upstream.py):
- standard: gpudirect-rdma/nccl-rdma-installer.yaml, namespace `kube-system`, `priorityClassName:
  system-node-critical`, and since upstream commit 2da1c92ff7bd772a2c833710bb6c21dcfe6dfaae (2026-05-06)
  `container_entry.sh install` without `--install-nccl`;
- autopilot: gpudirect-rdma/nccl-rdma-installer-autopilot.yaml, its own `rdma-system` Namespace shipped with
  it, no priority class (Autopilot reserves system-node-critical for its own components), and still
  `install --install-nccl` upstream.
Both pin `nccl-plugin-gib:v1.1.1` (core.catalog.NCCL_GIB_INSTALLER_IMAGE). Those three points are the only
differences between the variants. One difference from upstream in both: `updateStrategy: OnDelete` instead of
`RollingUpdate` (reason at the field). Older revisions also ran a privileged `alpine:latest` init container that only
silenced martian-packet logging on the RDMA NICs (upstream deleted it in bdd28b0f, 2025-07-15); so do we.

The installer is privileged with hostNetwork/hostPID (it writes to the host); on Autopilot such a pod is
admitted only when it matches Google's allowlist for this workload, which is one more reason to keep the spec
identical to upstream.
"""

from __future__ import annotations

from typing import Literal

from core.catalog import NCCL_GIB_INSTALLER_IMAGE
from workloads.manifests.pod_security import namespace_labels

Mode = Literal["standard", "autopilot"]

NAME = "nccl-rdma-installer"
NAMESPACES: dict[str, str] = {"standard": "kube-system", "autopilot": "rdma-system"}

# GPU types whose nodes carry MRDMA NICs and need the plugin: upstream's node affinity, kept as upstream writes it
# (tests/test_nccl_installer_upstream.py checks that it covers every catalog GPU type).
RDMA_GPU_TYPES = ("nvidia-h200-141gb", "nvidia-b200")

# Upstream's pause container, pinned by digest upstream.
PAUSE_IMAGE = "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"


def install_script(mode: Mode) -> str:
    """The init container's script, as upstream writes it for `mode` (a YAML literal block: ends with a newline).

    `--install-nccl` only on Autopilot: upstream removed it from the Standard installer in 2da1c92f
    (2026-05-06) and kept it in the Autopilot one (both at 992db812)."""
    entry = "/scripts/container_entry.sh install" + (" --install-nccl" if mode == "autopilot" else "")
    return (
        "set -ex\n"
        f"{entry}\n"
        "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
        "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
        'echo "installation finishes"\n'
    )


def installer_namespace(mode: Mode) -> str:
    return NAMESPACES[mode]


def namespace_manifest() -> dict:
    """The `rdma-system` Namespace that the Autopilot variant ships alongside its DaemonSet, plus the Pod Security
    labels every namespace of the program carries: it enforces `privileged`, which the installer needs
    (privileged, hostNetwork, hostPID, hostPath), and warns and audits `restricted`. The labels are the one
    difference from upstream's Namespace; Autopilot's allowlist matches the DaemonSet, which stays identical."""
    ns = NAMESPACES["autopilot"]
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": ns, "labels": {"name": ns, **namespace_labels("privileged")}},
    }


def installer_daemonset(mode: Mode = "standard", image: str = NCCL_GIB_INSTALLER_IMAGE) -> dict:
    """The installer DaemonSet for a Standard or Autopilot cluster; `image` is the nccl-plugin-gib image."""
    if mode not in NAMESPACES:
        raise ValueError(f"mode must be 'standard' or 'autopilot' (got {mode!r})")
    labels = {"k8s-app": NAME}
    pod_spec: dict = {}
    if mode == "standard":
        # Standard only: Autopilot reserves system-node-critical for its own components.
        pod_spec["priorityClassName"] = "system-node-critical"
    pod_spec.update(
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "cloud.google.com/gke-accelerator",
                                        "operator": "In",
                                        "values": list(RDMA_GPU_TYPES),
                                    },
                                ]
                            },
                        ]
                    }
                }
            },
            # Tolerate every taint (GPU, spot, impending termination): the plugin must be on every GPU node.
            "tolerations": [{"operator": "Exists"}],
            "hostNetwork": True,
            "hostPID": True,
            "volumes": [
                {
                    "name": "library-dir-host",
                    "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64", "type": "DirectoryOrCreate"},
                },
                {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}},
            ],
            "initContainers": [
                {
                    "image": image,
                    "name": NAME,
                    "resources": {"requests": {"cpu": "150m"}},
                    "securityContext": {"privileged": True},
                    "volumeMounts": [
                        {"name": "library-dir-host", "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
                        {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"},
                    ],
                    "command": ["/bin/sh", "-c"],
                    "args": [install_script(mode)],
                }
            ],
            # The work is done in the init container; pause keeps the pod (and so the DaemonSet) Ready.
            "containers": [{"image": PAUSE_IMAGE, "name": "pause"}],
        }
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACES[mode], "labels": dict(labels)},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            # OnDelete, upstream RollingUpdate: a rolling update reruns the init container on every GPU node, one
            # at a time, including nodes under a running job, and its `cp -r` rewrites in place the NCCL plugin
            # libraries the training pods have mapped (hostPath, read-only). With OnDelete a changed installer
            # reaches new nodes (the GPU pools scale from zero; spot and flex-start nodes are short-lived) and a
            # node only when its installer pod is deleted (docs/operations.md, "Refreshing the gIB installer").
            # Kubernetes: OnDelete "new DaemonSet pods will only be created when you manually delete old
            # DaemonSet pods" (https://kubernetes.io/docs/tasks/manage-daemon/update-daemon-set/).
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": {"name": NAME, **labels}},
                "spec": pod_spec,
            },
        },
    }
