"""The platform's Kueue objects and what a Ray object carries to be queued, judged by Kueue's own CRD schemas and CEL
rules (schemas/kueue-v1beta2/) and by Kueue's webhook, PodSet and ProvisioningRequest rules read from its source
(tests/oracles/kueue/, encoded in tests/kueue_rules.py). Pure builders and settings only: no engine run."""

from __future__ import annotations

import copy

import pytest

from core import catalog
from core.naming import HF_SECRET, LUSTRE_PVC
from core.settings import Settings, load_settings
from tests import kueue_rules as kr
from tests.kueue_validation import validate_kueue
from workloads.kueue import queue_plan
from workloads.manifests import kueue as m
from workloads.manifests.raycluster import RayPodsConfig, raycluster_manifest
from workloads.manifests.rayjob import JobArgs, rayjob_spec

pytestmark = pytest.mark.unit

SECRETS = {"hfToken": "secret", "wandbApiKey": "secret", "rayAuthToken": "secret"}
VARIANTS: dict[str, dict] = {
    "standard-b200": {},
    "standard-h200": {"gpuType": "nvidia-h200-141gb", "gpuNodes": 3},
    "autopilot-b200": {"clusterMode": "autopilot"},
}


def settings(variant: str, **extra) -> Settings:
    return load_settings("dev", "example-project", values={**VARIANTS[variant], **extra}, secret_state=SECRETS)


def own_cluster_rayjob(s: Settings) -> dict:
    a = JobArgs.of(s)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": a.name, "namespace": a.namespace},
        "spec": rayjob_spec(a, ray_cluster_name=None),
    }


def standing_raycluster(s: Settings) -> dict:
    return raycluster_manifest(
        RayPodsConfig.of(s), name=s.names.ray_cluster, secret_name=HF_SECRET, pvc_name=LUSTRE_PVC
    )


def with_workers(job: dict, n: int) -> dict:
    """The same RayJob with n GPU workers (replicas, min and max: the group is pinned)."""
    out = copy.deepcopy(job)
    (group,) = out["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    group.update(replicas=n, minReplicas=n, maxReplicas=n)
    return out


def queue_of(plan: m.QueuePlan) -> kr.Queue:
    objs = m.queue_objects(plan)
    (cq,) = [o for o in objs if o["kind"] == "ClusterQueue"]
    flavors = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ResourceFlavor"}
    return kr.Queue(cq, flavors, catalog.KUEUE_EXCLUDED_RESOURCE_PREFIXES)


QUEUEING = m.Queueing(queue="nemo-dev", priority_class="nemo-dev-normal")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_kueue_object_validates_against_kueues_crd_schema_and_cel_rules(variant):
    s = settings(variant)
    plan = queue_plan(s)
    queued_flavor = m.queued_provisioning_flavor(
        "nemo-dev-gpu-queued", s.gpu.accelerator, "gpu-flex-queued", 2, *node_fit_worker(s)
    )
    with_check = m.QueuePlan(**{**plan.__dict__, "flavors": (*plan.flavors, queued_flavor)})
    objs = m.queue_objects(with_check)
    kinds = {o["kind"] for o in objs}
    assert kinds == {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    }
    for obj in objs:
        validate_kueue(obj)


def node_fit_worker(s: Settings) -> tuple[float, float]:
    from core import node_fit

    w = node_fit.gpu_worker_request(s.gpu.accelerator)
    return w.cpu, w.memory_gib


def test_the_validator_refuses_what_kueues_schema_refuses():
    cq = m.cluster_queue(queue_plan(settings("standard-b200")))
    # A flavor missing one of the group's resources: the resource group's CEL rule.
    short = copy.deepcopy(cq)
    short["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    with pytest.raises(AssertionError, match="flavors must have the same number of resources"):
        validate_kueue(short)
    # A borrowing limit without a cohort: the spec's CEL rule.
    borrow = copy.deepcopy(cq)
    borrow["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "1"
    with pytest.raises(AssertionError, match="borrowingLimit must be nil when cohort is empty"):
        validate_kueue(borrow)
    # An unknown field (strict, as the API server's strict field validation).
    unknown = copy.deepcopy(cq)
    unknown["spec"]["quota"] = 1
    with pytest.raises(AssertionError, match="quota"):
        validate_kueue(unknown)
    lq = m.local_queue(queue_plan(settings("standard-b200")), "nemo-rl")
    del lq["metadata"]["namespace"]
    with pytest.raises(AssertionError, match="namespaced"):
        validate_kueue(lq)
    rf = m.resource_flavor(queue_plan(settings("standard-b200")).flavors[0])
    rf["spec"]["nodeTaints"][0]["effect"] = "Sometimes"
    with pytest.raises(AssertionError, match="supported taint effect values"):
        validate_kueue(rf)


def test_each_flavor_lists_the_groups_resources_in_the_groups_order():
    # ClusterQueue CRD, resourceGroups.flavors: "Each flavor MUST list all the resources listed for this group in the
    # same order as the .resources field." (schemas/kueue-v1beta2/clusterqueue_v1beta2.json)
    for variant in VARIANTS:
        (group,) = m.cluster_queue(queue_plan(settings(variant)))["spec"]["resourceGroups"]
        for f in group["flavors"]:
            assert [r["name"] for r in f["resources"]] == group["coveredResources"], f["name"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_queue_admits_gpu_nodes_whole_node_workers_and_not_one_more(variant):
    """kueue#4329: quota does not see node shape. Each worker requests a whole node's GPUs and the GPU flavor's CPU
    and memory are that many workers' requests, so a job of gpuNodes workers is admitted whole and one more worker
    node's worth waits."""
    s = settings(variant, jobMode="own-cluster")
    plan = queue_plan(s)
    nodes = s.worker_replicas if s.autopilot else s.gpu.nodes
    assert plan.gpus == nodes * s.gpu.accelerator.gpus_per_node
    rendered = own_cluster_rayjob(s)
    job = kr.rayjob_pod_sets(m.queued(with_workers(rendered, nodes), QUEUEING))
    q = queue_of(plan)
    assignment = q.assign(job)
    assert assignment is not None
    assert assignment["gpu-workers"] == plan.flavors[0].name  # the GPU flavor
    assert assignment[kr.HEAD] == assignment[kr.SUBMITTER] == plan.flavors[1].name  # the CPU flavor
    # Nothing is left for even one more worker pod.
    assert q.assign(kr.rayjob_pod_sets(with_workers(rendered, 1))) is None


def test_two_jobs_that_together_need_more_gpus_than_the_platform_has_run_one_after_the_other():
    s = settings("standard-h200", jobMode="own-cluster")  # 3 GPU nodes
    plan = queue_plan(s)
    # A CPU pool large enough for both heads, so only the GPUs decide.
    roomy = m.QueuePlan(**{**plan.__dict__, "flavors": (plan.flavors[0], m.cpu_flavor("cpu", 64, 256))})
    rendered = own_cluster_rayjob(s)
    two = kr.rayjob_pod_sets(with_workers(rendered, 2))
    q = queue_of(roomy)
    assert q.assign(two) is not None  # 2 of 3 nodes
    assert q.assign(two) is None  # 2 more do not fit: the second job stays suspended, holding no node
    assert q.assign(kr.rayjob_pod_sets(with_workers(rendered, 1))) is not None  # the third node


def test_the_provisioning_request_of_an_own_cluster_rayjob_holds_one_pod_set_the_gpu_workers():
    """GKE's queued provisioning accepts one PodSet per request (ray#57839). With managedResources [nvidia.com/gpu]
    Kueue puts only the PodSets that request or limit a GPU into the request: the head and submitter request none."""
    s = settings("standard-b200", jobMode="own-cluster")
    job = kr.rayjob_pod_sets(m.queued(with_workers(own_cluster_rayjob(s), 2), QUEUEING))
    assert [ps.name for ps in job] == [kr.HEAD, "gpu-workers", kr.SUBMITTER]
    prc = m.provisioning_request_config("nemo-dev-gpu-queued")
    (only,) = kr.provisioning_request_pod_sets(job, prc["spec"]["managedResources"])
    assert (only.name, only.count) == ("gpu-workers", 2)
    # The ray#57839 failure: without managedResources every PodSet would go into the request.
    assert len(kr.provisioning_request_pod_sets(job, [])) == 3


def test_queued_adds_the_queue_and_priority_labels_and_changes_nothing_else():
    s = settings("standard-b200", jobMode="own-cluster")
    job = own_cluster_rayjob(s)
    out = m.queued(job, QUEUEING)
    assert out["metadata"]["labels"] == {
        catalog.KUEUE_QUEUE_NAME_LABEL: "nemo-dev",
        catalog.KUEUE_PRIORITY_CLASS_LABEL: "nemo-dev-normal",
    }
    assert out["spec"] == job["spec"] and "labels" not in job["metadata"]
    # Kueue owns spec.suspend (its webhook sets it at create, admission clears it): we never render it.
    assert "suspend" not in out["spec"]


def test_queued_refuses_a_rayjob_kueue_would_not_manage_or_not_admit_whole():
    standing = settings("standard-b200")  # standing-cluster mode: clusterSelector
    a = JobArgs.of(standing)
    selector_job = {"kind": "RayJob", "metadata": {"name": a.name}, "spec": rayjob_spec(a, ray_cluster_name="c")}
    with pytest.raises(ValueError, match="clusterSelector"):
        m.queued(selector_job, QUEUEING)
    keeps = own_cluster_rayjob(settings("standard-b200", jobMode="own-cluster"))
    keeps["spec"]["shutdownAfterJobFinishes"] = False
    with pytest.raises(ValueError, match="shutdownAfterJobFinishes"):
        m.queued(keeps, QUEUEING)
    # Kueue's own webhook agrees: a clusterSelector RayJob is let through unmanaged.
    assert kr.rayjob_webhook({**selector_job, "metadata": {"labels": QUEUEING.labels()}}).managed is False


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_queued_ray_objects_pass_kueues_webhooks(variant):
    job = m.queued(own_cluster_rayjob(settings(variant, jobMode="own-cluster")), QUEUEING)
    verdict = kr.rayjob_webhook(job)
    assert verdict.managed and verdict.problems == ()
    cluster = m.queued(standing_raycluster(settings(variant)), QUEUEING)
    verdict = kr.raycluster_webhook(cluster)
    assert verdict.managed and verdict.problems == ()


def test_kueues_webhook_rules_refuse_the_shapes_we_must_not_render():
    base = m.queued(own_cluster_rayjob(settings("standard-b200", jobMode="own-cluster")), QUEUEING)
    autoscaling = copy.deepcopy(base)
    autoscaling["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    assert any("enableInTreeAutoscaling" in p for p in kr.rayjob_webhook(autoscaling).problems)
    keeps = copy.deepcopy(base)
    keeps["spec"]["shutdownAfterJobFinishes"] = False
    assert any("shutdownAfterJobFinishes" in p for p in kr.rayjob_webhook(keeps).problems)
    head = m.queued(standing_raycluster(settings("standard-b200")), QUEUEING)
    head["spec"]["workerGroupSpecs"][0]["groupName"] = "head"
    assert any("reserved for the head group" in p for p in kr.raycluster_webhook(head).problems)


def test_the_cpu_pods_get_the_cpu_flavor_because_they_do_not_tolerate_the_gpu_taint():
    s = settings("standard-b200", jobMode="own-cluster")
    job = kr.rayjob_pod_sets(own_cluster_rayjob(s))
    taint = {"key": catalog.GPU_NODE_TAINT_KEY, "effect": "NoSchedule"}
    tolerates = {ps.name: kr._tolerates(ps.pod_spec.get("tolerations") or [], taint) for ps in job}
    assert tolerates == {kr.HEAD: False, "gpu-workers": True, kr.SUBMITTER: False}


def test_the_manager_configuration_manages_only_queued_ray_objects_and_leaves_ephemeral_storage_out():
    cfg = m.manager_config()
    assert cfg["manageJobsWithoutQueueName"] is False
    assert cfg["integrations"]["frameworks"] == ["ray.io/rayjob", "ray.io/raycluster"]
    assert "managedJobsNamespaceSelector" not in cfg  # it does not narrow Ray jobs (core/catalog/kueue.py)
    # Without the exclusion every Ray pod's ephemeral-storage request would make it inadmissible: the queue does not
    # cover that resource ("resource ... unavailable in ClusterQueue").
    s = settings("standard-b200", jobMode="own-cluster")
    job = kr.rayjob_pod_sets(own_cluster_rayjob(s))
    q = queue_of(queue_plan(s))
    q.excluded_prefixes = ()
    with pytest.raises(AssertionError, match="ephemeral-storage unavailable in ClusterQueue"):
        q.assign(job)


def test_the_cluster_queue_serves_the_namespaces_labelled_for_it():
    plan = queue_plan(settings("standard-b200"))
    cq = m.cluster_queue(plan)
    assert cq["spec"]["namespaceSelector"] == {"matchLabels": {"nemo-rl-gke/queue": "kueue"}}
    assert m.queue_namespace_labels() == {"nemo-rl-gke/queue": "kueue"}


def test_the_encoded_webhook_rules_are_kueues_own_words():
    """Every refusal tests/kueue_rules.py reports is a message of the kept Kueue excerpts (tests/oracles/kueue/)."""
    from pathlib import Path

    oracles = Path(__file__).parent / "oracles" / "kueue"
    text = "".join(p.read_text() for p in oracles.rglob("*.go.txt"))
    for message in (
        "a kueue managed job should not use an existing cluster",
        "rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector",
        "a kueue managed job should delete the cluster after finishing",
        "a kueue managed job should only use autoscaling when workload slicing is enabled",
        "is reserved for the head group",
        "RayJobs using existing clusters are not managed by Kueue",
        "len(spec.WorkerGroupSpecs) > 7",
        "jobframework.MaxPodSets",
        "if j.Spec.SubmissionMode == rayv1.K8sJobMode {",
        "podUses(&ps.Template.Spec, resourcesSet)",
    ):
        assert message in text, message
