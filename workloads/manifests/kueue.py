"""Kueue objects for the platform's GPU queue, and what a Ray object carries to be queued (plain dicts, no Pulumi
resources; workloads/kueue.py applies them). Facts and sources: core/catalog/kueue.py, docs/research/kueue.md.

The queue:
- One ClusterQueue with one resource group covering `nvidia.com/gpu`, `cpu` and `memory`, and two ResourceFlavors,
  tried in this order: the GPU flavor (the GPU nodes, whatever capacity model GKE's ComputeClass brings them from)
  and the CPU flavor (the pool the Ray heads and submitters run on). The GPU flavor carries the GPU nodes' taint,
  which the CPU pods do not tolerate, so a head or submitter PodSet is assigned the CPU flavor and a worker PodSet,
  which tolerates it, the GPU flavor (Kueue assigns a flavor per PodSet, first fit in order, skipping a flavor whose
  taints a PodSet does not tolerate: flavorassigner.go:1239-1243 @v0.19.2).
- GPU quota: `gpuNodes` x GPUs per node (Autopilot: the job's workers, the only size such a stack has). Quota does
  not see node shape (kueue#4329), so it equals nodes only because every worker pod requests a whole node's GPUs
  (workloads/manifests/raycluster.py gpu_worker_resources) and the flavor's CPU and memory are `gpuNodes` worker
  pods' requests: Kueue never admits more worker pods than there are nodes.
- CPU quota: what the CPU pool gives the queued pods (heads, submitters) of every job the GPUs can run at once
  (workloads/manifests/pod_fit.py cpu_pool_plan). On Autopilot there is no pool: every pod gets its own capacity, so
  the CPU quota is what the GPU quota can admit (at most one job per GPU node, each with one head and one submitter)
  and never the limit.
- The ClusterQueue serves the namespaces labelled `queue_namespace_labels()` (a selector, so a new experiment
  namespace changes nothing here); each such namespace has a LocalQueue of the same name.
- One flavor, not one per capacity model: GKE's ComputeClass already walks the capacity chain (spot, flex-start,
  reservation) for the same pods, and Kueue cannot see which model has capacity; a flavor per model only pays off
  with Kueue's concurrent admission (alpha from v0.18, off by default: pkg/features/kube_features.go), which runs a
  job on a less preferred flavor and later migrates it, i.e. restarts a multi-hour run (docs/research/kueue.md).
- Queued provisioning (flex-start that delivers every GPU node at once) is a flavor of its own with a
  ProvisioningRequest admission check (`queued_provisioning_flavor`); it is not in the default plan.

Being queued: a RayJob that creates its cluster (own-cluster mode) and the standing RayCluster carry the queue and
priority labels (`queueing_of(settings)`, `queued`), and a change of the queue label replaces the object
(QUEUE_LABEL_PATH). Kueue's defaulting webhook sets `spec.suspend: true` when such an object is created and clears it
when the whole Workload (head, workers, submitter) is admitted (jobframework ApplyDefaultForSuspend,
rayjob_webhook.go:85; RunWithPodSetsInfo). The program never renders `spec.suspend`; should an update unsuspend a
job Kueue has not admitted, Kueue's job reconciler suspends it again ("Running job is not admitted by a cluster
queue, suspending": jobframework/reconciler.go:661-662 @v0.19.2). A RayJob with `clusterSelector` (standing-cluster
mode) is not managed by Kueue from v0.15.0 (rayjob_controller.go Skip; its webhook lets it through unvalidated): its
GPUs are the standing RayCluster's, which holds quota while it exists (Kueue's RayCluster integration), so `queued`
refuses to label one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

from core import catalog, naming
from core.settings import Settings

API_VERSION = catalog.KUEUE_API_VERSION


def quantity_cpu(cpu: float) -> str:
    return f"{round(cpu * 1000)}m" if cpu != int(cpu) else str(int(cpu))


def quantity_gib(gib: float) -> str:
    return f"{round(gib * 1024)}Mi" if gib != int(gib) else f"{int(gib)}Gi"


@dataclass(frozen=True)
class FlavorPlan:
    """One ResourceFlavor and its quota in the ClusterQueue."""

    name: str
    gpus: int
    cpu: float
    memory_gib: float
    node_labels: tuple[tuple[str, str], ...] = ()
    node_taints: tuple[tuple[str, str], ...] = ()  # (key, effect)
    admission_check: Optional[str] = None  # an AdmissionCheck that runs for this flavor only


@dataclass(frozen=True)
class QueuePlan:
    cluster_queue: str
    local_queue: str
    namespaces: tuple[str, ...]  # where jobs are submitted: a LocalQueue each (more come with local_queue())
    flavors: tuple[FlavorPlan, ...]  # in order of preference
    priority_classes: tuple[tuple[str, int], ...] = ()  # (name, value)
    # A pending Workload that does not fit may evict running ones of lower priority (Kueue ClusterQueue
    # `preemption.withinClusterQueue`); equal priorities never preempt each other.
    preemption_within: str = "LowerPriority"
    queueing_strategy: str = "BestEffortFIFO"

    @property
    def gpus(self) -> int:
        return sum(f.gpus for f in self.flavors)


def gpu_flavor(name: str, accelerator: catalog.Accelerator, gpu_nodes: int, worker_cpu: float, worker_mem_gib: float):
    """The GPU nodes, one worker pod per node: GPU quota gpu_nodes x GPUs per node, CPU and memory gpu_nodes worker
    pods' requests."""
    return FlavorPlan(
        name=name,
        gpus=gpu_nodes * accelerator.gpus_per_node,
        cpu=gpu_nodes * worker_cpu,
        memory_gib=gpu_nodes * worker_mem_gib,
        node_labels=((catalog.GPU_NODE_LABEL, accelerator.gpu_type),),
        node_taints=((catalog.GPU_NODE_TAINT_KEY, "NoSchedule"),),
    )


def cpu_flavor(name: str, cpu: float, memory_gib: float) -> FlavorPlan:
    """The pool of the CPU pods (heads, submitters): no labels, so Kueue injects nothing into their selectors."""
    return FlavorPlan(name=name, gpus=0, cpu=cpu, memory_gib=memory_gib)


def queued_provisioning_flavor(
    name: str, accelerator: catalog.Accelerator, pool: str, gpu_nodes: int, worker_cpu: float, worker_mem_gib: float
) -> FlavorPlan:
    """A GPU pool created for queued provisioning (GKE's requirements: autoscaling, location policy ANY, no
    reservation affinity, no auto-repair), behind the ProvisioningRequest check of the same name. Its nodes are
    selected by pool name: a queued-provisioning pool cannot be a step of a ComputeClass chain, so workers meant
    for it must not select the ComputeClass (Kueue adds the pool label to their selector at admission, and a
    conflicting selector leaves them unschedulable)."""
    f = gpu_flavor(name, accelerator, gpu_nodes, worker_cpu, worker_mem_gib)
    return FlavorPlan(
        name=f.name,
        gpus=f.gpus,
        cpu=f.cpu,
        memory_gib=f.memory_gib,
        node_labels=(*f.node_labels, ("cloud.google.com/gke-nodepool", pool)),
        node_taints=f.node_taints,
        admission_check=name,
    )


# --- objects ---------------------------------------------------------------------------------------------------
def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/part-of": "nemo-rl-gke"}


def resource_flavor(f: FlavorPlan) -> dict:
    spec: dict = {}
    if f.node_labels:
        spec["nodeLabels"] = dict(f.node_labels)
    if f.node_taints:
        spec["nodeTaints"] = [{"key": k, "effect": e} for k, e in f.node_taints]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": f.name, "labels": _labels()},
        "spec": spec,
    }


COVERED_RESOURCES = (catalog.GPU_RESOURCE, "cpu", "memory")


def _flavor_quotas(f: FlavorPlan) -> dict:
    amounts = {catalog.GPU_RESOURCE: str(f.gpus), "cpu": quantity_cpu(f.cpu), "memory": quantity_gib(f.memory_gib)}
    # Each flavor lists every covered resource, in the group's order (ClusterQueue CRD, resourceGroups.flavors).
    return {"name": f.name, "resources": [{"name": r, "nominalQuota": amounts[r]} for r in COVERED_RESOURCES]}


def queue_namespace_labels() -> dict[str, str]:
    """The label a namespace carries for its LocalQueue to submit to the platform's ClusterQueue (its
    namespaceSelector): the platform's namespace, and each experiment namespace where it is created."""
    k, v = catalog.KUEUE_QUEUE_NAMESPACE_LABEL
    return {k: v}


def cluster_queue(p: QueuePlan) -> dict:
    spec: dict = {
        # Only namespaces the platform labelled may submit to it (a selector: a new experiment namespace changes
        # nothing here).
        "namespaceSelector": {"matchLabels": queue_namespace_labels()},
        "queueingStrategy": p.queueing_strategy,
        "preemption": {"withinClusterQueue": p.preemption_within},
        "resourceGroups": [
            {"coveredResources": list(COVERED_RESOURCES), "flavors": [_flavor_quotas(f) for f in p.flavors]}
        ],
    }
    checks = [{"name": f.admission_check, "onFlavors": [f.name]} for f in p.flavors if f.admission_check]
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": p.cluster_queue, "labels": _labels()},
        "spec": spec,
    }


def local_queue(p: QueuePlan, namespace: str) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": p.local_queue, "namespace": namespace, "labels": _labels()},
        "spec": {"clusterQueue": p.cluster_queue},
    }


def workload_priority_class(name: str, value: int) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name, "labels": _labels()},
        "value": value,
        "description": f"nemo-rl-gke experiments: priority {value} (a higher value is admitted first and may preempt)",
    }


def admission_check(name: str, config_name: str) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "controllerName": catalog.KUEUE_PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config_name},
        },
    }


def provisioning_request_config(name: str, retry: Optional[dict] = None) -> dict:
    """GKE queued provisioning for the GPU PodSets only: the head and the submitter request no GPU, so they are not
    in the request (managedResources), and the request holds the one GPU worker group (GKE accepts one PodSet)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "provisioningClassName": catalog.GKE_QUEUED_PROVISIONING_CLASS,
            "managedResources": [catalog.GPU_RESOURCE],
            "retryStrategy": dict(retry or catalog.KUEUE_PROVISIONING_RETRY_DEFAULTS),
        },
    }


def queue_objects(p: QueuePlan) -> list[dict]:
    """Every Kueue object of the plan, in the order they may be created (flavors and checks before the queue that
    names them; Kueue keeps a ClusterQueue inactive until they exist, so the order is for clarity only)."""
    objs = [resource_flavor(f) for f in p.flavors]
    for f in p.flavors:
        if f.admission_check:
            objs += [
                provisioning_request_config(f.admission_check),
                admission_check(f.admission_check, f.admission_check),
            ]
    objs += [workload_priority_class(n, v) for n, v in p.priority_classes]
    objs.append(cluster_queue(p))
    objs += [local_queue(p, ns) for ns in sorted(p.namespaces)]
    return objs


# --- the manager's configuration -------------------------------------------------------------------------------
def manager_config() -> dict:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) the cluster admin installs with Kueue: the release's
    default (config/components/manager/controller_manager_config.yaml @v0.19.2) with what the platform needs: only
    queued jobs are managed (manageJobsWithoutQueueName false, as by default), only the Ray integrations are on (the
    submitter Job is a PodSet of its RayJob's Workload, so batch/job and pod stay off), ephemeral storage is not quota
    (core/catalog/kueue.py). Rendered into deploy/kueue/ by `make generated` (synth/kueue_config.py)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "Cohort.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(catalog.KUEUE_INTEGRATIONS)},
        "resources": {"excludeResourcePrefixes": list(catalog.KUEUE_EXCLUDED_RESOURCE_PREFIXES)},
    }


def manager_config_map() -> dict:
    """The manager's ConfigMap as the release's manifests name it, holding manager_config()."""
    import yaml

    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": catalog.KUEUE_MANAGER_CONFIGMAP, "namespace": catalog.KUEUE_NAMESPACE},
        "data": {catalog.KUEUE_MANAGER_CONFIG_KEY: yaml.safe_dump(manager_config(), sort_keys=False)},
    }


# --- being queued ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Queueing:
    """What a queued Ray object carries: the LocalQueue of its namespace and its priority class."""

    queue: str
    priority_class: str

    def labels(self) -> dict[str, str]:
        return {catalog.KUEUE_QUEUE_NAME_LABEL: self.queue, catalog.KUEUE_PRIORITY_CLASS_LABEL: self.priority_class}


def queueing_of(s: Settings) -> Optional[Queueing]:
    """What a stack's queued Ray objects carry: its platform's LocalQueue (same name in every namespace) and the
    stack's own jobPriority; None without the queue. An experiment stack has its platform's `queue`."""
    if s.queue.queue != "kueue":
        return None
    return Queueing(queue=naming.KUEUE_LOCAL_QUEUE, priority_class=naming.kueue_priority_class(s.queue.priority))


# A queued object's queue cannot change while it runs (Kueue jobframework/validation.go:180-187 @v0.19.2), nor can its
# priority class be added to a running one (:219-232): a change of the queue label replaces the object (and the
# priority label comes with it); a new priority on a queued object is an update.
QUEUE_LABEL_PATH = f'metadata.labels["{catalog.KUEUE_QUEUE_NAME_LABEL}"]'


def queued(obj: dict, q: Queueing) -> dict:
    """A copy of a rendered RayJob or RayCluster with the queue labels added; nothing else changes.

    Refuses what Kueue would not admit whole: a RayJob that selects an existing cluster (Kueue v0.19 skips it, so its
    label would be a promise nobody keeps) and a RayJob without its own cluster or that keeps it after the job."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "RayJob":
        if spec.get("clusterSelector"):
            raise ValueError(
                "a RayJob with clusterSelector is not managed by Kueue (v0.15.0+): queue the RayCluster it selects"
            )
        if "rayClusterSpec" not in spec or spec.get("shutdownAfterJobFinishes") is not True:
            raise ValueError("a queued RayJob needs its own rayClusterSpec and shutdownAfterJobFinishes: true")
    elif kind != "RayCluster":
        raise ValueError(f"only RayJob and RayCluster objects are queued, not {kind}")
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **q.labels()}
    return out
