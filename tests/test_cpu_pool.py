"""CPU room that adds up: the Ray heads, submitters and CPU Jobs of the codelab platform and of four experiments, as
the stacks render them, placed node by node on the platform's autoscaling CPU pool (its registered machine type and
maximum, GKE's allocatable formula, GKE's pods and the pool's DaemonSets): nothing is left Pending for CPU. And the
pool-level check refuses, in one line naming its key, what a pool cannot hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import catalog, node_fit
from synth import engine
from workloads.manifests import pod_fit

ROOT = Path(__file__).resolve().parents[1]
POOL = "gcp:container/nodePool:NodePool"
EXPERIMENTS = ("codelab-exp1", "codelab-exp2", "codelab-exp3")
LISTED = {e: ["user:alice@example.com"] for e in (*EXPERIMENTS, "codelab-exp4")}


def cpu_pods(r, cpu_pool: str) -> dict[str, node_fit.Resources]:
    """Every pod template a stack renders that selects the CPU pool, by what it is, with its requests as the
    scheduler counts them (containers, init containers at their peak, the Cloud Storage FUSE sidecar GKE injects)."""
    out = {}

    def add(what: str, template: dict):
        spec = template.get("spec") or {}
        if (spec.get("nodeSelector") or {}).get("cloud.google.com/gke-nodepool") != cpu_pool:
            return
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        out[f"{r.stack} {what}"] = node_fit.pod_request(spec, annotations).total

    for reg in r.kubernetes_objects():
        kind = reg.type.rsplit(":", 1)[-1]
        spec = reg.inputs.get("spec") or {}
        if kind == "RayCluster":
            add(f"RayCluster {reg.name} head", spec["headGroupSpec"]["template"])
        elif kind == "RayJob":
            if "rayClusterSpec" in spec:
                add("RayJob head", spec["rayClusterSpec"]["headGroupSpec"]["template"])
            add("RayJob submitter", spec["submitterPodTemplate"])
        elif kind == "Job":
            add(f"Job {reg.name}", spec["template"])
    return out


def daemonsets(r, cpu_pool: str) -> list[node_fit.Resources]:
    out = []
    for reg in r.of_type("kubernetes:apps/v1:DaemonSet"):
        template = reg.inputs["spec"]["template"]
        if (template["spec"].get("nodeSelector") or {}).get("cloud.google.com/gke-nodepool") == cpu_pool:
            out.append(node_fit.pod_request(template["spec"]).total)
    return out


@pytest.fixture(scope="module")
def team():
    """codelab listing four experiments: its three and a fourth (codelab-exp1's settings under another stack name)."""
    platform = engine.run("codelab", {"experiments": json.dumps(LISTED)})
    assert platform.error is None, platform.error
    ref = {"organization/nemo-rl-gke/codelab": engine.StackOutputs.of(platform)}
    exps = [engine.run(s, stack_references=ref) for s in EXPERIMENTS]
    exps.append(engine.run("codelab-exp4", stack_file=ROOT / "Pulumi.codelab-exp1.yaml", stack_references=ref))
    for e in exps:
        assert e.error is None, (e.stack, e.error)
    return platform, exps


@pytest.mark.graph
def test_the_platform_and_four_experiments_find_room_on_the_cpu_pool_node_by_node(team):
    platform, exps = team
    (pool,) = [p for p in platform.of_type(POOL) if p.name == "cpu"]
    machine = pool.inputs["nodeConfig"]["machineType"]
    max_nodes = pool.inputs["autoscaling"]["maxNodeCount"]
    assert pool.inputs["autoscaling"]["minNodeCount"] == 0
    # One node's room: GKE's allocatable formula for the machine, less GKE's pods and every DaemonSet on the pool.
    room = node_fit.node_room(machine, catalog.SYSTEM_BOOT_DISK_GB, tuple(daemonsets(platform, "cpu")))
    assert room is not None
    pods = cpu_pods(platform, "cpu")
    for e in exps:
        pods.update(cpu_pods(e, "cpu"))
    # The standing head, the platform's job (head, submitter, prefetch, data staging, export, and with weightsPath
    # bucket-import the weights staging and import Jobs) and each experiment's five.
    assert len(pods) == 1 + 5 + 2 + 5 * len(exps), sorted(pods)
    placed = node_fit.place(pods, room, max_nodes)
    assert placed.unplaced == (), placed
    # Node by node, what is placed stays within the room (CPU, memory, ephemeral storage).
    for used in placed.used(pods):
        assert used.cpu <= room.cpu and used.memory_gib <= room.memory_gib and used.ephemeral_gib <= room.ephemeral_gib
    # Their sum is more than one system node holds: on the old single n2-standard-16 the heads alone did not fit.
    total_cpu = sum(p.cpu for p in pods.values())
    assert total_cpu > room.cpu and len(placed.nodes) > 1
    # Nothing of ours is left on the system pool: no pod template of any stack selects it.
    for r in (platform, *exps):
        for reg in r.kubernetes_objects():
            assert '"cloud.google.com/gke-nodepool": "system"' not in json.dumps(reg.inputs), (r.stack, reg.name)


@pytest.mark.graph
def test_the_pool_and_the_cpu_quota_count_every_listed_experiment(team):
    """The platform's `experiments` are the jobs besides its own (an unlisted experiment stack is refused): the pool's
    maximum holds the platform's CPU pods and each listed experiment's head, submitter, prefetch, data staging and
    export at the platform's shapes, and the queue's CPU quota is what Kueue counts of them (heads, submitters)."""
    platform, exps = team
    (pool,) = [p for p in platform.of_type(POOL) if p.name == "cpu"]
    plan = pod_fit.cpu_pool_plan(_settings(platform))
    assert plan is not None and plan.max_jobs == 8 and plan.experiments == tuple(sorted(LISTED))
    at_once = plan.pods_at_once()
    # The standing head, the platform's job (5) and its weights staging and import Jobs; each experiment's five.
    assert len(at_once) == 1 + 5 + 2 + 5 * len(LISTED)
    for e in LISTED:
        assert {n.rsplit(" ", 1)[-1] for n in at_once if n.startswith(f"experiment {e} ")} >= {"head", "submitter"}
        assert f"experiment {e} data staging" in at_once
    assert node_fit.place(at_once, plan.room, pool.inputs["autoscaling"]["maxNodeCount"]).unplaced == ()
    quota = platform.outputs["queue"]["quota"]["nemo-rl-cpu"]
    heads_and_submitters = [r for n, r in at_once.items() if n.endswith(("head", "submitter"))]
    assert len(heads_and_submitters) == 1 + 2 + 2 * len(LISTED)
    assert node_fit.quantity(quota["cpu"]) == pytest.approx(sum(r.cpu for r in heads_and_submitters), abs=1e-3)
    # What the experiments render is what the plan counted for them, pod by pod (at most as large).
    for e in exps:
        name = e.stack
        for what, res in cpu_pods(e, "cpu").items():
            kind = what.split(" ", 1)[1]
            counted = {
                "RayJob head": "head",
                "RayJob submitter": "submitter",
                "Job data-staging": "data staging",
            }.get(kind)
            if counted is None:
                continue
            mine = at_once[f"experiment {name} {counted}"]
            assert res.cpu <= mine.cpu and res.memory_gib <= mine.memory_gib, (what, res, mine)


@pytest.mark.graph
def test_a_platform_without_experiments_sizes_the_pool_and_quota_for_its_own_pods_only(synth):
    platform = synth("codelab", {"experiments": "{}"})
    assert platform.error is None, platform.error
    plan = pod_fit.cpu_pool_plan(_settings(platform))
    assert plan is not None and plan.experiments == () and not [n for n in plan.pods_at_once() if "experiment" in n]
    listed = pod_fit.cpu_pool_plan(_settings(synth("codelab")))
    assert listed is not None and listed.queued.cpu > plan.queued.cpu and listed.max_nodes >= plan.max_nodes
    own = [r for n, r in plan.pods_at_once().items() if n.endswith(("head", "submitter"))]
    quota = platform.outputs["queue"]["quota"]["nemo-rl-cpu"]
    assert node_fit.quantity(quota["cpu"]) == pytest.approx(sum(r.cpu for r in own), abs=1e-3)


@pytest.mark.graph
def test_more_experiments_than_gpu_nodes_count_every_cpu_job_but_only_the_heads_the_gpus_can_run(synth):
    """Two GPU nodes and no job of the platform's: two experiments run at once; the other two wait in the queue with
    no head or submitter (Kueue suspends their RayJobs), while their CPU Jobs (not queued) still run on the pool."""
    platform = synth("codelab", {"gpuNodes": "2", "jobEnabled": "false", "experiments": json.dumps(LISTED)})
    assert platform.error is None, platform.error
    plan = pod_fit.cpu_pool_plan(_settings(platform))
    assert plan is not None and plan.max_jobs == 2 and plan.admitted == 2
    at_once = plan.pods_at_once()
    assert len([n for n in at_once if n.startswith("experiment ") and n.endswith(" data staging")]) == len(LISTED)
    assert len([n for n in at_once if n.startswith("experiment ") and n.endswith((" head", " submitter"))]) == 4
    quota = platform.outputs["queue"]["quota"]["nemo-rl-cpu"]
    heads = [r for n, r in at_once.items() if n.endswith(("head", "submitter"))]
    assert node_fit.quantity(quota["cpu"]) == pytest.approx(sum(r.cpu for r in heads), abs=1e-3)


@pytest.mark.graph
def test_an_experiments_data_staging_job_reading_gcs_is_counted_with_its_sidecar_in_the_platforms_pool():
    """Every job's data staging Job (a CPU Job, not queued) runs on the CPU pool beside its head: the platform's plan
    counts one per job at least as large as an experiment renders it with gs:// jobData, whose Cloud Storage FUSE
    sidecar GKE injects from the pod's annotations."""
    platform = engine.run("codelab", {"jobEnabled": "false"})
    assert platform.error is None, platform.error
    data = {
        "train": {"dataset": "gs://team-data/rl/", "files": "train-*.jsonl"},
        "validation": {"dataset": "gs://team-data/rl/val.jsonl"},
    }
    ref = {"organization/nemo-rl-gke/codelab": engine.StackOutputs.of(platform)}
    r = engine.run("codelab-exp1", {"jobData": json.dumps(data)}, stack_references=ref)
    assert r.error is None, r.error
    (staging,) = [p for n, p in cpu_pods(r, "cpu").items() if n.endswith(" Job data-staging")]
    template = r.get("kubernetes:batch/v1:Job", "data-staging").inputs["spec"]["template"]
    assert node_fit.pod_request(template["spec"]).total.cpu < staging.cpu  # the sidecar is in what it asks for
    plan = pod_fit.cpu_pool_plan(_settings(platform))
    assert plan is not None
    counted = [res for name, res in plan.pods_at_once().items() if name.endswith(" data staging")]
    assert len(counted) == len(plan.experiments) == 3  # each listed experiment's (the platform runs no job here)
    assert all(c.cpu >= staging.cpu and c.memory_gib >= staging.memory_gib for c in counted)


def _settings(r):
    from tests.test_pod_fit import settings_of

    return settings_of(r)


@pytest.mark.unit
def test_a_pool_that_cannot_hold_its_pods_is_refused_in_one_line_naming_the_machine_type():
    room = node_fit.Resources(14.38, 55.4, 96)
    head = node_fit.Resources(8, 32, 32)
    plan = pod_fit.CpuPoolPlan(
        machine_type="n2-standard-16",
        room=room,
        daemonsets=(),
        max_jobs=2,
        job_pods=(("head", head),),
        platform_pods=(("standing head", head),),
        max_nodes=2,
        queued=node_fit.Resources(24, 96),
    )
    pods = {"a head": head, "b head": head, "c head": head}
    (line,) = pod_fit.cpu_pool_problems(plan, pods)
    assert line.startswith(
        "nemo-rl-gke:systemMachineType: 1 CPU pod(s) find no room on the CPU pool's 2 n2-standard-16"
    )
    assert pod_fit.cpu_pool_problems(plan, {"a head": head, "b head": head}) == []


@pytest.mark.unit
def test_first_fit_places_by_cpu_memory_and_ephemeral_storage():
    room = node_fit.Resources(10, 40, 50)
    pods = {
        "big": node_fit.Resources(8, 10, 10),
        "disk": node_fit.Resources(1, 1, 45),
        "small": node_fit.Resources(1, 1, 1),
    }
    placed = node_fit.place(pods, room, max_nodes=2)
    # "disk" fits big's node by CPU and memory, not by ephemeral storage: a node of its own.
    assert placed.nodes == (("big", "small"), ("disk",)) and placed.unplaced == ()
    assert node_fit.place(pods, room, max_nodes=1).unplaced == ("disk",)


@pytest.mark.graph
def test_autopilot_has_no_cpu_pool_every_pod_gets_its_own_capacity():
    """GKE: "In Autopilot mode, GKE always creates and manages nodes and node pools for you based on your workloads"
    (kubernetes-engine/docs/concepts/node-auto-provisioning; the Autopilot overview: it "provisions compute resources
    based on your Kubernetes manifests")."""
    r = engine.run("autopilot")
    assert r.error is None and r.of_type(POOL) == []
    assert pod_fit.cpu_pool_plan(_settings(r)) is None
