"""The KubeRay `ray.io/v1` RayCluster for NeMo-RL, built from the settings (plain dicts, no Pulumi resources).

`raycluster_spec()` renders the `spec` alone so the RayJob's own-cluster mode can embed the very same
cluster as `rayClusterSpec`; `raycluster_manifest()` wraps it into a full RayCluster object.

Shape: a CPU-only head (Ray GCS, dashboard, job driver) and one fixed-size GPU worker group, one pod per GPU
node, with the RDMA pod mixin (workloads/rdma.py), Lustre mounted at the same path everywhere and the
Hugging Face cache on Lustre. The head also mounts the job's programs (ConfigMap `nemo-rl-scripts`,
workloads/scripts.py) read-only at `recipes.SCRIPTS_DIR`. Only fields accepted by both KubeRay 1.4.2 and 1.7.0
are rendered (the RayOperator add-on does not publish its KubeRay version; FACTS.md §6); tests validate
against both CRDs.
"""
from __future__ import annotations

from core.catalog import Accelerator
from core.naming import JOB_SCRIPTS
from core.settings import Settings
from workloads.rdma import rdma_pod_mixin
from core.recipes import SCRIPTS_DIR

API_VERSION = "ray.io/v1"
KIND = "RayCluster"

HEAD_CONTAINER = "ray-head"
WORKER_CONTAINER = "ray-worker"
WORKER_GROUP = "gpu-workers"

# Ray's well-known ports: GCS (workers and drivers join the cluster here), the dashboard / Jobs API (the
# RayJob submitter and `ray job submit` talk to it), the Ray Client server.
GCS_PORT = 6379
DASHBOARD_PORT = 8265
CLIENT_PORT = 10001

ZONE_LABEL = "topology.kubernetes.io/zone"
# Autopilot compute class of the head (CPU only; see _head_group).
HEAD_COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
HEAD_COMPUTE_CLASS = "Balanced"

# Spot VMs get ~30 s notice before preemption; GKE gives Autopilot Spot Pods at most 25 s of it. Ending
# inside that window lets Ray mark the node dead cleanly instead of being killed mid-shutdown.
WORKER_TERMINATION_GRACE_SECONDS = 25

# Share of the machine's vCPUs / memory a worker pod requests. The rest covers what GKE reserves for the
# kubelet and OS (< 1 vCPU and ~2-3 % of memory on these shapes) and the node's DaemonSets (logging,
# metrics, GPU device plugin, multi-networking, the gIB installer's pause container).
WORKER_SHARE = 0.9

HF_TOKEN_KEY = "hf-token"
WANDB_API_KEY_KEY = "wandb-api-key"

_LUSTRE_VOLUME = "lustre"
_SHM_VOLUME = "dshm"
_SCRIPTS_VOLUME = "job-scripts"
# The job's programs are read by `python <file>`, never executed directly, and nothing may change them in the
# pod: read-only for everyone, no execute bit.
SCRIPTS_FILE_MODE = 0o444


def gpu_worker_resources(accelerator: Accelerator) -> dict:
    """Requests = limits (Guaranteed QoS) for one GPU worker pod filling one node, below its allocatable."""
    cpu = int(accelerator.vcpus * WORKER_SHARE)
    memory_gib = int(accelerator.memory_gib * WORKER_SHARE)
    amounts = {"cpu": str(cpu), "memory": f"{memory_gib}Gi", "nvidia.com/gpu": str(accelerator.gpus_per_node)}
    return {"limits": dict(amounts), "requests": dict(amounts)}


def _head_resources(settings: Settings) -> dict:
    amounts = {"cpu": str(settings.workload.head_cpu), "memory": f"{settings.workload.head_memory_gib}Gi"}
    return {"limits": dict(amounts), "requests": dict(amounts)}


def _hf_home(settings: Settings) -> str:
    # On Lustre, so a model downloads once for every node and survives pod restarts.
    return f"{settings.workload.lustre_mount_path.rstrip('/')}/huggingface_cache"


def _common_env(settings: Settings, secret_name: str) -> list[dict]:
    """Env of every Ray container. Tokens come only from the Kubernetes Secret, never as literal values."""
    return [
        {"name": "HF_HOME", "value": _hf_home(settings)},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret_name, "key": HF_TOKEN_KEY}}},
        # W&B logging is optional: the pod starts without the key.
        {"name": "WANDB_API_KEY",
         "valueFrom": {"secretKeyRef": {"name": secret_name, "key": WANDB_API_KEY_KEY, "optional": True}}},
    ]


def _lustre_volume(pvc_name: str) -> dict:
    return {"name": _LUSTRE_VOLUME, "persistentVolumeClaim": {"claimName": pvc_name}}


def _lustre_mount(settings: Settings) -> dict:
    return {"name": _LUSTRE_VOLUME, "mountPath": settings.workload.lustre_mount_path}


def _scripts_volume() -> dict:
    return {"name": _SCRIPTS_VOLUME, "configMap": {"name": JOB_SCRIPTS, "defaultMode": SCRIPTS_FILE_MODE}}


def _scripts_mount() -> dict:
    # The whole directory, not subPath files: the kubelet then refreshes the files when the ConfigMap changes.
    return {"name": _SCRIPTS_VOLUME, "mountPath": SCRIPTS_DIR, "readOnly": True}


def _head_group(settings: Settings, secret_name: str, pvc_name: str) -> dict:
    release = settings.workload.release
    pod_spec: dict = {"serviceAccountName": settings.storage.ksa_name}
    if settings.autopilot:
        # An explicit CPU compute selection, so the head never lands on (or waits for) GPU capacity. Balanced
        # is a CPU compute class that needs no machine-family selector (Performance would need one) and
        # gives the head (GCS, dashboard, job driver) steady CPU; it selects no accelerator.
        pod_spec["nodeSelector"] = {HEAD_COMPUTE_CLASS_LABEL: HEAD_COMPUTE_CLASS}
    else:
        # The CPU system pool; the head never lands on (or waits for) a GPU node.
        pod_spec["nodeSelector"] = {"cloud.google.com/gke-nodepool": settings.names.system_pool}
    pod_spec["containers"] = [{
        "name": HEAD_CONTAINER,
        "image": release.image,
        "ports": [
            {"containerPort": GCS_PORT, "name": "gcs-server"},
            {"containerPort": DASHBOARD_PORT, "name": "dashboard"},
            {"containerPort": CLIENT_PORT, "name": "client"},
        ],
        "resources": _head_resources(settings),
        "env": _common_env(settings, secret_name),
        # The job's driver runs on the head: its entrypoint runs the programs under SCRIPTS_DIR.
        "volumeMounts": [_lustre_mount(settings), _scripts_mount()],
    }]
    pod_spec["volumes"] = [_lustre_volume(pvc_name), _scripts_volume()]
    return {
        # Required by KubeRay <= 1.3, harmless later. num-gpus 0: the driver schedules nothing GPU-bound on
        # the head even if a GPU were visible.
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
        "template": {"spec": pod_spec},
    }


def _worker_group(settings: Settings, secret_name: str, pvc_name: str) -> dict:
    release = settings.workload.release
    acc = settings.gpu.accelerator
    mixin = rdma_pod_mixin(acc)
    node_selector = {
        "cloud.google.com/gke-accelerator": acc.gpu_type,
        # The RDMA (RoCE) networks are zonal and exist only in `zone`. An Autopilot cluster is regional, so
        # without this it could place a GPU node in another zone of the region, where the pod's RDMA
        # interfaces cannot attach. On Standard it is harmless: the GPU pool already lives in `zone`.
        ZONE_LABEL: settings.zone,
    }
    if settings.autopilot and settings.gpu.spot:
        # Autopilot provisions Spot capacity only when the pod asks for it (and adds the matching toleration).
        node_selector["cloud.google.com/gke-spot"] = "true"
    replicas = settings.worker_replicas
    container = {
        "name": WORKER_CONTAINER,
        "image": release.image,
        # KubeRay keeps its generated start command and runs it after ours: with a container command that
        # does not mention `ray start`, it runs `/bin/bash -lc -- "<our args> && ulimit -n 65536; ray start
        # ..."` (pod.go BuildPod, KubeRay 1.x; the Ray docs' "execute commands before ray start"). So the
        # NCCL env sourced here is inherited by the raylet and every Ray worker process. The alternative,
        # `exec $KUBERAY_GEN_RAY_START_CMD` (env var set by both 1.4.2 and 1.7.0), is honoured only with the
        # `ray.io/overwrite-container-cmd` annotation on the RayCluster's metadata, which a RayJob's embedded
        # rayClusterSpec does not carry, and it drops KubeRay's `ulimit -n 65536`.
        "args": [mixin.startup_prefix],
        "resources": gpu_worker_resources(acc),
        "env": mixin.env + _common_env(settings, secret_name),
        "volumeMounts": [
            {"name": _SHM_VOLUME, "mountPath": "/dev/shm"},
            _lustre_mount(settings),
            *mixin.volume_mounts,
        ],
    }
    pod_spec = {
        "serviceAccountName": settings.storage.ksa_name,
        "nodeSelector": node_selector,
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists"},
            # Let the pod stay through the spot preemption notice and shut down within its grace period.
            {"key": "cloud.google.com/impending-node-termination", "operator": "Exists"},
        ],
        "terminationGracePeriodSeconds": WORKER_TERMINATION_GRACE_SECONDS,
        "containers": [container],
        "volumes": [
            # NCCL and the Ray object store use /dev/shm; the container runtime's 64 MiB default is far too
            # small. Memory-backed, counted against the pod's memory limit.
            {"name": _SHM_VOLUME,
             "emptyDir": {"medium": "Memory", "sizeLimit": f"{settings.workload.shm_size_gib}Gi"}},
            _lustre_volume(pvc_name),
            *mixin.volumes,
        ],
    }
    return {
        "groupName": WORKER_GROUP,
        # Autoscaling is off: the GRPO job needs exactly this many nodes, so the group is pinned.
        "replicas": replicas,
        "minReplicas": replicas,
        "maxReplicas": replicas,
        "rayStartParams": {},
        "template": {"metadata": {"annotations": dict(mixin.annotations)}, "spec": pod_spec},
    }


def raycluster_spec(settings: Settings, *, secret_name: str, pvc_name: str) -> dict:
    """The RayCluster `spec` (also the RayJob's `rayClusterSpec` in own-cluster mode)."""
    release = settings.workload.release
    return {
        # Must equal the Ray inside the image (settings validation rejects any other rayVersion).
        "rayVersion": release.ray_version,
        "enableInTreeAutoscaling": False,
        "headGroupSpec": _head_group(settings, secret_name, pvc_name),
        "workerGroupSpecs": [_worker_group(settings, secret_name, pvc_name)],
    }


def raycluster_manifest(settings: Settings, *, name: str, secret_name: str, pvc_name: str) -> dict:
    """The full RayCluster object in the workload namespace."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": settings.storage.namespace},
        "spec": raycluster_spec(settings, secret_name=secret_name, pvc_name=pvc_name),
    }
