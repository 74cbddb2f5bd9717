"""The critical-path report follows the graph it is given.

A small Standard stack is written as engine records (synth.engine.Registration, what the engine records for a
real run), each duration coming from core.catalog. The expected times are worked out by hand in the comments;
then parts of the graph are removed (the GPU warmup, the prefetch, the CPU pre-pull) and the estimate must move
by exactly what those parts saved. The shipped stacks are run through the engine for the report's invariants.
"""

from __future__ import annotations

import itertools

import pytest

from core import catalog as c
from core import recipes
from synth import critical_path as cp
from synth.engine import Registration

NEMO = c.NEMO_RL_RELEASES["v0.4.0"].image
QWEN = "Qwen/Qwen2.5-72B-Instruct"


def reg(type_, name, deps=(), inputs=None, custom=True, parent=None, provider=None):
    return Registration(
        type=type_,
        name=name,
        urn=f"urn:{type_}::{name}",
        custom=custom,
        parent=parent,
        dependencies=sorted(f"urn:{d}" for d in deps),
        property_dependencies={},
        provider=f"urn:{provider}::id" if provider else None,
        protect=False,
        retain_on_delete=False,
        delete_before_replace=False,
        ignore_changes=[],
        replace_on_changes=[],
        replace_with=[],
        custom_timeouts={},
        inputs=inputs or {},
        secret_paths=[],
    )


def pod(image=NEMO, gpus=0):
    res = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {"limits": {"cpu": "1"}}
    return {"containers": [{"name": "c", "image": image, "resources": res}]}


def job(annotations=None, p=None):
    return {"metadata": {"annotations": annotations or {}}, "spec": {"template": {"spec": p or pod()}}}


NET = "gcp:compute/network:Network::net"
CLUSTER = "gcp:container/cluster:Cluster::cluster"
GPU_POOL = "gcp:container/nodePool:NodePool::gpu"
SYS_POOL = "gcp:container/nodePool:NodePool::system"
K8S = "pulumi:providers:kubernetes::k8s"
LUSTRE = "gcp:lustre/instance:Instance::lustre"
PVC = "kubernetes:core/v1:PersistentVolumeClaim::pvc"
WARMUP = "kubernetes:batch/v1:Job::gpu-warmup"
PREPULL = "kubernetes:apps/v1:DaemonSet::cpu-prepull"
PREFETCH = "kubernetes:batch/v1:Job::prefetch"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster::raycluster"
RAYJOB = "kubernetes:ray.io/v1:RayJob::rayjob"


def stack(warmup=True, prefetch=True, prepull=True, own_cluster=False, small_prefetch_image=False, entrypoint=None):
    workers = {**pod(gpus=8), "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-b200"}}
    ray_spec = {
        "headGroupSpec": {"template": {"spec": pod()}},
        "workerGroupSpecs": [{"replicas": NODES, "template": {"spec": workers}}],
    }

    def r(key, deps=(), inputs=None, provider=None):
        t, n = key.split("::")
        return reg(t, n, deps, inputs, provider=provider)

    out = [
        r(NET),
        r(CLUSTER, [NET]),
        r(GPU_POOL, [CLUSTER], {"initialNodeCount": 0, "nodeConfig": {"guestAccelerators": [{"count": 8}]}}),
        r(SYS_POOL, [CLUSTER], {"nodeCount": 1, "nodeConfig": {"machineType": "n2-standard-16"}}),
        r(K8S, [CLUSTER]),
        r(LUSTRE, [NET], {"capacityGib": str(LUSTRE_GIB), "perUnitStorageThroughput": str(LUSTRE_TIER)}),
        r(PVC, [LUSTRE], provider=K8S),
    ]
    if warmup:
        out.append(r(WARMUP, [GPU_POOL], job({"pulumi.com/skipAwait": "true"}, pod(gpus=8)), provider=K8S))
    if prepull:
        out.append(
            r(
                PREPULL,
                [SYS_POOL],
                {
                    "spec": {
                        "template": {
                            "spec": {
                                "initContainers": [{"name": "pull", "image": NEMO}],
                                "containers": [{"name": "pause", "image": c.PAUSE_IMAGE}],
                            }
                        }
                    }
                },
                provider=K8S,
            )
        )
    if prefetch:
        out.append(
            r(
                PREFETCH,
                [PVC],
                job(
                    {c.DOWNLOAD_BYTES_ANNOTATION: str(c.MODELS[QWEN].weight_bytes)},
                    # As the prefetch renders it in its small image: an init container installs its packages.
                    {**pod(SMALL), "initContainers": [{"name": "install", "image": SMALL}]}
                    if small_prefetch_image
                    else None,
                ),
                provider=K8S,
            )
        )
    extra = {"entrypoint": entrypoint} if entrypoint else {}
    if own_cluster:
        out.append(
            r(RAYJOB, [PVC], {"spec": {"rayClusterSpec": ray_spec, "metadata": {"model": QWEN}, **extra}}, provider=K8S)
        )
    else:
        out.append(r(RAYCLUSTER, [PVC], {"spec": ray_spec}, provider=K8S))
        out.append(
            r(
                RAYJOB,
                [RAYCLUSTER] + ([PREFETCH] if prefetch else []),
                {"spec": {"clusterSelector": {}, "metadata": {"model": QWEN}, **extra}},
                provider=K8S,
            )
        )
    return out


def sec(type_):
    return c.NOMINAL_RESOURCE_SECONDS.get(type_, c.NOMINAL_DEFAULT_RESOURCE).seconds


NET_S, CLUSTER_S = sec("gcp:compute/network:Network"), sec("gcp:container/cluster:Cluster")
POOL_S, LUSTRE_S, API_S = sec("gcp:container/nodePool:NodePool"), sec("gcp:lustre/instance:Instance"), sec("x")
GPU_NODE_S, CPU_NODE_S = c.NOMINAL_GPU_NODE_SECONDS.seconds, c.NOMINAL_CPU_NODE_SECONDS.seconds
PULL_S = c.NOMINAL_IMAGE_BYTES.seconds / c.NOMINAL_IMAGE_PULL_BYTES_PER_S.seconds
DOWNLOAD_S = c.MODELS[QWEN].weight_bytes / c.NOMINAL_HF_DOWNLOAD_BYTES_PER_S.seconds
RAY_S, SUBMIT_S = c.NOMINAL_RAY_START_SECONDS.seconds, c.NOMINAL_JOB_SUBMIT_SECONDS.seconds
RUNTIME_S = c.NOMINAL_PREFETCH_RUNTIME_SECONDS.seconds
SMALL = "python:3.11.13-slim-bookworm"
# The model load: 2 B200 nodes read the 145 GB of weights once each from a 9000 GiB instance at 1000 MB/s per TiB
# (8.79 GB/s, below 2 x the 25 GB/s primary NIC: core/catalog/gpus.py).
NODES, LUSTRE_GIB, LUSTRE_TIER = 2, 9000, 1000
LUSTRE_BPS = LUSTRE_GIB / 1024 * LUSTRE_TIER * 1e6
LOAD_S = NODES * c.MODELS[QWEN].weight_bytes / min(LUSTRE_BPS, NODES * c.PRIMARY_NIC_GBITPS["a4-highgpu-8g"] / 8 * 1e9)

# Hand-worked timeline of the full stack:
CLUSTER_END = NET_S + CLUSTER_S
GPU_POOL_END = CLUSTER_END + POOL_S
SYS_POOL_END = CLUSTER_END + POOL_S + CPU_NODE_S  # the pool waits for its node
PVC_END = NET_S + LUSTRE_S + API_S  # the k8s provider (cluster + 2 s) is earlier
RAYCLUSTER_END = PVC_END + API_S


def workers_ready(gpu_trigger_end):
    return max(max(GPU_POOL_END, gpu_trigger_end) + GPU_NODE_S + PULL_S, RAYCLUSTER_END) + RAY_S


def cpu_image_ready(first_cpu_user_end):
    return max(SYS_POOL_END, first_cpu_user_end) + PULL_S


def first_step(warmup=True, prefetch=True, prepull=True, small_prefetch_image=False):
    workers = workers_ready(GPU_POOL_END + API_S if warmup else RAYCLUSTER_END)
    cpu_image = cpu_image_ready(SYS_POOL_END + API_S if prepull else RAYCLUSTER_END)
    head = max(cpu_image, RAYCLUSTER_END) + RAY_S
    if prefetch:
        # The Job exists once the PVC does; its pod starts once its image is on the system pool's node: the
        # NeMo-RL image, or its own small image and packages.
        job_created = PVC_END + API_S
        runtime_ready = (
            max(job_created, SYS_POOL_END) + RUNTIME_S if small_prefetch_image else max(job_created, cpu_image)
        )
        prefetch_run_end = runtime_ready + DOWNLOAD_S
        rayjob_end = max(RAYCLUSTER_END, prefetch_run_end) + API_S
        return max(rayjob_end, head, workers) + SUBMIT_S + LOAD_S
    rayjob_end = RAYCLUSTER_END + API_S
    return max(rayjob_end, head, workers) + SUBMIT_S + DOWNLOAD_S + LOAD_S


@pytest.mark.unit
def test_full_stack_matches_the_hand_worked_timeline():
    est = cp.estimate(stack())
    assert est.first_step_seconds == pytest.approx(first_step())
    # With these figures the prefetch is the longest chain: it waits for the NeMo-RL image on the CPU node
    # (cluster, system pool, pull), which ends after Lustre, then downloads 145 GB; the report names each step.
    labels = [est.activities[k].label for k in est.path]
    assert cpu_image_ready(SYS_POOL_END + API_S) > PVC_END + API_S
    assert labels[:4] == ["Network net", "Cluster cluster", "NodePool system", "DaemonSet cpu-prepull"]
    assert labels[4:6] == ["NeMo-RL image pulled on a CPU node", "Job prefetch runs: 145 GB from the Hub"]
    assert labels[-4:] == [
        "RayJob rayjob",
        "RayJob submitted, driver running",
        "NeMo-RL loads the weights from Lustre",
        "weights loaded and job running: first step",
    ]
    assert est.activities[cp.MODEL_LOAD].seconds == pytest.approx(LOAD_S) and LOAD_S > 30


@pytest.mark.unit
def test_removing_the_gpu_warmup_delays_gpu_nodes_until_the_raycluster_exists():
    with_warmup, without = cp.estimate(stack()), cp.estimate(stack(warmup=False))
    assert without.start["GPU nodes"] == pytest.approx(RAYCLUSTER_END)
    assert with_warmup.start["GPU nodes"] == pytest.approx(GPU_POOL_END + API_S)
    assert without.first_step_seconds - with_warmup.first_step_seconds == pytest.approx(
        first_step(warmup=False) - first_step()
    )
    assert without.first_step_seconds > with_warmup.first_step_seconds


@pytest.mark.unit
def test_removing_the_prefetch_puts_the_whole_download_after_the_job_starts():
    with_prefetch, without = cp.estimate(stack()), cp.estimate(stack(prefetch=False))
    assert without.first_step_seconds == pytest.approx(first_step(prefetch=False))
    assert without.first_step_seconds - with_prefetch.first_step_seconds == pytest.approx(
        first_step(prefetch=False) - first_step()
    )
    assert without.path[-3:] == [cp.JOB_DOWNLOAD, cp.MODEL_LOAD, cp.FIRST_STEP]
    assert without.activities[cp.JOB_DOWNLOAD].seconds == pytest.approx(DOWNLOAD_S)


@pytest.mark.unit
def test_removing_the_cpu_prepull_makes_the_prefetch_wait_for_its_own_image_pull():
    assert cp.estimate(stack(prepull=False)).first_step_seconds == pytest.approx(first_step(prepull=False))


@pytest.mark.unit
def test_a_prefetch_in_its_own_small_image_does_not_wait_for_the_nemo_rl_image():
    nemo, small = cp.estimate(stack()), cp.estimate(stack(small_prefetch_image=True))
    assert small.first_step_seconds == pytest.approx(first_step(small_prefetch_image=True))
    run = f"urn:{PREFETCH}#ran"
    # It starts when its Job and the system pool's node exist plus its own runtime, not after the 25 GB pull.
    assert small.start[run] == pytest.approx(max(PVC_END + API_S, SYS_POOL_END) + RUNTIME_S)
    assert nemo.start[run] - small.start[run] == pytest.approx(
        cpu_image_ready(SYS_POOL_END + API_S) - (max(PVC_END + API_S, SYS_POOL_END) + RUNTIME_S)
    )
    assert "image on CPU nodes" not in small.path


@pytest.mark.unit
def test_own_cluster_job_waits_for_the_prefetch_run_without_a_graph_edge():
    est = cp.estimate(stack(own_cluster=True))
    prefetch_run = f"urn:{PREFETCH}#ran"
    assert prefetch_run not in est.activities["job started"].needs_all
    assert est.first_step_seconds >= est.finish[prefetch_run]
    assert est.first_step_seconds == pytest.approx(max(est.finish["job started"], est.finish[prefetch_run]) + LOAD_S)


@pytest.mark.unit
def test_sequential_estimate_is_every_activity_one_after_the_other():
    est = cp.estimate(stack())
    assert est.sequential_seconds == pytest.approx(sum(a.seconds for a in est.activities.values()))
    # It does not shrink when parts run side by side: the same steps are summed whatever the edges.
    assert cp.estimate(stack(warmup=False)).sequential_seconds == pytest.approx(est.sequential_seconds - API_S)


@pytest.mark.unit
def test_a_dependency_cycle_is_reported():
    acts = {"a": cp.Activity("a", "a", 1, "x", needs_all=("b",)), "b": cp.Activity("b", "b", 1, "x", needs_all=("a",))}
    with pytest.raises(ValueError, match="cycle"):
        cp.schedule(acts)


@pytest.mark.unit
def test_a_node_made_for_the_first_pod_is_not_waited_for_by_a_pod_that_comes_after_it():
    # Autopilot makes a CPU node for the first CPU pod; the weights import Job is created only after the staging Job
    # ran on that node, so it is among the pods asking for a node but cannot be the one that brings it.
    A = cp.Activity
    acts = {
        "stage": A("stage", "Job stage", 2, "x"),
        "cpu": A("cpu", "CPU node", 120, "x", needs_any=(("import", "stage"),)),
        "stage#ran": A("stage#ran", "stage runs", 290, "x", needs_all=("stage", "cpu")),
        "import": A("import", "Job import", 2, "x", needs_all=("stage#ran",)),
        "import#ran": A("import#ran", "import runs", 76, "x", needs_all=("import", "cpu")),
    }
    est = cp.schedule(acts)
    assert est.start["cpu"] == 2 and est.finish["import#ran"] == 2 + 120 + 290 + 2 + 76


@pytest.mark.graph
@pytest.mark.parametrize("stack_name", ["codelab", "dev", "autopilot"])
def test_every_shipped_stack_has_a_report_whose_path_ends_at_the_first_step(synth, stack_name):
    result = synth(stack_name)
    est = cp.estimate(result.resources)
    assert est.path and est.path[-1] == cp.FIRST_STEP
    assert 0 < est.first_step_seconds < est.sequential_seconds
    # Consecutive steps on the path touch: each starts when the one before it finished.
    for before, after in itertools.pairwise(est.path):
        assert est.start[after] == pytest.approx(est.finish[before])
    text = est.format(stack_name)
    assert "ratio:" in text and "nominal estimate" in text


# --- the entrypoint's own steps ---------------------------------------------------------------------------------
# The job's entrypoint (core/recipes/commands.py job_script) runs, in order and under `set -e`, the readiness gate, in
# own-cluster mode the wait for the prefetch marker (without the prefetch Job: the download of the pinned weights) and,
# for Megatron, the conversion check, and only then NeMo-RL: each is on the way to the first step.
def entrypoint(*lines: str) -> str:
    import shlex

    return shlex.join(["sh", "-c", "\n".join(["set -eu", "mkdir -p /lustre/checkpoints/r", "cd /opt/nemo-rl", *lines])])


GATE = f"uv run python /etc/nemo-rl-gke/{recipes.GATE_SCRIPT} --nodes 2 --gpus-per-node 8"
DOWNLOAD = (
    "uv run python /etc/nemo-rl-gke/prefetch_hf.py download --marker /lustre/prefetch/m.json "
    f"model:{QWEN}@{c.MODELS[QWEN].revision}"
)
WAIT = "uv run python /etc/nemo-rl-gke/prefetch_hf.py wait --marker /lustre/prefetch/m.json --timeout 99"
GUARD = f"uv run python /etc/nemo-rl-gke/{recipes.MEGATRON_GUARD_SCRIPT} --model-name {QWEN}"
TRAIN = "exec uv run python examples/run_grpo_math.py --config x.yaml"
EXPORT = "uv run python /etc/nemo-rl-gke/export_checkpoints.py --checkpoints /lustre/checkpoints/r"
GATE_S, SCRIPT_S = c.NOMINAL_GATE_SECONDS.seconds, c.NOMINAL_SCRIPT_SECONDS.seconds


@pytest.mark.unit
def test_every_entrypoint_step_before_training_is_on_the_path_in_order():
    est = cp.estimate(stack(entrypoint=entrypoint(GATE, GUARD, TRAIN)))
    assert est.first_step_seconds == pytest.approx(first_step() + GATE_S + SCRIPT_S)
    labels = [est.activities[k].label for k in est.path]
    assert labels[-5:] == [
        "RayJob submitted, driver running",
        "readiness gate (GPU health, Lustre, NCCL over RDMA)",
        "check for an interrupted Megatron weight conversion",
        "NeMo-RL loads the weights from Lustre",
        "weights loaded and job running: first step",
    ]


@pytest.mark.unit
def test_without_the_prefetch_job_the_entrypoints_download_of_the_pinned_weights_is_on_the_path():
    est = cp.estimate(stack(prefetch=False, entrypoint=entrypoint(GATE, DOWNLOAD, TRAIN)))
    # The same time as the job's own download without any prefetch: now a step of the entrypoint, after the gate.
    assert est.first_step_seconds == pytest.approx(first_step(prefetch=False) + GATE_S)
    labels = [est.activities[k].label for k in est.path]
    assert labels[-4:] == [
        "readiness gate (GPU health, Lustre, NCCL over RDMA)",
        "the entrypoint downloads 145 GB of pinned weights",
        "NeMo-RL loads the weights from Lustre",
        "weights loaded and job running: first step",
    ]


@pytest.mark.unit
def test_what_runs_after_training_is_not_counted():
    plain = cp.estimate(stack(entrypoint=entrypoint(GATE, TRAIN.removeprefix("exec "), EXPORT)))
    assert plain.first_step_seconds == pytest.approx(first_step() + GATE_S)


@pytest.mark.unit
def test_own_cluster_entrypoint_waits_for_the_weights_after_its_gate():
    est = cp.estimate(stack(own_cluster=True, entrypoint=entrypoint(GATE, WAIT, GUARD, TRAIN)))
    [gate, wait, guard] = [k for k in est.activities if k.startswith("entrypoint ")]
    prefetch_run = f"urn:{PREFETCH}#ran"
    assert est.start[gate] == pytest.approx(est.finish["job started"])
    assert est.start[wait] == pytest.approx(max(est.finish[gate], est.finish[prefetch_run]))
    assert est.first_step_seconds == pytest.approx(est.finish[wait] + SCRIPT_S + LOAD_S)


@pytest.mark.graph
@pytest.mark.parametrize("stack_name", ["codelab", "dev", "autopilot"])
def test_shipped_reports_count_the_gate_and_every_other_entrypoint_step(synth, stack_name):
    # codelab queues its own job (own-cluster): on its standing cluster the RayJob waits for the weights in the graph,
    # so the gate is on the path (its own-cluster job: the next test).
    pinned = {"jobMode": "standing-cluster"} if stack_name == "codelab" else {}
    on, off = synth(stack_name, pinned or None), synth(stack_name, {**pinned, "readinessGate": "off"})
    est, without = cp.estimate(on.resources), cp.estimate(off.resources)
    [rayjob] = [r for r in on.resources if r.type == RAYJOB.split("::")[0]]
    steps = [st.label for st in cp.entrypoint_steps(rayjob)]
    assert steps[0] == "readiness gate (GPU health, Lustre, NCCL over RDMA)"
    labels = [est.activities[k].label for k in est.path]
    # Every step of the entrypoint before NeMo-RL, in its order, right before the model load and the first step.
    assert labels[-2 - len(steps) : -2] == steps
    assert est.first_step_seconds - without.first_step_seconds == pytest.approx(GATE_S)


@pytest.mark.graph
def test_codelabs_queued_job_runs_the_gate_while_its_weights_are_imported_at_no_cost_to_the_first_step(synth):
    on, off = synth("codelab"), synth("codelab", {"readinessGate": "off"})
    est, without = cp.estimate(on.resources), cp.estimate(off.resources)
    labels = [est.activities[k].label for k in est.path]
    assert "readiness gate (GPU health, Lustre, NCCL over RDMA)" not in labels
    assert "the entrypoint waits for the weights prefetch's marker" in labels
    assert est.first_step_seconds == pytest.approx(without.first_step_seconds)


# --- warm nodes: the gate's fast path ---------------------------------------------------------------------------------
def gate_line(window: int) -> str:
    return f"{GATE} --node-records-dir /lustre/gate/.nodes --node-pass-window-seconds {window}"


@pytest.mark.unit
def test_on_warm_nodes_a_gate_that_reuses_passes_runs_only_its_gpu_part():
    reuse = stack(own_cluster=True, entrypoint=entrypoint(gate_line(86400), TRAIN))
    full = stack(own_cluster=True, entrypoint=entrypoint(gate_line(0), TRAIN))
    [gate] = [k for k in cp.estimate(reuse).activities if k.startswith("entrypoint ")]
    warm, warm_full = cp.estimate(reuse, warm=True), cp.estimate(full, warm=True)
    assert warm.activities[gate].label == cp.GATE_FAST_LABEL
    assert warm.activities[gate].seconds == c.NOMINAL_GATE_GPU_SECONDS.seconds
    # readinessGate full (window 0), or nodes without a pass (cold): the whole gate.
    assert warm_full.activities[gate].seconds == cp.estimate(reuse).activities[gate].seconds == GATE_S
    assert GATE_S == sum(
        x.seconds for x in (c.NOMINAL_GATE_GPU_SECONDS, c.NOMINAL_GATE_LUSTRE_SECONDS, c.NOMINAL_GATE_NCCL_SECONDS)
    )
    assert warm_full.first_step_seconds - warm.first_step_seconds == pytest.approx(
        GATE_S - c.NOMINAL_GATE_GPU_SECONDS.seconds
    )


# --- the bound -------------------------------------------------------------------------------------------------------
def row(type_):
    return c.NOMINAL_RESOURCE_SECONDS[type_].seconds


APIS_S = row("gcp:projects/service:Service") + 90  # one API, then the provider's propagation wait (catalog: 90s)
WEIGHTS_IN_S = c.MODELS[QWEN].weight_bytes / LUSTRE_BPS
STREAM_S = c.NOMINAL_IMAGE_STREAM_SECONDS.seconds
GATE_GPU_S, GATE_LUSTRE_S, GATE_NCCL_S = (
    c.NOMINAL_GATE_GPU_SECONDS.seconds,
    c.NOMINAL_GATE_LUSTRE_SECONDS.seconds,
    c.NOMINAL_GATE_NCCL_SECONDS.seconds,
)


@pytest.mark.unit
def test_a_fresh_stacks_bound_is_the_longer_of_the_lustre_and_gpu_chains_plus_submission_and_model_load():
    # The rows of the table, not the graph's arrangement: only the sizes (model, nodes, Lustre) come from the graph.
    records = stack(entrypoint=entrypoint(gate_line(86400), TRAIN))
    b = cp.estimate(records).bound
    assert b is not None and b.kind == cp.FRESH
    lustre = APIS_S + row("gcp:servicenetworking/connection:Connection") + LUSTRE_S + WEIGHTS_IN_S + GATE_LUSTRE_S
    gpu = APIS_S + CLUSTER_S + POOL_S + GPU_NODE_S + STREAM_S + RAY_S + GATE_GPU_S + GATE_NCCL_S
    assert b.seconds == pytest.approx(max(lustre, gpu) + SUBMIT_S + LOAD_S)
    # Without the gate in the graph its parts leave the bound too.
    plain = cp.estimate(stack(entrypoint=entrypoint(TRAIN))).bound
    assert plain is not None
    assert plain.seconds == pytest.approx(
        max(lustre - GATE_LUSTRE_S, gpu - GATE_GPU_S - GATE_NCCL_S) + SUBMIT_S + LOAD_S
    )


@pytest.mark.unit
def test_an_experiments_bound_warm_and_cold():
    # An experiment's graph holds no cluster (its platform's): the RayJob creates its own Ray cluster.
    records = [
        x for x in stack(own_cluster=True, entrypoint=entrypoint(gate_line(86400), TRAIN)) if "Cluster::" not in x.urn
    ]
    warm, cold = cp.bound(records, warm=True), cp.bound(records)
    assert warm is not None and cold is not None and (warm.kind, cold.kind) == (cp.WARM, cp.COLD)
    rayjob = c.NOMINAL_DEFAULT_RESOURCE.seconds
    assert warm.seconds == pytest.approx(rayjob + RAY_S + SUBMIT_S + GATE_GPU_S + LOAD_S)
    assert cold.seconds == pytest.approx(
        rayjob + GPU_NODE_S + STREAM_S + RAY_S + SUBMIT_S + GATE_GPU_S + GATE_NCCL_S + LOAD_S
    )
    text = cp.estimate(records, warm=True).format("exp")
    assert f"bound for {cp.WARM}: " in text and "x (goal 1.5x)" in text
