"""The GPU networks of A4 / A3 Ultra nodes, defined once for the cluster objects and the pods.

Builds plain manifest dicts (no Pulumi resources):
- `network_objects()`: the 18 cluster-scoped `networking.gke.io/v1` objects that map the node's extra NICs
  to Kubernetes networks: `gvnic-1` (NetDevice) and `rdma-0..7` (RDMA), each a GKENetworkParamSet plus a
  `Network` of type Device pointing at it (the tutorial's network-mapping.yaml).
- `interfaces_annotation()`: the pod annotations that attach those networks as eth1..eth9.
- `rdma_pod_mixin()`: everything an unprivileged GPU pod needs to use gIB/RDMA (annotations, the host's
  driver and gIB plugin directories, NCCL env, and a shell prefix to run before the workload).

The pod side follows Google's A4 NCCL test pods (container-engine-accelerators gpudirect-rdma/
nccl-test-a4.yaml and nccl-test-a4-autopilot.yaml): no `privileged`, no `hostNetwork`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from core.catalog import NCCL_NET_PLUGIN, Accelerator, NemoRlRelease
from core.naming import GVNIC_NETWORK, RDMA_NETWORKS

NETWORKING_API_VERSION = "networking.gke.io/v1"

# The pod's primary interface stays on the cluster's default network: Kubernetes Services, the Ray GCS and
# Lustre (reached over the primary VPC) all use eth0.
DEFAULT_INTERFACE = "eth0"
DEFAULT_NETWORK = "default"

# Host directories the gIB installer DaemonSet fills on every GPU node, and where the pods see them.
NVIDIA_HOST_DIR = "/home/kubernetes/bin/nvidia"
NVIDIA_MOUNT = "/usr/local/nvidia"
GIB_HOST_DIR = "/home/kubernetes/bin/gib"
GIB_MOUNT = "/usr/local/gib"
SET_NCCL_ENV = f"{GIB_MOUNT}/scripts/set_nccl_env.sh"

# The library path of every Ray process that may run NCCL: the gIB NCCL plugin first, then the node's driver
# libraries (Google's gIB docs and the tutorial's worker script; nccl-test-a4.yaml sets the driver part). ONE
# definition for the GPU workers' env and the CPU head's: NeMo-RL's driver runs on the head and starts Ray with
# `runtime_env={"env_vars": dict(os.environ)}` (nemo_rl/distributed/virtual_cluster.py `init_ray`, v0.4.0-v0.7.0),
# and runtime-env variables replace the node's, so every actor on a GPU worker gets the head's LD_LIBRARY_PATH.
# On the head the two directories do not exist (no GPU, no gIB mount); the dynamic loader skips them.
WORKER_LD_LIBRARY_PATH = f"{GIB_MOUNT}/lib64:{NVIDIA_MOUNT}/lib64"


def library_path(release: NemoRlRelease) -> str:
    """The Ray pods' LD_LIBRARY_PATH: ours first, then the image's own entries (catalog `image_library_path`),
    which the pod-level value would otherwise drop (v0.7.0 keeps its pip cuDNN there for Transformer Engine)."""
    return ":".join([WORKER_LD_LIBRARY_PATH, *release.image_library_path])


def library_path_env(release: NemoRlRelease) -> dict:
    """The LD_LIBRARY_PATH entry of a Ray container's env: the same value on the GPU workers and the CPU head."""
    return {"name": "LD_LIBRARY_PATH", "value": library_path(release)}


def pod_networks() -> list[tuple[str, str]]:
    """(interface, network) in attachment order: eth0 default, eth1 gvnic-1, eth2..eth9 rdma-0..7."""
    extra = [GVNIC_NETWORK, *RDMA_NETWORKS]
    return [(DEFAULT_INTERFACE, DEFAULT_NETWORK)] + [(f"eth{i + 1}", net) for i, net in enumerate(extra)]


# A VPC's or subnet's name: a string, or a value the engine resolves to one (the component passes the networks'
# name outputs, so the objects wait for the VPCs).
NameLike = Any


def network_objects(
    gvnic_vpc: NameLike, gvnic_subnet: NameLike, rdma_vpc: NameLike, rdma_subnets: Sequence[NameLike]
) -> list[dict]:
    """GKENetworkParamSet + Network for gvnic-1 and rdma-0..7, in that order (18 objects, cluster-scoped).

    `rdma_subnets[i]` backs `rdma-i`; the node pool attaches the subnets in the same order, so the i-th RDMA
    NIC of a node and the i-th pod network agree.
    """
    if len(rdma_subnets) != len(RDMA_NETWORKS):
        raise ValueError(f"need {len(RDMA_NETWORKS)} RDMA subnets, one per GPU NIC (got {len(rdma_subnets)})")
    backing = [(GVNIC_NETWORK, gvnic_vpc, gvnic_subnet, "NetDevice")]
    backing += [(net, rdma_vpc, subnet, "RDMA") for net, subnet in zip(RDMA_NETWORKS, rdma_subnets, strict=True)]
    objects: list[dict] = []
    for name, vpc, subnet, device_mode in backing:
        objects.append(
            {
                "apiVersion": NETWORKING_API_VERSION,
                "kind": "GKENetworkParamSet",
                "metadata": {"name": name},
                "spec": {"vpc": vpc, "vpcSubnet": subnet, "deviceMode": device_mode},
            }
        )
        objects.append(
            {
                "apiVersion": NETWORKING_API_VERSION,
                "kind": "Network",
                "metadata": {"name": name},
                "spec": {
                    "type": "Device",
                    "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": name},
                },
            }
        )
    return objects


def interfaces_annotation() -> dict[str, str]:
    """Pod annotations attaching all 10 interfaces; without them NCCL silently falls back to TCP."""
    interfaces = [{"interfaceName": iface, "network": net} for iface, net in pod_networks()]
    return {
        "networking.gke.io/default-interface": DEFAULT_INTERFACE,
        "networking.gke.io/interfaces": json.dumps(interfaces, separators=(",", ":"), sort_keys=True),
    }


@dataclass(frozen=True)
class RdmaMixin:
    """What a GPU pod template merges in to use gIB/RDMA. Fresh lists on every call: callers may extend them."""

    annotations: dict[str, str]
    volumes: list[dict]
    volume_mounts: list[dict]
    env: list[dict]
    # Shell snippet for the container's shell before the workload starts (joined with `&&` by the caller).
    startup_prefix: str


def rdma_pod_mixin(accelerator: Accelerator, release: NemoRlRelease) -> RdmaMixin:
    """The RDMA pod mixin for one GPU type (the tuner config differs between A4 and A3 Ultra) and the NeMo-RL
    release whose image the pod runs (its own library path entries)."""
    volumes = [
        {"name": "nvidia-install-dir-host", "hostPath": {"path": NVIDIA_HOST_DIR}},
        {"name": "gib-nccl-plugin", "hostPath": {"path": GIB_HOST_DIR}},
    ]
    # Read-only: the pods only load libraries from here, and Autopilot admits these hostPaths read-only
    # (Google's nccl-test-a4-autopilot.yaml mounts them the same way).
    volume_mounts = [
        {"name": "nvidia-install-dir-host", "mountPath": NVIDIA_MOUNT, "readOnly": True},
        {"name": "gib-nccl-plugin", "mountPath": GIB_MOUNT, "readOnly": True},
    ]
    env_values = [
        ("NCCL_NET", NCCL_NET_PLUGIN),
        # RoCE v2 GID of the MRDMA NICs.
        ("NCCL_IB_GID_INDEX", "3"),
        ("NCCL_CROSS_NIC", "0"),
        ("NCCL_NET_GDR_LEVEL", "PIX"),
        ("NCCL_TUNER_CONFIG_PATH", accelerator.tuner_config),
        # Bootstrap / control traffic of NCCL, Gloo and TensorPipe stays on the pod's primary interface.
        ("NCCL_SOCKET_IFNAME", DEFAULT_INTERFACE),
        ("GLOO_SOCKET_IFNAME", DEFAULT_INTERFACE),
        ("TP_SOCKET_IFNAME", DEFAULT_INTERFACE),
    ]
    # The installer DaemonSet fills the gIB directory after the node joins; until then the script is missing.
    # Stop the container (it restarts with backoff) instead of starting Ray with NCCL silently on TCP.
    startup_prefix = (
        f"if [ ! -r {SET_NCCL_ENV} ]; then "
        f'echo "{SET_NCCL_ENV} not found: is the nccl-rdma-installer DaemonSet running on this node?" >&2; '
        f"exit 1; fi; "
        f"source {SET_NCCL_ENV}"
    )
    return RdmaMixin(
        annotations=interfaces_annotation(),
        volumes=volumes,
        volume_mounts=volume_mounts,
        # The driver libraries come from the node (GKE installs them under /home/kubernetes/bin/nvidia) and the
        # gIB NCCL plugin from the installer's directory: WORKER_LD_LIBRARY_PATH, then the image's own entries.
        env=[library_path_env(release)] + [{"name": k, "value": v} for k, v in env_values],
        startup_prefix=startup_prefix,
    )
