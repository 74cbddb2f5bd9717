"""Does a pod fit on its node? GKE's allocatable-resource formula, machine shapes, and the fit rules.

Pure arithmetic; settings validation calls the `*_problems` functions, which return problem lines naming the
config key. A pod whose requests exceed what its node can give never schedules: on Standard it pends forever,
on Autopilot it is refused or waits for a node that never comes. Checking up front turns that into one line.
The last part sizes whole rendered pods (every container, init containers at their peak, the GCS FUSE sidecar GKE
injects) for CPU, memory and ephemeral storage against a Standard node or an Autopilot class (`pod_request`,
`pod_fit_problems`); workloads/manifests/pod_fit.py runs it on every pod the stack renders.
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
    cpu: float  # cores
    memory_gib: float
    ephemeral_gib: float = 0.0  # local ephemeral storage (writable layers, logs, emptyDirs on disk)

    def minus(self, other: "Resources") -> "Resources":
        return Resources(
            self.cpu - other.cpu, self.memory_gib - other.memory_gib, self.ephemeral_gib - other.ephemeral_gib
        )

    def plus(self, other: "Resources") -> "Resources":
        return Resources(
            self.cpu + other.cpu, self.memory_gib + other.memory_gib, self.ephemeral_gib + other.ephemeral_gib
        )


def allocatable(vcpus: float, memory_gib: float) -> Resources:
    """What the kubelet offers pods on a GKE node of this shape (before any DaemonSet)."""
    return Resources(vcpus - reserved_cpu(vcpus), memory_gib - reserved_memory_gib(memory_gib) - EVICTION_THRESHOLD_GIB)


# Ephemeral storage (same page, "Local ephemeral storage reservation"): of the disk backing
# ephemeral storage GKE keeps an eviction threshold of 10 % and reserves min(50 %, 6 GiB + 35 %, 100 GiB) for the
# system. The formula is applied to the whole disk; the partitions the OS image takes out of a boot disk make the
# kubelet's figure a few GiB smaller (about 96-99 GiB reported for 200 GB, this gives 104), so pods are sized
# with the headroom of GKE_OVERHEAD below. GPU pools back ephemeral storage with their local SSDs
# (infra/local_ssd.py); the page's reservation for local-SSD-backed storage was not read, so the same formula is
# used there, on the SSDs' total (its 100 GiB cap is what matters at 12 TB).
EPHEMERAL_EVICTION_SHARE = 0.10


def ephemeral_allocatable_gib(disk_gib: float) -> float:
    reserved = min(0.5 * disk_gib, 6 + 0.35 * disk_gib, 100)
    return disk_gib - EPHEMERAL_EVICTION_SHARE * disk_gib - reserved


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
SYSTEM_NODE_GKE_OVERHEAD = Resources(cpu=1.5, memory_gib=3.0, ephemeral_gib=8.0)
GPU_NODE_GKE_OVERHEAD = Resources(cpu=2.0, memory_gib=4.0, ephemeral_gib=8.0)

# Share of a GPU machine's vCPUs / memory one Ray worker pod requests (one pod per node, requests = limits).
WORKER_SHARE = 0.9

# Ephemeral storage the Ray containers request (headEphemeralStorageGib / workerEphemeralStorageGib change it), by
# cluster mode. What lands there on a multi-hour run: Ray's session directory /tmp/ray (every process's logs, and
# objects spilled when the /dev/shm object store is full), and on the GPU workers the JIT caches of vLLM
# (~/.cache/vllm, torch.compile artefacts), Triton (~/.triton) and TorchInductor (/tmp/torchinductor_<user>), per
# model, shape and rank. Without a request Autopilot gives each container 1 GiB and evicts past it. Standard: GPU
# nodes back it with 12,000 GiB of local SSD, the system node with its boot disk; Autopilot: the 10 GiB a pod may
# have (AUTOPILOT_MAX_EPHEMERAL_GIB); the head's 8 once left room for the export's sidecar, which now runs in a Job
# of its own (headEphemeralStorageGib may take all 10). Sizes are estimates, not measurements.
HEAD_EPHEMERAL_GIB = {"standard": 32, "autopilot": 8}
WORKER_EPHEMERAL_GIB = {"standard": 200, "autopilot": 10}


def gpu_worker_request(acc: catalog.Accelerator) -> Resources:
    """Requests (= limits) of one GPU worker pod filling one node: whole cores and GiB below allocatable."""
    return Resources(int(acc.vcpus * WORKER_SHARE), int(acc.memory_gib * WORKER_SHARE))


# --- Fit rules ------------------------------------------------------------------------------------------------------
def shm_problems(shm_gib: int, worker_memory_limit_gib: float, key: str = "shmSizeGib") -> list[str]:
    """A memory-backed emptyDir counts against the pod's memory limit (kubernetes.io/docs/concepts/storage/
    volumes/#emptydir: "files you write count against your container's memory limit"): /dev/shm must leave the
    worker processes room. We ask for strictly less than the limit."""
    if shm_gib >= worker_memory_limit_gib:
        return [
            f"{_key(key)}: /dev/shm of {shm_gib} GiB does not fit in the worker's memory limit of "
            f"{worker_memory_limit_gib:g} GiB (a memory-backed volume counts against it)"
        ]
    return []


def head_problems(
    head: Resources,
    machine_type: str,
    *,
    cpu_key: str = "headCpu",
    memory_key: str = "headMemoryGib",
    machine_key: str = "systemMachineType",
) -> list[str]:
    """The Ray head's requests within one system node's allocatable less GKE's own pods (Standard)."""
    shape = machine_shape(machine_type)
    if shape is None:
        return []  # unknown shape: cannot check offline; GKE reports the pending pod
    room = allocatable(shape.cpu, shape.memory_gib).minus(SYSTEM_NODE_GKE_OVERHEAD)
    p = []
    if head.cpu > room.cpu:
        p.append(
            f"{_key(cpu_key)}: {head.cpu:g} CPUs do not fit on a {machine_type} system node, which "
            f"offers about {room.cpu:.1f} after GKE's reservation and system pods; lower it or choose a "
            f"larger {_key(machine_key)}"
        )
    if head.memory_gib > room.memory_gib:
        p.append(
            f"{_key(memory_key)}: {head.memory_gib:g} GiB do not fit on a {machine_type} system node, which "
            f"offers about {room.memory_gib:.1f} GiB after GKE's reservation and system pods; lower it or "
            f"choose a larger {_key(machine_key)}"
        )
    return p


def worker_problems(
    acc: catalog.Accelerator, request: Resources, *, autopilot: bool, key: str = "gpuType"
) -> list[str]:
    """The GPU worker's requests within what one GPU node offers. On Autopilot Google publishes no maximum for
    these GPU types; the machine's allocatable less GKE's pods is used instead (unverified bound)."""
    room = allocatable(acc.vcpus, acc.memory_gib).minus(GPU_NODE_GKE_OVERHEAD)
    where = "an Autopilot node (bound unverified: Google publishes no maximum)" if autopilot else "a node"
    p = []
    if request.cpu > room.cpu:
        p.append(
            f"{_key(key)}: a worker requesting {request.cpu:g} CPUs does not fit on {where} of "
            f"{acc.machine_type} (about {room.cpu:.1f} available)"
        )
    if request.memory_gib > room.memory_gib:
        p.append(
            f"{_key(key)}: a worker requesting {request.memory_gib:g} GiB does not fit on {where} of "
            f"{acc.machine_type} (about {room.memory_gib:.1f} GiB available)"
        )
    return p


# --- Whole pods: every container, GKE's injected sidecars, against the node or Autopilot class -------------------
# Kubernetes' effective pod request (kubernetes.io/docs/concepts/workloads/pods/sidecar-containers, "Resource
# sharing within containers"): per resource, the larger of (the app containers plus the sidecars, i.e. init
# containers with restartPolicy Always) and the largest other init container.
#
# The Cloud Storage FUSE sidecar (gke-gcsfuse-sidecar) is injected into Pods annotated `gke-gcsfuse/volumes: "true"`
# as a native sidecar, sized from `gke-gcsfuse/{cpu,memory,ephemeral-storage}-{request,limit}`
# (GoogleCloudPlatform/gcs-fuse-csi-driver pkg/webhook/config.go `populateResource` at v1.24.4 32396eba): with
# neither annotation the webhook's default request applies; with only a limit the request EQUALS THE LIMIT; with
# only a request the limit equals it; a limit of "0" means none. The defaults GKE's webhook starts with are
# deploy/base/webhook/deployment.yaml at the same tag: requests 250m CPU, 256Mi memory, 5Gi ephemeral storage.
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
GCSFUSE_SIDECAR = "gke-gcsfuse-sidecar"
GCSFUSE_DEFAULT_REQUESTS = {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "5Gi"}

# Autopilot ("Resource requests in Autopilot", kubernetes-engine/docs/concepts/autopilot-resource-requests):
# containers without an ephemeral-storage request get 1 GiB ("All other containers: Ephemeral storage: 1 GiB",
# the page's default requests, read 2026-11 in its zh-cn copy), and Autopilot refuses a Pod whose
# requests exceed the maximum of its compute class or hardware configuration. Ephemeral storage: "The ephemeral
# storage request must be between 10 MiB and 10 GiB for all compute classes and hardware configurations" (the
# page as quoted in GoogleCloudPlatform/gcs-fuse-csi-driver issue #21, a driver maintainer, 2023; the same driver's
# issue #57, 2024-02-01, a maintainer: "On Autopilot cluster, the maximum ephemeral storage is 10Gi"; a 2026-03 report,
# simple-container-com/api PR #189: "GKE Autopilot hard-limits regular ephemeral storage to 10GB maximum"). The
# page's newer per-class tables could not be read here; where Google has raised a maximum since, 10 GiB stays a
# safe bound. CPU and memory maxima per class were not read either: the Balanced head is not checked for them, GPU
# pods against their machine's allocatable (worker_problems).
AUTOPILOT_DEFAULT_EPHEMERAL_GIB = 1.0
AUTOPILOT_MAX_EPHEMERAL_GIB = 10.0

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
_SCALE = {
    None: 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def quantity(text) -> float:
    """A Kubernetes quantity ("500m", "32Gi", "8", 4) as a plain number (cores or bytes)."""
    m = _QUANTITY.match(str(text))
    if m is None:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    return float(m.group(1)) * _SCALE[m.group(2)]


def _requests(resources: Optional[dict], *, autopilot: bool) -> Resources:
    req = dict((resources or {}).get("requests") or {})
    for k, v in ((resources or {}).get("limits") or {}).items():
        req.setdefault(k, v)  # a limit without a request is also the request (Kubernetes defaulting)
    eph = (
        quantity(req["ephemeral-storage"]) / 2**30
        if "ephemeral-storage" in req
        else (AUTOPILOT_DEFAULT_EPHEMERAL_GIB if autopilot else 0.0)
    )
    return Resources(quantity(req.get("cpu", 0)), quantity(req.get("memory", 0)) / 2**30, eph)


def gcsfuse_sidecar_requests(annotations: dict, *, autopilot: bool = False) -> Optional[Resources]:
    """The injected Cloud Storage FUSE sidecar's requests (populateResource), or None when none is injected."""
    if str((annotations or {}).get(GCSFUSE_ANNOTATION, "")).lower() != "true":
        return None
    amounts = {}
    for res, default in GCSFUSE_DEFAULT_REQUESTS.items():
        request = annotations.get(f"gke-gcsfuse/{res}-request")
        limit = annotations.get(f"gke-gcsfuse/{res}-limit")
        if request is None and limit is None:
            request = default
        elif request is None:
            request = default if quantity(limit) == 0 else limit
        amounts[res] = request
    return _requests({"requests": amounts}, autopilot=autopilot)


@dataclass(frozen=True)
class PodRequest:
    total: Resources
    parts: tuple[tuple[str, Resources], ...]  # (container, its requests), the injected sidecar included


def pod_request(spec: dict, annotations: Optional[dict] = None, *, autopilot: bool = False) -> PodRequest:
    """What the scheduler (and Autopilot's admission) counts for a pod: its containers and injected sidecars."""
    parts, running, init_peak = [], Resources(0, 0), Resources(0, 0)
    for c in spec.get("initContainers") or []:
        r = _requests(c.get("resources"), autopilot=autopilot)
        parts.append((c["name"], r))
        if c.get("restartPolicy") == "Always":
            running = running.plus(r)
        else:
            init_peak = Resources(
                max(init_peak.cpu, r.cpu),
                max(init_peak.memory_gib, r.memory_gib),
                max(init_peak.ephemeral_gib, r.ephemeral_gib),
            )
    sidecar = gcsfuse_sidecar_requests(annotations or {}, autopilot=autopilot)
    if sidecar is not None:
        parts.append((GCSFUSE_SIDECAR, sidecar))
        running = running.plus(sidecar)
    for c in spec.get("containers") or []:
        r = _requests(c.get("resources"), autopilot=autopilot)
        parts.append((c["name"], r))
        running = running.plus(r)
    total = Resources(
        max(running.cpu, init_peak.cpu),
        max(running.memory_gib, init_peak.memory_gib),
        max(running.ephemeral_gib, init_peak.ephemeral_gib),
    )
    return PodRequest(total, tuple(parts))


@dataclass(frozen=True)
class Room:
    """What one pod can have where it lands: `limits` per resource (None: not checked) and where that is."""

    where: str
    cpu: Optional[float]
    memory_gib: Optional[float]
    ephemeral_gib: Optional[float]
    outcome: str = "the pod would stay Pending while the rest of the stack comes up"


def standard_node_room(machine_type: str, ephemeral_disk_gib: float, gpu: bool) -> Optional[Room]:
    """A Standard node's allocatable less GKE's own pods; None for a machine type that cannot be decoded."""
    shape = machine_shape(machine_type)
    return None if shape is None else _node_room(machine_type, shape, ephemeral_disk_gib, gpu=gpu)


def _node_room(machine_type: str, shape: Resources, ephemeral_disk_gib: float, *, gpu: bool) -> Room:
    overhead = GPU_NODE_GKE_OVERHEAD if gpu else SYSTEM_NODE_GKE_OVERHEAD
    a = allocatable(shape.cpu, shape.memory_gib)
    return Room(
        f"one {machine_type} node",
        a.cpu - overhead.cpu,
        a.memory_gib - overhead.memory_gib,
        ephemeral_allocatable_gib(ephemeral_disk_gib) - overhead.ephemeral_gib,
    )


def autopilot_room(compute_class: str, accelerator: Optional[catalog.Accelerator] = None) -> Room:
    """An Autopilot pod's ceiling: the ephemeral-storage maximum; a GPU pod's machine for CPU and memory."""
    if accelerator is not None:
        node = _node_room(accelerator.machine_type, Resources(accelerator.vcpus, accelerator.memory_gib), 0, gpu=True)
        return Room(
            f"an Autopilot {accelerator.gpu_type} pod",
            node.cpu,
            node.memory_gib,
            AUTOPILOT_MAX_EPHEMERAL_GIB,
            "Autopilot refuses the pod",
        )
    return Room(
        f"an Autopilot {compute_class}-class pod", None, None, AUTOPILOT_MAX_EPHEMERAL_GIB, "Autopilot refuses the pod"
    )


_UNITS = {
    "cpu": ("CPUs", ""),
    "memory_gib": ("GiB of memory", " GiB"),
    "ephemeral_gib": ("GiB of ephemeral storage", " GiB"),
}


def pod_fit_problems(what: str, request: PodRequest, room: Room, keys: dict[str, str]) -> list[tuple[str, str, str]]:
    """(resource, key, line) per resource the pod asks more of than `room` gives; the line names the key."""
    p = []
    for field, (unit, short) in _UNITS.items():
        limit, asked = getattr(room, field), getattr(request.total, field)
        if limit is None or asked <= limit + 1e-9:
            continue
        parts = ", ".join(f"{name} {getattr(r, field):g}" for name, r in request.parts if getattr(r, field))
        p.append(
            (
                field,
                keys[field],
                f"{_key(keys[field])}: {what} asks for {asked:g} {unit} ({parts}), more than the "
                f"{limit:.1f}{short} {room.where} can give; {room.outcome}",
            )
        )
    return p


# --- Node totals: every pod a pool holds at once, node by node -------------------------------------------------
# A pod fits its node alone (above), but the pods of the platform and of every experiment its queue admits share the
# CPU pool's nodes: what must fit is their sum, node by node, after GKE's reservation (allocatable) and what every
# node of the pool runs first (GKE's DaemonSets: SYSTEM_NODE_GKE_OVERHEAD, an estimate with headroom; ours, such
# as the image pre-pull, from their rendered requests).
@dataclass(frozen=True)
class Placement:
    """Pods on a pool's nodes, first fit in decreasing size (CPU, then memory): `nodes[i]` are the pods node i holds;
    `unplaced` did not fit within the pool's `max_nodes` (they would stay Pending)."""

    nodes: tuple[tuple[str, ...], ...]
    unplaced: tuple[str, ...]
    room: Resources  # one node's room for these pods

    def used(self, pods: dict[str, Resources]) -> list[Resources]:
        out = []
        for names in self.nodes:
            total = Resources(0, 0, 0)
            for n in names:
                total = total.plus(pods[n])
            out.append(total)
        return out


def node_room(machine_type: str, disk_gib: float, daemonsets: tuple[Resources, ...] = ()) -> Optional[Resources]:
    """What one CPU node of `machine_type` (its boot disk `disk_gib` backing ephemeral storage) offers the pods placed
    on it: allocatable less GKE's own pods and the DaemonSets (every node runs one of each)."""
    shape = machine_shape(machine_type)
    if shape is None:
        return None
    a = allocatable(shape.cpu, shape.memory_gib)
    room = Resources(a.cpu, a.memory_gib, ephemeral_allocatable_gib(disk_gib)).minus(SYSTEM_NODE_GKE_OVERHEAD)
    for ds in daemonsets:
        room = room.minus(ds)
    return room


def _fits(r: Resources, free: Resources) -> bool:
    return (
        r.cpu <= free.cpu + 1e-9
        and r.memory_gib <= free.memory_gib + 1e-9
        and r.ephemeral_gib <= free.ephemeral_gib + 1e-9
    )


def place(pods: dict[str, Resources], room: Resources, max_nodes: int) -> Placement:
    """First fit decreasing: each pod, largest first (CPU, then memory), goes to the first node with room for its CPU,
    memory and ephemeral storage, else a new node (as the cluster autoscaler adds one for a pod that fits nowhere),
    up to `max_nodes`."""
    free: list[Resources] = []
    nodes: list[list[str]] = []
    unplaced = []
    for name in sorted(pods, key=lambda n: (-pods[n].cpu, -pods[n].memory_gib, n)):
        r = pods[name]
        if not _fits(r, room):
            unplaced.append(name)
            continue
        for i, f in enumerate(free):
            if _fits(r, f):
                free[i] = f.minus(r)
                nodes[i].append(name)
                break
        else:
            if len(nodes) >= max_nodes:
                unplaced.append(name)
                continue
            free.append(room.minus(r))
            nodes.append([name])
    return Placement(tuple(tuple(n) for n in nodes), tuple(unplaced), room)
