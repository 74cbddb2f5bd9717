"""The KubeRay `ray.io/v1` RayCluster for NeMo-RL, built from the settings (plain dicts, no Pulumi resources).

`raycluster_spec()` renders the `spec` alone so the RayJob's own-cluster mode can embed the very same
cluster as `rayClusterSpec`; `raycluster_manifest()` wraps it into a full RayCluster object.

Shape: a CPU-only head (Ray GCS, dashboard, job driver) and one fixed-size GPU worker group, one pod per GPU
node, with the RDMA pod mixin (workloads/manifests/rdma.py), Lustre mounted at the same path everywhere and the
Hugging Face cache on Lustre. The head also mounts the job's programs (ConfigMap `nemo-rl-scripts`,
workloads/job_scripts.py) read-only at `recipes.SCRIPTS_DIR`. Only fields accepted by both KubeRay 1.4.2 and 1.7.0
are rendered (the RayOperator add-on does not publish its KubeRay version: docs/research/harden.md §1); tests validate
against both CRDs.

Hardening (workloads/manifests/pod_security.py): every template carries our workload labels (the NetworkPolicies
select them; KubeRay's `ray.io/*` labels exist only on the pods it creates), hardened security contexts (every
capability dropped on the head; the GPU workers, whose RDMA use is unproven without them, keep the default set minus
NET_RAW), no service-account token, and each token only where it is read, as a read-only file: the Hugging Face
token on the head (without the prefetch Job its entrypoint downloads the pinned snapshot there) and never on the
workers (they load everything from Lustre and run with HF_HUB_OFFLINE=1), the W&B netrc on the head only (`NETRC`;
NeMo-RL's driver calls `wandb.init` there), an optional item of the tokens Secret that holds it only while the job
logs to W&B (workloads/workload_identity.py), the Ray auth token on every Ray container when token authentication is
on. No pod of the cluster writes to the bucket: the checkpoint export is a CPU Job of its own
(workloads/manifests/export_job.py). The head runs as root: NeMo-RL's image and every file the GPU workers write on
Lustre belong to root, and a non-root head could not write beside them. The images are pinned (core/images.py).

Day two: the standing cluster's spec is what the cluster is (image, release, capacity, sizes, tokens it may read),
never what the next job does. Turning the job or the export on or off, another recipe or export destination, leave
it as it is: any spec change replaces the cluster (workloads/ray_cluster.py), which releases its GPU nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from core import node_fit
from core.catalog import Accelerator, NemoRlRelease
from core.gate import NODE_NAME_ENV
from core.naming import RAY_AUTH_SECRET
from core.recipes import IMAGE_PATHS, SCRIPTS_DIR
from core.settings import Settings
from core.settings import tenancy as tenancy_settings
from core.settings import workload as workload_settings
from core.settings.security import token_auth_enabled
from workloads.manifests.compute_class import worker_scheduling
from workloads.manifests.pod_parts import (
    configs_mount,
    configs_volume,
    cpu_node_selector,
    hf_environment,
    lustre_mounts,
    lustre_volume,
    scripts_mount,
    scripts_volume,
)
from workloads.manifests.pod_security import RAY_HEAD_LABELS, RAY_WORKER_LABELS, harden_pod_spec, token_files
from workloads.manifests.rdma import library_path_env, rdma_pod_mixin


def node_name_env() -> dict:
    """The pod's node name through the downward API (`spec.nodeName`)."""
    return {"name": NODE_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}


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

# Spot VMs get ~30 s notice before preemption; GKE gives Autopilot Spot Pods at most 25 s of it. Ending
# inside that window lets Ray mark the node dead cleanly instead of being killed mid-shutdown.
WORKER_TERMINATION_GRACE_SECONDS = 25

# Share of the machine's vCPUs / memory a worker pod requests: defined once in core/node_fit.py, where the
# settings check that it fits the node's allocatable resources less GKE's own pods.
WORKER_SHARE = node_fit.WORKER_SHARE


@dataclass(frozen=True)
class RayPodsConfig:
    """What the RayCluster's pods are made of (the standing cluster and own-cluster mode alike)."""

    release: NemoRlRelease
    image: str  # the release's image, from NGC or the stack's Artifact Registry copy
    accelerator: Accelerator
    zone: str  # the RoCE zone the workers must land in
    autopilot: bool
    compute_class: str  # the custom ComputeClass that orders the GPU capacity models
    spot_capacity: bool  # spot is one of those models
    worker_replicas: int
    namespace: str
    ksa_name: str
    cpu_pool: str  # Standard: the CPU pool of the head (core/naming.py cpu_pool)
    lustre_mount_path: str
    shm_size_gib: int
    head_cpu: int
    head_memory_gib: int
    head_ephemeral_gib: int
    worker_ephemeral_gib: int
    ray_token_auth: bool = False  # Ray token authentication (the release's Ray must support it)
    # Least privilege: the workers load everything from Lustre (no Hub, no token): the pinned snapshot the prefetch Job
    # or, without it, the entrypoint downloaded on the head (workloads/manifests/rayjob.py), and the staged datasets.
    workers_offline: bool = True
    # An experiment stack's pods: its own Lustre directory and the shared cache read-only (core/settings/tenancy.py).
    lustre_experiment: Optional[str] = None
    # An experiment stack's own config files (jobConfigFiles): the ConfigMap its RayJob's head mounts at
    # IMAGE_PATHS.configs_dir; None for every other cluster (a platform's files travel in the job-scripts ConfigMap).
    configs_map: "str | None" = None

    @property
    def ray_auth_secret(self) -> "str | None":
        return RAY_AUTH_SECRET if self.ray_token_auth else None

    @classmethod
    def of(cls, s: Settings) -> "RayPodsConfig":
        w = s.workload
        return cls(
            release=w.release,
            image=s.nemo_rl_image,
            accelerator=s.gpu.accelerator,
            zone=s.zone,
            autopilot=s.autopilot,
            compute_class=s.capacity.compute_class,
            spot_capacity="spot" in s.capacity.models,
            worker_replicas=s.worker_replicas,
            namespace=s.storage.namespace,
            ksa_name=s.storage.ksa_name,
            cpu_pool=s.names.cpu_pool,
            lustre_mount_path=w.lustre_mount_path,
            shm_size_gib=w.shm_size_gib,
            head_cpu=w.head_cpu,
            head_memory_gib=w.head_memory_gib,
            head_ephemeral_gib=workload_settings.head_ephemeral_gib(s),
            worker_ephemeral_gib=workload_settings.worker_ephemeral_gib(s),
            ray_token_auth=token_auth_enabled(s),
            lustre_experiment=tenancy_settings.lustre_experiment(s),
            configs_map=own_configs_map(s),
        )


def own_configs_map(s: Settings) -> "str | None":
    """The ConfigMap of an experiment stack's own config files, when it has some (workloads/job_scripts.py)."""
    if s.stack.platform_stack and s.job.enabled and s.recipe.config_files:
        return s.names.job_configs
    return None


_SHM_VOLUME = "dshm"


def gpu_worker_resources(accelerator: Accelerator, ephemeral_gib: int) -> dict:
    """Requests = limits (Guaranteed QoS) for one GPU worker pod filling one node, below its allocatable; ephemeral
    storage requested only (QoS ignores it; on Standard the local SSDs are not capped, Autopilot sets the limit to
    the request)."""
    r = node_fit.gpu_worker_request(accelerator)
    amounts = {"cpu": f"{r.cpu:g}", "memory": f"{r.memory_gib:g}Gi", "nvidia.com/gpu": str(accelerator.gpus_per_node)}
    return {"limits": dict(amounts), "requests": {**amounts, "ephemeral-storage": f"{ephemeral_gib}Gi"}}


def _head_resources(c: RayPodsConfig) -> dict:
    amounts = {"cpu": str(c.head_cpu), "memory": f"{c.head_memory_gib}Gi"}
    return {"limits": dict(amounts), "requests": {**amounts, "ephemeral-storage": f"{c.head_ephemeral_gib}Gi"}}


def head_group(c: RayPodsConfig, secret_name: str, pvc_name: str) -> dict:
    """The head group: CPU only (GCS, dashboard, job driver), on the CPU pods' node selector."""
    pod_spec: dict = {
        "serviceAccountName": c.ksa_name,
        "nodeSelector": cpu_node_selector(autopilot=c.autopilot, cpu_pool=c.cpu_pool),
    }
    # The netrc item is optional: the Secret holds it only while the job logs to W&B, so the template stays the same
    # when the recipe turns W&B on or off.
    tokens = token_files(secret_name, hugging_face=True, wandb=True, ray_auth_secret=c.ray_auth_secret)
    pod_spec["containers"] = [
        {
            "name": HEAD_CONTAINER,
            "image": c.image,
            "ports": [
                {"containerPort": GCS_PORT, "name": "gcs-server"},
                {"containerPort": DASHBOARD_PORT, "name": "dashboard"},
                {"containerPort": CLIENT_PORT, "name": "client"},
            ],
            "resources": _head_resources(c),
            # The workers' static LD_LIBRARY_PATH (one definition, workloads/manifests/rdma.py): NeMo-RL's driver runs
            # here and hands its environment to every actor, on the GPU workers too. Only the variable: the head has no
            # gIB mount and must not source the gIB script.
            "env": [library_path_env(c.release)]
            + hf_environment(c.lustre_mount_path, c.lustre_experiment)
            + tokens.env,
            # The job's driver runs on the head: its entrypoint runs the programs under SCRIPTS_DIR.
            "volumeMounts": [
                *lustre_mounts(c.lustre_mount_path, c.lustre_experiment),
                scripts_mount(SCRIPTS_DIR),
                *([configs_mount(IMAGE_PATHS.configs_dir)] if c.configs_map else []),
                *tokens.volume_mounts,
            ],
        }
    ]
    pod_spec["volumes"] = [
        lustre_volume(pvc_name),
        scripts_volume(),
        *([configs_volume(c.configs_map)] if c.configs_map else []),
        *tokens.volumes,
    ]
    template = {"metadata": {"labels": dict(RAY_HEAD_LABELS)}, "spec": harden_pod_spec(pod_spec)}
    return {
        # Required by KubeRay <= 1.3, harmless later. num-gpus 0: the driver schedules nothing GPU-bound on
        # the head even if a GPU were visible. The dashboard listens on all interfaces so the submitter and
        # the operator's proxied calls reach it; the NetworkPolicies decide who may
        # (workloads/manifests/network_policy.py).
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
        "template": template,
    }


def worker_group(c: RayPodsConfig, secret_name: str, pvc_name: str) -> dict:
    """The one GPU worker group: one pod per GPU node, with the RDMA pod mixin."""
    acc = c.accelerator
    mixin = rdma_pod_mixin(acc, c.release)
    node_selector = {
        "cloud.google.com/gke-accelerator": acc.gpu_type,
        # The RDMA (RoCE) networks are zonal and exist only in `zone`. An Autopilot cluster is regional, so
        # without this it could place a GPU node in another zone of the region, where the pod's RDMA
        # interfaces cannot attach. On Standard it is harmless: the GPU pool already lives in `zone`.
        ZONE_LABEL: c.zone,
    }
    # The ComputeClass decides where the nodes come from (spot, flex-start, a reservation, in the stack's
    # order); a retry's new worker pods select it again, so they land on whatever model has capacity next.
    class_selector, class_tolerations = worker_scheduling(c.compute_class, spot=c.spot_capacity)
    node_selector.update(class_selector)
    replicas = c.worker_replicas
    # The GPU workers load the model and tokenizer from the pinned snapshot on Lustre and never call the Hub
    # (HF_HUB_OFFLINE=1, no token). No W&B file: only the driver on the head logs to W&B.
    tokens = token_files(secret_name, hugging_face=not c.workers_offline, ray_auth_secret=c.ray_auth_secret)
    offline = [{"name": "HF_HUB_OFFLINE", "value": "1"}] if c.workers_offline else []
    container = {
        "name": WORKER_CONTAINER,
        "image": c.image,
        # KubeRay keeps its generated start command and runs it after ours: with a container command that
        # does not mention `ray start`, it runs `/bin/bash -lc -- "<our args> && ulimit -n 65536; ray start
        # ..."` (pod.go BuildPod, KubeRay 1.x; the Ray docs' "execute commands before ray start"). So the
        # NCCL env sourced here is inherited by the raylet and every Ray worker process. The alternative,
        # `exec $KUBERAY_GEN_RAY_START_CMD` (env var set by both 1.4.2 and 1.7.0), is honoured only with the
        # `ray.io/overwrite-container-cmd` annotation on the RayCluster's metadata, which a RayJob's embedded
        # rayClusterSpec does not carry, and it drops KubeRay's `ulimit -n 65536`.
        "args": [mixin.startup_prefix],
        "resources": gpu_worker_resources(acc, c.worker_ephemeral_gib),
        # The node's name: the readiness gate binds a node's recorded pass to it (with the boot ID it reads itself).
        "env": mixin.env
        + hf_environment(c.lustre_mount_path, c.lustre_experiment)
        + offline
        + [node_name_env()]
        + tokens.env,
        "volumeMounts": [
            {"name": _SHM_VOLUME, "mountPath": "/dev/shm"},
            *lustre_mounts(c.lustre_mount_path, c.lustre_experiment),
            *mixin.volume_mounts,
            *tokens.volume_mounts,
        ],
    }
    pod_spec = {
        "serviceAccountName": c.ksa_name,
        "nodeSelector": node_selector,
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists"},
            # Let the pod stay through the spot preemption notice and shut down within its grace period.
            {"key": "cloud.google.com/impending-node-termination", "operator": "Exists"},
            # The class's pools are tainted with it (Standard), so nothing else lands there; Autopilot taints
            # its Spot VMs.
            *class_tolerations,
        ],
        "terminationGracePeriodSeconds": WORKER_TERMINATION_GRACE_SECONDS,
        "containers": [container],
        "volumes": [
            # NCCL and the Ray object store use /dev/shm; the container runtime's 64 MiB default is far too
            # small. Memory-backed, counted against the pod's memory limit.
            {"name": _SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": f"{c.shm_size_gib}Gi"}},
            lustre_volume(pvc_name),
            *mixin.volumes,
            *tokens.volumes,
        ],
    }
    return {
        "groupName": WORKER_GROUP,
        # Autoscaling is off: the GRPO job needs exactly this many nodes, so the group is pinned.
        "replicas": replicas,
        "minReplicas": replicas,
        "maxReplicas": replicas,
        "rayStartParams": {},
        "template": {
            "metadata": {"labels": dict(RAY_WORKER_LABELS), "annotations": dict(mixin.annotations)},
            "spec": harden_pod_spec(pod_spec, drop_all=False),
        },
    }


def raycluster_spec(c: RayPodsConfig, *, secret_name: str, pvc_name: str) -> dict:
    """The RayCluster `spec` (also the RayJob's `rayClusterSpec` in own-cluster mode)."""
    spec = {
        # Must equal the Ray inside the image (settings validation rejects any other rayVersion).
        "rayVersion": c.release.ray_version,
        "enableInTreeAutoscaling": False,
        "headGroupSpec": head_group(c, secret_name, pvc_name),
        "workerGroupSpecs": [worker_group(c, secret_name, pvc_name)],
    }
    if c.ray_token_auth:
        # Only with the KubeRay this stack installs (1.7.0; the settings refuse token auth on GKE's add-on): the
        # operator reads the token from our Secret for its own dashboard calls and, since every Ray container
        # defines RAY_AUTH_TOKEN (empty), injects it into no environment (core/catalog/security.py, KubeRay 1.6.0+).
        spec["authOptions"] = {"mode": "token", "secretName": RAY_AUTH_SECRET}
    return spec


def raycluster_manifest(c: RayPodsConfig, *, name: str, secret_name: str, pvc_name: str) -> dict:
    """The full RayCluster object in the workload namespace."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": c.namespace},
        "spec": raycluster_spec(c, secret_name=secret_name, pvc_name=pvc_name),
    }
