"""Objects that bring GPU nodes up and put the NeMo-RL image on them before the Ray pods can be scheduled
(plain dicts, no Pulumi resources; `workloads/gpu_warmup.py` applies them).

Why (research notes docs/research/ttfs.md §1): GPU pools start at zero nodes and the Ray workers cannot be
scheduled before the Lustre volume exists, so without help the GPU nodes, and then the 20–30 GB image pull,
start only after Lustre (~15 min). GKE documents low-priority placeholder Pods for exactly this ("Provision
extra compute capacity for rapid Pod scaling": a low PriorityClass and placeholder Pods requesting the
capacity; GKE creates nodes for them and evicts them for higher-priority Pods).

- `priority_class()`: value core.catalog.WARMUP_PRIORITY (-10: the cluster autoscaler ignores Pods *below* -10
  for scale-up), never the global default, `preemptionPolicy: Never` (a placeholder evicts nobody). Ray pods
  keep priority 0 and preempt placeholders.
- `placeholder_job()`: one placeholder per GPU worker, with the worker pod's own placement (nodeSelector,
  affinity, tolerations) and resources, taken from the rendered worker template so they cannot drift, and the
  NeMo-RL image, so each new node pulls it at once. No Lustre, no Secret, no service-account token: they
  schedule as soon as the pool exists. A Job, not a Deployment (GKE's "one-time capacity provisioning"): a
  placeholder preempted by a Ray worker exits 0 on SIGTERM and counts as done, so it is not recreated and the
  nodes are free to scale down after the training (own-cluster mode); a placeholder lost with its node
  (spot preemption, `DisruptionTarget` condition) is replaced, so capacity keeps being requested; the Job's
  deadline bounds the whole warmup. Pulumi must not wait for it (`pulumi.com/skipAwait`): it may pend for
  long on a stockout.
- `cpu_prepull_daemonset()`: the CPU system pool has nodes, so a DaemonSet is the right tool there: an init
  container with the NeMo-RL image (pulls it), then a pinned pause container. The Ray head and the prefetch
  Job, both on that pool, then start without a 25 GB pull.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

from core import catalog
from core.catalog import replacements
from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import Settings
from workloads.manifests.pod_parts import cpu_node_selector
from workloads.manifests.pod_security import (
    ROLE_LABEL,
    ROLE_PREPULL,
    ROLE_WARMUP,
    harden_pod_spec,
    restricted_container_context,
)
from workloads.manifests.raycluster import RayPodsConfig, worker_group

PART_OF = {"app.kubernetes.io/part-of": "nemo-rl-gke"}
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
# With skipAwait pulumi-kubernetes does not wait for a Job's deletion, and its default Foreground propagation keeps
# the Job object until the pods are gone: the same-name create of a replacement (any template change) then fails
# with AlreadyExists. Background propagation removes the Job object at once and collects its pods afterwards
# (core/catalog/replacements.py unawaited_delete, with the provider source).
SKIP_AWAIT_JOB = {**SKIP_AWAIT, replacements.DELETION_PROPAGATION_ANNOTATION: "background"}
PLACEHOLDER_CONTAINER = "placeholder"
# Placeholders hold the nodes from their creation until the Ray workers take them; past this the nodes are
# released even if no worker came (a job never submitted, a stockout that outlasted the wait, a first `pulumi up`
# that failed after the GPU pool existed): the Job controller enforces activeDeadlineSeconds in the cluster,
# whatever Pulumi does (Job spec.activeDeadlineSeconds, Kubernetes 1.33 API). 30 minutes: the Lustre creation
# they bridge takes ~15 (docs/research/ttfs.md §1), and the nodes go ~10 minutes after the deadline (the cluster
# autoscaler's scale-down-unneeded-time default, kubernetes/autoscaler cluster-autoscaler/FAQ.md).
DEFAULT_HOLD_SECONDS = 30 * 60


PRIORITY_CLASS = "nemo-rl-gke-gpu-warmup"  # cluster-scoped; one cluster per stack


@dataclass(frozen=True)
class GpuWarmupArgs:
    job_name: str
    prepull_name: str
    namespace: str
    image: str
    replicas: int
    worker_pod_spec: dict
    worker_annotations: dict
    cpu_node_selector: Optional[dict]  # Standard: the CPU pods' system pool; Autopilot: None
    hold_seconds: int

    @classmethod
    def of(cls, s: Settings) -> "GpuWarmupArgs":
        # The placeholders take the rendered worker template, so they cannot drift from the workers.
        worker = worker_group(RayPodsConfig.of(s), secret_name=HF_SECRET, pvc_name=LUSTRE_PVC)["template"]
        return cls(
            job_name=f"{s.prefix}-gpu-warmup",
            prepull_name="nemo-rl-image-prepull",
            namespace=s.storage.namespace,
            image=s.nemo_rl_image,
            # Never more nodes than the stack's job asks for: its workers, and none without a job of its own.
            replicas=s.worker_replicas if s.job.enabled else 0,
            worker_pod_spec=worker["spec"],
            worker_annotations=dict(worker.get("metadata", {}).get("annotations", {})),
            cpu_node_selector=None if s.autopilot else cpu_node_selector(autopilot=False, cpu_pool=s.names.cpu_pool),
            hold_seconds=s.startup.warmup_hold_seconds,
        )


def placeholders_of(a: GpuWarmupArgs) -> Optional[dict]:
    """The placeholder Job of the stack, or None without a GPU worker to warm (gpuNodes or workerReplicas 0)."""
    if a.replicas < 1:
        return None
    return placeholder_job(
        name=a.job_name,
        namespace=a.namespace,
        worker_pod_spec=a.worker_pod_spec,
        image=a.image,
        replicas=a.replicas,
        priority_class_name=PRIORITY_CLASS,
        hold_seconds=a.hold_seconds,
        worker_annotations=a.worker_annotations,
    )


def prepull_of(a: GpuWarmupArgs) -> Optional[dict]:
    """The CPU image pre-pull DaemonSet of the stack, or None on Autopilot (no CPU pool to pre-pull on)."""
    if a.cpu_node_selector is None:
        return None
    return cpu_prepull_daemonset(
        name=a.prepull_name, namespace=a.namespace, image=a.image, node_selector=a.cpu_node_selector
    )


def _hardened() -> dict:
    """Pod Security `restricted` as nobody, and a read-only root filesystem: these pods write nothing."""
    return {**restricted_container_context(), "readOnlyRootFilesystem": True}


def priority_class(name: str) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": dict(PART_OF)},
        "value": catalog.WARMUP_PRIORITY,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "nemo-rl-gke GPU warmup placeholders: bring GPU nodes up and pull the NeMo-RL image; "
        "evicted by the Ray workers (priority 0).",
    }


def placeholder_command(hold_seconds: int) -> list[str]:
    """Exit 0 on SIGTERM (preemption by a Ray worker counts as done), else hold the node `hold_seconds`."""
    return ["/bin/sh", "-c", f"trap 'exit 0' TERM; sleep {int(hold_seconds)} & wait"]


def placeholder_job(
    *,
    name: str,
    namespace: str,
    worker_pod_spec: dict,
    image: str,
    replicas: int,
    priority_class_name: str,
    hold_seconds: int = DEFAULT_HOLD_SECONDS,
    worker_annotations: Optional[dict] = None,
) -> dict:
    """The placeholder Job: `replicas` Pods shaped like the Ray workers of `worker_pod_spec`.

    `worker_annotations` (the worker template's: the RDMA interfaces) and the worker's plain-value environment
    (the NCCL settings; never a Secret reference) are carried too, so a placeholder fits exactly where a worker
    fits, network devices included, and the policy pack's "GPU pods use RDMA" rule holds for every GPU pod."""
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    worker = worker_pod_spec["containers"][0]
    pod: dict = {
        "priorityClassName": priority_class_name,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 5,
        "containers": [
            {
                "name": PLACEHOLDER_CONTAINER,
                "image": image,
                "command": placeholder_command(hold_seconds),
                "resources": copy.deepcopy(worker["resources"]),
                "env": [copy.deepcopy(e) for e in worker.get("env", []) if "value" in e],
                "securityContext": _hardened(),
            }
        ],
    }
    for key in ("nodeSelector", "affinity", "tolerations"):
        if key in worker_pod_spec:
            pod[key] = copy.deepcopy(worker_pod_spec[key])
    labels = dict(PART_OF, **{ROLE_LABEL: ROLE_WARMUP})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": dict(SKIP_AWAIT_JOB)},
        "spec": {
            "parallelism": replicas,
            "completions": replicas,
            # Pods that fail for their own reasons (an image that cannot be pulled is not one: it stays Pending)
            # are retried a few times; losses to preemption or node shutdown do not count (rule below).
            "backoffLimit": replicas * 2,
            "activeDeadlineSeconds": int(hold_seconds),
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
            },
            "template": {
                "metadata": {
                    "labels": labels,
                    **({"annotations": dict(worker_annotations)} if worker_annotations else {}),
                },
                "spec": harden_pod_spec(pod, restricted=True),
            },
        },
    }


def cpu_prepull_daemonset(*, name: str, namespace: str, image: str, node_selector: dict) -> dict:
    labels = dict(PART_OF, **{ROLE_LABEL: ROLE_PREPULL})
    tiny = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        # Pulumi would otherwise wait for the rollout, i.e. for the 25 GB pull on every node.
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": dict(SKIP_AWAIT)},
        "spec": {
            "selector": {"matchLabels": {ROLE_LABEL: ROLE_PREPULL}},
            "template": {
                "metadata": {"labels": labels},
                "spec": harden_pod_spec(
                    restricted=True,
                    pod_spec={
                        "nodeSelector": dict(node_selector),
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        "initContainers": [
                            {
                                "name": "pull",
                                "image": image,
                                "command": ["/bin/true"],
                                "resources": tiny,
                                "securityContext": _hardened(),
                            }
                        ],
                        "containers": [
                            {
                                "name": "pause",
                                "image": catalog.PAUSE_IMAGE,
                                "resources": tiny,
                                "securityContext": _hardened(),
                            }
                        ],
                    },
                ),
            },
        },
    }
