"""Kueue: the platform's admission and queue for the GPUs (nemo-rl-gke:workloads:Kueue).

What it creates: Kueue's namespace with Pod Security `restricted` enforced (the chart's manager runs non-root,
read-only, without capabilities, seccomp RuntimeDefault: values.yaml controllerManager.manager @v0.19.2), a Helm
Release of Kueue's chart kept in the repository (charts/kueue, verbatim from kubernetes-sigs/kueue at the tag; never
fetched from a URL) with the image pinned in core/catalog/kueue.py and the manager configuration of
workloads/manifests/kueue.py (only queued jobs, only the Ray integrations, job webhooks only in the experiments'
namespaces), and then the queue: ResourceFlavors, WorkloadPriorityClasses, the ClusterQueue, a LocalQueue per
experiment namespace (and, with a queued-provisioning flavor, its ProvisioningRequestConfig and AdmissionCheck).

Ordering: Kueue's objects are created only after the Release, which waits (Helm's wait, the Release's default) for
the chart's CRDs to be Established and its Deployment to be Available; the manager's readiness probe passes only
once its certificates exist and its webhook server is serving (cmd/kueue/main.go:628-650 @v0.19.2), so Kueue's own
validating and defaulting webhooks (failurePolicy Fail) answer when the objects arrive. The chart's CRDs are in its
templates/ (not crds/), so Helm upgrades them with the chart. The Ray objects that are queued must wait for this
component too (their queue must exist and Kueue's ray.io webhooks must serve, or they would be created unsuspended
and unmanaged): the wiring passes `self.ready` into their `depends_on`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from core import catalog, node_fit
from core.settings import Settings
from workloads.manifests import kueue as m
from workloads.manifests.pod_security import namespace_labels
from workloads.manifests.rayjob import SUBMITTER_RESOURCES

CHART_DIR = catalog.KUEUE_CHART_DIR
RELEASE_NAME = "kueue"
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class KueueArgs:
    namespace: str  # Kueue's own
    plan: m.QueuePlan

    @property
    def priority_classes(self) -> dict[str, str]:
        """level (low, normal, high) -> WorkloadPriorityClass name."""
        levels = catalog.KUEUE_PRIORITY_CLASSES
        return {level: name for level, (name, _) in zip(levels, self.plan.priority_classes, strict=True)}

    @classmethod
    def of(cls, s: Settings) -> "KueueArgs":
        return cls(namespace=catalog.KUEUE_NAMESPACE, plan=queue_plan(s))


def queue_plan(s: Settings, namespaces: Optional[tuple[str, ...]] = None) -> m.QueuePlan:
    """The platform's queue from its settings (module docstring of workloads/manifests/kueue.py)."""
    acc = s.gpu.accelerator
    prefix = s.names.prefix
    # The GPU nodes the platform is sized for: each capacity pool may grow to gpuNodes (Standard), but gpuNodes is what
    # may run at once; Autopilot has no pool, its size is the job's workers.
    gpu_nodes = s.worker_replicas if s.autopilot else s.gpu.nodes
    worker = node_fit.gpu_worker_request(acc)
    if s.autopilot:
        # One head and one submitter per job, at most one job per GPU node (a job has at least one whole node).
        head = node_fit.Resources(s.workload.head_cpu, s.workload.head_memory_gib)
        sub_requests = SUBMITTER_RESOURCES["requests"]
        sub = node_fit.Resources(
            node_fit.quantity(sub_requests["cpu"]), node_fit.quantity(sub_requests["memory"]) / 2**30
        )
        cpu_pool = node_fit.Resources(gpu_nodes * (head.cpu + sub.cpu), gpu_nodes * (head.memory_gib + sub.memory_gib))
    else:
        shape = node_fit.machine_shape(s.cluster.system_machine_type)
        if shape is None:  # refused by the settings (systemMachineType) before any component is built
            raise ValueError(f"systemMachineType {s.cluster.system_machine_type!r} has no known shape")
        room = node_fit.allocatable(shape.cpu, shape.memory_gib).minus(node_fit.SYSTEM_NODE_GKE_OVERHEAD)
        n = s.cluster.system_nodes
        cpu_pool = node_fit.Resources(n * room.cpu, n * room.memory_gib)
    flavors = (
        m.gpu_flavor(f"{prefix}-gpu", acc, gpu_nodes, worker.cpu, worker.memory_gib),
        m.cpu_flavor(f"{prefix}-cpu", _floor(cpu_pool.cpu, 0.001), _floor(cpu_pool.memory_gib, 1 / 1024)),
    )
    return m.QueuePlan(
        cluster_queue=prefix,
        local_queue=prefix,
        namespaces=namespaces or (s.storage.namespace,),
        flavors=flavors,
        priority_classes=tuple((f"{prefix}-{level}", v) for level, v in catalog.KUEUE_PRIORITY_CLASSES.items()),
    )


def _floor(x: float, step: float) -> float:
    return int(x / step) * step


def chart_problems(root: Path = ROOT) -> list[str]:
    """What is missing for the kept chart to install Kueue at the pinned version (one line each)."""
    chart = root / CHART_DIR
    meta = chart / "Chart.yaml"
    if not meta.is_file():
        return [f"{CHART_DIR}: Kueue {catalog.KUEUE_VERSION}'s Helm chart is not in the repository (charts/SOURCES.md)"]
    c = yaml.safe_load(meta.read_text()) or {}
    out = []
    if c.get("name") != "kueue" or str(c.get("version")) != catalog.KUEUE_CHART_VERSION:
        out.append(
            f"{CHART_DIR}/Chart.yaml: expected kueue {catalog.KUEUE_CHART_VERSION}, "
            f"found {c.get('name')} {c.get('version')}"
        )
    for crd in ("workloads", "clusterqueues", "localqueues", "resourceflavors", "workloadpriorityclasses"):
        path = chart / "templates" / "crd" / f"kueue.x-k8s.io_{crd}.yaml"
        if not path.is_file():
            out.append(f"{CHART_DIR}: {path.relative_to(chart)} is missing")
    return out


def chart_values(a: KueueArgs) -> dict:
    """The chart values that differ from the chart's defaults (values.yaml @v0.19.2)."""
    pin = catalog.KUEUE_IMAGE_PIN
    return {
        "controllerManager": {
            "manager": {
                # The chart renders `<repository>:<tag>` (templates/manager/manager.yaml:60): the tag carries a digest.
                "image": {
                    "repository": pin.repo,
                    "tag": f"{pin.tag}@{pin.digest}" if pin.digest else pin.tag,
                    "pullPolicy": "IfNotPresent",
                },
            },
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(m.manager_config(a.plan.namespaces), sort_keys=False)
        },
    }


def _kind_name(obj: dict) -> str:
    meta = obj["metadata"]
    return f"{obj['kind'].lower()}-{meta.get('namespace', 'cluster')}-{meta['name']}"


class Kueue(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release
    objects: dict[str, k8s.apiextensions.CustomResource]
    ready: list[pulumi.Resource]  # what a queued Ray object waits for: the queue objects (after the release)

    def __init__(
        self,
        name: str,
        args: KueueArgs,
        workload_namespaces: list[pulumi.Resource],
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        problems = chart_problems()
        if problems:
            raise pulumi.RunError("; ".join(problems))
        super().__init__("nemo-rl-gke:workloads:Kueue", name, None, opts)
        a = args
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = k8s.core.v1.Namespace(
            "kueue-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=a.namespace, labels={"app.kubernetes.io/part-of": "nemo-rl-gke", **namespace_labels("restricted")}
            ),
            opts=child,
        )
        self.release = k8s.helm.v3.Release(
            "kueue",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE_NAME,
                chart=CHART_DIR,
                namespace=self.namespace.metadata.name,
                values=chart_values(a),
                # Helm's wait (skip_await false): CRDs Established, the manager Available (module docstring).
            ),
            # The LocalQueues go into the experiments' namespaces, which must exist first.
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(workload_namespaces)),
        )
        after_release = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.release])
        self.objects = {}
        for obj in m.queue_objects(a.plan):
            meta = obj["metadata"]
            body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
            self.objects[_kind_name(obj)] = k8s.apiextensions.CustomResource(
                _kind_name(obj),
                api_version=obj["apiVersion"],
                kind=obj["kind"],
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=meta["name"], namespace=meta.get("namespace"), labels=meta.get("labels")
                ),
                opts=after_release,
                **body,
            )
        self.ready = [self.release, *self.objects.values()]
        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "clusterQueue": a.plan.cluster_queue,
                "localQueue": a.plan.local_queue,
                "gpuQuota": a.plan.gpus,
            }
        )


__all__ = ["Kueue", "KueueArgs", "chart_problems", "chart_values", "queue_plan"]
