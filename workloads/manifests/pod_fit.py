"""Does every pod the stack renders fit where it lands? Checked before anything is registered.

`rendered_pods(settings)` builds the pod templates with the same pure builders the components apply (the Ray head
and GPU workers, the job's submitter, the weights prefetch (and with weightsPath bucket-import the staging and
import), the data staging, the checkpoint export, the GPU placeholders, the CPU image pre-pull), and
`problems(settings)` sizes each one, all containers plus the sidecar GKE injects (core/node_fit.py `pod_request`),
against the node or Autopilot class its node selector picks: on Standard a system node (its boot disk backs
ephemeral storage) or a GPU node (local SSDs), on Autopilot the class's maxima. `__main__` refuses the stack with
one line per problem, naming the setting to change, like the settings' own rules; they run only on settings those
rules accepted. A pod that cannot fit never schedules: on Standard it pends while the rest of the stack (the GPU
nodes included) comes up and `pulumi up` reports success; on Autopilot it is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from core import catalog, export, node_fit, weights
from core.keys import key as _key
from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import Settings, SettingsError
from workloads.manifests import export_job, staging_job, warmup, weights_staging
from workloads.manifests.prefetch_job import WeightsPrefetchArgs, job_spec
from workloads.manifests.raycluster import RayPodsConfig, raycluster_spec
from workloads.manifests.rayjob import SUBMITTER_CONTAINER, SUBMITTER_RESOURCES, JobArgs, submitter_template
from workloads.manifests.warmup import GpuWarmupArgs

ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
COMPUTE_CLASS_LABEL = catalog.COMPUTE_CLASS_LABEL
AUTOPILOT_DEFAULT_CLASS = "General-purpose"


@dataclass(frozen=True)
class RenderedPod:
    what: str  # how a problem line names the pod
    keys: dict[str, str]  # Resources field -> the config key that changes it
    annotations: dict
    spec: dict


def _keys(cpu: str, memory: str, ephemeral: str) -> dict[str, str]:
    return {"cpu": cpu, "memory_gib": memory, "ephemeral_gib": ephemeral}


def rendered_pods(s: Settings) -> list[RenderedPod]:
    machine = "systemMachineType"
    cpu_pod = _keys(machine, machine, machine)
    worker_keys = _keys("gpuType", "gpuType", "workerEphemeralStorageGib")
    spec = raycluster_spec(RayPodsConfig.of(s), secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)
    head, worker = spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]
    pods = [
        RenderedPod(
            "the Ray head pod",
            _keys("headCpu", "headMemoryGib", "headEphemeralStorageGib"),
            head.get("metadata", {}).get("annotations", {}),
            head["spec"],
        ),
        RenderedPod("a GPU worker pod", worker_keys, worker.get("metadata", {}).get("annotations", {}), worker["spec"]),
    ]
    if s.job.enabled and s.recipe is not None:
        pods.append(RenderedPod("the RayJob's submitter pod", cpu_pod, {}, submitter_template(JobArgs.of(s))["spec"]))
        if s.startup.prefetch_weights and s.recipe.model_revision is not None:
            pods.append(
                RenderedPod(
                    "the weights prefetch pod", cpu_pod, {}, job_spec(WeightsPrefetchArgs.of(s))["template"]["spec"]
                )
            )
        staging = staging_job.job_spec(staging_job.DataStagingArgs.of(s))["template"]
        pods.append(
            RenderedPod(
                "the data staging pod", cpu_pod, (staging.get("metadata") or {}).get("annotations", {}), staging["spec"]
            )
        )
        if weights.staged(s):
            staging = weights_staging.WeightsStagingArgs.of(s)
            template = weights_staging.stage_job_spec(staging)["template"]
            pods.append(
                RenderedPod("the weights staging pod", cpu_pod, template["metadata"]["annotations"], template["spec"])
            )
            pods.append(
                RenderedPod(
                    "the weights import pod", cpu_pod, {}, weights_staging.import_job_spec(staging)["template"]["spec"]
                )
            )
        if s.startup.export_checkpoints:
            template = export_job.job_spec(export_job.export_job_args(s, s.names.export_ksa))["template"]
            pods.append(
                RenderedPod("the checkpoint export pod", cpu_pod, template["metadata"]["annotations"], template["spec"])
            )
    if s.startup.warmup:
        w = GpuWarmupArgs.of(s)
        job = warmup.placeholders_of(w)
        if job is not None:
            pods.append(RenderedPod("a GPU placeholder pod", worker_keys, {}, job["spec"]["template"]["spec"]))
        ds = warmup.prepull_of(w)
        if ds is not None:
            pods.append(RenderedPod("the image pre-pull pod", cpu_pod, {}, ds["spec"]["template"]["spec"]))
    return pods


def room_for(s: Settings, pod_spec: dict) -> Optional[node_fit.Room]:
    """Where the pod lands: by its node selector, the stack's system node, GPU node or Autopilot class."""
    selector = pod_spec.get("nodeSelector") or {}
    acc = s.gpu.accelerator if ACCELERATOR_LABEL in selector else None
    if s.autopilot:
        return node_fit.autopilot_room(selector.get(COMPUTE_CLASS_LABEL, AUTOPILOT_DEFAULT_CLASS), acc)
    if acc is not None:
        ssds = catalog.LOCAL_SSD_COUNT.get(acc.machine_type, 0)
        disk = ssds * catalog.LOCAL_SSD_GIB if ssds else acc.boot_disk_gb
        return node_fit.standard_node_room(acc.machine_type, disk, gpu=True)
    # Without an accelerator selector the only untainted nodes are the system pool's (GPU pools are tainted).
    return node_fit.standard_node_room(s.cluster.system_machine_type, catalog.SYSTEM_BOOT_DISK_GB, gpu=False)


def problems(s: Settings) -> list[str]:
    """One line per (setting, resource): the first pod that does not fit names it (a placeholder, shaped like the
    worker, adds nothing to the worker's line)."""
    out: list[str] = []
    seen: set[tuple[str, str]] = set()
    for pod in rendered_pods(s):
        room = room_for(s, pod.spec)
        if room is None:
            continue  # a machine type node_fit cannot decode: GKE reports the pending pod
        request = node_fit.pod_request(pod.spec, pod.annotations, autopilot=s.autopilot)
        for field, key, line in node_fit.pod_fit_problems(pod.what, request, room, pod.keys):
            if (key, field) not in seen:
                seen.add((key, field))
                out.append(line)
    return out


# --- The CPU pool: the sum of what it holds at once ------------------------------------------------------------
@dataclass(frozen=True)
class CpuPoolPlan:
    """Standard: the autoscaling CPU pool (infra/cluster.py) sized for the platform's CPU pods and those of every job
    its GPUs can run at once, and the CPU quota Kueue gives the heads and submitters it admits.

    - `max_jobs`: jobs that can run at once. Each holds at least one whole GPU node (its workers request a node's
      GPUs), so at most `gpuNodes` (the GPU quota's nodes): the platform's own job is one of them.
    - `experiments`: the experiments the platform hosts (`experiments`: an experiment stack the platform does not
      list is refused), one job each. All of their CPU Jobs (prefetch, data staging, export) may exist at once,
      queued or not (they are not queued); their heads and submitters only for the jobs Kueue admits at once:
      `admitted` of them, what the GPUs leave beside the platform's own job.
    - `job_pods`: one job's CPU pods at the platform's shapes (an experiment has its platform's machine types; its
      own headCpu / headMemoryGib count against the quota, which admits fewer of them when they are larger): its
      Ray head, its RayJob's submitter, its weights prefetch, its data staging Job and its export Job (which waits on
      the CPU pool while the job trains), the Cloud Storage FUSE sidecars included.
    - `platform_pods`: the standing RayCluster's head (it stays for interactive work) and the platform's own job.
    - `max_nodes`: the nodes first fit places all of them on, plus one: the scheduler spreads pods rather than
      packing them (its default scoring prefers the least allocated node), so a node's free room can end up split.
    - `queued`: what Kueue counts of them (heads and submitters; the Jobs are not queued): the CPU flavor's quota.
    """

    machine_type: str
    room: node_fit.Resources  # one node's room: allocatable less GKE's pods and the pool's DaemonSets
    daemonsets: tuple[tuple[str, node_fit.Resources], ...]
    max_jobs: int
    job_pods: tuple[tuple[str, node_fit.Resources], ...]
    platform_pods: tuple[tuple[str, node_fit.Resources], ...]
    max_nodes: int
    queued: node_fit.Resources
    experiments: tuple[str, ...] = ()

    @property
    def admitted(self) -> int:
        """Experiments whose heads and submitters run at once: all of them, unless the GPUs run fewer jobs."""
        own_job = any(name == "platform job submitter" for name, _ in self.platform_pods)
        return admitted_experiments(len(self.experiments), self.max_jobs, own_job)

    def pods_at_once(self) -> dict[str, node_fit.Resources]:
        """Every CPU pod the pool may hold at once: the platform's, every listed experiment's CPU Jobs, and the heads
        and submitters of the experiments admitted at once (`admitted`, in the listing's order)."""
        out = dict(self.platform_pods)
        for i, e in enumerate(self.experiments):
            for what, r in self.job_pods:
                if what in QUEUED_PODS and i >= self.admitted:
                    continue
                out[f"experiment {e} {what}"] = r
        return out


def admitted_experiments(experiments: int, max_jobs: int, own_job: bool) -> int:
    """Experiment jobs that run at once: every listed one, within what the GPUs run beside the platform's own job."""
    return max(0, min(experiments, max_jobs - (1 if own_job else 0)))


def _total(spec: dict, annotations: Optional[dict] = None) -> node_fit.Resources:
    return node_fit.pod_request(spec, annotations or {}).total


def job_cpu_pods(s: Settings) -> dict[str, node_fit.Resources]:
    """A job's CPU pods as `s` renders them, own-cluster (how an experiment and a queued platform job run): head,
    submitter, prefetch (when on), data staging and export (when on)."""
    own = s.model_copy(update={"job": s.job.model_copy(update={"mode": "own-cluster", "enabled": True})})
    head = raycluster_spec(RayPodsConfig.of(own), secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)["headGroupSpec"]
    out = {"head": _total(head["template"]["spec"])}
    # The submitter's container as submitter_template renders it (its command aside, which needs the job's recipe).
    out["submitter"] = _total({"containers": [{"name": SUBMITTER_CONTAINER, "resources": SUBMITTER_RESOURCES}]})
    if own.startup.prefetch_weights and own.recipe.model_revision is not None:
        out["prefetch"] = _total(job_spec(WeightsPrefetchArgs.of(own))["template"]["spec"])
    # The data staging Job (every job has one: jobData or the recipe's built-in datasets), with the Cloud Storage FUSE
    # sidecar whether or not this stack's jobData reads gs://: an experiment's own jobData may, at the same shape.
    staging = staging_job.job_spec(staging_job.DataStagingArgs.of(own))["template"]
    out["data staging"] = _total(staging["spec"], export.pod_annotations())
    if own.startup.export_checkpoints:
        template = export_job.job_spec(export_job.export_job_args(own, own.names.export_ksa))["template"]
        out["export"] = _total(template["spec"], template["metadata"].get("annotations"))
    return out


def platform_cpu_pods(s: Settings) -> dict[str, node_fit.Resources]:
    """The platform's own CPU pods: the standing RayCluster's head, and its job's (named `platform job <pod>`), its
    weights staging and import Jobs included."""
    spec = raycluster_spec(RayPodsConfig.of(s), secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)
    out = {"standing head": _total(spec["headGroupSpec"]["template"]["spec"])}
    if s.job.enabled:
        pods = job_cpu_pods(s)
        if s.job.mode != "own-cluster":
            pods.pop("head")  # the job runs on the standing head
        out.update({f"platform job {k}": v for k, v in pods.items()})
    if weights.staged(s):
        # weightsPath bucket-import (a platform's own job only): its staging and import Jobs run on the CPU pool too.
        staging = weights_staging.WeightsStagingArgs.of(s)
        template = weights_staging.stage_job_spec(staging)["template"]
        out["platform job weights staging"] = _total(template["spec"], template["metadata"].get("annotations"))
        out["platform job weights import"] = _total(weights_staging.import_job_spec(staging)["template"]["spec"])
    return out


def cpu_pool_daemonsets(s: Settings) -> dict[str, node_fit.Resources]:
    """The DaemonSets of ours every CPU pool node runs (the image pre-pull), beside GKE's (node_fit's estimate)."""
    out = {}
    if s.startup.warmup:
        ds = warmup.prepull_of(GpuWarmupArgs.of(s))
        if ds is not None:
            out["image pre-pull"] = _total(ds["spec"]["template"]["spec"])
    return out


def max_jobs(s: Settings) -> int:
    """Jobs the platform's GPUs can run at once: each holds at least one whole GPU node."""
    return s.worker_replicas if s.autopilot else s.gpu.nodes


def cpu_pool_plan(s: Settings) -> Optional[CpuPoolPlan]:
    """The Standard CPU pool's plan; None on Autopilot (no pool: every pod gets its own capacity) or for a machine
    type node_fit cannot decode (GKE reports what does not fit)."""
    if s.autopilot:
        return None
    daemonsets = cpu_pool_daemonsets(s)
    room = node_fit.node_room(s.cluster.system_machine_type, catalog.SYSTEM_BOOT_DISK_GB, tuple(daemonsets.values()))
    if room is None:
        return None
    jobs = max_jobs(s)
    job_pods = job_cpu_pods(s)
    platform_pods = platform_cpu_pods(s)
    plan = CpuPoolPlan(
        machine_type=s.cluster.system_machine_type,
        room=room,
        daemonsets=tuple(daemonsets.items()),
        max_jobs=jobs,
        job_pods=tuple(job_pods.items()),
        platform_pods=tuple(platform_pods.items()),
        max_nodes=0,
        queued=_queued(s, platform_pods, job_pods, jobs),
        experiments=tuple(sorted(s.tenancy.experiments)),
    )
    at_once = plan.pods_at_once()
    placed = node_fit.place(at_once, room, max_nodes=len(at_once))
    return dataclasses.replace(plan, max_nodes=min(len(placed.nodes) + 1, catalog.GKE_MAX_NODES_PER_POOL_ZONE))


QUEUED_PODS = ("head", "submitter")  # what a RayJob's Workload holds of the CPU pool (the Jobs are not queued)


def _queued(s: Settings, platform: dict[str, node_fit.Resources], job: dict[str, node_fit.Resources], jobs: int):
    """Heads and submitters Kueue admits at once: the standing RayCluster's head (Kueue's RayCluster integration: it
    holds quota while it exists), the platform's own-cluster job (a standing-cluster RayJob is not queued, but its
    workers hold GPU nodes) and those of the listed experiments the GPUs can run beside it."""
    counted = [platform["standing head"]]
    own = s.job.enabled and s.job.mode == "own-cluster"
    if own:
        counted += [platform[f"platform job {p}"] for p in QUEUED_PODS]
    admitted = admitted_experiments(len(s.tenancy.experiments), jobs, s.job.enabled)
    counted += [job[p] for _ in range(admitted) for p in QUEUED_PODS]
    total = node_fit.Resources(0, 0)
    for r in counted:
        total = total.plus(r)
    return node_fit.Resources(total.cpu, total.memory_gib)


def cpu_pool_problems(plan: CpuPoolPlan, pods: dict[str, node_fit.Resources]) -> list[str]:
    """One line when `pods` (what the pool holds at once) do not fit its nodes, summed node by node."""
    placed = node_fit.place(pods, plan.room, plan.max_nodes)
    if not placed.unplaced:
        return []
    first = placed.unplaced[0]
    r = pods[first]
    return [
        f"{_key('systemMachineType')}: {len(placed.unplaced)} CPU pod(s) find no room on the CPU pool's "
        f"{plan.max_nodes} {plan.machine_type} nodes ({plan.room.cpu:.1f} CPUs / {plan.room.memory_gib:.1f} GiB each "
        f"after GKE's reservation and the DaemonSets), first {first} ({r.cpu:g} CPUs / {r.memory_gib:g} GiB); "
        "they would stay Pending: choose a larger machine type or lower headCpu / headMemoryGib"
    ]


def check(s: Settings) -> None:
    """Raise SettingsError with every pod that cannot fit (nothing is registered before it)."""
    found = problems(s)
    plan = cpu_pool_plan(s) if not found else None
    if plan is not None:
        found += cpu_pool_problems(plan, plan.pods_at_once())
    if found:
        raise SettingsError(found)
