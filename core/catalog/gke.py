"""GKE and Compute Engine: version floors, limits, the APIs, maintenance, monitoring, disks, system namespaces
and paths, Shielded nodes. Each fact names its source.
"""

from __future__ import annotations

from typing import Optional

from core.catalog.gpus import SECURE_BOOT_MACHINE_TYPES

# MTU used on every VPC: the maximum, and the RoCE profile's default. Managed Lustre performs up to ~10 % better with
# 8,896 than with the default 1,460 (Managed Lustre "Performance considerations", "VPC network maximum transmission
# unit (MTU)", https://cloud.google.com/managed-lustre/docs/performance); the codelab's xpk primary VPC uses it too.
VPC_MTU = 8896

# --- GKE version floors -------------------------------------------------------------------------------
# The RayOperator add-on: "VERSION: the GKE version, which must be 1.30.0-gke.1747000 or later" (GKE "Enable the Ray
# operator on GKE", https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/how-to/enable-ray-on-gke).
# Lustre's default port 988 on GKE: "new GKE clusters running version 1.33.2-gke.4780000 or later" (Managed Lustre
# "Access Managed Lustre instances on GKE with the Managed Lustre CSI driver",
# https://cloud.google.com/managed-lustre/docs/lustre-csi-driver-new-volume, "Lustre communication ports"); an older
# Lustre page named 1.33.2-gke.4655000: the later one is kept.
RAY_OPERATOR_MIN_GKE = "1.30.0-gke.1747000"
LUSTRE_MODERN_PORT_MIN_GKE = "1.33.2-gke.4780000"


def parse_gke_version(v: str) -> tuple[int, ...]:
    """'1.33.2-gke.4780000' -> (1, 33, 2, 4780000); '1.33' -> (1, 33). Raises ValueError."""
    main, _, gke = v.partition("-gke.")
    parts = [int(p) for p in main.split(".")]
    if len(parts) < 2 or len(parts) > 3:
        raise ValueError(v)
    if gke:
        if len(parts) != 3:
            raise ValueError(v)
        parts.append(int(gke))
    return tuple(parts)


def version_at_least(version: str, floor: str) -> bool:
    """True when every GKE version matching `version` (a prefix such as '1.33' allowed) is >= floor."""
    have, need = parse_gke_version(version), parse_gke_version(floor)
    # A prefix like "1.33" stands for its lowest patch: compare padded with zeros.
    have = have + (0,) * (4 - len(have))
    need = need + (0,) * (4 - len(need))
    return have >= need


# Kubernetes minor version the rendered core objects are validated against (kubernetes-validate schemas).
KUBERNETES_MINOR = "1.33"

# --- Limits GCP and Kubernetes enforce on what the settings render ---------------------------------------------
# GKE Standard: at most 1,000 nodes per node pool per zone (GKE "Quotas and limits", "Nodes per node pool zone:
# 1,000", https://cloud.google.com/kubernetes-engine/quotas, read 2026-12). Every pool here lives in one zone
# (`zone`): the GPU pools scale to gpuNodes, the system pool has systemNodes.
GKE_MAX_NODES_PER_POOL_ZONE = 1000
# Control-plane authorized networks: "Public clusters can have up to 50 authorized network CIDR ranges; private
# clusters can have up to 100" (GKE "Add authorized networks for control plane access", Limitations,
# https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks). Read here as: 100 when the IP
# endpoint is private (privateEndpoint), 50 otherwise. Our nodes are always private, so if GKE counts every
# private-node cluster as private, 51-100 entries with a public endpoint would be accepted by GKE and refused
# here: the stricter reading, so nothing that passes preview fails at `up`.
GKE_MAX_AUTHORIZED_NETWORKS_PUBLIC = 50
GKE_MAX_AUTHORIZED_NETWORKS_PRIVATE = 100
# Integer fields of the Kubernetes objects and CRDs the program renders are int32 unless the schema says int64
# (Kubernetes API conventions, "Primitive types": "All public integer fields MUST use the Go int32 or Go int64
# types"; the RayJob CRD of KubeRay 1.4.2 and 1.7.0: backoffLimit, ttlSecondsAfterFinished and
# activeDeadlineSeconds are `format: int32`; batch/v1 Job parallelism, completions, backoffLimit are int32).
K8S_INT32_MAX = 2**31 - 1
# int64 fields (batch/v1 JobSpec.activeDeadlineSeconds: `format: int64` in the Kubernetes OpenAPI, kubernetes-validate's
# jobspec-batch-v1 schema) travel from the program as a protobuf Struct number, a double ("Represents a double
# value", google/protobuf/struct.proto Value.number_value): integers above 2**53 arrive rounded, and 2**63 - 1
# arrives as 2**63, which no int64 field takes. The largest value that reaches an int64 field exactly:
K8S_INT64_MAX = 2**63 - 1
PULUMI_EXACT_INT_MAX = 2**53 - 1
# Keys of a ConfigMap's data: at most 253 characters of [-._a-zA-Z0-9], not '.', '..' or '..'-prefixed (kubernetes
# staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go IsConfigMapKey, DNS1123SubdomainMaxLength;
# tests/oracles/kubernetes/).
K8S_CONFIGMAP_KEY_MAX = 253
K8S_CONFIGMAP_KEY_RE = r"[-._a-zA-Z0-9]+"
# Pulumi names: "a stack name cannot exceed 100 characters", "project names are limited to 100 characters" (pulumi/
# pulumi v3.259.0 sdk/go/common/tokens/stack_name.go:64-66, project.go:32-33).
PULUMI_STACK_NAME_MAX = 100
PULUMI_PROJECT_NAME_MAX = 100


# --- Day one on real Google Cloud: APIs, maintenance, monitoring, node identity, disks -------------------------
# Reviewed facts for the first `pulumi up` in a fresh project. Each names its source; sources dated
# "read 2026-11-30" were read on that day (research notes: docs/research/day1gcp.md).

# Google APIs the program calls, each declared as a `projects.Service` (never disabled on destroy).
# Service Usage (serviceusage.googleapis.com) is not in the list on purpose: declaring a service needs it
# already on (on by default in new projects; hashicorp/terraform-provider-google
# website/docs/r/google_project_service.html.markdown: "This resource requires the Service Usage API").
REQUIRED_APIS: dict[str, str] = {
    "compute.googleapis.com": "VPCs, subnets, firewalls, the PSA range",
    "container.googleapis.com": "the GKE cluster and node pools",
    "servicenetworking.googleapis.com": "the private-service-access connection Managed Lustre needs",
    "lustre.googleapis.com": "the Managed Lustre instance",
    "storage.googleapis.com": "the training bucket and its IAM binding",
    "iam.googleapis.com": "the node service account",
    "cloudresourcemanager.googleapis.com": "project IAM bindings and the project-number lookup",
    "monitoring.googleapis.com": "the dashboard and GKE/DCGM metrics",
    "logging.googleapis.com": "GKE system and Ray logs",
}

# Enabling an API is eventually consistent: the provider returns once the operation is done and the
# service is listed, yet the first call can still fail with "API has not been used in project ... If you
# enabled this API recently, wait a few minutes". The provider's own guide recommends a sleep resource
# after enabling (hashicorp/terraform-provider-google@0937ec5b
# website/docs/guides/google_project_service.html.markdown, "Newly activated service errors"; issue #8214).
API_PROPAGATION_WAIT = "90s"

# Maintenance exclusion that keeps GKE from draining GPU nodes for minor or node upgrades during a run, with the
# scope Google's A4 blueprint uses (GoogleCloudPlatform/cluster-toolkit@10470803 examples/gke-a4/gke-a4.yaml), but
# bounded (MAINTENANCE_EXCLUSION_MAX_DAYS below) instead of the blueprint's UNTIL_END_OF_SUPPORT.
MAINTENANCE_EXCLUSION_NAME = "no-minor-or-node-upgrades-during-run"
MAINTENANCE_EXCLUSION_SCOPE = "NO_MINOR_OR_NODE_UPGRADES"

# GKE monitoring components. `enable_components` replaces GKE's list, so the program names every one it
# wants: Cluster Toolkit's gke-cluster default (modules/scheduler/gke-cluster/variables.tf
# monitoring_components @10470803) plus DCGM (its enable_dcgm_monitoring). Floors from pulumi-gcp 10.2.0
# container/_inputs.py ClusterMonitoringConfigArgs ("KUBELET and CADVISOR are only supported in GKE
# 1.29.3-gke.1093000 and above. JOBSET is only supported in GKE 1.32.1-gke.1357001 and above") and GKE's
# cAdvisor/Kubelet page (kubernetes-engine/docs/how-to/cadvisor-kubelet-metrics). GKE refuses a component
# the version does not support with a 400 (e.g. WORKLOADS above 1.24: mozilla/terraform-modules PR #69).
# DCGM: no floor found in the provider docs; every accelerator here needs a later GKE than any DCGM floor
# (A3 Ultra >= 1.31.4-gke.1183000), so None.
MONITORING_COMPONENTS: dict[str, Optional[str]] = {
    "SYSTEM_COMPONENTS": None,
    "POD": None,
    "DAEMONSET": None,
    "DEPLOYMENT": None,
    "STATEFULSET": None,
    "STORAGE": None,
    "HPA": None,
    "CADVISOR": "1.29.3-gke.1093000",
    "KUBELET": "1.29.3-gke.1093000",
    "JOBSET": "1.32.1-gke.1357001",
    "DCGM": None,
}
# The CPU system pool's boot disk (infra/cluster.py), which also backs its pods' ephemeral storage: the Ray head,
# the weights prefetch, the submitter, the NeMo-RL image layers.
SYSTEM_BOOT_DISK_TYPE = "pd-balanced"
SYSTEM_BOOT_DISK_GB = 200

# Roles of the nodes' own service account: GKE's documented minimum and nothing else (it already carries the logging
# and monitoring permissions; no default stack reads a private Artifact Registry). Sources: security.py,
# NODE_SERVICE_ACCOUNT_MINIMUM_ROLE.
NODE_SERVICE_ACCOUNT_ROLES: tuple[str, ...] = ("roles/container.defaultNodeServiceAccount",)

# System namespaces the program must never create or delete: Kubernetes reserves `kube-` and owns `default`
# (kubernetes.io/docs/concepts/overview/working-with-objects/namespaces: "Avoid creating namespaces with the
# prefix kube-"; `default` cannot be deleted); GKE manages its own (GKE Warden denies writes to managed
# namespaces: "the namespace \"kube-system\" is managed", gitlab-org/charts/gitlab issue 5007), named with
# `gke-`/`gmp-` prefixes (gke-gmp-system, gke-managed-*, gmp-system, gmp-public).
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
SYSTEM_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")

# Paths inside the Ray pods that something else owns; the Lustre mount must neither hide them (be one of
# them or a parent) nor sit inside them. Pod mounts: the gIB plugin and GPU driver directories from Google's
# RDMA manifests (container-engine-accelerators gpudirect-rdma/nccl-test-a4.yaml: /usr/local/gib and
# /usr/local/nvidia), the workers' memory-backed /dev/shm. Image paths: NeMo-RL's working directory, and
# /tmp, where Ray keeps its session directory /tmp/ray (sockets, logs; the GKE Ray add-on's log sidecar reads
# it). The rest are the root filesystem's system trees.
GPU_DRIVER_MOUNT = "/usr/local/nvidia"
GIB_MOUNT = "/usr/local/gib"
SHM_MOUNT = "/dev/shm"
RAY_TMP_DIR = "/tmp"
SYSTEM_TREES = (
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/usr",
    "/etc",
    "/var",
    "/run",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/root",
)


# Shielded nodes: secure boot + integrity monitoring on Standard pools where the machine type supports it. GPU
# machine types: the records' `secure_boot` (gpus.py, SECURE_BOOT_MACHINE_TYPES, with its sources).
# CPU pools: Secure Boot support is a property of the boot image, not of a general-purpose machine type; COS
# (GKE's default node image) supports every Shielded VM feature (Compute Engine "OS image security features",
# cloud.google.com/compute/docs/images/os-details#security-features). Compute Engine leaves Secure Boot off by
# default only "because unsigned drivers and other low-level software might not be compatible"
# (cloud.google.com/compute/shielded-vm/docs/modifying-shielded-vm); our nodes load only GKE's signed drivers.
SECURE_BOOT_IMAGE_TYPES: frozenset[str] = frozenset({"COS_CONTAINERD"})


# Compute Engine's accelerator-optimized machine families (GPU machines; cloud.google.com/compute/docs/
# accelerator-optimized-machines): their drivers and NIC plugins decide, so only checked types get Secure Boot.
ACCELERATOR_MACHINE_SERIES: frozenset[str] = frozenset({"a2", "a3", "a4", "a4x", "g2", "g4"})


def supports_secure_boot(machine_type: str, image_type: str = "COS_CONTAINERD") -> bool:
    """GPU machine types must be on the checked list; CPU machine types only need a Secure Boot image."""
    if image_type not in SECURE_BOOT_IMAGE_TYPES:
        return False
    if machine_type.split("-", 1)[0] in ACCELERATOR_MACHINE_SERIES:
        return machine_type in SECURE_BOOT_MACHINE_TYPES
    return True


# --- The Pulumi CLI --------------------------------------------------------------------------------------------
# The RayJob uses the `replaceWith` resource option (a changed RayCluster replaces the RayJob with it). The engine
# gained it in pulumi/pulumi 3.207.0 (CHANGELOG 3.207.0, 2025-11-12, PR #20693); with an older CLI the Python SDK
# stops with "The Pulumi CLI does not support the ReplaceWith option" (pulumi 3.272.0 runtime/resource.py).
PULUMI_CLI_MIN_VERSION = "3.207.0"
# Pulumi.yaml's `requiredPulumiVersion` (a semver range) is checked by `preview`, `up`, `destroy`, `refresh` and
# `import` from 3.219.0 on (CHANGELOG 3.219.0, 2026-02-05, PR #21627, plugin.ValidatePulumiVersionRange); older CLIs
# read the key as an unknown project attribute and ignore it, so `make preview/up/destroy` check the version too.
PULUMI_REQUIRED_VERSION_ENFORCED_FROM = "3.219.0"
# `pulumi config set-all --json` (values in the shape `pulumi config --json` prints): pulumi/pulumi 3.202.0
# (CHANGELOG 3.202.0, 2025-10-10, PR #19427). `pulumi config set --path` has set list items and object fields
# since long before the CLI versions this project needs.
PULUMI_SET_ALL_JSON_MIN_VERSION = "3.202.0"
