"""Does a pod fit on its node? GKE's allocatable-resource formula, machine shapes, and the fit rules.

Pure arithmetic; settings validation calls the `*_problems` functions, which return problem lines naming the
config key. A pod whose requests exceed what its node can give never schedules: on Standard it pends forever,
on Autopilot it is refused or waits for a node that never comes. Checking up front turns that into one line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from core import catalog
from core.keys import key as _key

GIB_PER_MIB = 1 / 1024



# --- GKE allocatable resources -----------------------------------------------------------------------------
# https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes ("Memory and CPU reservations",
# read 2026-11-30; the same formula as hatemosphere/gke-node-allocatable-memory-calculator):
#   memory: 255 MiB on machines under 1 GiB; else 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8,
#           6% of the next 112, 2% of the rest; plus a 100 MiB eviction threshold.
#   CPU:    6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% of every core above 4.
_MEMORY_TIERS = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06))
_CPU_TIERS = ((1, 0.06), (1, 0.01), (2, 0.005))
EVICTION_THRESHOLD_GIB = 100 * GIB_PER_MIB


def _tiered(amount: float, tiers: tuple[tuple[float, float], ...], rest_share: float) -> float:
    """GKE's reservation: each tier's share of the part of `amount` that falls in it, then `rest_share` above."""
    left, reserved = amount, 0.0
    for size, share in tiers:
        part = min(left, size)
        reserved += part * share
        left -= part
    return reserved + left * rest_share


def reserved_memory_gib(memory_gib: float) -> float:
    if memory_gib < 1:
        return 255 * GIB_PER_MIB
    return _tiered(memory_gib, _MEMORY_TIERS, 0.02)


def reserved_cpu(vcpus: float) -> float:
    return _tiered(vcpus, _CPU_TIERS, 0.0025)


@dataclass(frozen=True)
class Resources:
    cpu: float         # cores
    memory_gib: float

    def minus(self, other: "Resources") -> "Resources":
        return Resources(self.cpu - other.cpu, self.memory_gib - other.memory_gib)


def allocatable(vcpus: float, memory_gib: float) -> Resources:
    """What the kubelet offers pods on a GKE node of this shape (before any DaemonSet)."""
    return Resources(vcpus - reserved_cpu(vcpus),
                     memory_gib - reserved_memory_gib(memory_gib) - EVICTION_THRESHOLD_GIB)


# --- Machine shapes -----------------------------------------------------------------------------------------------
# Predefined general-purpose types are <series>-<class>-<vCPUs>; memory per vCPU (GB, which Compute Engine
# counts in 2^30 bytes) by series and class, from https://cloud.google.com/compute/docs/general-purpose-machines
# (read 2026-11-30). Custom types are <series>-custom-<vCPUs>-<MiB>. Anything else is not recognised and its fit
# is not checked (say so rather than guess).
_GB_PER_VCPU: dict[str, dict[str, float]] = {
    "n1": {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9},
    "n2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n2d": {"standard": 4, "highmem": 8, "highcpu": 1},
    "e2": {"standard": 4, "highmem": 8, "highcpu": 1},
    "n4": {"standard": 4, "highmem": 8, "highcpu": 2},
    "c3": {"standard": 4, "highmem": 8, "highcpu": 2},
    "c3d": {"standard": 4, "highmem": 8, "highcpu": 2},
}
_PREDEFINED = re.compile(r"^([a-z][a-z0-9]*)-(standard|highmem|highcpu)-([0-9]+)$")
_CUSTOM = re.compile(r"^([a-z][a-z0-9]*)-custom-([0-9]+)-([0-9]+)$")


def machine_shape(machine_type: str) -> Optional[Resources]:
    """vCPUs and memory (GiB) of a machine type, or None when it is not one we can decode."""
    for acc in catalog.ACCELERATORS.values():
        if acc.machine_type == machine_type:
            return Resources(acc.vcpus, acc.memory_gib)
    m = _PREDEFINED.match(machine_type)
    if m and m.group(1) in _GB_PER_VCPU:
        vcpus = int(m.group(3))
        return Resources(vcpus, vcpus * _GB_PER_VCPU[m.group(1)][m.group(2)])
    m = _CUSTOM.match(machine_type)
    if m and m.group(1) in _GB_PER_VCPU:
        return Resources(int(m.group(2)), int(m.group(3)) / 1024)
    return None


# --- What GKE's own pods take -------------------------------------------------------------------------------------
# Google publishes no per-node total for its DaemonSets (and, on the single system node, its kube-system
# Deployments: kube-dns, konnectivity-agent, metrics-server, GMP operator, ...). These are estimates with
# headroom, NOT published figures: each DaemonSet requests tens of millicores and tens of MiB (Autopilot's
# default DaemonSet request is 50m / 100 MiB per container, kubernetes-engine/docs/concepts/
# autopilot-resource-requests); a system node runs about 15 such pods plus the Deployments, a GPU node about
# 15 (device plugin, DCGM exporter, gIB installer pause, multi-networking, CSI nodes, logging, metrics).
SYSTEM_NODE_GKE_OVERHEAD = Resources(cpu=1.5, memory_gib=3.0)
GPU_NODE_GKE_OVERHEAD = Resources(cpu=2.0, memory_gib=4.0)

# Share of a GPU machine's vCPUs / memory one Ray worker pod requests (one pod per node, requests = limits).
WORKER_SHARE = 0.9


def gpu_worker_request(acc: catalog.Accelerator) -> Resources:
    """Requests (= limits) of one GPU worker pod filling one node: whole cores and GiB below allocatable."""
    return Resources(int(acc.vcpus * WORKER_SHARE), int(acc.memory_gib * WORKER_SHARE))


# --- Fit rules ------------------------------------------------------------------------------------------------------
def shm_problems(shm_gib: int, worker_memory_limit_gib: float, key: str = "shmSizeGib") -> list[str]:
    """A memory-backed emptyDir counts against the pod's memory limit (kubernetes.io/docs/concepts/storage/
    volumes/#emptydir: "files you write count against your container's memory limit"): /dev/shm must leave the
    worker processes room. We ask for strictly less than the limit."""
    if shm_gib >= worker_memory_limit_gib:
        return [f"{_key(key)}: /dev/shm of {shm_gib} GiB does not fit in the worker's memory limit of "
                f"{worker_memory_limit_gib:g} GiB (a memory-backed volume counts against it)"]
    return []


def head_problems(head: Resources, machine_type: str, *, cpu_key: str = "headCpu",
                  memory_key: str = "headMemoryGib", machine_key: str = "systemMachineType") -> list[str]:
    """The Ray head's requests within one system node's allocatable less GKE's own pods (Standard)."""
    shape = machine_shape(machine_type)
    if shape is None:
        return []  # unknown shape: cannot check offline; GKE reports the pending pod
    room = allocatable(shape.cpu, shape.memory_gib).minus(SYSTEM_NODE_GKE_OVERHEAD)
    p = []
    if head.cpu > room.cpu:
        p.append(f"{_key(cpu_key)}: {head.cpu:g} CPUs do not fit on a {machine_type} system node, which "
                 f"offers about {room.cpu:.1f} after GKE's reservation and system pods; lower it or choose a "
                 f"larger {_key(machine_key)}")
    if head.memory_gib > room.memory_gib:
        p.append(f"{_key(memory_key)}: {head.memory_gib:g} GiB do not fit on a {machine_type} system node, which "
                 f"offers about {room.memory_gib:.1f} GiB after GKE's reservation and system pods; lower it or "
                 f"choose a larger {_key(machine_key)}")
    return p


def worker_problems(acc: catalog.Accelerator, request: Resources, *, autopilot: bool,
                    key: str = "gpuType") -> list[str]:
    """The GPU worker's requests within what one GPU node offers. On Autopilot Google publishes no maximum for
    these GPU types; the machine's allocatable less GKE's pods is used instead (unverified bound)."""
    room = allocatable(acc.vcpus, acc.memory_gib).minus(GPU_NODE_GKE_OVERHEAD)
    where = "an Autopilot node (bound unverified: Google publishes no maximum)" if autopilot else "a node"
    p = []
    if request.cpu > room.cpu:
        p.append(f"{_key(key)}: a worker requesting {request.cpu:g} CPUs does not fit on {where} of "
                 f"{acc.machine_type} (about {room.cpu:.1f} available)")
    if request.memory_gib > room.memory_gib:
        p.append(f"{_key(key)}: a worker requesting {request.memory_gib:g} GiB does not fit on {where} of "
                 f"{acc.machine_type} (about {room.memory_gib:.1f} GiB available)")
    return p
