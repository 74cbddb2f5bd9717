"""The RayCluster: NeMo-RL release, worker group, mounts; and their rules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from core import catalog, node_fit, recipes, shell
from core.gcp_rules import mount_path_problems, protected_paths
from core.keys import key
from core.settings.base import Section
from core.settings.gpu import nodes_valid
from core.settings.record import (
    BOTH,
    IN_PLACE,
    INT32_ABOVE,
    ON_AUTOPILOT,
    ON_EXPERIMENT,
    PLATFORM,
    REFUSED_BY_PROGRAM,
    STOPS_THE_JOB,
    Condition,
    DayTwo,
    setting,
)

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


# rayVersion's one valid value is the Ray inside the image, which is also its default: set to it, nothing changes.
OTHER_RAY = Condition(
    "set to another version than the release's Ray",
    lambda s, change: change.get("rayVersion", None) not in (None, s.workload.release.ray_version),
)


class WorkloadSettings(Section):
    """The RayCluster: NeMo-RL release, worker group, mounts."""

    nemo_rl_release: str = setting(
        "v0.5.0",
        key="nemoRlRelease",
        description=(f"NeMo-RL container release ({catalog.one_of(list(catalog.NEMO_RL_RELEASES))})."),
        owner=BOTH,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=(
                "DaemonSet cpu-prepull",
                "Job placeholders",
                "Job export",
                "Job data-staging",
                "RayCluster raycluster",
                "RayJob rayjob",
            ),
            note="the image of every Ray pod and of the data staging Job, and the default run name",
        ),
        bad=("v9", "", "$x"),
        alternatives=({"nemoRlRelease": "v0.7.0"}, {"nemoRlRelease": "v0.5.0"}),
    )
    ray_version: Optional[str] = setting(
        None,
        key="rayVersion",
        description="Ray version of the RayCluster; default and only valid value: the Ray inside the NeMo-RL image.",
        owner=BOTH,
        day_two=DayTwo(
            IN_PLACE,
            where={OTHER_RAY: REFUSED_BY_PROGRAM},
            touches=("RayCluster raycluster", "RayJob rayjob"),
            note="its one valid value is the image's Ray, also its default: set to it, nothing changes",
        ),
        bad=("2.0.0",),
        alternatives=({"rayVersion": "2.49.2"},),
    )
    worker_replicas: Optional[int] = setting(
        None,
        key="workerReplicas",
        description="GPU worker pods (one per node); default: gpuNodes (Standard) or 2 (Autopilot).",
        owner=BOTH,
        day_two=DayTwo(
            IN_PLACE,
            where={ON_AUTOPILOT: STOPS_THE_JOB, ON_EXPERIMENT: STOPS_THE_JOB},
            touches=(
                "Job placeholders",
                "RayCluster raycluster",
                "RayJob rayjob",
                "NodePool gpu-*",
                "Job export",
                # The CPU pool's maximum and the queue's quota follow the jobs' workers (and gpuNodes where an
                # alternative changes both).
                "NodePool cpu",
                "ClusterQueue kueue-*",
            ),
            note="Standard: the worker group's replicas change in place (idle GPU nodes bill)",
        ),
        bad=(-1, 3, INT32_ABOVE),
        alternatives=({"workerReplicas": 4},),
        stack_alternatives={
            "codelab": {"workerReplicas": 8, "gpuNodes": 16},
            "dev": {"workerReplicas": 2, "gpuNodes": 4},
            "codelab-exp1": {"workerReplicas": 2, "jobOverrides": {"num_nodes": 2, "max_num_steps": 20}},
            "codelab-exp3": {
                "workerReplicas": 2,
                "jobOverrides": {"num_nodes": 2, "max_num_steps": 20, "grpo.seed": 7},
            },
        },
    )
    lustre_mount_path: str = setting(
        "/lustre",
        key="lustreMountPath",
        description="Where Lustre is mounted in the Ray pods.",
        owner=PLATFORM,
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("Job *", "RayCluster raycluster", "RayJob rayjob"),
            note="the RayCluster and the RayJob",
        ),
        bad=("$x", "lustre", "/usr"),
        alternatives=({"lustreMountPath": "/mnt/lustre"},),
    )
    shm_size_gib: int = setting(
        240,
        key="shmSizeGib",
        description="Size of /dev/shm (memory) in worker pods.",
        ge=1,
        owner=BOTH,
        rule="core.node_fit",
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayCluster raycluster", "RayJob rayjob")),
        bad=(0, 100000),
        alternatives=({"shmSizeGib": 200},),
    )
    head_cpu: int = setting(
        8,
        key="headCpu",
        description=(
            "CPU request of every Ray head (the standing cluster's and each job's own, on the CPU pool): with the "
            "queue, what its quota counts, and what the CPU pool is sized for."
        ),
        ge=1,
        owner=BOTH,
        rule="core.node_fit",
        day_two=DayTwo(
            STOPS_THE_JOB,
            touches=("RayCluster raycluster", "RayJob rayjob", "NodePool cpu", "ClusterQueue kueue-*"),
            note="the RayCluster is replaced (KubeRay never recreates running pods), and the RayJob with it",
        ),
        bad=(0, 10000),
        alternatives=({"headCpu": 12},),
    )
    head_memory_gib: int = setting(
        32,
        key="headMemoryGib",
        description="Memory of every Ray head in GiB (as headCpu: the queue's CPU quota and the CPU pool follow it).",
        ge=1,
        owner=BOTH,
        rule="core.node_fit",
        day_two=DayTwo(
            STOPS_THE_JOB, touches=("RayCluster raycluster", "RayJob rayjob", "NodePool cpu", "ClusterQueue kueue-*")
        ),
        bad=(0, 100000),
        alternatives=({"headMemoryGib": 48},),
    )
    head_ephemeral_gib: Optional[int] = setting(
        None,
        key="headEphemeralStorageGib",
        description=(
            "Ephemeral storage (GiB) the Ray head requests: Ray's session logs and spilled objects under /tmp/ray; "
            "default 32 (Standard) or 8 (Autopilot, where a pod gets at most 10 GiB)."
        ),
        ge=1,
        owner=BOTH,
        rule="workloads.manifests.pod_fit",
        day_two=DayTwo(STOPS_THE_JOB, touches=("RayCluster raycluster", "RayJob rayjob")),
        bad=(0, 100000),
        alternatives=({"headEphemeralStorageGib": 9},),
    )
    worker_ephemeral_gib: Optional[int] = setting(
        None,
        key="workerEphemeralStorageGib",
        description=(
            "Ephemeral storage (GiB) each GPU worker requests: Ray logs and spill, vLLM, Triton and TorchInductor "
            "compile caches; default 200 (Standard: local SSDs) or 10 (Autopilot's maximum per pod)."
        ),
        ge=1,
        owner=BOTH,
        rule="workloads.manifests.pod_fit",
        day_two=DayTwo(STOPS_THE_JOB, touches=("Job placeholders", "RayCluster raycluster", "RayJob rayjob")),
        bad=(0, 100000),
        alternatives=({"workerEphemeralStorageGib": 8},),
    )

    @property
    def release(self) -> catalog.NemoRlRelease:
        return catalog.NEMO_RL_RELEASES[self.nemo_rl_release]


def _mode(s: "UncheckedSettings") -> str:
    return "autopilot" if s.autopilot else "standard"


def head_ephemeral_gib(s: "UncheckedSettings") -> int:
    w = s.workload
    return w.head_ephemeral_gib if w.head_ephemeral_gib is not None else node_fit.HEAD_EPHEMERAL_GIB[_mode(s)]


def worker_ephemeral_gib(s: "UncheckedSettings") -> int:
    w = s.workload
    return w.worker_ephemeral_gib if w.worker_ephemeral_gib is not None else node_fit.WORKER_EPHEMERAL_GIB[_mode(s)]


def check(s: "UncheckedSettings") -> list[str]:
    p: list[str] = []
    w = s.workload
    rel = catalog.NEMO_RL_RELEASES.get(w.nemo_rl_release)
    if rel is None:
        p.append(
            f"{key('nemoRlRelease')}: unknown release {w.nemo_rl_release!r}; valid: "
            f"{', '.join(sorted(catalog.NEMO_RL_RELEASES))}"
        )
    elif w.ray_version is not None and w.ray_version != rel.ray_version:
        p.append(
            f"{key('rayVersion')}: {w.ray_version} differs from the Ray inside {rel.image} "
            f"({rel.ray_version}); unset it or set {rel.ray_version}"
        )
    p.extend(worker_problems(s))
    # Lustre must neither hide nor sit inside anything the pods mount or the image needs (core/gcp_rules.py).
    mount_problems = mount_path_problems(w.lustre_mount_path, protected_paths(recipes.SCRIPTS_DIR))
    p.extend(mount_problems)
    acc = catalog.ACCELERATORS.get(s.gpu.gpu_type)
    if acc is not None:
        worker = node_fit.gpu_worker_request(acc)
        p.extend(node_fit.shm_problems(w.shm_size_gib, worker.memory_gib))
        p.extend(node_fit.worker_problems(acc, worker, autopilot=s.autopilot))
    if not mount_problems and shell.unsafe_characters(w.lustre_mount_path):
        # The path is part of the job's entrypoint, which KubeRay's bash, the image's `ray job submit`
        # (list2cmdline) and /bin/sh each parse again (core/shell.py).
        p.append(
            f"{key('lustreMountPath')}: {w.lustre_mount_path!r} must not contain $ ` \\ \" or ', which the "
            "job's shells would change on the way to NeMo-RL"
        )
    return p


def worker_problems(s: "UncheckedSettings") -> list[str]:
    """workerReplicas: set, it is checked itself; unset, it is gpuNodes (Standard), whose own rule reports it."""
    w = s.workload.worker_replicas
    if w is None:
        return []
    if w < 0:
        return [f"{key('workerReplicas')}: must be >= 0 (got {w})"]
    if w > catalog.K8S_INT32_MAX:
        # The worker group's replicas, minReplicas and maxReplicas are int32 in both KubeRay CRDs.
        return [
            f"{key('workerReplicas')}: {w} is above {catalog.K8S_INT32_MAX}, the largest replica count "
            "Kubernetes takes (int32)"
        ]
    if not s.autopilot and nodes_valid(s) and w > s.gpu.nodes:
        return [
            f"{key('workerReplicas')}: {w} GPU workers need {w} nodes but the GPU pools scale to at most "
            f"{s.gpu.nodes} ({key('gpuNodes')})"
        ]
    return []


def workers_valid(s: "UncheckedSettings") -> bool:
    """The GPU worker count passed its rules (gpuNodes included when it is derived from it)."""
    if s.workload.worker_replicas is None:
        return s.autopilot or nodes_valid(s)
    return not worker_problems(s) and (s.autopilot or nodes_valid(s))
