"""GPU types: one `Accelerator` record per type holds every fact about it, with its sources.

A new GPU type is one record in `_RECORDS` (and its sources); every table the program reads (ACCELERATORS and the
per-machine views below it) is derived from the records. The policy pack's copy is generated from them too
(`python -m synth.policy_facts`, checked by tests/test_policy.py), as Pulumi.yaml's descriptions are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

# --- Sources shared by the records ------------------------------------------------------------------------------
_TUTORIAL = (
    'GKE tutorial "Optimize and scale RL with NVIDIA NeMo RL on GKE" '
    "(https://docs.cloud.google.com/kubernetes-engine/docs/tutorials/nemo-rl-gke): the machine type and GKE "
    "version floor per GPU type, and NCCL_TUNER_CONFIG_PATH for B200 and H200"
)
_MACHINES = (
    'Compute Engine "Accelerator-optimized machine family" '
    "(https://cloud.google.com/compute/docs/accelerator-optimized-machines): vCPUs, memory, GPUs and GPU memory"
)
# Each local SSD holds 375 GiB (LOCAL_SSD_GIB); the count is set explicitly because 0 means "the machine's default"
# only for machines with a fixed count (GKE API EphemeralStorageLocalSsdConfig.local_ssd_count).
_LOCAL_SSD = (
    "Cluster Toolkit modules/compute/gke-node-pool/disk_definitions.tf @10470803: "
    "local_ssd_count_ephemeral_storage = 32 for a3-ultragpu-8g and a4-highgpu-8g"
)
# Eight CX-7 NICs, one per GPU, 3,200 Gbps together; two gVNIC NICs add 400 Gbps for general networking, so the
# primary interface (nic0, eth0 on the primary VPC, which Lustre traffic uses) has 200 Gbps.
_NICS = (
    'Compute Engine "Networking and GPU machines", section "A4 and A3 Ultra machine types" '
    "(https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth)"
)
_H200_LINKS = (
    'NVIDIA H200 Tensor Core GPU datasheet, "Interconnect" (https://www.nvidia.com/en-us/data-center/h200/): '
    "NVLink 900 GB/s, PCIe Gen5 128 GB/s"
)
# PCIe Gen6 x16 (256 GB/s) is the fastest host link a B200 supports; a host running it at Gen5 only makes the gate's
# bound looser, never wrong.
_B200_LINKS = (
    "NVIDIA HGX B200 (https://www.nvidia.com/en-us/data-center/hgx/): NVLink 5, 1.8 TB/s per GPU; "
    "PCIe Gen6 x16 256 GB/s"
)
# Cluster Toolkit's gke-node-pool enables secure boot by default ("keep enabled unless custom kernel modules need to be
# loaded"); the gIB plugin is user-space libraries and GKE's COS GPU drivers are signed. No source names an A3 Ultra
# exception.
_SECURE_BOOT = (
    "Cluster Toolkit modules/compute/gke-node-pool/variables.tf @01df6b2604df4ecb0f55ab61861584595ab22818; "
    "examples/gke-a4/gke-a4.yaml @0043c21e7ec8a5470edae7e7b87752505e28aa28 builds its a4-highgpu-8g pool "
    "with secure boot on"
)
# Google's consumption-option table lists on-demand for N2 only and A4 / A3 Ultra / A3 Mega for reservations,
# calendar mode, flex-start and spot; AI Hypercomputer "Consumption options" says A3 Ultra capacity is requested as
# reservations. So every GPU pool here is spot, flex-start or a specific reservation.
_NO_ON_DEMAND = (
    'Cluster Director "Choose a consumption option" '
    "(https://docs.cloud.google.com/cluster-director/docs/choose-consumption-option, read 2026-11-30)"
)
# "Flex-start VMs support all accelerator-optimized machine types (except A4X and G4)". A3 Ultra included, checked
# again: an older copy of AI Hypercomputer's "Consumption options" page lists Dynamic Workload Scheduler for "All GPU
# machine types except A3 Ultra" next to a "specific amount of time, around 28 days" (calendar-mode reservations); the
# page's current version lists flex-start for "Any GPU machine except A4X" (ai-hypercomputer/docs/consumption-models),
# and Cluster Toolkit allows DWS flex-start compact placement precisely on "A3 Ultra, A4, and H4D" (below).
_FLEX_START = (
    'Compute Engine "About Flex-start VMs" (https://cloud.google.com/compute/docs/instances/'
    "about-flex-start-vms, read 2026-11-30)"
)
_WORKLOAD_POLICY = (
    'Cluster Toolkit modules/compute/gke-node-pool/main.tf precondition "Compact placement with DWS '
    'Flex start is only supported for A3 Ultra, A4, and H4D machine types" '
    "@1047080375afbb44da4b596be314634e7486af4a (2026-06-25); "
    "examples/gke-consumption-options/dws-flex-start-compact-placement"
)
# A4 and A3 Ultra boot only from Hyperdisk; the NeMo-RL image is ~30 GB, so the disk leaves room for two.
_BOOT_DISK = 'Compute Engine "Accelerator-optimized machine family": A4 and A3 Ultra support Hyperdisk boot disks only'


@dataclass(frozen=True)
class Accelerator:
    """One GPU type and its machine: every fact the program uses about it, and where each comes from."""

    gpu_type: str  # value of the node label cloud.google.com/gke-accelerator
    machine_type: str
    gpus_per_node: int
    family: str  # A4 / A3 Ultra
    tuner_config: str  # NCCL_TUNER_CONFIG_PATH inside pods (gIB plugin mounted at /usr/local/gib)
    min_gke_version: str  # first GKE version that supports the machine type
    vcpus: int  # machine shape, used to size pod requests below allocatable
    memory_gib: int
    gpu_memory_gib: int
    local_ssd_count: int  # bundled local SSDs, backing the node's ephemeral storage (infra/local_ssd.py)
    primary_nic_gbitps: int  # the primary interface, the one Lustre traffic uses (the readiness gate's bound)
    nvlink_bidirectional_gbps: float  # NVLink per GPU, both directions together (NVIDIA's headline figure)
    pcie_bidirectional_gbps: float  # the GPU's x16 host link, both directions together
    secure_boot: bool  # checked to run with Shielded VM secure boot (Standard pools)
    on_demand: bool  # plain on-demand capacity exists (the capacity models offer none otherwise)
    flex_start: bool  # flex-start (Dynamic Workload Scheduler) VMs support the machine type
    flex_start_workload_policy: bool  # flex-start compact placement through a Compute Engine workload policy
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)  # fact (field names) -> its source
    boot_disk_type: str = "hyperdisk-balanced"
    boot_disk_gb: int = 500


def _sources(links: str) -> Mapping[str, str]:
    return MappingProxyType(
        {
            "machine_type, min_gke_version, tuner_config": _TUTORIAL,
            "gpus_per_node, vcpus, memory_gib, gpu_memory_gib": _MACHINES,
            "local_ssd_count": _LOCAL_SSD,
            "primary_nic_gbitps": _NICS,
            "nvlink_bidirectional_gbps, pcie_bidirectional_gbps": links,
            "secure_boot": _SECURE_BOOT,
            "on_demand": _NO_ON_DEMAND,
            "flex_start": _FLEX_START,
            "flex_start_workload_policy": _WORKLOAD_POLICY,
            "boot_disk_type, boot_disk_gb": _BOOT_DISK,
        }
    )


_RECORDS: tuple[Accelerator, ...] = (
    Accelerator(
        gpu_type="nvidia-b200",
        machine_type="a4-highgpu-8g",
        gpus_per_node=8,
        family="A4",
        tuner_config="/usr/local/gib/configs/tuner_config_a4.txtpb",
        min_gke_version="1.32.2-gke.1422000",
        vcpus=224,
        memory_gib=3968,
        gpu_memory_gib=180,
        local_ssd_count=32,
        primary_nic_gbitps=200,
        nvlink_bidirectional_gbps=1800.0,
        pcie_bidirectional_gbps=256.0,
        secure_boot=True,
        on_demand=False,
        flex_start=True,
        flex_start_workload_policy=True,
        sources=_sources(_B200_LINKS),
    ),
    Accelerator(
        gpu_type="nvidia-h200-141gb",
        machine_type="a3-ultragpu-8g",
        gpus_per_node=8,
        family="A3 Ultra",
        tuner_config="/usr/local/gib/configs/tuner_config_a3u.txtpb",
        min_gke_version="1.31.4-gke.1183000",
        vcpus=224,
        memory_gib=2952,
        gpu_memory_gib=141,
        local_ssd_count=32,
        primary_nic_gbitps=200,
        nvlink_bidirectional_gbps=900.0,
        pcie_bidirectional_gbps=128.0,
        secure_boot=True,
        on_demand=False,
        flex_start=True,
        flex_start_workload_policy=True,
        sources=_sources(_H200_LINKS),
    ),
)

ACCELERATORS: dict[str, Accelerator] = {a.gpu_type: a for a in _RECORDS}


def accelerator(gpu_type: str) -> Accelerator:
    return ACCELERATORS[gpu_type]


def families(where: Callable[[Accelerator], bool] = lambda a: True) -> list[str]:
    """The families of the GPU types `where` holds for, in the catalog's order (for messages and descriptions)."""
    return [a.family for a in _RECORDS if where(a)]


def one_of(words: list[str], conjunction: str = "or") -> str:
    """'a', 'a or b', 'a, b or c'."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


# --- Views by machine type (derived from the records) --------------------------------------------------------------
LOCAL_SSD_COUNT: dict[str, int] = {a.machine_type: a.local_ssd_count for a in _RECORDS}
PRIMARY_NIC_GBITPS: dict[str, int] = {a.machine_type: a.primary_nic_gbitps for a in _RECORDS}
SECURE_BOOT_MACHINE_TYPES: frozenset[str] = frozenset(a.machine_type for a in _RECORDS if a.secure_boot)
NO_ON_DEMAND_MACHINES: frozenset[str] = frozenset(a.machine_type for a in _RECORDS if not a.on_demand)
FLEX_START_MACHINES: frozenset[str] = frozenset(a.machine_type for a in _RECORDS if a.flex_start)
FLEX_START_WORKLOAD_POLICY_MACHINES: frozenset[str] = frozenset(
    a.machine_type for a in _RECORDS if a.flex_start_workload_policy
)

# --- Facts every GPU type here shares (the records' machines all have them) --------------------------------------
# One gVNIC NIC for the gVNIC VPC plus 8 MRDMA NICs, one per GPU: the tutorial (_TUTORIAL) creates eight RDMA subnets
# and attaches them as eth2..eth9 (rdma-0..rdma-7); Google's NCCL test pods attach the same eight
# (container-engine-accelerators gpudirect-rdma/nccl-test-a4.yaml).
RDMA_NICS_PER_NODE = 8
# Each of the 8 CX-7 NICs: 400 Gbps = 50 GB/s (_NICS).
RDMA_NIC_GBITPS = 400
# Each local SSD disk holds 375 GiB (Compute Engine "About Local SSD disks"): 12,000 GiB of ephemeral storage per
# GPU node, against which the Ray workers' ephemeral-storage requests are sized (core/node_fit.py).
LOCAL_SSD_GIB = 375
# The gIB NCCL net plugin's name (its ncclNet->name): the value the pods' NCCL_NET selects, and what NCCL's
# log prints in `Using network gIB` and `via NET/gIB/<dev>` (Cluster Toolkit examples/gke-a4/
# nccl-jobset-example.yaml @ 0bcb0c2d3cb4: `# Force use of libnccl-gib` / `export NCCL_NET=gIB`; NCCL matches
# NCCL_NET against the plugin's name case-insensitively, NVIDIA/nccl v2.27.7-1 src/plugin/net.cc:166).
NCCL_NET_PLUGIN = "gIB"


@dataclass(frozen=True)
class GateGpuFacts:
    """Per-GPU-type bandwidth facts the gate's settings are checked against (a view of the record)."""

    gpu_type: str
    nvlink_bidirectional_gbps: float
    pcie_bidirectional_gbps: float

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


GATE_GPU_FACTS: dict[str, GateGpuFacts] = {
    a.gpu_type: GateGpuFacts(a.gpu_type, a.nvlink_bidirectional_gbps, a.pcie_bidirectional_gbps) for a in _RECORDS
}
