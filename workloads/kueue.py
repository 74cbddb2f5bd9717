"""KueueQueue: the platform's GPU queue on a cluster where Kueue is installed (nemo-rl-gke:workloads:KueueQueue).

The program does not install Kueue (its release's manifests and chart could not be vendored: docs/research/kueue.md
"What could not be vendored"); the cluster admin installs a v0.19.x release with the Configuration kept in
deploy/kueue/ (docs/operations.md "The GPU queue"). What this component declares, with `queue: kueue`:

- a read of Kueue's manager Deployment (pulumi-kubernetes `.get()`, done at `pulumi preview` once the cluster exists)
  and the check of its release: one line naming `queue` when it is not v0.19.x (core/catalog/kueue.py says where the
  version is read). A manager that does not exist fails the read itself, with the provider's "does not exist" naming
  this component's `kueue-manager`; docs/operations.md says what to do.
- then, each waiting for that check (their inputs carry the version it read, and they depend on the read): the
  ResourceFlavors, the WorkloadPriorityClasses, the ClusterQueue and the platform namespace's LocalQueue
  (workloads/manifests/kueue.py builds them), and a LocalQueue in each experiment namespace the platform creates
  (`experiments`: workloads/experiment_tenancy.py), each after its namespace.

The Ray objects that are queued wait for this component too (`ready`): their LocalQueue must exist and Kueue's ray.io
webhooks must serve, or they would be created unsuspended. Kueue's own webhooks answer once its Deployment is
Available (cmd/kueue/main.go:628-650 @v0.19.2), which the documented install waits for.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from core import catalog, naming, node_fit
from core.keys import key
from core.settings import Settings
from workloads.manifests import kueue as m
from workloads.manifests import pod_fit

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def queue_plan(s: Settings, namespaces: Optional[tuple[str, ...]] = None) -> m.QueuePlan:
    """The platform's queue from its settings (module docstring of workloads/manifests/kueue.py): GPU quota gpuNodes x
    GPUs per node (Autopilot: workerReplicas nodes), CPU quota what the CPU pool gives the heads and submitters of the
    platform's job and of the listed experiments' jobs those GPUs can run (workloads/manifests/pod_fit.py
    cpu_pool_plan). A LocalQueue in the platform's namespace and in each experiment's (`experiments`)."""
    acc = s.gpu.accelerator
    gpu_nodes = pod_fit.max_jobs(s)
    worker = node_fit.gpu_worker_request(acc)
    plan = pod_fit.cpu_pool_plan(s)
    if plan is not None:
        cpu = plan.queued
    else:
        # Autopilot (no pool: each pod gets its own capacity) or an undecodable machine type: the heads and submitters
        # of every job the GPUs can run, which is then never the limit.
        jobs = pod_fit.job_cpu_pods(s)
        head = pod_fit.platform_cpu_pods(s)["standing head"]
        per_job = jobs["head"].plus(jobs["submitter"])
        n = pod_fit.admitted_experiments(len(s.tenancy.experiments), gpu_nodes, s.job.enabled)
        n += 1 if s.job.enabled and s.job.mode == "own-cluster" else 0
        cpu = node_fit.Resources(head.cpu + n * per_job.cpu, head.memory_gib + n * per_job.memory_gib)
    flavors = (
        m.gpu_flavor(naming.KUEUE_GPU_FLAVOR, acc, gpu_nodes, worker.cpu, worker.memory_gib),
        m.cpu_flavor(naming.KUEUE_CPU_FLAVOR, _ceil(cpu.cpu, 0.001), _ceil(cpu.memory_gib, 1 / 1024)),
    )
    return m.QueuePlan(
        cluster_queue=naming.KUEUE_CLUSTER_QUEUE,
        local_queue=naming.KUEUE_LOCAL_QUEUE,
        namespaces=namespaces or (s.storage.namespace, *experiment_namespaces(s)),
        flavors=flavors,
        priority_classes=tuple(
            (naming.kueue_priority_class(level), v) for level, v in catalog.KUEUE_PRIORITY_CLASSES.items()
        ),
    )


def experiment_namespaces(s: Settings) -> tuple[str, ...]:
    """The namespaces of the experiments the platform hosts (core/naming.py ExperimentNames), each with a LocalQueue."""
    return tuple(naming.experiment_namespace(s.storage.namespace, e) for e in sorted(s.tenancy.experiments))


def _ceil(x: float, step: float) -> float:
    n = int(x / step)
    return (n if n * step >= x - 1e-12 else n + 1) * step


def installed_version(deployment: dict) -> Optional[str]:
    """The Kueue release a manager Deployment runs: its `manager` container's image tag, else (an image by digest
    only) the chart's version label; None when neither says."""
    meta = deployment.get("metadata") or {}
    containers = ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    for c in containers:
        if c.get("name") != catalog.KUEUE_MANAGER_CONTAINER:
            continue
        ref = str(c.get("image") or "").split("@", 1)[0]
        tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
        if _VERSION.match(tag):
            return tag if tag.startswith("v") else f"v{tag}"
    label = str((meta.get("labels") or {}).get(catalog.KUEUE_VERSION_LABEL) or "")
    return label if _VERSION.match(label) else None


def version_problem(deployment: dict) -> Optional[str]:
    """One line naming `queue` when the manager read is not a Kueue release this program supports."""
    where = f"{catalog.KUEUE_NAMESPACE}/{catalog.KUEUE_MANAGER_DEPLOYMENT}"
    version = installed_version(deployment)
    supported = catalog.KUEUE_SUPPORTED_MINOR
    if version is not None and version.startswith(supported + "."):
        return None
    found = f"Kueue {version}" if version else "a Kueue manager whose release is not in its image tag or labels"
    return (
        f"{key('queue')}: kueue needs Kueue {supported}.x on the cluster, which runs {found} ({where}); install "
        f'{catalog.KUEUE_VERSION} as docs/operations.md "The GPU queue" says, or set queue to none'
    )


def check_version(deployment: dict) -> str:
    """The installed release, or a RunError with version_problem's line (the preview stops there)."""
    problem = version_problem(deployment)
    if problem is not None:
        raise pulumi.RunError(problem)
    version = installed_version(deployment)
    assert version is not None
    return version


def _kind_name(obj: dict) -> str:
    meta = obj["metadata"]
    scope = meta.get("namespace")
    return f"kueue-{obj['kind'].lower()}-{scope}" if scope else f"kueue-{obj['kind'].lower()}-{meta['name']}"


@dataclass(frozen=True)
class KueueQueueArgs:
    plan: m.QueuePlan

    @classmethod
    def of(cls, s: Settings) -> "KueueQueueArgs":
        return cls(plan=queue_plan(s))

    def describe(self) -> dict[str, Any]:
        """The queue and its quota, for the `queue` stack output (computed at `up`; the live state is the CLI's:
        python -m cli.team)."""
        p = self.plan
        return {
            "clusterQueue": p.cluster_queue,
            "localQueue": p.local_queue,
            "quota": {
                f.name: {
                    catalog.GPU_RESOURCE: f.gpus,
                    "cpu": m.quantity_cpu(f.cpu),
                    "memory": m.quantity_gib(f.memory_gib),
                }
                for f in p.flavors
            },
            "gpuQuota": p.gpus,
            "priorities": {name: value for name, value in p.priority_classes},
            "preemption": f"withinClusterQueue: {p.preemption_within}",
            "queueing": p.queueing_strategy,
            "teamView": "python -m cli.team",
        }


class KueueQueue(pulumi.ComponentResource):
    """The read of Kueue's manager now; the queue's objects once `checked()` has accepted its release."""

    manager: k8s.apps.v1.Deployment  # the read of Kueue's manager
    version: Optional[str]  # the release the check accepted (None before the check, or at a first preview)
    objects: dict[str, pulumi.CustomResource]
    ready: list[pulumi.Resource]  # what a queued Ray object waits for

    def __init__(
        self,
        name: str,
        args: KueueQueueArgs,
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:KueueQueue", name, None, opts)
        self._provider = provider
        self.plan = args.plan
        self.version = None
        self.objects = {}
        self.manager = k8s.apps.v1.Deployment.get(
            "kueue-manager",
            f"{catalog.KUEUE_NAMESPACE}/{catalog.KUEUE_MANAGER_DEPLOYMENT}",
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.ready = [self.manager]

    async def checked(self, namespace_ready: Mapping[str, Sequence[pulumi.Resource]]) -> None:
        """Wait for the read, refuse in one line naming `queue` what is not Kueue v0.19.x (before anything else is
        registered: the caller registers the queued objects after this), then declare the queue's objects. At the
        first preview of a new platform the cluster does not exist yet and the read has no value: the check happens
        at `up`, when the read does."""
        try:
            meta = await self.manager.metadata.future()
            spec = await self.manager.spec.future()
        except Exception:  # noqa: BLE001 the provider's own error is printed beside this line
            raise pulumi.RunError(not_found_problem()) from None
        if meta is not None or spec is not None:
            self.version = check_version({"metadata": _plain(meta or {}), "spec": _plain(spec or {})})
        for obj in m.queue_objects(self.plan):
            if obj["kind"] == "LocalQueue":
                continue
            self.objects[_kind_name(obj)] = self._declare(obj, [self.manager])
        for ns in sorted(self.plan.namespaces):
            # Each after its own namespace (the platform's, or the one the platform made for an experiment).
            self.objects[_kind_name(m.local_queue(self.plan, ns))] = self.local_queue(ns, namespace_ready.get(ns, ()))
        self.ready = [self.manager, *self.objects.values()]
        self.register_outputs({"clusterQueue": self.plan.cluster_queue, "gpuQuota": self.plan.gpus})

    def _declare(self, obj: dict, after: Sequence[pulumi.Resource]) -> pulumi.CustomResource:
        # After the read of Kueue's manager (the check ran before this object was declared).
        return KubernetesObject(
            _kind_name(obj),
            obj,
            opts=pulumi.ResourceOptions(parent=self, provider=self._provider, depends_on=list(after)),
        )

    def local_queue(self, namespace: str, namespace_ready: Sequence[pulumi.Resource] = ()) -> pulumi.CustomResource:
        """The LocalQueue of a namespace whose jobs submit to the platform's ClusterQueue (the namespace must carry
        m.queue_namespace_labels()): the platform's namespace here, an experiment's where it is created (after
        `checked()`)."""
        return self._declare(m.local_queue(self.plan, namespace), [self.manager, *namespace_ready])


class KubernetesObject(pulumi.CustomResource):
    """Any Kubernetes object through pulumi-kubernetes' generic kind (type token `kubernetes:<apiVersion>:<kind>`,
    as `apiextensions.CustomResource` registers one), with its top-level fields as written: a WorkloadPriorityClass
    has `value` and `description` beside its metadata and no `spec`, which CustomResource cannot render."""

    def __init__(self, name: str, obj: dict, opts: pulumi.ResourceOptions):
        version = importlib.metadata.version("pulumi_kubernetes")
        super().__init__(
            f"kubernetes:{obj['apiVersion']}:{obj['kind']}",
            name,
            dict(obj),
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=version)),
        )


def not_found_problem() -> str:
    where = f"{catalog.KUEUE_NAMESPACE}/{catalog.KUEUE_MANAGER_DEPLOYMENT}"
    return (
        f"{key('queue')}: kueue needs Kueue {catalog.KUEUE_SUPPORTED_MINOR}.x on the cluster, and its manager "
        f'({where}) could not be read; install {catalog.KUEUE_VERSION} as docs/operations.md "The GPU queue" says, '
        "or set queue to none"
    )


def _plain(value: Any) -> Any:
    """Output values of a read arrive as dicts (the engine) or typed objects (the provider SDK's output types)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__") and not isinstance(value, (str, int, float, bool)):
        return {_camel(k): _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


__all__ = ["KueueQueue", "KueueQueueArgs", "check_version", "installed_version", "queue_plan", "version_problem"]
