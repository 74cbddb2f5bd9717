"""The RayCluster: NeMo-RL release, worker group, mounts; and their rules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from pydantic import Field

from core import catalog, node_fit, recipes, shell
from core.gcp_rules import mount_path_problems, protected_paths
from core.keys import key
from core.settings.base import Section
from core.settings.gpu import nodes_valid

if TYPE_CHECKING:
    from core.settings import UncheckedSettings


class WorkloadSettings(Section):
    """The RayCluster: NeMo-RL release, worker group, mounts."""

    nemo_rl_release: str = Field(
        "v0.5.0",
        alias="nemoRlRelease",
        description=f"NeMo-RL container release ({catalog.one_of(list(catalog.NEMO_RL_RELEASES))}).",
    )
    ray_version: Optional[str] = Field(
        None,
        alias="rayVersion",
        description=("Ray version of the RayCluster; default and only valid value: the Ray inside the NeMo-RL image."),
    )
    worker_replicas: Optional[int] = Field(
        None,
        alias="workerReplicas",
        description=("GPU worker pods (one per node); default: gpuNodes (Standard) or 2 (Autopilot)."),
    )
    lustre_mount_path: str = Field(
        "/lustre", alias="lustreMountPath", description="Where Lustre is mounted in the Ray pods."
    )
    shm_size_gib: int = Field(240, alias="shmSizeGib", ge=1, description="Size of /dev/shm (memory) in worker pods.")
    head_cpu: int = Field(8, alias="headCpu", ge=1, description="CPU request of the Ray head (CPU node).")
    head_memory_gib: int = Field(32, alias="headMemoryGib", ge=1, description="Memory of the Ray head in GiB.")
    head_ephemeral_gib: Optional[int] = Field(
        None,
        alias="headEphemeralStorageGib",
        ge=1,
        description=(
            "Ephemeral storage (GiB) the Ray head requests: Ray's session logs and spilled objects under /tmp/ray; "
            "default 32 (Standard) or 8 (Autopilot, where a pod gets at most 10 GiB)."
        ),
    )
    worker_ephemeral_gib: Optional[int] = Field(
        None,
        alias="workerEphemeralStorageGib",
        ge=1,
        description=(
            "Ephemeral storage (GiB) each GPU worker requests: Ray logs and spill, vLLM, Triton and TorchInductor "
            "compile caches; default 200 (Standard: local SSDs) or 10 (Autopilot's maximum per pod)."
        ),
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
