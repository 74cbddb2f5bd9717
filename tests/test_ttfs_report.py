"""One report of time to the first step: the critical path and its bound follow the rendered graph (the engine's
resources, their dependencies and their inputs), every figure comes from the one nominal table, and
docs/performance.md holds exactly what the report computes."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from core import catalog as c
from synth import critical_path as cp
from synth import ttfs_report

ROOT = Path(__file__).resolve().parents[1]
RAYJOB, RAYCLUSTER = "kubernetes:ray.io/v1:RayJob", "kubernetes:ray.io/v1:RayCluster"


@pytest.mark.unit
def test_every_nominal_figure_the_report_uses_is_a_row_of_the_one_table():
    # The report's code names its figures as core.catalog constants; each must be a row of NOMINAL_TABLE, the table
    # docs/performance.md prints, so no figure of the report is missing from the docs.
    text = (ROOT / "synth" / "critical_path.py").read_text()
    used = set(re.findall(r"\bc\.(NOMINAL_[A-Z_]+)\b", text)) - {"NOMINAL_TABLE", "NOMINAL_RESOURCE_SECONDS"}
    assert used and used <= set(c.NOMINAL_TABLE), used - set(c.NOMINAL_TABLE)
    for name, n in c.NOMINAL_TABLE.items():
        assert n.source.strip(), name
    # The gate's whole run is its three parts, its fast path the first of them.
    parts = (c.NOMINAL_GATE_GPU_SECONDS, c.NOMINAL_GATE_LUSTRE_SECONDS, c.NOMINAL_GATE_NCCL_SECONDS)
    assert c.NOMINAL_GATE_SECONDS.seconds == sum(p.seconds for p in parts)
    assert c.NOMINAL_GATE_FAST_SECONDS.seconds == c.NOMINAL_GATE_GPU_SECONDS.seconds


def _depends(result, later, earlier) -> bool:
    """`later` waits for `earlier` in the engine's records: a declared or property dependency (transitively), its
    provider, or a dependency on a component that holds `earlier`."""
    if result.depends_on(later, earlier) or later.provider_urn == earlier.urn:
        return True
    by_urn = result.by_urn()
    parents, cur = set(), earlier
    while cur.parent and cur.parent in by_urn:
        parents.add(cur.parent)
        cur = by_urn[cur.parent]
    deps = set(later.dependencies) | {u for v in later.property_dependencies.values() for u in v}
    return bool(parents & deps)


CASES = [("codelab", False), ("codelab-exp1", False), ("codelab-exp1", True), ("codelab-exp2", True)]


@pytest.mark.graph
@pytest.mark.parametrize("stack,warm", CASES, ids=[f"{s}-{'warm' if w else 'cold'}" for s, w in CASES])
def test_the_report_follows_the_rendered_graph(synth, stack, warm):
    result = synth(stack)
    by_urn = result.by_urn()
    est = cp.estimate(result.resources, warm=warm)
    assert est.path[-1] == cp.FIRST_STEP and est.bound is not None
    # Consecutive resources on the path: the later one waits for the earlier one in the graph.
    on_path = [k for k in est.path if k in by_urn]
    assert on_path, est.format(stack)
    for a, b in itertools.pairwise(on_path):
        if est.path.index(b) == est.path.index(a) + 1:
            assert _depends(result, by_urn[b], by_urn[a]), (a, b)
    # Each resource on the path lasts its type's row of the table (a Sleep its own createDuration).
    for k in on_path:
        r, act = by_urn[k], est.activities[k]
        if r.type == "time:index/sleep:Sleep":
            assert act.seconds == float(r.inputs["createDuration"].rstrip("s"))
        elif r.type != "gcp:container/nodePool:NodePool":
            assert act.seconds == c.NOMINAL_RESOURCE_SECONDS.get(r.type, c.NOMINAL_DEFAULT_RESOURCE).seconds
    # The model load and the bound read their sizes from the rendered objects: the GPU workers, the model the job
    # trains, the Lustre throughput the gate was given (the platform's instance: capacity x tier).
    [job] = result.of_type(RAYJOB)
    spec = job.inputs["spec"].get("rayClusterSpec") or result.of_type(RAYCLUSTER)[0].inputs["spec"]
    nodes = sum(g["replicas"] for g in spec["workerGroupSpecs"])
    entry = job.inputs["spec"]["entrypoint"]
    assert f"--nodes {nodes} " in entry
    lustre_gbps = float(entry.split("--lustre-aggregate-gbps ")[1].split()[0])
    instances = result.of_type("gcp:lustre/instance:Instance")
    if instances:
        i = instances[0].inputs
        assert lustre_gbps == pytest.approx(float(i["capacityGib"]) / 1024 * float(i["perUnitStorageThroughput"]) / 1e3)
    model = re.search(r"policy\.model_name=\S*/models/(\S+)@", entry) or re.search(r"policy\.model_name=(\S+)", entry)
    assert model is not None
    weights = c.MODELS[model.group(1)].weight_bytes
    gpu = spec["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-accelerator"]
    nic = c.PRIMARY_NIC_GBITPS[c.ACCELERATORS[gpu].machine_type] / 8 * 1e9
    load = nodes * weights / min(lustre_gbps * 1e9, nodes * nic)
    assert est.activities[cp.MODEL_LOAD].seconds == pytest.approx(load)
    assert [t.seconds for t in est.bound.then][-1] == pytest.approx(load)
    # Warm nodes with a recent pass run only the gate's GPU part; cold ones the whole gate (on codelab's queued
    # own-cluster job while the weights are still imported: off the path, at its length all the same).
    gate = [k for k, a in est.activities.items() if "readiness gate" in a.label]
    assert [est.activities[k].seconds for k in gate] == [
        c.NOMINAL_GATE_FAST_SECONDS.seconds if warm else c.NOMINAL_GATE_SECONDS.seconds
    ]
    assert est.bound.kind == (cp.FRESH if instances else cp.WARM if warm else cp.COLD)
    text = est.format(stack)
    assert f"bound for {est.bound.kind}: {est.bound.seconds / 60:.1f} min" in text
    assert f"{est.bound_ratio:.2f}x (goal {cp.GOALS[est.bound.kind]:g}x)" in text


@pytest.mark.graph
def test_an_experiment_on_warm_nodes_is_within_its_goal(synth):
    for stack in ("codelab-exp1", "codelab-exp2"):
        est = cp.estimate(synth(stack).resources, warm=True)
        assert est.bound_ratio is not None and est.bound_ratio <= cp.GOALS[cp.WARM], est.format(stack)
        # With readinessGate full the same nodes run the whole gate again.
        full = cp.estimate(synth(stack, {"readinessGate": "full"}).resources, warm=True)
        assert full.first_step_seconds - est.first_step_seconds == pytest.approx(
            c.NOMINAL_GATE_SECONDS.seconds - c.NOMINAL_GATE_FAST_SECONDS.seconds
        )


@pytest.mark.graph
def test_performance_md_holds_the_report_as_computed(synth):
    def records(stack, over):
        return synth(stack, dict(over) or None).resources

    doc = (ROOT / "docs" / "performance.md").read_text()
    block = ttfs_report.block_of(doc)
    assert block is not None, "docs/performance.md lost its ttfs-report markers"
    assert block == ttfs_report.render(records), "docs/performance.md is stale: run `make ttfs-report`"
