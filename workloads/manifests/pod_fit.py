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

from dataclasses import dataclass
from typing import Optional

from core import catalog, node_fit, weights
from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import Settings, SettingsError
from workloads.manifests import export_job, staging_job, warmup, weights_staging
from workloads.manifests.prefetch_job import WeightsPrefetchArgs, job_spec
from workloads.manifests.raycluster import RayPodsConfig, raycluster_spec
from workloads.manifests.rayjob import JobArgs, submitter_template
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


def check(s: Settings) -> None:
    """Raise SettingsError with every pod that cannot fit (nothing is registered before it)."""
    found = problems(s)
    if found:
        raise SettingsError(found)
