"""Facts the program relies on, in one place, each with its source.

Nothing here builds resources. Settings validation, the components and the tests read these tables
instead of repeating literals, so a new GPU type, NeMo-RL release or Lustre tier is a one-line change.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


# --- Accelerators -------------------------------------------------------------------------------------
# Source: GKE "Optimize and scale RL with NVIDIA NeMo RL on GKE" (machine types, GKE version floors) and
# container-engine-accelerators gpudirect-rdma (gIB tuner configs), digested in FACTS.md §4.
@dataclass(frozen=True)
class Accelerator:
    gpu_type: str            # value of the node label cloud.google.com/gke-accelerator
    machine_type: str
    gpus_per_node: int
    family: str              # A4 / A3 Ultra
    tuner_config: str        # NCCL_TUNER_CONFIG_PATH inside pods (gIB plugin mounted at /usr/local/gib)
    min_gke_version: str     # first GKE version that supports the machine type
    vcpus: int               # machine shape, used to size pod requests below allocatable
    memory_gib: int
    gpu_memory_gib: int
    # A4 and A3 Ultra support only Hyperdisk boot disks; the NeMo-RL image is ~30 GB, so leave room for two.
    boot_disk_type: str = "hyperdisk-balanced"
    boot_disk_gb: int = 500


ACCELERATORS: dict[str, Accelerator] = {
    "nvidia-b200": Accelerator(
        gpu_type="nvidia-b200", machine_type="a4-highgpu-8g", gpus_per_node=8, family="A4",
        tuner_config="/usr/local/gib/configs/tuner_config_a4.txtpb",
        min_gke_version="1.32.2-gke.1422000", vcpus=224, memory_gib=3968, gpu_memory_gib=180,
    ),
    "nvidia-h200-141gb": Accelerator(
        gpu_type="nvidia-h200-141gb", machine_type="a3-ultragpu-8g", gpus_per_node=8, family="A3 Ultra",
        tuner_config="/usr/local/gib/configs/tuner_config_a3u.txtpb",
        min_gke_version="1.31.4-gke.1183000", vcpus=224, memory_gib=2952, gpu_memory_gib=141,
    ),
}

# A4 / A3 Ultra nodes: one gVNIC NIC for the gVNIC VPC plus 8 MRDMA NICs, one per GPU (FACTS.md §2).
RDMA_NICS_PER_NODE = 8

# MTU used on every VPC: the RoCE profile's default, and what Cluster Toolkit/xpk use for the primary VPC
# because Lustre performs better with it (FACTS.md §2).
VPC_MTU = 8896


def accelerator(gpu_type: str) -> Accelerator:
    return ACCELERATORS[gpu_type]


# --- GKE version floors -------------------------------------------------------------------------------
# Source: GKE docs for the RayOperator add-on and for Managed Lustre's port (FACTS.md §3, §5). The Lustre
# docs name 1.33.2-gke.4655000 and the xpk docs 4780000; we take the later one to be safe.
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

# --- Limits GCP and Kubernetes enforce on what the settings render (issue 18) ---------------------------------
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


# --- Managed Lustre -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LustreTier:
    throughput_mbps_per_tib: int
    min_gib: int
    step_gib: int
    step_until_gib: int           # up to this capacity the step is step_gib ...
    large_step_gib: int           # ... above it, large_step_gib
    max_gib: int

    def is_valid_capacity(self, gib: int) -> bool:
        if gib < self.min_gib or gib > self.max_gib:
            return False
        if gib <= self.step_until_gib:
            return gib % self.step_gib == 0
        # Above the threshold: multiples of the large step (the reading that makes the maxima valid, below).
        return gib % self.large_step_gib == 0

    def next_valid_capacity(self, gib: int) -> Optional[int]:
        """Smallest valid capacity >= gib, or None above the maximum."""
        if gib <= self.min_gib:
            return self.min_gib
        if gib <= self.step_until_gib:
            c = -(-gib // self.step_gib) * self.step_gib
        else:
            c = -(-gib // self.large_step_gib) * self.large_step_gib
        return c if c <= self.max_gib else None

    def throughput_bytes_per_s(self, gib: int) -> float:
        """Aggregate throughput: capacity in TiB x tier (MB/s per TiB)."""
        return gib / 1024 * self.throughput_mbps_per_tib * 1e6


# Managed Lustre tiers as published on the "Performance tiers" page (read 2026-11-30:
# https://cloud.google.com/managed-lustre/docs/performance-tiers, and .../increase-capacity). Columns:
# tier (MB/s per TiB), min GiB, max GiB, small step, threshold, large step. The page gives one step up to the
# threshold and a large step above it, without saying what the large steps count from. Every documented
# maximum is a multiple of its large step (10,008,000 = 139 x 72,000; 20,016,000 = 139 x 144,000;
# 40,032,000 = 139 x 288,000) while no threshold is (1,530,000 / 72,000 = 21.25), so the reading that makes
# the maxima valid is "multiples of the large step above the threshold" -- an inference, not a quote.
# An instance created at or below the threshold can only grow up to the threshold ("Limitations on
# increasing capacity"), and capacity never shrinks. The Dynamic tier (25 MB/s per TiB aggregate, 472,000 to
# 84,016,000 GiB in steps of 472,000) is set with dynamic_tier_options, not per_unit_storage_throughput.
LUSTRE_TIER_TABLE_2026_11: tuple[tuple[int, int, int, int, Optional[int], Optional[int]], ...] = (
    (1000, 9_000, 10_008_000, 9_000, 1_530_000, 72_000),
    (500, 18_000, 20_016_000, 18_000, 3_060_000, 144_000),
    (250, 36_000, 40_032_000, 36_000, 6_120_000, 288_000),
    (125, 72_000, 12_240_000, 72_000, None, None),
)
LUSTRE_DYNAMIC_TIER = (25, 472_000, 84_016_000, 472_000)

LUSTRE_TIERS: dict[int, LustreTier] = {
    tier: LustreTier(tier, lo, step, threshold or hi, large or step, hi)
    for tier, lo, hi, step, threshold, large in LUSTRE_TIER_TABLE_2026_11
}

# LNet ports: 988 by default; an instance created with gke_support_enabled listens on 6988 and the cluster
# must then set enable_legacy_lustre_port (FACTS.md §5).
LUSTRE_PORT = 988
LUSTRE_LEGACY_PORT = 6988
LUSTRE_CSI_DRIVER = "lustre.csi.storage.gke.io"

# Root squash (pulumi-gcp 10.2.0 lustre.InstanceAccessRulesOptionsArgs; GoogleCloudPlatform/magic-modules
# mmv1/products/lustre/Instance.yaml @055860eaab28e39a5e68d92e49ed6ddd334c2787: accessRulesOptions is not
# `immutable`, so turning it on for an existing instance is an in-place PATCH, never a replacement). Every client
# that reaches the PSA range would otherwise mount as root. The job cannot run squashed: the NeMo-RL image runs as
# root (NVIDIA-NeMo/RL docker/Dockerfile @00d2af95f9e1b567ff058c15840787a36128aaa0: "USER root", "It is more
# convenient for users to run as root"), the pods set no runAsUser, and the prefetch writes the HF cache as root
# too. The Lustre client is the node's kernel (the GKE Lustre CSI driver mounts on the node), and the instance is
# reached over the primary VPC only, so its NID is the node's primary address: the primary subnet is exempt
# (NO_SQUASH) and every other address is squashed to nobody. Rule names: at most 16 alphanumerics or '_'.
LUSTRE_NO_SQUASH_RULE = "gke_nodes"
# Squashed root becomes nobody / nogroup (65534 on Ubuntu, the NeMo-RL image's base: cuda-dl-base ...-ubuntu24.04 in
# the same Dockerfile); 0, the API's default, would squash nothing.
LUSTRE_SQUASH_ID = 65534


# --- NeMo-RL releases -----------------------------------------------------------------------------------
# Source: NeMo-RL release notes / the images' `ray --version` (FACTS.md §7). rayVersion in a RayCluster must
# equal the Ray inside the image.
@dataclass(frozen=True)
class NemoRlRelease:
    tag: str
    ray_version: str
    grpo_entry: str          # GRPO entry script, relative to /opt/nemo-rl
    configs: frozenset       # example configs (relative to /opt/nemo-rl) the recipes may name
    # How the image's `ray job submit` joins the entrypoint words back into one string (core/shell.py):
    # `entrypoint=list2cmdline(entrypoint)` in ray python/ray/dashboard/modules/job/cli.py at 2.46.0, 2.49.2 and
    # 2.55.1 (read from the PyPI wheels); ray PR #63797 switched POSIX to shlex.join in Ray 2.60.
    ray_cli_join: str = "list2cmdline"
    # LD_LIBRARY_PATH entries the release's own Dockerfile puts in the image, in its order. A pod's `env` value
    # replaces the image's variable (Kubernetes expands `$(VAR)` only from the container's own env), so the Ray
    # pods' value (workloads/rdma.py library_path) must carry these after the gIB and driver directories.
    image_library_path: tuple[str, ...] = ()

    @property
    def image(self) -> str:
        return f"{NEMO_RL_IMAGE_REPO}:{self.tag}"


NEMO_RL_IMAGE_REPO = "nvcr.io/nvidia/nemo-rl"
NEMO_RL_WORKDIR = "/opt/nemo-rl"

_GRPO_70B = "examples/configs/grpo_math_70B_megatron.yaml"
_GEMMA3_27B = "examples/configs/recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml"
_GRPO_1B = "examples/configs/grpo_math_1B.yaml"

# The images' own LD_LIBRARY_PATH (NVIDIA-NeMo/RL docker/Dockerfile at each tag: v0.4.0 c751f811 and v0.5.0 6c708930
# add none; v0.7.0 81aa43dd adds, in this order of the final value, `/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib`
# (release stage, AWS EFA plugin discovery) before `/opt/nemo_rl_venv/lib/python3.13/site-packages/nvidia/cudnn/lib`
# (hermetic stage: "Point TE at the pip-installed cuDNN ... TE prioritizes system libraries by default, causing a
# version mismatch crash"). Each also keeps `${LD_LIBRARY_PATH}` of its base image nvcr.io/nvidia/cuda-dl-base,
# whose Dockerfile NVIDIA does not publish: those entries are unknown here, and the seeds replace them on v0.5.0
# (GKE tutorial worker env LD_LIBRARY_PATH=/usr/local/nvidia/lib64) without harm.
_V070_LIBRARY_PATH = ("/opt/amazon/ofi-nccl/lib", "/opt/amazon/efa/lib",
                      "/opt/nemo_rl_venv/lib/python3.13/site-packages/nvidia/cudnn/lib")

NEMO_RL_RELEASES: dict[str, NemoRlRelease] = {
    "v0.4.0": NemoRlRelease("v0.4.0", "2.46.0", "examples/run_grpo_math.py", frozenset({_GRPO_70B, _GRPO_1B})),
    "v0.5.0": NemoRlRelease("v0.5.0", "2.49.2", "examples/run_grpo_math.py",
                            frozenset({_GRPO_70B, _GRPO_1B, _GEMMA3_27B})),
    "v0.7.0": NemoRlRelease("v0.7.0", "2.55.1", "examples/run_grpo.py",
                            frozenset({_GRPO_70B, _GRPO_1B, _GEMMA3_27B}), image_library_path=_V070_LIBRARY_PATH),
}


# grpo.val_period each config above resolves to through NeMo-RL's `defaults:` chain, per release
# (examples/configs at v0.4.0 c751f811, v0.5.0 6c708930, v0.7.0 81aa43dd: grpo_math_1B.yaml and
# grpo_math_1B_megatron.yaml set 10; grpo_math_70B_megatron.yaml and the Gemma 3 recipes inherit it). A recipe
# that does not set val_period validates at this period (core.recipes.megatron_save_without_validation).
BASE_VAL_PERIOD: dict[tuple[str, str], int] = {
    (tag, config): 10 for tag, release in NEMO_RL_RELEASES.items() for config in release.configs}


# Checkpoint ranking metrics whose direction is known. NeMo-RL's `checkpointing.metric_name` is "val:<key>" or
# "train:<key>" (nemo_rl/algorithms/grpo.py asserts the prefix at the first save: v0.4.0 L1246, v0.5.0 L1497,
# v0.7.0 L2901) and CheckpointManager ranks by it with `higher_is_better` (nemo_rl/utils/checkpoint.py, read from
# the config at v0.4.0, v0.5.0 and v0.7.0) for keep_top_k pruning and the best checkpoint. Keys from grpo.py at
# v0.4.0: validate() returns "accuracy" (the base configs pair val:accuracy with higher_is_better: true); the
# training metrics hold "reward" and "loss". Any other metric needs its direction stated.
METRIC_HIGHER_IS_BETTER: dict[str, bool] = {"val:accuracy": True, "train:reward": True, "train:loss": False}
METRIC_PREFIXES: tuple[str, ...] = ("val:", "train:")


# --- Images other than NeMo-RL --------------------------------------------------------------------------
# gIB NCCL RDMA installer, as in container-engine-accelerators gpudirect-rdma/nccl-rdma-installer*.yaml.
# Pinned by tag; the program never applies the upstream YAML from a URL.
NCCL_GIB_INSTALLER_IMAGE = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"


# --- Models the recipes train ------------------------------------------------------------------------------
# Parameter counts from the model cards on Hugging Face (used for checkpoint sizing).
MODEL_PARAMS: dict[str, int] = {
    "Qwen/Qwen2.5-72B-Instruct": 72_700_000_000,
    "google/gemma-3-27b-it": 27_400_000_000,
}


# =====================================================================================================
# --- Day one on real Google Cloud (issue 9): APIs, maintenance, monitoring, node identity, disks -----
# =====================================================================================================
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

# Local SSDs bundled with the GPU machine types, used for node ephemeral storage (images, writable layers,
# emptyDirs) instead of the boot disk (Cluster Toolkit modules/compute/gke-node-pool/disk_definitions.tf
# @10470803: a3-ultragpu-8g and a4-highgpu-8g -> local_ssd_count_ephemeral_storage = 32). The count is
# set explicitly: 0 means "the machine's default" only for machines with a fixed count (GKE API
# EphemeralStorageLocalSsdConfig.local_ssd_count), and 32 says what is meant.
LOCAL_SSD_COUNT: dict[str, int] = {"a4-highgpu-8g": 32, "a3-ultragpu-8g": 32}
# Each local SSD disk holds 375 GiB (Compute Engine "About Local SSD disks"): 12,000 GiB of ephemeral storage per
# GPU node, against which the Ray workers' ephemeral-storage requests are sized (core/node_fit.py).
LOCAL_SSD_GIB = 375
# The CPU system pool's boot disk (infra/cluster.py), which also backs its pods' ephemeral storage: the Ray head,
# the weights prefetch, the submitter, the NeMo-RL image layers.
SYSTEM_BOOT_DISK_TYPE = "pd-balanced"
SYSTEM_BOOT_DISK_GB = 200

# Roles of the nodes' own service account: GKE's documented minimum and nothing else (issue 19 removed the
# logging/monitoring roles it already carries and a project-wide Artifact Registry reader no default stack used;
# see NODE_SERVICE_ACCOUNT_MINIMUM_ROLE below for the sources).
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
SYSTEM_TREES = ("/bin", "/sbin", "/lib", "/lib64", "/usr", "/etc", "/var", "/run", "/proc", "/sys", "/dev",
                "/boot", "/root")

# --- Readiness gate: what a healthy GPU node, fabric and Lustre look like -----------------------------------
# Read by the gate's settings (defaults and bounds) and rendered into the gate program's argv; the program
# itself (workloads/readiness_gate.py) imports nothing from here because it ships as a ConfigMap.
#
# Units: GB/s means 1e9 bytes/s, as nccl-tests prints it (`getBw` divides by 1.0E9; nccl-tests
# src/common.cu), and bus bandwidth ("busbw") is nccl-tests' figure: algbw = S/t, busbw = algbw x 2(n-1)/n
# for all-reduce and algbw x (n-1)/n for all-gather, S being the all-gather's whole output
# (NVIDIA/nccl-tests doc/PERFORMANCE.md @ 03a204a1f38aaea17f1a777885bb2d9600ba7eff). The two thresholds below
# apply to different figures and are not comparable with each other:
#   - all-gather: the sweep AVERAGE of busbw over 1 KiB..8 GiB (what nccl-tests prints as "Avg bus bandwidth");
#   - all-reduce: busbw at the LARGEST message of the sweep (8 GiB), where the fixed per-call cost is negligible.

# Cluster Toolkit's daily A4 and A3 Ultra GKE tests run `all_gather_perf -b 1K -e 8G -f 2 -g 1 -w 5 --iters 100`
# on 2 nodes and fail below an "Avg bus bandwidth" of 100 GB/s (GoogleCloudPlatform/cluster-toolkit
# tools/cloud-build/daily-tests/ansible_playbooks/test-validation/test-gke-a4.yml @ 7544c47e7388 and
# test-gke-a3-ultra.yml @ 1dbcc3b15374; the sweep is examples/gke-a4/nccl-jobset-example.yaml @ 0bcb0c2d3cb4).
GATE_SWEEP_MIN_BYTES = 1024
GATE_SWEEP_MAX_BYTES = 8 * 1024 ** 3
GATE_SWEEP_WARMUP = 5
GATE_SWEEP_ITERS = 100
GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS = 100.0

# Each A4 / A3 Ultra node has 8 CX-7 NICs, one per GPU, 3,200 Gbps together, i.e. 400 Gbps = 50 GB/s each;
# two gVNIC NICs add 400 Gbps for general networking (Compute Engine "Networking and GPU machines", section
# "A4 and A3 Ultra machine types", https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth).
RDMA_NIC_GBITPS = 400
# The gIB NCCL net plugin's name (its ncclNet->name): the value the pods' NCCL_NET selects, and what NCCL's
# log prints in `Using network gIB` and `via NET/gIB/<dev>` (Cluster Toolkit examples/gke-a4/
# nccl-jobset-example.yaml @ 0bcb0c2d3cb4: `# Force use of libnccl-gib` / `export NCCL_NET=gIB`; NCCL matches
# NCCL_NET against the plugin's name case-insensitively, NVIDIA/nccl v2.27.7-1 src/plugin/net.cc:166).
NCCL_NET_PLUGIN = "gIB"
# The primary interface (nic0, the node's eth0 on the primary VPC) is one of the two gVNIC NICs that share
# those 400 Gbps: 200 Gbps. Lustre traffic uses it, never the RDMA NICs (the Lustre instance is on the
# primary VPC), so nodes x this bounds what the GPU nodes can read or write together.
PRIMARY_NIC_GBITPS: dict[str, int] = {"a4-highgpu-8g": 200, "a3-ultragpu-8g": 200}

# All-reduce at 8 GiB across nodes: NCCL splits the data over one ring (channel) per rail, and each ring
# leaves the node through its own 50 GB/s NIC, so the rate at which every rank sends, which is what busbw
# measures, is at most 8 rings x 50 GB/s = 400 GB/s, for both machine types. The default floor is half of
# that bound: losing GPUDirect RDMA (staging through host memory), traffic on half
# the NICs (bound 200 GB/s) or a fall-back to TCP over gVNIC (<= 50 GB/s) each land below it, while a healthy
# 2-node gIB run stays above. This is a derived floor, not a published figure; the setting overrides it.
GATE_ALLREDUCE_LARGE_BUSBW_GBPS = 200.0


@dataclass(frozen=True)
class GateGpuFacts:
    """Per-GPU-type bandwidth facts the gate's settings are checked against."""

    gpu_type: str
    nvlink_bidirectional_gbps: float   # NVLink per GPU, both directions together (NVIDIA's headline figure)
    pcie_bidirectional_gbps: float     # the GPU's x16 host link, both directions together

    @property
    def implausible_busbw_gbps(self) -> float:
        """No busbw above this can be real, for any collective and any node count.

        A GPU moves data only over NVLink and its PCIe link (GPUDirect RDMA goes NIC <-> PCIe <-> GPU). busbw
        counts, per rank, the bytes a point-to-point algorithm must move: (n-1)/n x S received for all-gather,
        2(n-1)/n x S for all-reduce. With NVLink SHARP (NVLS) the switch reduces, so a GPU sends S and
        receives S while busbw still counts about 2S: all-reduce busbw can reach twice the one-way link rate,
        i.e. the bidirectional figure. Hence the bound: NVLink + PCIe, both directions. The NICs' line rate is
        NOT a bound: traffic inside a node rides NVLink, and multi-node busbw above the 50 GB/s per-GPU NIC
        rate is normal (Google's own floor, 100 GB/s, is twice that)."""
        return self.nvlink_bidirectional_gbps + self.pcie_bidirectional_gbps


# H200: NVLink 900 GB/s, PCIe Gen5 128 GB/s (NVIDIA H200 Tensor Core GPU datasheet, "Interconnect",
# https://www.nvidia.com/en-us/data-center/h200/). B200: NVLink 5 1.8 TB/s per GPU (NVIDIA HGX B200,
# https://www.nvidia.com/en-us/data-center/hgx/); PCIe Gen6 x16 256 GB/s is the fastest host link a B200
# supports; a host that runs it at Gen5 only makes the bound looser, never wrong.
GATE_GPU_FACTS: dict[str, GateGpuFacts] = {
    "nvidia-b200": GateGpuFacts("nvidia-b200", nvlink_bidirectional_gbps=1800.0, pcie_bidirectional_gbps=256.0),
    "nvidia-h200-141gb": GateGpuFacts("nvidia-h200-141gb", nvlink_bidirectional_gbps=900.0,
                                      pcie_bidirectional_gbps=128.0),
}

# Lustre: the gate expects fraction x min(instance aggregate throughput, nodes x primary NIC) for both the
# parallel write and the read of another node's files. Half by default: a short duration-based test from a
# few clients does not reach the instance's ceiling, but a slow mount (wrong port mode, MTU mismatch, a
# client on the wrong interface) falls far below half.
GATE_LUSTRE_FRACTION = 0.5
GATE_LUSTRE_SECONDS = 15
GATE_LUSTRE_THREADS_PER_NODE = 16
GATE_LUSTRE_BLOCK_BYTES = 16 * 1024 ** 2     # O_DIRECT transfer size: a multiple of the page size
GATE_LUSTRE_MAX_BYTES_PER_NODE = 64 * 1024 ** 3


# =====================================================================================================
# --- Hardening: image digests, token files, Ray token auth, network peers, shielded nodes (issue 11) ---
# Research and sources in full: docs/research/harden.md (copied into docs/security.md where users need it).
# =====================================================================================================
@dataclass(frozen=True)
class ImagePin:
    """A pinned image: `repo:tag`, plus `@sha256:<digest>` when a digest is known from a citable source.

    `digest` stays empty when no source publishes one: a digest is never guessed, and the program then pins by
    tag alone (checkov CKV_K8S_43 keeps failing for that image, listed in docs/security.md).
    """

    repo: str
    tag: str
    digest: str = ""            # "sha256:<64 hex>" or "" (unknown)
    digest_source: str = ""     # where the digest comes from, or why it is empty


# Searched (code index: `nemo-rl:v0.X.0@sha256`, `nvidia/nemo-rl@sha256`; docs/pages corpora for the NGC catalog):
# no public source states the digests of the NeMo-RL images, so none is recorded.
_NO_NEMO_RL_DIGEST = "no public source found for this tag's digest (searched 2026-11; see docs/research/harden.md §5)"
NEMO_RL_IMAGE_PINS: dict[str, ImagePin] = {
    tag: ImagePin(NEMO_RL_IMAGE_REPO, tag, "", _NO_NEMO_RL_DIGEST) for tag in ("v0.4.0", "v0.5.0", "v0.7.0")
}
# Upstream pins the gIB installer by tag only (container-engine-accelerators gpudirect-rdma/nccl-rdma-installer.yaml
# @155bfa49b7459a55c2352495d3eeb46a55637be6); the DaemonSet stays as upstream ships it (Autopilot's allowlist).
NCCL_GIB_INSTALLER_PIN = ImagePin(
    "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib", "v1.1.1", "",
    "upstream publishes the tag only; no public source found for its digest")

# Hugging Face: huggingface_hub reads the token from the file named by HF_TOKEN_PATH from 0.23.0, but HF_TOKEN in
# the environment takes precedence (huggingface_hub src/huggingface_hub/utils/_auth.py; FACTS.md §11).
HF_TOKEN_PATH_MIN_HUB = "0.23.0"
# W&B: wandb reads the netrc file named by NETRC (wandb/sdk/lib/apikey.py; FACTS.md §11); the entry is for the
# API host the client logs in to.
WANDB_NETRC_MACHINE = "api.wandb.ai"

# Ray token authentication: RAY_AUTH_MODE=token from Ray 2.52.0; the token comes from RAY_AUTH_TOKEN (env), else
# the file named by RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token; it must be configured on every node
# (docs.ray.io ray-security/token-auth.html; ray-core/internals/token-authentication.html).
RAY_TOKEN_AUTH_MIN_RAY = "2.52.0"
# KubeRay's `spec.authOptions` (the operator generates the token and sends it on its own dashboard calls) exists
# from KubeRay 1.5.1 (release notes v1.5.1); it is in the 1.7.0 CRD and not in the 1.4.2 CRD we validate against.
KUBERAY_AUTH_OPTIONS_MIN = "1.5.1"


def ray_version_at_least(version: str, floor: str) -> bool:
    """'2.55.1' >= '2.52.0' on numeric components."""
    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))
    return parts(version) >= parts(floor)


def ray_supports_token_auth(ray_version: str) -> bool:
    return ray_version_at_least(ray_version, RAY_TOKEN_AUTH_MIN_RAY)


# Ports KubeRay gives the head (ray-project/kuberay ray-operator/controllers/ray/utils/constant.go
# @000cda4d41d7d55698a14a1ba0f514c6ae5717ee: DefaultDashboardPort 8265, DefaultMetricsPort 8080 — KubeRay passes
# --metrics-export-port=8080 to every Ray node unless rayStartParams say otherwise).
RAY_DASHBOARD_PORT = 8265
RAY_METRICS_PORT = 8080

# Google Managed Prometheus: the managed collectors run as a DaemonSet in this namespace on GKE and scrape only
# targets on their own node (cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed).
GMP_NAMESPACE = "gke-gmp-system"

# Where the GKE add-on's KubeRay operator reaches the head's dashboard from. GKE hosts the operator outside the
# user cluster (GKE "About Ray on GKE": "installs and hosts"; kuberay issue #3115 / PR #5151: no in-cluster
# Deployment), so it calls the dashboard through the API server's services/proxy subresource (kuberay PR #1980,
# `useKubernetesProxy`), and GKE's API server enters the cluster through the konnectivity agents in kube-system
# (verified on a live GKE cluster by a public infrastructure repository's notes; docs/research/harden.md §1).
KUBE_SYSTEM_NAMESPACE = "kube-system"
KONNECTIVITY_AGENT_LABELS = {"k8s-app": "konnectivity-agent"}

# Shielded nodes: secure boot + integrity monitoring on Standard pools where the machine type supports it.
# A4 / A3 Ultra: Cluster Toolkit's gke-node-pool module enables secure boot by default ("keep enabled unless
# custom kernel modules need to be loaded", modules/compute/gke-node-pool/variables.tf
# @01df6b2604df4ecb0f55ab61861584595ab22818) and the A4 blueprint (examples/gke-a4/gke-a4.yaml
# @0043c21e7ec8a5470edae7e7b87752505e28aa28) builds its a4-highgpu-8g pool with it unchanged; the gIB plugin is
# user-space libraries and GKE's COS GPU drivers are signed. No source names an A3 Ultra exception.
SECURE_BOOT_MACHINE_TYPES: frozenset = frozenset({"a4-highgpu-8g", "a3-ultragpu-8g"})
# CPU pools: Secure Boot support is a property of the boot image, not of a general-purpose machine type; COS
# (GKE's default node image) supports every Shielded VM feature (Compute Engine "OS image security features",
# cloud.google.com/compute/docs/images/os-details#security-features). Compute Engine leaves Secure Boot off by
# default only "because unsigned drivers and other low-level software might not be compatible"
# (cloud.google.com/compute/shielded-vm/docs/modifying-shielded-vm); our nodes load only GKE's signed drivers.
SECURE_BOOT_IMAGE_TYPES: frozenset = frozenset({"COS_CONTAINERD"})


# Compute Engine's accelerator-optimized machine families (GPU machines; cloud.google.com/compute/docs/
# accelerator-optimized-machines): their drivers and NIC plugins decide, so only checked types get Secure Boot.
ACCELERATOR_MACHINE_SERIES: frozenset = frozenset({"a2", "a3", "a4", "a4x", "g2", "g4"})


def supports_secure_boot(machine_type: str, image_type: str = "COS_CONTAINERD") -> bool:
    """GPU machine types must be on the checked list; CPU machine types only need a Secure Boot image."""
    if image_type not in SECURE_BOOT_IMAGE_TYPES:
        return False
    if machine_type.split("-", 1)[0] in ACCELERATOR_MACHINE_SERIES:
        return machine_type in SECURE_BOOT_MACHINE_TYPES
    return True
# === GPU capacity: consumption models, version floors, ComputeClass (issue 12) ===========================
# Read 2026-11-30, each fact with its source. Used by core/capacity.py (the plan and its rules), the GPU capacity
# component and workloads/compute_class.py. docs/operations.md "GPU capacity" explains the models to users.

# The capacity models a stack may list; the list's order is the order GKE tries them in.
CAPACITY_MODELS: tuple[str, ...] = ("spot", "flex-start", "reservation")

# A4 and A3 Ultra have no plain on-demand capacity: Google's consumption-option table lists on-demand for N2 only
# and A4 / A3 Ultra / A3 Mega for reservations, calendar mode, flex-start and spot (Cluster Director "Choose a
# consumption option", docs.cloud.google.com/cluster-director/docs/choose-consumption-option, read 2026-11-30;
# AI Hypercomputer "Consumption options" says A3 Ultra capacity is requested as reservations through
# Hypercompute Cluster). So every GPU pool here is spot, flex-start or a specific reservation.
NO_ON_DEMAND_MACHINES: frozenset[str] = frozenset({"a4-highgpu-8g", "a3-ultragpu-8g"})

# Flex-start (Dynamic Workload Scheduler) for GPUs needs GKE >= 1.32.2-gke.1652000 (GKE "About GPU, TPU and H4D
# consumption with flex-start", kubernetes-engine/docs/concepts/dws, read 2026-11-30; FACTS.md §11).
FLEX_START_GPU_MIN_GKE = "1.32.2-gke.1652000"
# Flex-start VMs run for at most seven days; GKE's default maxRunDuration is those seven days (same page;
# Compute Engine "About Flex-start VMs").
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600
# Machine types flex-start supports: all accelerator-optimized types except A4X and G4 (Compute Engine "About
# Flex-start VMs", compute/docs/instances/about-flex-start-vms, read 2026-11-30: "Flex-start VMs support all
# accelerator-optimized machine types (except A4X and G4)"). A3 Ultra included, checked again for issue 18: an
# older copy of AI Hypercomputer's "Consumption options" page lists Dynamic Workload Scheduler for "All GPU machine
# types except A3 Ultra" next to a "specific amount of time, around 28 days" (calendar-mode reservations); the
# page's current version lists flex-start for "Any GPU machine except A4X" (ai-hypercomputer/docs/
# consumption-models), and Cluster Toolkit's gke-node-pool allows DWS flex-start compact placement precisely on
# "A3 Ultra, A4, and H4D" (FLEX_START_WORKLOAD_POLICY_MACHINES below). So `dev` (a3-ultragpu-8g) keeps flex-start.
FLEX_START_MACHINES: frozenset[str] = frozenset({"a4-highgpu-8g", "a3-ultragpu-8g"})
# Compact placement with flex-start goes through a Compute Engine workload policy, supported for A3 Ultra, A4 and
# H4D only (Cluster Toolkit modules/compute/gke-node-pool/main.tf precondition "Compact placement with DWS Flex
# start is only supported for A3 Ultra, A4, and H4D machine types", @1047080375afbb44da4b596be314634e7486af4a,
# 2026-06-25; examples/gke-consumption-options/dws-flex-start-compact-placement).
FLEX_START_WORKLOAD_POLICY_MACHINES: frozenset[str] = frozenset({"a4-highgpu-8g", "a3-ultragpu-8g"})
# gcp.compute.ResourcePolicyWorkloadPolicyArgs.max_topology_distance (pulumi-gcp 10.2.0 docstring).
WORKLOAD_POLICY_TOPOLOGY_DISTANCES: tuple[str, ...] = ("SUBBLOCK", "BLOCK", "CLUSTER")
# Flex-start pools: no static nodes and node auto-repair off (Cluster Toolkit gke-node-pool preconditions
# "enable_flex_start does not work with static_node_count", "enable_flex_start needs node auto_repair set to
# false", and reservation affinity NO_RESERVATION; same commit). Spot pools: NO_RESERVATION too.

# Spot VMs: 30 s preemption notice (Compute Engine "Spot VMs"); Compute Engine may preempt them at any time.
SPOT_NOTICE_SECONDS = 30

# Custom ComputeClass (`cloud.google.com/v1`): GKE >= 1.30.3-gke.1451000 in Standard and Autopilot (GKE "About
# custom ComputeClasses", kubernetes-engine/docs/concepts/about-custom-compute-classes, read 2026-11-30).
COMPUTE_CLASS_MIN_GKE = "1.30.3-gke.1451000"
COMPUTE_CLASS_API_VERSION = "cloud.google.com/v1"
COMPUTE_CLASS_KIND = "ComputeClass"
# Pods select a class with this node selector; manually created pools join a class with this label and a
# NoSchedule taint of the same key (GKE "About custom ComputeClasses": configure manually created node pools).
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
# Names GKE reserves for its own classes (FACTS.md §11; GKE "About custom ComputeClasses").
COMPUTE_CLASS_RESERVED_PREFIXES: tuple[str, ...] = ("gke", "autopilot")
# `priorities[].capacityCheckWaitTimeSeconds` (how long a flex-start priority is tried before the next one):
# 1..86400 s, flex-start (or multi-host TPU) priorities only. The field is absent from the CRD as published in
# May 2025 and present in the CRD taken from a GKE 1.33 cluster (datreeio/CRDs-catalog
# cloud.google.com/computeclass_v1.json @a2770aa3be4603a35db36e4c301d560720061895, 2026-02-26): we require 1.33
# because no earlier floor is documented. A `nodepools` priority may carry no other field (CRD rule "Nodepool
# field cannot be set along with other fields"), so on Standard the wait cannot be set.
COMPUTE_CLASS_WAIT_MIN_GKE = "1.33"
COMPUTE_CLASS_WAIT_RANGE_SECONDS = (1, 86400)

# Specific reservations: node pool reservation affinity key and the value form for a block of a reservation
# (Cluster Toolkit modules/compute/gke-node-pool/reservation_definitions.tf builds
# "projects/<p>/reservations/<r>/reservationBlocks/<b>"; xpk src/xpk/core/reservation.py parses the same form,
# @367c838253bea41e7d7716145ad6513f44c1a21e).
RESERVATION_AFFINITY_KEY = "compute.googleapis.com/reservation-name"


def reservation_path(project: str, name: str, block: Optional[str] = None) -> str:
    """`projects/<p>/reservations/<r>[/reservationBlocks/<b>]`, the reservation affinity value GKE takes."""
    path = f"projects/{project}/reservations/{name}"
    return f"{path}/reservationBlocks/{block}" if block else path

# ======================================================================================================
# --- Time to the first training step (issue 13): pinned inputs, image warmup, nominal durations ------
# ======================================================================================================
# Everything the prefetch, the GPU warmup, the checkpoint export and the critical-path report rely on.
# Figures marked "nominal estimate" have no published source; the report prints them as such.

# Revisions: a 40-hex commit id, or a version-like tag. Branch names (`main`) are refused for models because
# they move; a tag cannot be told from a branch offline, so only version-shaped names are accepted as tags.
HF_COMMIT_RE = r"[0-9a-f]{40}"
HF_TAG_RE = r"v?[0-9]+(?:\.[0-9]+)*(?:[-+.][A-Za-z0-9]+)*"


@dataclass(frozen=True)
class ModelFacts:
    repo_id: str
    revision: str            # the `main` commit pinned by the recipes
    weight_bytes: int        # safetensors shards at that revision
    gated: bool              # the Hub asks for an accepted licence (token needed)
    source: str


# The Hub pages themselves are not in the search corpora; both commits are the `main` snapshots pinned by
# several independent public projects (exact-string search), one of which records the download size.
MODELS: dict[str, ModelFacts] = {
    "Qwen/Qwen2.5-72B-Instruct": ModelFacts(
        "Qwen/Qwen2.5-72B-Instruct", "495f39366efef23836d0cfae4fbe635880d2be31", 145_000_000_000, False,
        "public fetch scripts pinning this commit for snapshot_download; a run log: '145 GB, 37/37 shards'"),
    "google/gemma-3-27b-it": ModelFacts(
        "google/gemma-3-27b-it", "005ad3404e59d6023443cb575daa05336842228a", 55_000_000_000, True,
        "a provenance table linking huggingface.co/google/gemma-3-27b-it to this commit; a manifest requiring "
        ">= 54,000,000,000 safetensors bytes; issue 13 states ~55 GB"),
}

# Hugging Face datasets each recipe's data loader downloads (NeMo-RL calls load_dataset without a revision,
# so the prefetch takes the branch head NeMo-RL will read). Sources: NVIDIA-NeMo/RL
# nemo_rl/data/datasets/response_datasets/deepscaler.py at v0.4.0 (c751f81) and v0.5.0 (6c70893);
# workloads/prepare_gsm8k.py for GSM8K.
RECIPE_DATASETS: dict[str, tuple[str, ...]] = {
    "DeepScaler": ("agentica-org/DeepScaleR-Preview-Dataset", "HuggingFaceH4/aime_2024"),
    "gsm8k": ("openai/gsm8k",),
}
DATASET_REVISION = "main"

# Every key of the releases' GRPO configs (the `configs` of NEMO_RL_RELEASES, resolved through their `defaults:`)
# whose value names something NeMo-RL loads, and how the rendered job pins it; tests/test_pinned_artefacts.py reads
# the real configs and fails on any such key missing here. Kinds:
# - "model": rendered as the prefetched snapshot's path (core.prefetch: `<mount>/models/<repo>@<revision>`);
# - "dataset": a built-in loader named by NeMo-RL (its Hub datasets are in RECIPE_DATASETS, prefetched) or
#   ResponseDataset on the JSONL files the job prepared on Lustre;
# - "disabled": left null by every config and by every recipe field (the feature is off);
# - "local": a directory the job renders under the Lustre mount.
NEMO_RL_HUB_KEYS: dict[str, tuple[str, str]] = {
    "policy.model_name": ("model", "the weights"),
    "policy.tokenizer.name": ("model", "tokenizer and chat template: `${policy.model_name}` in grpo_math_1B.yaml, "
                                       "but the Gemma 3 recipes set `google/gemma-3-27b-it` literally "
                                       "(examples/configs/recipes/llm/grpo-gemma3-27b-it-8n8g-fsdp2tp8-actckpt-long.yaml "
                                       "at v0.5.0 and v0.7.0)"),
    "policy.draft.model_name": ("disabled", "v0.7.0's speculative-decoding draft model (policy.draft.enabled false)"),
    "data.dataset_name": ("dataset", "v0.4.0/v0.5.0 flat data layout"),
    "data.train.dataset_name": ("dataset", "v0.7.0 data.train layout (not rendered: core.recipes.FLAT_DATA_RELEASES)"),
    "checkpointing.checkpoint_dir": ("local", "rendered to <mount>/checkpoints/<run name>"),
    "logger.log_dir": ("local", "rendered to <mount>/logs/<run name>"),
}

# --- GPU warmup ---------------------------------------------------------------------------------------
# Pods with a priority below the cluster autoscaler's --expendable-pods-priority-cutoff (default -10) "don't
# cause scale up" (kubernetes/autoscaler cluster-autoscaler/main.go, flag help). The placeholders must bring
# GPU nodes up, so their priority is exactly the cutoff: the lowest value that still scales. Ray pods run at
# the default priority 0 and preempt them (GKE "Provision extra compute capacity for rapid Pod scaling").
AUTOSCALER_EXPENDABLE_PRIORITY_CUTOFF = -10
WARMUP_PRIORITY = AUTOSCALER_EXPENDABLE_PRIORITY_CUTOFF
# Pinned pause image for the CPU pre-pull DaemonSet's long-running container (Kubernetes' own pause image), by
# digest: the multi-arch index as pinned by Cilium's curl test image Dockerfile and several other public manifests
# (`registry.k8s.io/pause:3.10@sha256:ee6521f2...`, exact-string search of the code index, 2026-12).
PAUSE_IMAGE_PIN = ImagePin(
    "registry.k8s.io/pause", "3.10", "sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
    "Cilium's curl test image Dockerfile and other public manifests pin this index digest")
PAUSE_IMAGE = f"{PAUSE_IMAGE_PIN.repo}:{PAUSE_IMAGE_PIN.tag}@{PAUSE_IMAGE_PIN.digest}"

# --- Image streaming (`imagePath: streaming`) ------------------------------------------------------------
# GKE "Use Image streaming to pull container images" (cloud.google.com/kubernetes-engine/docs/how-to/
# image-streaming; EN and zh-cn copies, 2026-11; docs/research/ttfs.md §6): the Container File System API; the
# Container-Optimized OS with containerd node image ("Autopilot nodes always use this node image"); images in an
# Artifact Registry standard or remote repository (nvcr.io itself is not eligible); Private Google Access for
# private nodes (the primary subnet has it); a node service account other than the default needs
# roles/serviceusage.serviceUsageConsumer in the project hosting the image. Version floors from the same page:
# "New and existing GKE Standard clusters must run version 1.18.6-gke.4801 or later"; Autopilot clusters from
# 1.25.5-gke.1000 "automatically use Image streaming to pull eligible images" (no setting).
IMAGE_STREAMING_API = "containerfilesystem.googleapis.com"
IMAGE_STREAMING_NODE_IMAGE = "COS_CONTAINERD"
IMAGE_STREAMING_MIN_GKE_STANDARD = "1.18.6-gke.4801"
IMAGE_STREAMING_MIN_GKE_AUTOPILOT = "1.25.5-gke.1000"
IMAGE_STREAMING_NODE_ROLE = "roles/serviceusage.serviceUsageConsumer"
# Artifact Registry Docker repository paths: LOCATION-docker.pkg.dev/PROJECT-ID/REPOSITORY/IMAGE (Artifact
# Registry "Integrate with GKE": `--image=LOCATION-docker.pkg.dev/PROJECT-ID/REPOSITORY/IMAGE`). Project IDs:
# 6-30 lowercase letters, digits or hyphens, starting with a letter, not ending with a hyphen (Resource Manager
# "Creating and managing projects"); repository IDs: lowercase letters, digits and hyphens, starting with a
# letter and ending with a letter or digit (the rule Terraform modules for Artifact Registry validate; Google's
# own wording was not found).
ARTIFACT_REGISTRY_REPO_RE = (r"(?P<location>[a-z]+(?:-[a-z]+[0-9]*)?)-docker\.pkg\.dev/"
                             r"(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9])/(?P<repository>[a-z](?:[a-z0-9-]*[a-z0-9])?)")
# Artifact Registry's multi-regions: "a large geographic area, such as Asia or the United States"
# (cloud.google.com/artifact-registry/docs/repositories/repo-locations; location IDs us, europe, asia).
ARTIFACT_REGISTRY_MULTI_REGIONS = frozenset({"us", "europe", "asia"})
NEMO_RL_IMAGE_NAME = "nemo-rl"      # the image's name under a repository copy: <repository>/nemo-rl:<tag>

# --- Weights prefetch runtime -------------------------------------------------------------------------
# `prefetchImage: python`: the prefetch Job runs in a small Python image and installs huggingface_hub from PyPI
# (workloads/prefetch-requirements.txt, hash-pinned) instead of waiting for the 20-30 GB NeMo-RL image on the CPU
# node. Python 3.11 like the tests; digest of the multi-arch index as pinned by amilworks/ultra's
# deploy/docker Dockerfile ("Multi-architecture index pinned to the published Python 3.11.13 slim-bookworm
# image"), found by exact-string search of the code index (2026-11).
PREFETCH_PYTHON_PIN = ImagePin(
    "python", "3.11.13-slim-bookworm",
    "sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1",
    "amilworks/ultra deploy/docker Dockerfile: the multi-arch index of python:3.11.13-slim-bookworm")
# That image's interpreter and platform as PEP 508 marker values (the CPU nodes are x86_64), which decide the
# dependency closure and the wheels workloads/prefetch-requirements.txt pins.
PREFETCH_PYTHON_MARKERS = {
    "python_version": "3.11", "python_full_version": "3.11.13", "sys_platform": "linux", "platform_system": "Linux",
    "platform_machine": "x86_64", "implementation_name": "cpython", "platform_python_implementation": "CPython",
    "os_name": "posix", "extra": ""}

# --- Cloud Storage FUSE writes (the checkpoint export's sidecar) -------------------------------------------
# Streaming writes upload new, sequentially written files straight to Cloud Storage instead of staging each whole
# file on local disk first (GoogleCloudPlatform/gcsfuse docs/semantics.md at v3.11.2: the default write path from
# gcsfuse v3.0.0; "approximately 96MiB of RAM" per file open for streaming; modifying an existing file, out-of-order
# or concurrent writes to one file, and more files at once than `write:global-max-blocks` fall back to staging).
# GKE's sidecar has them from 1.32.1-gke.1753001 and on by default from 1.33.2-gke.4655000 (gcs-fuse-csi-driver
# docs/releases.md at v1.24.4, "Streaming writes"). The export relies on them: the sidecar is sized for streaming,
# and the mount says so explicitly.
GCSFUSE_STREAMING_WRITES_DEFAULT_MIN_GKE = "1.33.2-gke.4655000"
GCSFUSE_STREAMING_WRITES_OPTION = "write:enable-streaming-writes:true"
GCSFUSE_STREAMING_FILE_MIB = 96
# `write.global-max-blocks` default (gcsfuse cfg/params.yaml at v3.11.2): 4 blocks, one per file, on machines
# outside gcsfuse's "high-performance" group (the CPU system node); past that, files fall back to staging.
GCSFUSE_STREAMING_MAX_FILES = 4


# --- Nominal durations for the critical-path report ---------------------------------------------------
@dataclass(frozen=True)
class Nominal:
    seconds: float
    source: str


NOMINAL_ESTIMATE = "nominal estimate (no published figure)"

# Seconds Pulumi waits for a resource of this type (create + await), by type token.
NOMINAL_RESOURCE_SECONDS: dict[str, Nominal] = {
    "gcp:lustre/instance:Instance": Nominal(900, "codelab (seed 000): 'Lustre ... 10~15분'; FACTS §5 10-15 min; upper bound"),
    "gcp:container/cluster:Cluster": Nominal(600, NOMINAL_ESTIMATE + "; seed 000 says 'several minutes'"),
    "gcp:container/nodePool:NodePool": Nominal(120, NOMINAL_ESTIMATE + " (pool without nodes; nodes are added below)"),
    "gcp:servicenetworking/connection:Connection": Nominal(90, NOMINAL_ESTIMATE),
    "gcp:projects/service:Service": Nominal(60, NOMINAL_ESTIMATE),
    "gcp:compute/network:Network": Nominal(30, NOMINAL_ESTIMATE),
    "gcp:compute/subnetwork:Subnetwork": Nominal(20, NOMINAL_ESTIMATE),
    "gcp:compute/router:Router": Nominal(15, NOMINAL_ESTIMATE),
    "gcp:compute/routerNat:RouterNat": Nominal(30, NOMINAL_ESTIMATE),
    "gcp:compute/firewall:Firewall": Nominal(15, NOMINAL_ESTIMATE),
    "gcp:compute/globalAddress:GlobalAddress": Nominal(15, NOMINAL_ESTIMATE),
    "gcp:serviceaccount/account:Account": Nominal(5, NOMINAL_ESTIMATE),
    "gcp:projects/iAMMember:IAMMember": Nominal(10, NOMINAL_ESTIMATE),
    "gcp:storage/bucket:Bucket": Nominal(5, NOMINAL_ESTIMATE),
    "gcp:storage/bucketIAMMember:BucketIAMMember": Nominal(10, NOMINAL_ESTIMATE),
    "gcp:monitoring/dashboard:Dashboard": Nominal(5, NOMINAL_ESTIMATE),
}
# Any other resource (Kubernetes objects the provider applies without a long wait, providers, ...).
NOMINAL_DEFAULT_RESOURCE = Nominal(2, NOMINAL_ESTIMATE + " (one API call)")

# What happens outside Pulumi's waits.
NOMINAL_CPU_NODE_SECONDS = Nominal(
    120, "GKE 'Provision extra compute capacity': 'Each new node takes approximately 80 to 120 seconds to boot'")
NOMINAL_GPU_NODE_SECONDS = Nominal(
    300, NOMINAL_ESTIMATE + ": node boot 80-120 s (GKE capacity-provisioning page) plus GPU driver and 9 NICs")
NOMINAL_IMAGE_BYTES = Nominal(25e9, "issue 13: the NeMo-RL image is 20-30 GB (midpoint)")
NOMINAL_IMAGE_PULL_BYTES_PER_S = Nominal(100e6, NOMINAL_ESTIMATE + " (registry download + gzip unpack)")
NOMINAL_HF_DOWNLOAD_BYTES_PER_S = Nominal(500e6, NOMINAL_ESTIMATE + " (Hub to one CPU node, parallel files)")
# The prefetch's own runtime in `prefetchImage: python` mode: the slim image (~45 MB compressed) and ~15 MB of
# hash-pinned wheels from PyPI.
NOMINAL_PREFETCH_RUNTIME_SECONDS = Nominal(
    30, NOMINAL_ESTIMATE + " (python slim image ~45 MB + pip install of ~15 MB of wheels)")
NOMINAL_RAY_START_SECONDS = Nominal(30, NOMINAL_ESTIMATE + " (container start + `ray start`)")
NOMINAL_JOB_SUBMIT_SECONDS = Nominal(30, NOMINAL_ESTIMATE + " (K8sJobMode submitter pod + `ray job submit`)")
# The RayJob's deadline (spec.activeDeadlineSeconds, core.recipes.job_deadline_seconds): KubeRay counts it from the
# attempt's start (Status.StartTime, set when the RayJob enters Initializing and again for each retry:
# rayjob_controller.go initRayJobStatusIfNeed at v1.4.2 34ea80e0 and v1.7.0 59d663ae), so the allowance covers what
# comes before the first step: GPU capacity (flex-start may queue), image pulls, the HF->Megatron conversion, the
# readiness gate, and the export after the last step.
NOMINAL_JOB_STARTUP_SECONDS = Nominal(
    4 * 3600, NOMINAL_ESTIMATE + " (capacity wait, image pulls, weight conversion, readiness gate, export)")
# activeDeadlineSeconds is `format: int32` in both CRDs (K8S_INT32_MAX above), and KubeRay refuses a value <= 0
# (ray-operator/controllers/ray/utils/validation.go ValidateRayJobSpec: "must be a positive integer", v1.4.2 and
# v1.7.0).
# The entrypoint's steps before NeMo-RL starts (core/recipes.py job_script), timed by the critical-path report.
NOMINAL_GATE_SECONDS = Nominal(
    150, "docs/performance.md 'about 2-3 minutes per submission' (an estimate: placement and NVML a few s, Lustre ~45 s, the "
         "collectives ~1 min); the tests measured ~20 s on CPU")
NOMINAL_GSM8K_PREP_SECONDS = Nominal(60, NOMINAL_ESTIMATE + " (`uv run` start, the ~5 MB dataset, two JSONL files)")
NOMINAL_SCRIPT_SECONDS = Nominal(5, NOMINAL_ESTIMATE + " (`uv run python` start and a few file checks)")
# The prefetch Job carries the bytes it downloads, so the critical-path report can time it from the records.
DOWNLOAD_BYTES_ANNOTATION = "nemo-rl-gke/download-bytes"

# ======================================================================================================
# --- Security, round two (issue 19): who reaches Ray, what leaves the namespace, least privilege -----
# ======================================================================================================
# Research and sources in full: docs/research/harden2.md. Read 2026-12.

# Ray: "anybody who can access the associated ports can execute arbitrary code on your Ray Cluster" (Ray
# security docs). Ray < 2.52.0 lets any web page a user opens reach the Jobs API of a port-forwarded dashboard
# (CVE-2025-62593, browser-based RCE); Ray < 2.54.0 answers an unauthenticated job DELETE (CVE-2026-27482).
RAY_BROWSER_RCE_FIXED = "2.52.0"
RAY_JOB_DELETE_FIXED = "2.54.0"
# Ray ports besides the dashboard: every Ray pod's dashboard agent (job submission through the agent), GCS, Ray
# Client (KubeRay's defaults, ray-operator/controllers/ray/utils/constant.go).
RAY_DASHBOARD_AGENT_PORT = 52365
RAY_GCS_PORT = 6379
RAY_CLIENT_PORT = 10001

# Ray token authentication and the operator (issue 18 item 3; ray-project/kuberay at the tags, read with git):
# - KubeRay 1.4.2 has no `authOptions` (absent from its RayCluster CRD and Go types): its dashboard client sends
#   no token, so a token-protected dashboard answers its status and StopJob calls with 401.
# - 1.5.1 adds `authOptions.mode: token`; the operator generates a Secret `<cluster>` (key `auth_token`) and
#   injects RAY_AUTH_TOKEN into the Ray containers as an env var from that Secret
#   (ray-operator/controllers/ray/common/pod.go SetContainerTokenAuthEnvVars @v1.5.1).
# - 1.6.0 adds `authOptions.secretName`: the operator then uses the user's Secret (key `auth_token`) for its own
#   dashboard calls (utils/util.go GetRayDashboardClientFunc @v1.6.0, @v1.7.0) and injects RAY_AUTH_TOKEN only
#   into containers that do not already define it (`if !utils.EnvVarExists(RAY_AUTH_TOKEN_ENV_VAR, ...)`, pod.go
#   @v1.6.0/@v1.7.0; the same function sets the K8sJobMode submitter, rayjob_controller.go
#   configureSubmitterContainer @v1.7.0, and the wait-gcs-ready init container copies the Ray container's env).
# - Ray's token loader skips an empty RAY_AUTH_TOKEN and reads RAY_AUTH_TOKEN_PATH next
#   (src/ray/rpc/authentication/authentication_token_loader.cc at ray-project/ray 934e8d7a and 03864b87, the
#   versions before and after 2.55; `if (!token_str.empty())`), so a container that defines RAY_AUTH_TOKEN=""
#   keeps the token out of its environment and still authenticates from the file.
# Google does not publish which KubeRay its hosted add-on runs (docs/research/harden.md §1): a stack on the add-on
# may meet 1.4.2, so it never turns token auth on; a stack that wants token auth installs this KubeRay itself.
KUBERAY_AUTH_SECRET_NAME_MIN = "1.6.0"
KUBERAY_AUTH_TOKEN_SECRET_KEY = "auth_token"
# The KubeRay the program installs with `kubeRayOperator: helm`: its Helm chart at the tag, kept in the
# repository (charts/kuberay-operator, see its SOURCES.md); its CRDs are the schemas/kuberay-v1.7.0 copies.
KUBERAY_HELM_CHART_VERSION = "1.7.0"
KUBERAY_HELM_CHART_DIR = "charts/kuberay-operator"
KUBERAY_OPERATOR_NAMESPACE = "kuberay-system"
# The chart's Deployment labels its pods app.kubernetes.io/name: {{ kuberay-operator.name }} (nameOverride
# kuberay-operator in values.yaml @v1.7.0).
KUBERAY_OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}
# The operator image the chart pins (values.yaml image.tag @v1.7.0). Digest: as pinned, with the v1.7.0 source
# commit 59d663ae, by skyhook-io/radar scripts/kuberay-demo/README.md ("Exact pins", commit 7f65f74a; exact-string
# search of the code index, 2026-12).
KUBERAY_OPERATOR_IMAGE_PIN = ImagePin(
    "quay.io/kuberay/operator", "v1.7.0", "sha256:4a779237ef1c5262a63840ccf42d0d67f0b74e911158fbcaee4478fb1560bce6",
    "skyhook-io/radar scripts/kuberay-demo/README.md @7f65f74a pins this digest for quay.io/kuberay/operator:v1.7.0")

# GKE FQDN network policies (networking.gke.io/v1alpha1 FQDNNetworkPolicy): GKE >= 1.26.4-gke.500 / 1.27.1-gke.400,
# Dataplane V2, kube-dns or Cloud DNS; at most 50 IP addresses resolved per policy, 100 per hostname; a Service's
# ClusterIP cannot be a destination (GKE "Control Pod egress traffic using FQDN network policies",
# kubernetes-engine/docs/how-to/fqdn-network-policies). No extra licence: enabling the GKE API "gives you access
# to ... FQDN network policies" (GKE "Features available on each environment", docs.cloud.google.com/anthos/
# clusters) and "GKE Enterprise features are now available without an Enterprise tier" (container v1 API,
# EnterpriseConfig.ClusterTier). Enabling it on an existing Standard cluster needs a restart of the anetd
# DaemonSet (pulumi-gcp 10.2.0 Cluster.enable_fqdn_network_policy docstring).
FQDN_POLICY_MIN_GKE = "1.27.1-gke.400"
FQDN_POLICY_API_VERSION = "networking.gke.io/v1alpha1"
FQDN_POLICY_KIND = "FQDNNetworkPolicy"
FQDN_POLICY_MAX_ADDRESSES = 50

# Where pods resolve names: kube-dns pods in kube-system (GKE Standard's default provider), or Cloud DNS, which
# answers on the metadata address 169.254.169.254:53 (Autopilot's provider; issue 19). Both are allowed: Dataplane
# V2 evaluates policy after the Service VIP is translated to the kube-dns pods.
KUBE_DNS_LABELS = {"k8s-app": "kube-dns"}
CLOUD_DNS_ADDRESS = "169.254.169.254/32"
DNS_PORT = 53
# The GKE metadata server, for pods that need Google credentials (Workload Identity tokens): Dataplane V2 clusters
# at 169.254.169.254 TCP 80 and 8080, Calico clusters at 169.254.169.252 TCP 987 and 988. GKE's own page was not
# in the search corpora; public network policies written for GKE Workload Identity agree on these pairs (code
# index, 2026-12). Both pairs reach only the node's metadata server.
METADATA_SERVER_EGRESS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("169.254.169.254/32", (80, 8080)), ("169.254.169.252/32", (987, 988)))
# Hosts outside the cluster, by what needs them.
GOOGLE_STORAGE_HOSTS = ("storage.googleapis.com",)       # the export's GCS FUSE sidecar; W&B's file uploads
WANDB_HOSTS = ("api.wandb.ai",)                          # the netrc machine and wandb's default base URL
PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")     # pip's index and its files (the prefetch's install)
# Hugging Face downloads: the API host, then the redirects a download follows. Hugging Face publishes its domains
# at https://huggingface.co/.well-known/meta.json (hubDomains, lfsDomains, cdnDomains; read 2026-12); real
# downloads redirect to cdn-lfs*.hf.co (LFS), cas-bridge.xethub.hf.co and <region>.<provider>.cdn.hf.co (Xet
# bridge), and hf-xet talks to cas-server.xethub.hf.co and transfer.xethub*.hf.co (public allowlists and
# download logs, code index 2026-12). One group per policy: FQDN_POLICY_MAX_ADDRESSES is per policy.
HF_HOST_GROUPS: dict[str, tuple[str, ...]] = {
    "hub": ("huggingface.co", "hf.co"),
    "lfs": ("cdn-lfs.hf.co", "cdn-lfs-us-1.hf.co", "cdn-lfs-eu-1.hf.co"),
    "xet": ("cas-server.xethub.hf.co", "cas-bridge.xethub.hf.co", "transfer.xethub.hf.co",
            "transfer.xethub-eu.hf.co"),
    "cdn-aws": ("aws.cdn.hf.co", "*.aws.cdn.hf.co"),
    "cdn-gcp": ("*.gcp.cdn.hf.co", "*.*.gcp.cdn.hf.co"),
}
HTTPS_PORT = 443
# Private and special ranges a "public HTTPS" fallback rule excludes (RFC 1918, RFC 6598 shared space, link-local).
NON_PUBLIC_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16")

# Pod Security Admission (kubernetes.io/docs/concepts/security/pod-security-admission; the Pod Security
# Standards): `baseline` forbids hostPath volumes, so the GPU workers, which mount the host's NVIDIA and gIB
# libraries read-only as Google's own NCCL test pods do, need `privileged`; everything else is held to
# `restricted` where it can be and reported against it (warn, audit) where it cannot.
PSA_LABEL_PREFIX = "pod-security.kubernetes.io"
PSA_LEVELS = ("privileged", "baseline", "restricted")
PSA_VERSION = f"v{KUBERNETES_MINOR}"
# An unprivileged user that exists in every image; pods that can run as non-root use it (also as fsGroup, so the
# token files mounted 0440 are readable).
NOBODY_UID = 65534

# The nodes' service account: roles/container.defaultNodeServiceAccount is GKE's documented minimum
# (kubernetes-engine/docs/how-to/service-accounts, "Grant the minimum required role for GKE"); it carries the
# logging, monitoring and metadata permissions the nodes need. Images from nvcr.io and Google's public gIB and
# pause repositories need no IAM role; a stack's own Artifact Registry copy (`imagePath: streaming`) gets
# roles/artifactregistry.reader on that repository only.
NODE_SERVICE_ACCOUNT_MINIMUM_ROLE = "roles/container.defaultNodeServiceAccount"
ARTIFACT_REGISTRY_READER_ROLE = "roles/artifactregistry.reader"

# Node upgrades: a NO_MINOR_OR_NODE_UPGRADES exclusion also holds back node patch versions, security fixes
# included. The program bounds an exclusion to a window the user opens for a run; 30 days is the limit GKE itself
# puts on its strictest scope (NO_UPGRADES: "up to 30 days", GKE "Maintenance windows and exclusions").
MAINTENANCE_EXCLUSION_MAX_DAYS = 30

# Cloud Storage soft delete: on by default with 7 days; 7 to 90 days, or 0 to turn it off (Cloud Storage "Soft
# delete"; pulumi-gcp 10.2.0 BucketSoftDeletePolicyArgs.retention_duration_seconds). Object Versioning is not
# used: the bucket has a hierarchical namespace, and soft delete protects deleted and overwritten objects alike.
SOFT_DELETE_MIN_DAYS = 7
SOFT_DELETE_MAX_DAYS = 90

# Bucket access for the export (its own Kubernetes service account): a managed folder named after the export
# prefix carries roles/storage.objectUser ("the access granted in the policy also applies to any object within
# that bucket that has the managed folder's name as a prefix", Cloud Storage "Managed folders"); the bucket
# itself grants object *listing* only, because Cloud Storage FUSE and its CSI driver check access with
# GetStorageLayout on the bucket, which needs storage.objects.list at bucket level (gcs-fuse-csi-driver
# pkg/cloud_provider/storage/storage.go CheckBucketExists @5fcdc04a). The listing grant is
# roles/storage.objectViewer restricted by an IAM condition to the bucket resource, where only list permissions
# are evaluated (object reads are evaluated on object resources).
EXPORT_ROLE = "roles/storage.objectUser"
BUCKET_LIST_ROLE = "roles/storage.objectViewer"
BUCKET_RESOURCE_TYPE = "storage.googleapis.com/Bucket"

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
