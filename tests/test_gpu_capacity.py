"""The GPU capacity as registered: pools per model (Standard), the ComputeClass, the workers' selection and the
placement, for each capacity model and a three-model fallback, on Standard and Autopilot.

Resources are found by (type, name) in the engine's records; the ComputeClass is validated against the CRD
schemas taken from GKE clusters (tests/computeclass_validation.py), the Ray objects against KubeRay's CRDs.
"""

from __future__ import annotations

import pytest

from core import catalog
from core.naming import GPU_POOLS
from synth import render
from tests.computeclass_validation import validate_compute_class
from tests.k8s_validation import validate_any

pytestmark = pytest.mark.graph

POOL = "gcp:container/nodePool:NodePool"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
PROJECT = "your-gcp-project-id"

CHAINS = {
    "spot": ["spot"],
    "flex-start": ["flex-start"],
    "reservation": ["reservation"],
    "three-model-fallback": ["reservation", "flex-start", "spot"],
}


def _overrides(chain: list[str], **extra) -> dict:
    o = {"capacity": chain, **extra}
    if "reservation" in chain:
        o.setdefault("reservation", "gpu-res")
    return o


def _workers(r, own_cluster: bool = False) -> list[dict]:
    if own_cluster:
        groups = r.get(RAYJOB, "rayjob").get("spec.rayClusterSpec.workerGroupSpecs")
    else:
        groups = r.get(RAYCLUSTER, "raycluster").get("spec.workerGroupSpecs")
    return [g["template"]["spec"] for g in groups]


@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("stack", ["dev", "autopilot"])
def test_each_model_and_the_fallback_chain_render_class_pools_and_worker_selection(synth, stack, chain):
    models = CHAINS[chain]
    r = synth(stack, _overrides(models))
    assert r.error is None, r.error
    autopilot = stack == "autopilot"
    cc = r.get(CLASS, "gpu-compute-class")
    manifest = render.manifest_of(cc)
    validate_compute_class(manifest)
    name = manifest["metadata"]["name"]
    prios = manifest["spec"]["priorities"]
    if autopilot:
        # No pools: the class's machine priorities are the capacity, in the listed order.
        assert r.of_type(POOL) == []
        got = ["spot" if p.get("spot") else "flex-start" if p.get("flexStart") else "reservation" for p in prios]
        assert got == models
        assert manifest["spec"]["nodePoolAutoCreation"] == {"enabled": True}
    else:
        cpu_pools = ("system", "cpu")
        assert [p.name for p in r.of_type(POOL) if p.name not in cpu_pools] == sorted(GPU_POOLS[m] for m in models)
        assert prios == [{"nodepools": [GPU_POOLS[m]]} for m in models]
        assert manifest["spec"]["nodePoolAutoCreation"] == {"enabled": False}
        for m in models:
            cfg = r.get(POOL, GPU_POOLS[m]).inputs["nodeConfig"]
            assert cfg["labels"][catalog.COMPUTE_CLASS_LABEL] == name
            assert {"key": catalog.COMPUTE_CLASS_LABEL, "value": name, "effect": "NO_SCHEDULE"} in cfg["taints"]
    # The workers select the class and tolerate its taint; the Ray objects wait for the class.
    for spec in _workers(r):
        assert spec["nodeSelector"][catalog.COMPUTE_CLASS_LABEL] == name
        assert {"key": catalog.COMPUTE_CLASS_LABEL, "operator": "Equal", "value": name, "effect": "NoSchedule"} in spec[
            "tolerations"
        ]
    ray = r.get(RAYCLUSTER, "raycluster")
    validate_any(render.manifest_of(ray))
    assert r.depends_on(ray, cc)
    assert cc.provider_urn and cc.provider_urn == ray.provider_urn
    assert r.outputs["gpuCapacity"] == {"computeClass": name, "chain": models}


def test_every_gpu_pool_starts_at_zero_and_scales_to_the_workloads_request(synth):
    r = synth("codelab", _overrides(["reservation", "flex-start", "spot"]))
    nodes = int(r.config["nemo-rl-gke:gpuNodes"])
    for name in GPU_POOLS.values():
        pool = r.get(POOL, name)
        assert pool.inputs["initialNodeCount"] == 0
        assert pool.inputs["autoscaling"]["minNodeCount"] == 0
        assert pool.inputs["autoscaling"]["maxNodeCount"] == nodes
        assert "initialNodeCount" in pool.ignore_changes


def test_flex_start_pool_has_the_run_limit_no_reservation_no_static_nodes_and_no_auto_repair(synth):
    r = synth("dev", _overrides(["flex-start"], flexStartMaxRunHours=48))
    pool = r.get(POOL, GPU_POOLS["flex-start"])
    cfg = pool.inputs["nodeConfig"]
    assert cfg["flexStart"] is True and cfg.get("spot") is False
    assert cfg["maxRunDuration"] == "172800s"
    assert cfg["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool.inputs["management"]["autoRepair"] is False
    assert pool.inputs["initialNodeCount"] == 0 and pool.inputs["autoscaling"]["minNodeCount"] == 0


def test_reservation_pool_consumes_the_reservation_path_with_its_block_in_the_zone(synth):
    r = synth(
        "dev",
        _overrides(
            ["reservation"],
            reservationStartNodes=2,
            reservation="projects/capacity-owner/reservations/a3u-res/reservationBlocks/a3u-res-block-0001",
        ),
    )
    pool = r.get(POOL, GPU_POOLS["reservation"])
    cfg = pool.inputs["nodeConfig"]
    assert cfg["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/capacity-owner/reservations/a3u-res/reservationBlocks/a3u-res-block-0001"],
    }
    assert cfg.get("spot") is False and "flexStart" not in cfg
    assert pool.inputs["nodeLocations"] == [r.config["nemo-rl-gke:zone"]]
    # Reserved capacity is paid for anyway: it may start warm and stay.
    assert pool.inputs["initialNodeCount"] == 2 and pool.inputs["autoscaling"]["minNodeCount"] == 2
    assert "placementPolicy" not in pool.inputs  # a reservation brings its own block placement


def test_autopilot_reservation_priority_names_the_shared_reservation_and_block(synth):
    r = synth(
        "autopilot",
        _overrides(
            ["reservation"], reservation="projects/capacity-owner/reservations/b200-res/reservationBlocks/blk-2"
        ),
    )
    prio = render.manifest_of(r.get(CLASS, "gpu-compute-class"))["spec"]["priorities"][0]
    assert prio["reservations"] == {
        "affinity": "Specific",
        "specific": [{"name": "b200-res", "project": "capacity-owner", "reservationBlock": {"name": "blk-2"}}],
    }
    assert prio["machineType"] == "a4-highgpu-8g" and prio["location"] == {"zones": [r.config["nemo-rl-gke:zone"]]}


def test_multi_node_spot_is_compact_and_flex_start_gets_a_high_throughput_workload_policy(synth):
    r = synth("codelab", _overrides(["spot", "flex-start"], gpuPlacementDistance="BLOCK"))
    assert r.get(POOL, GPU_POOLS["spot"]).inputs["placementPolicy"] == {"type": "COMPACT"}
    policy = r.get(POLICY, "gpu-flex-placement")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "maxTopologyDistance": "BLOCK"}
    assert policy.inputs["region"] == r.config["nemo-rl-gke:region"]
    flex = r.get(POOL, GPU_POOLS["flex-start"])
    assert flex.inputs["placementPolicy"] == {"type": "COMPACT", "policyName": policy.inputs["name"]}
    assert r.depends_on(flex, policy)


def test_single_node_or_placement_none_gets_no_placement(synth):
    for overrides in ({"gpuNodes": 1, "workerReplicas": 1, "jobEnabled": False}, {"gpuPlacement": "none"}):
        r = synth("dev", _overrides(["spot", "flex-start"], **overrides))
        assert r.error is None, r.error
        assert r.of_type(POLICY) == []
        for m in ("spot", "flex-start"):
            assert "placementPolicy" not in r.get(POOL, GPU_POOLS[m]).inputs


def test_autopilot_has_no_pools_and_no_placement_policy(synth):
    r = synth("autopilot", _overrides(["spot", "flex-start"]))
    assert r.of_type(POOL) == [] and r.of_type(POLICY) == []


def test_own_cluster_retries_select_the_class_so_they_land_on_the_next_available_model(synth):
    r = synth("codelab", {"jobMode": "own-cluster", "jobBackoffLimit": 3, **_overrides(["spot", "flex-start"])})
    assert r.error is None, r.error
    job = r.get(RAYJOB, "rayjob")
    name = render.manifest_of(r.get(CLASS, "gpu-compute-class"))["metadata"]["name"]
    for spec in _workers(r, own_cluster=True):
        assert spec["nodeSelector"][catalog.COMPUTE_CLASS_LABEL] == name
        assert "cloud.google.com/gke-spot" not in spec["nodeSelector"]
    assert r.depends_on(job, r.get(CLASS, "gpu-compute-class"))
    validate_any(render.manifest_of(job))


def test_autopilot_flex_start_wait_bounds_the_step_before_the_next_model(synth):
    r = synth("autopilot", _overrides(["flex-start", "spot"], flexStartWaitMinutes=90, flexStartMaxRunHours=24))
    assert r.error is None, r.error
    flex, spot = render.manifest_of(r.get(CLASS, "gpu-compute-class"))["spec"]["priorities"]
    assert flex["flexStart"] == {"enabled": True} and flex["capacityCheckWaitTimeSeconds"] == 90 * 60
    assert flex["maxRunDurationSeconds"] == 24 * 3600
    assert spot["spot"] is True
