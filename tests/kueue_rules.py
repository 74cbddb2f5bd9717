"""What Kueue does with a Ray object, written from Kueue's own source (tests/oracles/kueue/, see its SOURCES.md):
the RayJob and RayCluster webhook rules, the PodSets a Ray object becomes, which PodSets a ProvisioningRequest holds,
and how a Workload's PodSets are assigned flavors within a ClusterQueue's quota. Test oracle only: the program
never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from core.node_fit import quantity

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"  # pkg/controller/constants/constants.go:23 @v0.19.2
ELASTIC_JOB_ANNOTATION = ("kueue.x-k8s.io/elastic-job", "true")  # site/content/en/docs/tasks/run/rayjobs.md:117-120
MAX_POD_SETS = 18  # pkg/controller/jobframework/constants.go:21 @v0.19.2
OLD_MAX_WORKER_GROUPS = 7  # 0205cda7/raycluster_webhook.validateCreate.go.txt (Kueue <= 0.17)
HEAD = "head"
SUBMITTER = "submitter"
# KubeRay's default submitter container when a RayJob has no submitterPodTemplate (00caa311 getSubmitterTemplate).
DEFAULT_SUBMITTER_REQUESTS = {"cpu": "500m", "memory": "200Mi"}
_DNS1123_SUBDOMAIN_MAX = 253


def _is_queued(obj: dict) -> bool:
    return bool(((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL))


def _elastic(obj: dict) -> bool:
    k, v = ELASTIC_JOB_ANNOTATION
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(k) == v


def _cluster_spec_problems(obj: dict, spec: dict, path: str) -> list[str]:
    """v0.19.2/raycluster_common.ValidateCreate.go.txt (the part of a RayJob's validation that reads its cluster)."""
    out = []
    if spec.get("enableInTreeAutoscaling") and not _elastic(obj):
        out.append(
            f"{path}.enableInTreeAutoscaling: a kueue managed job should only use autoscaling when workload slicing "
            "is enabled"
        )
    groups = spec.get("workerGroupSpecs") or []
    if len(groups) + 1 > MAX_POD_SETS:
        out.append(f"{path}.workerGroupSpecs: must have at most {MAX_POD_SETS} items")
    for i, g in enumerate(groups):
        if g.get("groupName") == HEAD:
            out.append(f'{path}.workerGroupSpecs[{i}].groupName: "head" is reserved for the head group')
    return out


def _queue_name_problems(obj: dict) -> list[str]:
    """ValidateQueueName (jobframework/validation.go:146-154, :174-178 @v0.19.2): a DNS-1123 subdomain."""
    import re

    value = ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)
    if value is None:
        return []
    ok = len(value) <= _DNS1123_SUBDOMAIN_MAX and re.match(
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", value
    )
    return [] if ok else [f"metadata.labels[{QUEUE_NAME_LABEL}]: {value!r} is not a DNS-1123 subdomain"]


@dataclass(frozen=True)
class WebhookVerdict:
    managed: bool  # Kueue manages (suspends, admits) the object
    problems: tuple[str, ...]  # what its validating webhook refuses (the create fails)


def rayjob_webhook(obj: dict, manage_jobs_without_queue_name: bool = False) -> WebhookVerdict:
    """v0.19.2/rayjob_webhook.validateCreate.go.txt, with rayjob_controller.go Skip (clusterSelector: not managed)."""
    spec = obj.get("spec") or {}
    if not (manage_jobs_without_queue_name or _is_queued(obj)):
        return WebhookVerdict(False, tuple(_queue_name_problems(obj)))
    selector, cluster = bool(spec.get("clusterSelector")), spec.get("rayClusterSpec") is not None
    if selector and cluster:
        return WebhookVerdict(True, ("spec.clusterSelector: a kueue managed job should not use an existing cluster",))
    if selector:
        return WebhookVerdict(False, tuple(_queue_name_problems(obj)))
    if not cluster:
        return WebhookVerdict(
            True,
            ("spec.rayClusterSpec: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector",),
        )
    out = []
    if spec.get("shutdownAfterJobFinishes") is not True:
        out.append("spec.shutdownAfterJobFinishes: a kueue managed job should delete the cluster after finishing")
    out += _cluster_spec_problems(obj, spec["rayClusterSpec"], "spec.rayClusterSpec")
    return WebhookVerdict(True, tuple(out + _queue_name_problems(obj)))


def raycluster_webhook(obj: dict, manage_jobs_without_queue_name: bool = False) -> WebhookVerdict:
    """0205cda7/raycluster_webhook.validateCreate.go.txt (at most 7 worker groups, Kueue <= 0.17) and the v0.19.2
    PodSet limit (v0.19.2/raycluster_common.ValidateCreate.go.txt): the stricter of both."""
    if not (manage_jobs_without_queue_name or _is_queued(obj)):
        return WebhookVerdict(False, tuple(_queue_name_problems(obj)))
    spec = obj.get("spec") or {}
    out = _cluster_spec_problems(obj, spec, "spec")
    if len(spec.get("workerGroupSpecs") or []) > OLD_MAX_WORKER_GROUPS:
        out.append(f"spec.workerGroupSpecs: must have at most {OLD_MAX_WORKER_GROUPS} items")
    return WebhookVerdict(True, tuple(out + _queue_name_problems(obj)))


# --- PodSets ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    template: dict  # the pod template (metadata + spec)

    @property
    def pod_spec(self) -> dict:
        return self.template.get("spec") or {}

    def requests(self) -> dict[str, float]:
        """One pod's requests as Kueue counts them: containers summed, limits standing in for missing requests
        (workload.UseLimitsAsMissingRequestsInPod), init containers by their maximum (the pod's effective request)."""

        def container(c: dict) -> dict[str, float]:
            res = c.get("resources") or {}
            merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
            return {k: quantity(v) for k, v in merged.items()}

        total: dict[str, float] = {}
        for c in self.pod_spec.get("containers") or []:
            for k, v in container(c).items():
                total[k] = total.get(k, 0.0) + v
        for c in self.pod_spec.get("initContainers") or []:
            for k, v in container(c).items():
                total[k] = max(total.get(k, 0.0), v)
        return total


def _cluster_pod_sets(spec: dict) -> list[PodSet]:
    """00caa311/rayjob_controller.PodSets.go.txt: the head (1 pod), then each worker group (replicas, default 1,
    times numOfHosts when above 1)."""
    sets = [PodSet(HEAD, 1, (spec.get("headGroupSpec") or {}).get("template") or {})]
    for g in spec.get("workerGroupSpecs") or []:
        count = g.get("replicas", 1)
        if (g.get("numOfHosts") or 1) > 1:
            count *= g["numOfHosts"]
        sets.append(PodSet(str(g.get("groupName", "")).lower(), count, g.get("template") or {}))
    return sets


def rayjob_pod_sets(obj: dict) -> list[PodSet]:
    """The Workload's PodSets of an own-cluster RayJob, the K8sJobMode submitter last (kueue PR #3729)."""
    spec = obj["spec"]
    sets = _cluster_pod_sets(spec["rayClusterSpec"])
    if spec.get("submissionMode") == "K8sJobMode":
        template = spec.get("submitterPodTemplate") or {
            "spec": {
                "containers": [{"name": "ray-job-submitter", "resources": {"requests": DEFAULT_SUBMITTER_REQUESTS}}]
            }
        }
        sets.append(PodSet(SUBMITTER, 1, template))
    return sets


def raycluster_pod_sets(obj: dict) -> list[PodSet]:
    return _cluster_pod_sets(obj["spec"])


def provisioning_request_pod_sets(pod_sets: list[PodSet], managed_resources: list[str]) -> list[PodSet]:
    """006767fe/provisioning_controller.requiredPodSets.go.txt, with v0.19.2's `ps.Count > 0`: the PodSets whose
    containers or init containers request or limit a managed resource (all of them when none is listed)."""

    def uses(ps: PodSet) -> bool:
        for c in (ps.pod_spec.get("initContainers") or []) + (ps.pod_spec.get("containers") or []):
            res = c.get("resources") or {}
            if any(r in managed_resources for r in (res.get("requests") or {})) or any(
                r in managed_resources for r in (res.get("limits") or {})
            ):
                return True
        return False

    return [ps for ps in pod_sets if ps.count > 0 and (not managed_resources or uses(ps))]


# --- flavor assignment and quota ---------------------------------------------------------------------------------
def _tolerates(tolerations: list[dict], taint: dict) -> bool:
    """Kubernetes' toleration matching (corev1helpers.FindMatchingUntoleratedTaint, used at flavorassigner.go:1239)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] != taint["key"]:
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _selector_matches(pod_spec: dict, node_labels: dict) -> bool:
    """A flavor fits a PodSet only if its nodeLabels agree with the PodSet's nodeSelector on every common key
    (ResourceFlavor CRD nodeLabels description)."""
    sel = pod_spec.get("nodeSelector") or {}
    return all(sel[k] == v for k, v in node_labels.items() if k in sel)


@dataclass
class Queue:
    """A ClusterQueue's one resource group: flavors in order with their remaining quota (BestEffortFIFO, no cohort)."""

    cluster_queue: dict
    flavors: dict[str, dict]  # name -> ResourceFlavor object
    excluded_prefixes: tuple[str, ...] = ()

    def __post_init__(self):
        (group,) = self.cluster_queue["spec"]["resourceGroups"]
        self.covered = list(group["coveredResources"])
        self.order = [f["name"] for f in group["flavors"]]
        self.free = {
            f["name"]: {r["name"]: quantity(r["nominalQuota"]) for r in f["resources"]} for f in group["flavors"]
        }

    def _requests(self, ps: PodSet) -> dict[str, float]:
        req = {k: v * ps.count for k, v in ps.requests().items() if not k.startswith(self.excluded_prefixes)}
        return req

    def assign(self, pod_sets: list[PodSet]) -> Optional[dict[str, str]]:
        """PodSet name -> flavor if the whole Workload fits now (all or nothing), else None; quota is then taken."""
        free = {f: dict(q) for f, q in self.free.items()}
        out: dict[str, str] = {}
        for ps in pod_sets:
            req = self._requests(ps)
            uncovered = [r for r in req if r not in self.covered]
            if uncovered:
                raise AssertionError(f"PodSet {ps.name}: resource {uncovered[0]} unavailable in ClusterQueue")
            for name in self.order:
                spec = self.flavors[name].get("spec") or {}
                if not all(_tolerates(ps.pod_spec.get("tolerations") or [], t) for t in spec.get("nodeTaints") or []):
                    continue
                if not _selector_matches(ps.pod_spec, spec.get("nodeLabels") or {}):
                    continue
                if all(free[name].get(r, 0.0) + 1e-9 >= v for r, v in req.items()):
                    for r, v in req.items():
                        free[name][r] -= v
                    out[ps.name] = name
                    break
            else:
                return None
        self.free = free
        return out
