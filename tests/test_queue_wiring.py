"""The GPU queue as the stacks render it (queue: kueue, the codelab platform and its three experiments): every RayJob
and the standing RayCluster carry a LocalQueue and a priority class the platform declares and pass Kueue's webhook
rules (tests/kueue_rules.py, from Kueue's source); the Kueue objects validate against Kueue's CRD schemas and wait for
the check of the installed release; a release other than v0.19.x, or no Kueue at all, stops the preview before
anything queued is registered; the three experiments ask for more GPUs than the quota and Kueue's admission (its
flavor assignment and quota, tests/kueue_rules.py Queue) runs them in turn."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from core import catalog
from synth import engine
from tests import kueue_rules as kr
from tests.kueue_validation import validate_kueue

pytestmark = pytest.mark.graph

RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
EXPERIMENTS = ("codelab-exp1", "codelab-exp2", "codelab-exp3")
ROOT = Path(__file__).resolve().parents[1]


def manifest(reg) -> dict:
    obj = {k: reg.inputs[k] for k in ("apiVersion", "kind", "metadata") if k in reg.inputs}
    obj.update({k: v for k, v in reg.inputs.items() if k not in obj})
    obj.setdefault("apiVersion", reg.type.split(":")[1])
    obj.setdefault("kind", reg.type.rsplit(":", 1)[1])
    return obj


def kueue_objects(r) -> list[dict]:
    return [manifest(x) for x in r.resources if x.type.startswith(KUEUE)]


def of_kind(r, kind: str) -> list[dict]:
    return [o for o in kueue_objects(r) if o["kind"] == kind]


def queue_of(platform) -> kr.Queue:
    (cq,) = of_kind(platform, "ClusterQueue")
    flavors = {o["metadata"]["name"]: o for o in of_kind(platform, "ResourceFlavor")}
    return kr.Queue(cq, flavors, catalog.KUEUE_EXCLUDED_RESOURCE_PREFIXES)


def the_rayjob(r) -> dict:
    (job,) = r.of_type(RAYJOB)
    return manifest(job)


def gpus(pod_sets) -> float:
    return sum(ps.requests().get(catalog.GPU_RESOURCE, 0) * ps.count for ps in pod_sets)


def test_every_ray_object_of_codelab_and_its_experiments_waits_in_a_queue_the_platform_declares(synth):
    platform = synth("codelab")
    assert platform.error is None, platform.error
    local_queues = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in of_kind(platform, "LocalQueue")}
    priorities = {o["metadata"]["name"] for o in of_kind(platform, "WorkloadPriorityClass")}
    (cq,) = of_kind(platform, "ClusterQueue")
    assert {lq["spec"]["clusterQueue"] for lq in of_kind(platform, "LocalQueue")} == {cq["metadata"]["name"]}
    objs = [manifest(x) for x in platform.of_type(RAYJOB) + platform.of_type(RAYCLUSTER)]
    for stack in EXPERIMENTS:
        r = synth(stack)
        assert r.error is None, r.error
        objs.append(the_rayjob(r))
    assert len(objs) == 5  # the standing RayCluster, the platform's RayJob, three experiments' RayJobs
    for obj in objs:
        labels = obj["metadata"]["labels"]
        what = f"{obj['kind']} {obj['metadata']['name']}"
        assert (obj["metadata"]["namespace"], labels[catalog.KUEUE_QUEUE_NAME_LABEL]) in local_queues, what
        assert labels[catalog.KUEUE_PRIORITY_CLASS_LABEL] in priorities, what
        verdict = (kr.rayjob_webhook if obj["kind"] == "RayJob" else kr.raycluster_webhook)(obj)
        assert verdict.managed and verdict.problems == (), (what, verdict)
        assert "suspend" not in obj["spec"], f"{what}: spec.suspend is Kueue's to set"
    # The namespaces the LocalQueues live in may submit to the ClusterQueue.
    (ns,) = [x for x in platform.of_type("kubernetes:core/v1:Namespace") if x.name == "namespace"]
    selector = cq["spec"]["namespaceSelector"]["matchLabels"]
    assert selector.items() <= ns.inputs["metadata"]["labels"].items()


def test_every_kueue_object_the_platform_declares_validates_against_kueues_crds(synth):
    objs = kueue_objects(synth("codelab"))
    assert {o["kind"] for o in objs} == {"ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    for obj in objs:
        validate_kueue(obj)


def test_the_three_experiments_ask_for_more_gpus_than_the_quota_and_the_queue_runs_them_in_turn(synth):
    """codelab: 8 B200 nodes, 64 GPUs of quota. Its own job (8 nodes) is admitted first; the experiments (4, 2 and 4
    nodes: 80 GPUs together, more than the quota) wait holding nothing. When it ends, exp1 and exp2 are admitted and
    exp3 waits for 32 GPUs while 16 are free. The CPU flavor never holds a job back."""
    platform = synth("codelab")
    own = kr.rayjob_pod_sets(the_rayjob(platform))
    exps = [kr.rayjob_pod_sets(the_rayjob(synth(s))) for s in EXPERIMENTS]
    standing = kr.raycluster_pod_sets(manifest(platform.get(RAYCLUSTER, "raycluster")))
    quota = platform.outputs["queue"]["gpuQuota"]
    assert quota == 64 == queue_of(platform).free[platform.outputs["queue"]["clusterQueue"] + "-gpu"]["nvidia.com/gpu"]
    assert [gpus(j) for j in exps] == [32, 16, 32] and sum(gpus(j) for j in exps) > quota
    q = queue_of(platform)
    assert q.assign(standing) is not None  # its head only: no GPU worker while the platform's job runs its own
    assert gpus(standing) == 0
    assert q.assign(own) is not None
    assert [q.assign(j) for j in exps] == [None, None, None]  # all three wait, holding nothing
    after = queue_of(platform)  # the platform's job ended: its whole Workload is released
    assert after.assign(standing) is not None
    first, second, third = (after.assign(j) for j in exps)
    assert first is not None and second is not None and third is None
    assert after.free["nemo-rl-gpu"][catalog.GPU_RESOURCE] == 16  # exp3 needs 32
    cpu_left = after.free["nemo-rl-cpu"]["cpu"]
    assert cpu_left >= sum(ps.requests()["cpu"] for ps in exps[2] if ps.name != "gpu-workers")  # not the CPU


def test_the_queue_output_describes_the_quota_the_cluster_queue_holds(synth):
    platform = synth("codelab")
    out = platform.outputs["queue"]
    (cq,) = of_kind(platform, "ClusterQueue")
    (group,) = cq["spec"]["resourceGroups"]
    rendered = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert {name: {k: str(v) for k, v in q.items()} for name, q in out["quota"].items()} == rendered
    assert out["kueueVersion"] == "v0.19.2"  # what the check read (the engine's cluster: Kueue's release manifests)
    assert out["priorities"] == {o["metadata"]["name"]: o["value"] for o in of_kind(platform, "WorkloadPriorityClass")}


def test_kueues_objects_and_every_queued_object_wait_for_the_read_of_kueues_manager(synth):
    r = synth("codelab")
    (read,) = [x for x in r.reads if x[1] == "kueue-system/kueue-controller-manager"]
    assert read[0] == "kubernetes:apps/v1:Deployment"
    urns = r.by_urn()
    queued = [x for x in r.resources if x.type.startswith(KUEUE)] + r.of_type(RAYJOB) + r.of_type(RAYCLUSTER)
    for x in queued:
        deps = set(x.dependencies)
        # The read is not a registration; its URN is a dependency of every Kueue object, and the Ray objects
        # depend on the Kueue objects.
        if x.type.startswith(KUEUE):
            assert any(d.endswith("::kueue-manager") for d in deps), x.key
        else:
            assert any(urns[d].type.startswith(KUEUE) for d in deps if d in urns), x.key


def _cluster_with(image: str) -> dict:
    objs = copy.deepcopy(engine.DEFAULT_CLUSTER_OBJECTS)
    objs[engine.KUEUE_MANAGER_READ]["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return objs


@pytest.mark.parametrize("image", ["registry.k8s.io/kueue/kueue:v0.18.6", "registry.k8s.io/kueue/kueue:v0.20.0"])
def test_another_kueue_release_stops_the_preview_in_one_line_naming_queue_before_anything_queued(image):
    r = engine.run("codelab", cluster_objects=_cluster_with(image))
    assert r.error is not None
    (line,) = r.error.strip().splitlines()
    version = image.rsplit(":", 1)[1]
    assert line.startswith("nemo-rl-gke:queue: kueue needs Kueue v0.19.x") and f"runs Kueue {version}" in line
    assert not [x for x in r.resources if x.type.startswith(KUEUE)]
    assert r.of_type(RAYJOB) == [] and r.of_type(RAYCLUSTER) == []


def test_a_patch_release_of_the_supported_minor_and_a_mirrored_image_pass_the_check():
    for image in ("my-registry.example/kueue/kueue:v0.19.0", "registry.k8s.io/kueue/kueue:v0.19.3@sha256:" + "0" * 64):
        r = engine.run("codelab", cluster_objects=_cluster_with(image))
        assert r.error is None, (image, r.error)
        assert r.outputs["queue"]["kueueVersion"] == image.split(":")[1].split("@")[0]


def test_a_manager_image_by_digest_alone_is_judged_by_the_charts_version_label():
    objs = _cluster_with("registry.k8s.io/kueue/kueue@sha256:" + "1" * 64)
    assert "refused" and engine.run("codelab", cluster_objects=objs).error.startswith("nemo-rl-gke:queue:")
    objs[engine.KUEUE_MANAGER_READ]["metadata"]["labels"]["app.kubernetes.io/version"] = "v0.19.2"
    assert engine.run("codelab", cluster_objects=objs).error is None


def test_a_cluster_without_kueue_fails_the_read_and_registers_nothing_queued():
    r = engine.run("codelab", cluster_objects={})
    assert r.error is not None and "kueue-system/kueue-controller-manager" in r.error
    assert not [x for x in r.resources if x.type.startswith(KUEUE)]
    assert r.of_type(RAYJOB) == [] and r.of_type(RAYCLUSTER) == []


def test_without_the_queue_nothing_is_read_and_no_ray_object_carries_a_queue_label(synth):
    r = synth("codelab", {"queue": "none"})
    assert r.error is None, r.error
    assert r.reads == [] and not [x for x in r.resources if x.type.startswith(KUEUE)]
    for x in r.of_type(RAYJOB) + r.of_type(RAYCLUSTER):
        assert catalog.KUEUE_QUEUE_NAME_LABEL not in x.inputs["metadata"].get("labels", {})
    assert "queue" not in r.outputs


def test_with_the_queue_the_platforms_own_job_runs_its_own_cluster_and_the_standing_one_keeps_no_gpu_worker(synth):
    r = synth("codelab")
    job = the_rayjob(r)
    assert "rayClusterSpec" in job["spec"] and "clusterSelector" not in job["spec"]
    assert job["spec"]["shutdownAfterJobFinishes"] is True  # its GPU nodes go when it ends
    (group,) = r.get(RAYCLUSTER, "raycluster").inputs["spec"]["workerGroupSpecs"]
    assert group["replicas"] == 0
    # An explicit standing-cluster job stays possible: it is not queued, and preview says why.
    standing = synth("codelab", {"jobMode": "standing-cluster"})
    assert "clusterSelector" in the_rayjob(standing)["spec"]
    assert catalog.KUEUE_QUEUE_NAME_LABEL not in the_rayjob(standing)["metadata"]["labels"]
    assert any(w.startswith("nemo-rl-gke:jobMode: a standing-cluster RayJob is not queued") for w in standing.warnings)


JOB = "kubernetes:batch/v1:Job"


@pytest.mark.parametrize("stack", ["codelab", "codelab-exp2"])
def test_the_data_staging_job_is_a_cpu_job_the_queue_leaves_alone_and_the_queued_rayjob_waits_for_it(synth, stack):
    """Only Ray objects are queued: the data staging Job names no queue, and Kueue as the admin installs it
    (deploy/kueue/, manageJobsWithoutQueueName false, only the Ray integrations) manages no batch/v1 Job without one.
    It runs on the CPU pool, before the queued RayJob exists (the RayJob waits for it), so a bad dataset never holds
    quota or a GPU node."""
    r = synth(stack)
    assert r.error is None, r.error
    (staging,) = [j for j in r.of_type(JOB) if j.inputs["metadata"]["name"].endswith("-data")]
    assert catalog.KUEUE_QUEUE_NAME_LABEL not in staging.inputs["metadata"].get("labels", {})
    template = staging.inputs["spec"]["template"]
    assert catalog.KUEUE_QUEUE_NAME_LABEL not in (template.get("metadata") or {}).get("labels", {})
    cfg = yaml.safe_load((ROOT / "deploy/kueue/controller_manager_config.yaml").read_text())
    assert cfg["manageJobsWithoutQueueName"] is False and "batch/job" not in cfg["integrations"]["frameworks"]
    assert template["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "cpu"}
    (rayjob,) = r.of_type(RAYJOB)
    assert kr.rayjob_webhook(manifest(rayjob)).managed
    assert r.depends_on(rayjob, staging)


def test_a_new_queue_label_replaces_a_ray_object_and_a_new_priority_updates_it(synth):
    """Kueue refuses a changed queue name on a running job (validation.go:180-187 @v0.19.2) but lets a priority label
    change (it refuses only adding one to a running job or removing one, :219-232)."""
    r = synth("codelab")
    label = f'metadata.labels["{catalog.KUEUE_QUEUE_NAME_LABEL}"]'
    for x in r.of_type(RAYJOB) + r.of_type(RAYCLUSTER):
        assert label in x.replace_on_changes, x.key
        assert not any("priority-class" in p for p in x.replace_on_changes), x.key
    high = synth("codelab", {"jobPriority": "high"})
    assert the_rayjob(high)["metadata"]["labels"][catalog.KUEUE_PRIORITY_CLASS_LABEL] == "nemo-rl-high"


def test_the_offline_queue_report_shows_the_quota_and_three_experiments_that_exceed_it():
    from synth import queue_report

    text = queue_report.report("codelab")
    lines = text.splitlines()
    assert lines[0].startswith("queue nemo-rl (BestEffortFIFO") and "quota 64 GPUs" in lines[0]
    for n, gpus in ((1, 32), (2, 16), (3, 32)):
        (line,) = [x for x in lines if f"RayJob nemo-codelab-exp{n}-grpo" in x]
        assert f" {gpus} GPUs " in line and "nemo-rl-normal in nemo-rl" in line
    assert "the experiments alone: 80 GPUs" in lines
    assert lines[-1].startswith("together 144 GPUs of 64: more than the quota")
    assert queue_report.report("dev").startswith("dev: no queue")


PLATFORM_REF = "organization/nemo-rl-gke/codelab"
NAMESPACE = "kubernetes:core/v1:Namespace"


def _hosted(platform) -> dict:
    return platform.outputs["experimentPlatform"]["experiments"]


def test_every_experiment_namespace_carries_the_queue_label_and_a_local_queue_the_cluster_queue_serves(synth):
    """The codelab platform's `experiments`: each namespace it makes is one the ClusterQueue's namespaceSelector
    selects, and holds a LocalQueue naming that ClusterQueue, declared after Kueue's release check and its namespace
    (a LocalQueue in a namespace the selector does not match is never admitted: Kueue's ClusterQueue
    namespaceSelector, keps/79)."""
    platform = synth("codelab")
    (cq,) = of_kind(platform, "ClusterQueue")
    selector = cq["spec"]["namespaceSelector"]["matchLabels"]
    local_queues = {o["metadata"]["namespace"]: o for o in of_kind(platform, "LocalQueue")}
    registered = {x.inputs["metadata"]["name"]: x for x in platform.of_type(NAMESPACE)}
    hosted = _hosted(platform)
    assert sorted(hosted) == sorted(EXPERIMENTS)
    urns = platform.by_urn()
    for e, entry in hosted.items():
        ns = entry["namespace"]
        assert selector.items() <= registered[ns].inputs["metadata"]["labels"].items(), e
        lq = local_queues[ns]
        assert lq["spec"]["clusterQueue"] == cq["metadata"]["name"], e
        assert entry["localQueue"] == lq["metadata"]["name"], e  # what the contract tells the experiment
        (reg,) = [x for x in platform.resources if x.type.startswith(KUEUE) and x.inputs == lq]
        deps = {urns[d].key if d in urns else d for d in reg.dependencies}
        assert registered[ns].key in deps, e  # after its namespace
        assert any(d.endswith("::kueue-manager") for d in reg.dependencies), e  # after the read of Kueue's manager
    # One LocalQueue per namespace, the platform's and its experiments'; nothing else in the experiments'.
    assert sorted(local_queues) == sorted(["nemo-rl", *(h["namespace"] for h in hosted.values())])


def test_every_experiment_rayjob_names_a_local_queue_of_its_own_namespace(synth):
    platform = synth("codelab")
    local_queues = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in of_kind(platform, "LocalQueue")}
    for stack in EXPERIMENTS:
        r = synth(stack)
        job = the_rayjob(r)
        ns = job["metadata"]["namespace"]
        assert ns == _hosted(platform)[stack]["namespace"] == r.outputs["namespace"], stack
        name = job["metadata"]["labels"][catalog.KUEUE_QUEUE_NAME_LABEL]
        assert (ns, name) in local_queues, stack
        assert r.outputs["queue"]["localQueue"] == name, stack
        # The experiment declares no Kueue object of its own: its queue is its platform's.
        assert not [x for x in r.resources if x.type.startswith(KUEUE)], stack


def test_an_experiment_on_a_platform_without_the_queue_renders_no_queue_object_or_label(synth):
    platform = synth("codelab", {"queue": "none"})
    assert platform.error is None, platform.error
    assert all(h["localQueue"] is None for h in _hosted(platform).values())
    for x in platform.of_type(NAMESPACE):
        assert catalog.KUEUE_QUEUE_NAMESPACE_LABEL[0] not in x.inputs["metadata"]["labels"], x.name
    refs = {PLATFORM_REF: engine.StackOutputs.of(platform)}
    for stack in EXPERIMENTS:
        r = engine.run(stack, stack_references=refs)
        assert r.error is None, (stack, r.error)
        assert not [x for x in r.resources if x.type.startswith(KUEUE)], stack
        labels = the_rayjob(r)["metadata"].get("labels") or {}
        assert catalog.KUEUE_QUEUE_NAME_LABEL not in labels and catalog.KUEUE_PRIORITY_CLASS_LABEL not in labels
        assert "queue" not in r.outputs, stack


def test_an_experiment_of_a_queued_platform_whose_contract_names_no_local_queue_is_refused_in_one_line(synth):
    """A platform that queues but was not updated since it gained its experiments' LocalQueues: the experiment's
    RayJob would wait for a LocalQueue that does not exist, so it is refused before anything is registered."""
    outputs = engine.StackOutputs.of(synth("codelab"))
    stale = copy.deepcopy(outputs)
    stale.outputs["experimentPlatform"]["experiments"]["codelab-exp1"].pop("localQueue")
    r = engine.run("codelab-exp1", stack_references={PLATFORM_REF: stale})
    assert r.error is not None and r.resources == []
    (line,) = [x for x in r.error.splitlines() if x.startswith("  - ")]
    assert line.startswith("  - nemo-rl-gke:queue: the platform queues its jobs") and "nemo-rl-codelab-exp1" in line
