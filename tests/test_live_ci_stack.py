"""The live-cloud CI's stack (.github/live-cloud/Pulumi.ci-live.yaml) through the engine: it synthesizes, renders
what the APIs accept, is the smallest stack with the whole graph (one GPU node, the smallest Managed Lustre), trains
two steps of the pinned 1B model in the release's own config loader, and its cost statement is the repo's own
estimate times the workflow's bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from core import catalog
from synth import engine
from tests import k8s_validation
from tests.nemo_rl_oracle import nemo_rl_config, script_calls
from tools import live_ci

pytestmark = pytest.mark.graph

ROOT = Path(__file__).resolve().parents[1]
STACK_FILE = ROOT / ".github" / "live-cloud" / "Pulumi.ci-live.yaml"
WORKFLOW = ROOT / ".github" / "workflows" / "live-cloud.yml"
MODEL = "Qwen/Qwen2.5-1.5B"
REVISION = "8faed761d45a263340a0528343f099c05c9a4323"
PRICES = {"gpuNodeSpot": 30.0, "gpuNodeFlexStart": 40.0, "cpuNode": 0.8, "lustreGibMonth": 0.365}


@pytest.fixture(scope="module")
def live():
    r = engine.run("ci-live", stack_file=STACK_FILE)
    assert r.error is None, r.error
    return r


def _components(r: engine.SynthResult) -> set[str]:
    return {x.type for x in r.resources if x.type.startswith("nemo-rl-gke:")}


def test_it_has_the_whole_graph_of_a_platform_with_its_job(live):
    dev = engine.run("dev")
    assert _components(live) == _components(dev)  # every component: networks to the export
    kinds = {x.inputs.get("kind") for x in live.kubernetes_objects()}
    assert {"RayCluster", "RayJob", "Job", "NetworkPolicy", "PersistentVolume"} <= kinds
    for obj in live.kubernetes_objects():
        k8s_validation.validate_any(obj.inputs)


def test_it_is_the_smallest_such_stack_one_gpu_node_and_the_smallest_lustre(live):
    (lustre,) = live.of_type("gcp:lustre/instance:Instance")
    gib, tier = int(lustre.inputs["capacityGib"]), lustre.inputs["perUnitStorageThroughput"]
    # The smallest instance of any tier, and the only tier that allows it (core/catalog/lustre.py).
    assert gib == min(t.min_gib for t in catalog.LUSTRE_TIERS.values()) == 9000
    assert [t for t, rec in catalog.LUSTRE_TIERS.items() if rec.is_valid_capacity(gib)] == [int(tier)] == [1000]
    pools = [p for p in live.of_type("gcp:container/nodePool:NodePool") if p.name.startswith("gpu-")]
    assert {p.name for p in pools} == {"gpu-spot", "gpu-flex"}  # spot, else flex-start
    assert all(p.inputs["autoscaling"]["maxNodeCount"] == 1 for p in pools)  # one GPU node at most, none idle
    assert all(p.inputs["autoscaling"]["minNodeCount"] == 0 for p in pools)
    assert live.outputs["gpuCapacity"]["chain"] == ["spot", "flex-start"]
    (cluster,) = live.of_type("gcp:container/cluster:Cluster")
    assert cluster.inputs["location"] == "us-central1-b"  # zonal: the free tier's one zonal cluster


def test_the_job_trains_two_steps_of_the_pinned_small_model_in_the_releases_own_loader(live):
    (rayjob,) = [x for x in live.kubernetes_objects() if x.inputs.get("kind") == "RayJob"]
    # The standing cluster's attempts run the gate, the GSM8K preparation, the training, then mark the run trained.
    calls = script_calls(rayjob.inputs["spec"]["entrypoint"])
    (argv,) = [c for c in calls if "--config" in c]
    assert any("readiness_gate.py" in " ".join(c) and "--nodes" in c for c in calls)
    assert argv[4:6] == ["--config", "examples/configs/grpo_math_1B.yaml"]
    assert (ROOT / "nemo-rl-reference" / "v0.7.0" / "examples" / "configs" / "grpo_math_1B.yaml").exists()
    config = nemo_rl_config("v0.7.0", argv[5], argv[6:])
    assert config["grpo"]["max_num_steps"] == 2
    assert config["policy"]["model_name"].endswith(f"/models/{MODEL}@{REVISION}")
    assert (config["cluster"]["num_nodes"], config["cluster"]["gpus_per_node"]) == (1, 8)
    ckpt = config["checkpointing"]
    assert ckpt["enabled"] and ckpt["save_period"] == 1  # step_2 is a checkpoint: the export's final
    assert config["logger"]["wandb_enabled"] is False
    # What the workflow waits for and reads: the RayJob's namespace and name, the run's records and its export.
    wf = WORKFLOW.read_text()
    assert f"tools.live_ci wait-job {rayjob.inputs['metadata']['namespace']} " in wf
    assert "--steps 2" in wf
    for output in ("rayJobName", "attemptsCommand", "gateSummaryCommand", "exportUrl", "getCredentialsCommand"):
        assert live.outputs[output], output
        assert f"pulumi stack output {output} " in wf, output


def test_the_stated_cost_of_a_run_is_the_stacks_estimate_times_the_workflows_bound():
    r = engine.run("ci-live", {"prices": PRICES}, stack_file=STACK_FILE)
    assert r.error is None, r.error
    hours = live_ci.stack_hours(yaml.safe_load(WORKFLOW.read_text()))
    assert hours == 4.0  # live 180 min + cleanup 60 min
    s = live_ci.cost_statement(json.loads(json.dumps(r.outputs["costEstimate"])), hours)
    # By hand: fee 0.10 + 1 H200 node on flex-start 40 + 1 n2-standard-16 0.8 + 9000 GiB x 0.365 / 730 h (4.50)
    # = 45.40 per hour (spot: 35.40); x 4 h = 181.60.
    assert (s.model, s.usd_per_hour, s.usd) == ("flex-start", pytest.approx(45.40), pytest.approx(181.60))
    unpriced = live_ci.cost_statement(engine.run("ci-live", stack_file=STACK_FILE).outputs["costEstimate"], hours)
    assert unpriced.usd is None and "Managed Lustre (9000 GiB, tier 1000)" in unpriced.unknown


def test_the_offline_synth_and_policy_check_take_the_stack_file(tmp_path):
    from synth import policy_check
    from synth.__main__ import main as synth_main

    assert synth_main(["ci-live", "--stack-file", str(STACK_FILE), "--out", str(tmp_path / "out")]) == 0
    inventory = json.loads((tmp_path / "out" / "inventory.json").read_text())
    assert inventory["outputs"]["runName"].startswith("gemma3-27b-gsm8k-ci-live-")
    assert policy_check.main(["ci-live", "--stack-file", str(STACK_FILE)]) == 0
    assert synth_main(["ci-live", "--stack-file", str(tmp_path / "missing.yaml")]) == 2
