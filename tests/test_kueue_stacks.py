"""The shipped stacks (platforms and experiments) as Kueue would see them: every RayJob and RayCluster they render,
queued the way the platform queues it, passes Kueue's webhook rules (read from Kueue's source: tests/kueue_rules.py);
the quota of each shipped platform admits exactly its GPU nodes; the platform's Kueue objects validate against
Kueue's CRD schemas; and on `codelab` with its two experiments the queue runs them one after the other."""

from __future__ import annotations

import pytest

from core import catalog, naming
from tests import kueue_rules as kr
from tests.conftest import EXPERIMENT_STACKS, SHIPPED_STACKS
from tests.kueue_validation import validate_kueue
from tests.test_pod_fit import settings_of
from workloads.kueue import queue_plan
from workloads.manifests import kueue as m

pytestmark = pytest.mark.graph

RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
OWN = {"jobMode": "own-cluster"}


def manifest(reg) -> dict:
    kind = reg.type.rsplit(":", 1)[1]
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": reg.inputs["metadata"], "spec": reg.inputs["spec"]}


def queueing(r) -> m.Queueing:
    plan = queue_plan(settings_of(r))
    return m.Queueing(plan.local_queue, naming.kueue_priority_class(catalog.KUEUE_DEFAULT_PRIORITY))


def ray_objects(r) -> list[dict]:
    return [manifest(x) for x in r.of_type(RAYJOB) + r.of_type(RAYCLUSTER)]


def check_queued_as_the_platform_queues_them(r, q: m.Queueing) -> list[str]:
    """Queue what Kueue manages (an own-cluster RayJob, a standing RayCluster), leave a clusterSelector RayJob as
    it is, and return every refusal of Kueue's webhooks plus every GPU worker that does not ask for a whole node."""
    problems: list[str] = []
    for obj in ray_objects(r):
        name = f"{obj['kind']} {obj['metadata']['name']}"
        spec = obj["spec"]
        assert "suspend" not in spec, f"{name}: spec.suspend is Kueue's to set"
        if obj["kind"] == "RayJob" and spec.get("clusterSelector"):
            with pytest.raises(ValueError):
                m.queued(obj, q)
            assert kr.rayjob_webhook(obj).managed is False
            continue
        queued = m.queued(obj, q)
        verdict = (kr.rayjob_webhook if obj["kind"] == "RayJob" else kr.raycluster_webhook)(queued)
        assert verdict.managed, name
        problems += [f"{name}: {p}" for p in verdict.problems]
        cluster = spec.get("rayClusterSpec", spec)
        for group in cluster.get("workerGroupSpecs") or []:
            pod = group["template"]["spec"]
            per_node = catalog.ACCELERATORS[pod["nodeSelector"][catalog.GPU_NODE_LABEL]].gpus_per_node
            for c in pod["containers"]:
                for side in ("requests", "limits"):
                    got = (c.get("resources") or {}).get(side, {}).get(catalog.GPU_RESOURCE)
                    if got is not None and int(got) != per_node:
                        problems.append(f"{name} {group['groupName']}: {side} {got} GPUs, a node has {per_node}")
    return problems


@pytest.mark.parametrize("stack", SHIPPED_STACKS + EXPERIMENT_STACKS)
def test_every_ray_object_a_shipped_stack_renders_passes_kueues_webhooks_when_queued(synth, stack):
    r = synth(stack)
    assert r.of_type(RAYJOB) or r.of_type(RAYCLUSTER)
    # An experiment's objects go to its platform's queue.
    platform = r.config.get("nemo-rl-gke:platformStack", "").rsplit("/", 1)[-1]
    q = queueing(synth(platform) if platform else r)
    assert check_queued_as_the_platform_queues_them(r, q) == []


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_a_platforms_own_cluster_job_passes_kueues_rayjob_webhook(synth, stack):
    """The platform's own job is admitted like any experiment's: own-cluster."""
    r = synth(stack, OWN)
    assert r.error is None, r.error
    (job,) = r.of_type(RAYJOB)
    assert "rayClusterSpec" in job.inputs["spec"]
    assert check_queued_as_the_platform_queues_them(r, queueing(r)) == []


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_each_shipped_platforms_queue_admits_exactly_its_gpu_nodes_and_validates(synth, stack):
    r = synth(stack, OWN)
    s = settings_of(r)
    plan = queue_plan(s)
    for obj in m.queue_objects(plan):
        validate_kueue(obj)
    cfg = r.config
    gpu_type = cfg.get("nemo-rl-gke:gpuType", "nvidia-b200")
    nodes = int(cfg["nemo-rl-gke:workerReplicas"] if s.autopilot else cfg.get("nemo-rl-gke:gpuNodes", 2))
    assert plan.gpus == nodes * catalog.ACCELERATORS[gpu_type].gpus_per_node
    (job,) = r.of_type(RAYJOB)
    sets = kr.rayjob_pod_sets(m.queued(manifest(job), queueing(r)))
    head, workers, submitter = sets
    objs = m.queue_objects(plan)
    (cq,) = [o for o in objs if o["kind"] == "ClusterQueue"]
    flavors = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ResourceFlavor"}

    def fits(*pod_sets) -> bool:
        return kr.Queue(cq, flavors, catalog.KUEUE_EXCLUDED_RESOURCE_PREFIXES).assign(list(pod_sets)) is not None

    gang = kr.PodSet(workers.name, nodes, workers.template)
    assert fits(head, gang, submitter)
    assert not fits(head, kr.PodSet(workers.name, nodes + 1, workers.template), submitter)
