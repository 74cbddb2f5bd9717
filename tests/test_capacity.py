"""The capacity plan (core/capacity.py) and the ComputeClass it renders (workloads/manifests/compute_class.py).

Oracles: the ComputeClass CRD schemas taken from GKE clusters with their CEL rules (tests/computeclass_validation),
and the facts in core/catalog/ (capacity.py, gpus.py) with their sources. Component-level checks (pools, workers,
placement as registered resources) live in tests/test_gpu_capacity.py.
"""

from __future__ import annotations

import copy

import pytest

from core import catalog
from core.capacity import FLEX_START, POOL_NAMES, RESERVATION, SPOT, CapacityInputs, check_capacity, plan_capacity
from tests.computeclass_validation import validate_compute_class
from workloads.manifests.compute_class import compute_class_manifest, worker_scheduling

A4 = catalog.accelerator("nvidia-b200")
H200 = catalog.accelerator("nvidia-h200-141gb")
ZONE = "us-central1-b"
PROJECT = "my-project"

CHAINS = {
    "spot": (SPOT,),
    "flex-start": (FLEX_START,),
    "reservation": (RESERVATION,),
    "reservation>flex-start>spot": (RESERVATION, FLEX_START, SPOT),
}


def _inputs(models, **kw) -> CapacityInputs:
    if RESERVATION in models:
        kw.setdefault("reservation", "a4-res")
    return CapacityInputs(models=tuple(models), **kw)


def _plan(models, *, autopilot=False, acc=A4, nodes=4, **kw):
    c = _inputs(models, **kw)
    problems = check_capacity(c, autopilot=autopilot, machine_type=acc.machine_type, nodes=nodes, gke_version=None)
    assert problems == []
    return plan_capacity(
        c,
        autopilot=autopilot,
        machine_type=acc.machine_type,
        gpu_type=acc.gpu_type,
        zone=ZONE,
        nodes=nodes,
        project=PROJECT,
    )


@pytest.mark.unit
@pytest.mark.parametrize("autopilot", [False, True], ids=["standard", "autopilot"])
@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("acc", [A4, H200], ids=["a4", "a3-ultra"])
def test_compute_class_for_every_model_and_chain_is_valid_against_the_gke_crd(chain, autopilot, acc):
    block = {"reservation": "a4-res/reservationBlocks/a4-res-block-0001"} if RESERVATION in CHAINS[chain] else {}
    validate_compute_class(compute_class_manifest(_plan(CHAINS[chain], autopilot=autopilot, acc=acc, **block)))


@pytest.mark.unit
def test_crd_validation_rejects_what_gke_rejects():
    """Negative control: the validator is not vacuous (unknown field, a CEL rule)."""
    good = compute_class_manifest(_plan((SPOT,), autopilot=True))
    unknown = copy.deepcopy(good)
    unknown["spec"]["priorities"][0]["onDemand"] = True
    with pytest.raises(AssertionError, match="onDemand"):
        validate_compute_class(unknown)
    both = copy.deepcopy(good)
    both["spec"]["priorities"][0]["flexStart"] = {"enabled": True}
    with pytest.raises(AssertionError, match="incompatible with Spot"):
        validate_compute_class(both)
    mixed = compute_class_manifest(_plan((SPOT,)))
    mixed["spec"]["priorities"][0]["spot"] = True
    with pytest.raises(AssertionError, match="Nodepool field cannot be set along with other fields"):
        validate_compute_class(mixed)


@pytest.mark.unit
def test_standard_class_tries_one_pool_per_model_in_the_listed_order_and_creates_none():
    spec = compute_class_manifest(_plan((RESERVATION, FLEX_START, SPOT)))["spec"]
    assert spec["priorities"] == [
        {"nodepools": [POOL_NAMES[RESERVATION]]},
        {"nodepools": [POOL_NAMES[FLEX_START]]},
        {"nodepools": [POOL_NAMES[SPOT]]},
    ]
    # Pools GKE would create cannot carry the nine additional node networks.
    assert spec["nodePoolAutoCreation"] == {"enabled": False}
    assert spec["whenUnsatisfiable"] == "DoNotScaleUp"
    assert spec["activeMigration"] == {"optimizeRulePriority": False}


@pytest.mark.unit
def test_autopilot_class_orders_machine_priorities_by_model_in_the_roce_zone():
    plan = _plan(
        (FLEX_START, RESERVATION, SPOT),
        autopilot=True,
        reservation="projects/shared-proj/reservations/a4-res/reservationBlocks/blk-1",
        flex_start_max_run_hours=72,
        flex_start_wait_minutes=45,
    )
    prios = compute_class_manifest(plan)["spec"]["priorities"]
    for p in prios:
        assert p["machineType"] == A4.machine_type
        assert p["gpu"] == {"type": A4.gpu_type, "count": A4.gpus_per_node}
        assert p["location"] == {"zones": [ZONE]}
    flex, res, spot = prios
    assert flex["flexStart"] == {"enabled": True}
    assert flex["maxRunDurationSeconds"] == 72 * 3600
    assert flex["capacityCheckWaitTimeSeconds"] == 45 * 60
    assert "spot" not in flex
    assert res["reservations"] == {
        "affinity": "Specific",
        "specific": [{"name": "a4-res", "project": "shared-proj", "reservationBlock": {"name": "blk-1"}}],
    }
    assert spot["spot"] is True
    assert compute_class_manifest(plan)["spec"]["nodePoolAutoCreation"] == {"enabled": True}


@pytest.mark.unit
def test_same_project_reservation_names_no_project():
    res = compute_class_manifest(_plan((RESERVATION,), autopilot=True))["spec"]["priorities"][0]["reservations"]
    assert res["specific"] == [{"name": "a4-res"}]


@pytest.mark.unit
def test_pools_start_at_zero_and_scale_to_the_workloads_request():
    pools = {p.model: p for p in _plan((RESERVATION, FLEX_START, SPOT), nodes=6).pools()}
    assert [p.name for p in _plan((RESERVATION, FLEX_START, SPOT)).pools()] == ["gpu-reserved", "gpu-flex", "gpu-spot"]
    for p in pools.values():
        assert p.initial_nodes == 0 and p.max_nodes == 6


@pytest.mark.unit
def test_reserved_capacity_may_start_warm():
    pools = {p.model: p for p in _plan((RESERVATION, SPOT), nodes=4, reservation_start_nodes=4).pools()}
    assert pools[RESERVATION].initial_nodes == 4
    assert pools[SPOT].initial_nodes == 0


@pytest.mark.unit
def test_flex_start_pool_has_the_run_limit_no_reservation_and_auto_repair_off():
    pool = _plan((FLEX_START,), flex_start_max_run_hours=24).pools()[0]
    assert pool.flex_start and not pool.spot
    assert pool.max_run_duration == "86400s"
    assert pool.auto_repair is False
    assert pool.reservation_affinity == ("NO_RESERVATION", None, None)


@pytest.mark.unit
def test_reservation_pool_consumes_the_specific_reservation_path_with_its_block():
    pool = _plan((RESERVATION,), reservation="a4-res/reservationBlocks/blk-7").pools()[0]
    assert pool.reservation_affinity == (
        "SPECIFIC_RESERVATION",
        "compute.googleapis.com/reservation-name",
        [f"projects/{PROJECT}/reservations/a4-res/reservationBlocks/blk-7"],
    )
    assert not pool.spot and not pool.flex_start and pool.auto_repair


@pytest.mark.unit
def test_spot_pool_consumes_no_reservation():
    assert _plan((SPOT,)).pools()[0].reservation_affinity == ("NO_RESERVATION", None, None)


@pytest.mark.unit
@pytest.mark.parametrize(
    "nodes,placement,want",
    [
        (4, "auto", {SPOT: (True, False), FLEX_START: (False, True), RESERVATION: (False, False)}),
        (1, "auto", {SPOT: (False, False), FLEX_START: (False, False), RESERVATION: (False, False)}),
        (4, "none", {SPOT: (False, False), FLEX_START: (False, False), RESERVATION: (False, False)}),
        (1, "compact", {SPOT: (True, False), FLEX_START: (False, True), RESERVATION: (False, False)}),
    ],
)
def test_placement_is_compact_for_multi_node_spot_and_a_workload_policy_for_flex_start(nodes, placement, want):
    pools = {
        p.model: (p.compact, p.workload_policy)
        for p in _plan((RESERVATION, FLEX_START, SPOT), nodes=nodes, placement=placement).pools()
    }
    assert pools == want


@pytest.mark.unit
def test_autopilot_has_no_pools():
    assert _plan((SPOT, FLEX_START), autopilot=True).pools() == []


@pytest.mark.unit
def test_workers_select_the_class_and_tolerate_its_taint_and_spot_nodes_when_the_chain_has_spot():
    selector, tolerations = worker_scheduling("nemo-rl-gpu")
    assert selector == {"cloud.google.com/compute-class": "nemo-rl-gpu"}
    assert tolerations == [
        {"key": "cloud.google.com/compute-class", "operator": "Equal", "value": "nemo-rl-gpu", "effect": "NoSchedule"}
    ]
    _, tolerations = worker_scheduling("nemo-rl-gpu", spot=True)
    assert {
        "key": "cloud.google.com/gke-spot",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    } in tolerations


# --- bad input: one line per problem, naming the key ------------------------------------------------------
def _problems(c: CapacityInputs, *, autopilot=False, machine_type=A4.machine_type, nodes=2, gke_version=None):
    return check_capacity(c, autopilot=autopilot, machine_type=machine_type, nodes=nodes, gke_version=gke_version)


@pytest.mark.unit
@pytest.mark.parametrize(
    "inputs,kw,key,phrase",
    [
        (CapacityInputs(models=("on-demand",)), {}, "capacity", "no plain on-demand"),
        (CapacityInputs(models=("spotty",)), {}, "capacity", "unknown model 'spotty'"),
        (CapacityInputs(models=()), {}, "capacity", "at least one model"),
        (CapacityInputs(models=("spot", "flex-start", "spot")), {}, "capacity", "more than once"),
        (CapacityInputs(models=("reservation",)), {}, "reservation", "no reservation name"),
        (CapacityInputs(models=("spot",), reservation="r1"), {}, "reservation", "does not list 'reservation'"),
        (CapacityInputs(models=("reservation",), reservation="My_Res"), {}, "reservation", "not a reservation name"),
        (
            CapacityInputs(models=("reservation",), reservation="r1/reservationBlocks/Block 1"),
            {},
            "reservation",
            "'Block 1' is not a valid name",
        ),
        (
            CapacityInputs(models=("reservation",), reservation="r1/blocks/b1"),
            {},
            "reservation",
            "optionally '<name>/reservationBlocks/<block>'",
        ),
        (
            CapacityInputs(models=("reservation",), reservation="projects/X/reservations/r1"),
            {},
            "reservation",
            "not a reservation name",
        ),
        (
            CapacityInputs(models=("flex-start",), flex_start_max_run_hours=169),
            {},
            "flexStartMaxRunHours",
            "at most 7 days",
        ),
        (
            CapacityInputs(models=("flex-start",)),
            {"gke_version": "1.32.1-gke.1000000"},
            "capacity",
            "1.32.2-gke.1652000",
        ),
        (
            CapacityInputs(models=("flex-start",)),
            {"machine_type": "a4x-highgpu-4g"},
            "capacity",
            "does not support machine type a4x-highgpu-4g",
        ),
        (
            CapacityInputs(models=("flex-start", "spot"), flex_start_wait_minutes=30),
            {},
            "flexStartWaitMinutes",
            "only applies to Autopilot",
        ),
        (
            CapacityInputs(models=("spot", "flex-start"), flex_start_wait_minutes=30),
            {"autopilot": True},
            "flexStartWaitMinutes",
            "nothing to fall back to",
        ),
        (
            CapacityInputs(models=("flex-start", "spot"), flex_start_wait_minutes=2000),
            {"autopilot": True},
            "flexStartWaitMinutes",
            "between 1 and 1440",
        ),
        (
            CapacityInputs(models=("reservation",), reservation="r1", placement="compact"),
            {},
            "gpuPlacement",
            "brings its own block placement",
        ),
        (
            CapacityInputs(models=("spot",), placement="compact"),
            {"autopilot": True},
            "gpuPlacement",
            "not available for A4 / A3 Ultra on Autopilot",
        ),
        (CapacityInputs(models=("spot",), placement="tight"), {}, "gpuPlacement", "must be one of"),
        (
            CapacityInputs(models=("flex-start",), placement_distance="RACK"),
            {},
            "gpuPlacementDistance",
            "must be one of",
        ),
        (CapacityInputs(models=("spot",), compute_class="gke-gpus"), {}, "computeClass", "reserves"),
        (CapacityInputs(models=("spot",), compute_class="autopilot-gpus"), {}, "computeClass", "reserves"),
        (CapacityInputs(models=("spot",), compute_class="GPU_class"), {}, "computeClass", "RFC 1123"),
        (CapacityInputs(models=("spot",)), {"gke_version": "1.30.2"}, "gkeVersion", "1.30.3-gke.1451000"),
        (
            CapacityInputs(models=("reservation",), reservation="r1", reservation_start_nodes=3),
            {"nodes": 2},
            "reservationStartNodes",
            "between 0 and",
        ),
        (CapacityInputs(models=("spot",), reservation_start_nodes=1), {}, "reservationStartNodes", "needs"),
    ],
)
def test_bad_capacity_input_is_refused_naming_its_key(inputs, kw, key, phrase):
    problems = _problems(inputs, **kw)
    hits = [p for p in problems if p.startswith(f"nemo-rl-gke:{key}:") and phrase in p]
    assert hits, problems


@pytest.mark.unit
def test_valid_inputs_have_no_problems():
    c = CapacityInputs(
        models=("reservation", "flex-start", "spot"),
        reservation="projects/other-project/reservations/a4-res/reservationBlocks/a4-res-block-1",
        reservation_start_nodes=2,
        flex_start_max_run_hours=168,
        placement="compact",
        placement_distance="BLOCK",
        compute_class="nemo-rl-gpu",
    )
    assert _problems(c, nodes=2, gke_version="1.33") == []


@pytest.mark.graph
def test_flex_start_is_offered_on_a3_ultra_and_refused_on_machines_google_excludes(synth):
    # Checked against Google's current pages (core/catalog/gpus.py flex_start): Compute Engine
    # "About Flex-start VMs" supports "all accelerator-optimized machine types (except A4X and G4)", AI
    # Hypercomputer's consumption options list flex-start for "Any GPU machine except A4X"; the "except A3 Ultra"
    # line came from an older copy of that page. So dev (a3-ultragpu-8g) keeps its [spot, flex-start] chain...
    r = synth("dev")
    pools = {x.inputs["name"]: x for x in r.of_type("gcp:container/nodePool:NodePool")}
    flex = pools["gpu-flex"].inputs
    assert flex["nodeConfig"]["machineType"] == "a3-ultragpu-8g" and flex["nodeConfig"]["flexStart"] is True
    # ...and a machine outside Google's list (A4X) is refused naming the key.
    problems = check_capacity(
        CapacityInputs(models=("spot", "flex-start")),
        autopilot=False,
        machine_type="a4x-highgpu-4g",
        nodes=2,
        gke_version=None,
    )
    assert [p for p in problems if p.startswith("nemo-rl-gke:capacity:") and "a4x-highgpu-4g" in p]
