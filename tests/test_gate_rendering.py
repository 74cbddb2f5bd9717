"""The readiness gate in the rendered stacks: its settings and their rules, the command the RayJob runs first
(checked against the gate program's own argument parser), the ConfigMap that ships it, the stack output."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import pod_programs
from core import catalog, export, recipes
from pod_programs import gate_checks as gc
from synth import critical_path
from workloads import job_scripts as scripts

pytestmark = pytest.mark.graph

RAYJOB = "kubernetes:ray.io/v1:RayJob"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"

INVALID = [
    # (overrides, key the line must name, fragment of the message)
    ({"gateMinAllReduceBusbw": 0}, "nemo-rl-gke:gateMinAllReduceBusbw", "positive"),
    ({"gateMinAllReduceBusbw": -5}, "nemo-rl-gke:gateMinAllReduceBusbw", "positive"),
    # dev runs H200s: NVLink 900 + PCIe 128 GB/s bounds any busbw.
    ({"gateMinAllReduceBusbw": 1500}, "nemo-rl-gke:gateMinAllReduceBusbw", "1028 GB/s"),
    ({"gateMinAllGatherBusbw": 2000}, "nemo-rl-gke:gateMinAllGatherBusbw", "nvidia-h200-141gb"),
    ({"gateMinAllGatherBusbw": "fast"}, "nemo-rl-gke:gateMinAllGatherBusbw", "number"),
    ({"gateLustreFraction": 0}, "nemo-rl-gke:gateLustreFraction", "(0, 1]"),
    ({"gateLustreFraction": 1.5}, "nemo-rl-gke:gateLustreFraction", "(0, 1]"),
    ({"gateLustreFraction": -0.2}, "nemo-rl-gke:gateLustreFraction", "(0, 1]"),
    ({"readinessGate": "strict"}, "nemo-rl-gke:readinessGate", "'on', 'full', 'advisory' or 'off'"),
]


@pytest.mark.parametrize(
    "overrides,key,hint", INVALID, ids=[f"{c[1].split(':')[1]}-{i}" for i, c in enumerate(INVALID)]
)
def test_bad_gate_setting_is_refused_naming_its_key_before_anything_is_registered(synth, overrides, key, hint):
    r = synth("dev", overrides)
    assert r.error is not None, f"{overrides} was accepted"
    named = [ln for ln in r.error.splitlines() if ln.strip().startswith("- ") and key + ":" in ln]
    assert named and any(hint in ln for ln in named), r.error
    assert r.resources == []


def test_a_b200_threshold_an_h200_could_not_reach_is_accepted_on_a_b200_stack(synth):
    r = synth("codelab", {"gateMinAllReduceBusbw": 1500})
    assert r.error is None, r.error
    assert "--min-allreduce-large-busbw 1500 " in r.get(RAYJOB, "rayjob").get("spec.entrypoint")


def script_lines(r) -> list[str]:
    """The script's commands, one per line; a standing cluster's bounded-attempts line (recipes.Attempts) stands for
    the steps it runs in order, which are listed in its place."""
    sh, dash_c, script = shlex.split(r.get(RAYJOB, "rayjob").get("spec.entrypoint"))
    assert (sh, dash_c) == ("sh", "-c")
    return [shlex.join(argv) for argv in critical_path._script_commands(script)]


def gate_argv(r) -> list[str]:
    lines = [ln for ln in script_lines(r) if recipes.GATE_SCRIPT in ln]
    assert len(lines) == 1
    return shlex.split(lines[0])


def parsed_by_the_program(argv: list[str], tmp_path: Path) -> dict:
    """The gate program's own parse_args() on the rendered options, from the files the ConfigMap ships."""
    for name, text in scripts.job_scripts().items():
        (tmp_path / name).write_text(text)
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import readiness_gate as g; "
        "print(json.dumps(vars(g.parse_args(sys.argv[2:]))))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), *argv], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_every_stack_runs_the_gate_first_with_its_gpu_types_figures(synth, stack, tmp_path):
    r = synth(stack)
    lines = script_lines(r)
    gate_at = next(i for i, ln in enumerate(lines) if recipes.GATE_SCRIPT in ln)
    # The training line (exec'd, or followed by the checkpoint export when that is on).
    train_at = next(i for i, ln in enumerate(lines) if "examples/run_grpo" in ln)
    assert lines[0] == "set -eu" and gate_at < train_at  # set -e: a failing gate ends the job first
    assert all(recipes.GATE_SCRIPT not in ln for ln in lines[gate_at + 1 :])
    prep = [i for i, ln in enumerate(lines) if recipes.GSM8K_SCRIPT in ln]
    assert all(gate_at < i for i in prep)

    argv = gate_argv(r)
    assert argv[:4] == ["uv", "run", "python", f"{recipes.SCRIPTS_DIR}/{recipes.GATE_SCRIPT}"]
    a = parsed_by_the_program(argv[4:], tmp_path)
    job = r.get(RAYJOB, "rayjob")
    script = job.get("spec.entrypoint")
    nodes = int(script.split("cluster.num_nodes=")[1].split()[0])
    gpus = int(script.split("cluster.gpus_per_node=")[1].split()[0])
    cfg = {k.split(":", 1)[1]: v for k, v in r.config.items()}
    gpu_type = cfg.get("gpuType", "nvidia-b200")
    facts = catalog.GATE_GPU_FACTS[gpu_type]
    acc = catalog.ACCELERATORS[gpu_type]
    assert (a["nodes"], a["gpus_per_node"], a["backend"], a["mode"]) == (nodes, gpus, "nccl", "enforce")
    assert a["min_allreduce_large_busbw"] == catalog.GATE_ALLREDUCE_LARGE_BUSBW_GBPS
    assert a["min_allgather_avg_busbw"] == catalog.GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS
    assert a["max_plausible_busbw"] == facts.implausible_busbw_gbps
    assert (a["sweep_min_bytes"], a["sweep_max_bytes"], a["warmup"], a["iters"]) == (1024, 8 * 1024**3, 5, 100)
    assert a["expect_net"] == "gIB" and a["nics_per_node"] == 8
    # The same plugin name the worker pods force with NCCL_NET.
    workers = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster").get("spec.workerGroupSpecs")
    env = {e["name"]: e.get("value") for e in workers[0]["template"]["spec"]["containers"][0]["env"]}
    assert env["NCCL_NET"] == a["expect_net"]
    lustre = r.get("gcp:lustre/instance:Instance", "lustre")
    # The instance as registered: capacity (GiB, a string in the provider schema) x tier (MB/s per TiB).
    aggregate = float(lustre.get("capacityGib")) / 1024 * float(lustre.get("perUnitStorageThroughput")) * 1e6 / 1e9
    assert a["lustre_aggregate_gbps"] == pytest.approx(aggregate, rel=1e-6)
    assert a["primary_nic_gbps"] == catalog.PRIMARY_NIC_GBITPS[acc.machine_type] / 8
    assert a["lustre_fraction"] == 0.5 and a["lustre_path"] == "/lustre" and a["lustre_fstype"] == "lustre"
    assert a["summary_dir"] == f"/lustre/gate/{r.outputs['runName']}"


def test_config_map_ships_the_gate_program_and_its_decisions(synth, stack):
    data = synth(stack).get(CONFIG_MAP, "job-scripts").get("data")
    here = pod_programs.DIR
    for name in (recipes.GATE_SCRIPT, recipes.GATE_MODULE):
        assert data[name] == (here / name).read_text()


def test_stack_output_prints_the_summary_from_the_shared_volume(synth, stack):
    r = synth(stack)
    cmd = r.outputs["gateSummaryCommand"]
    job = r.get(RAYJOB, "rayjob")
    ns, name = job.get("metadata.namespace"), job.get("metadata.name")
    assert cmd.startswith(f"kubectl -n {ns} exec ")
    assert f"get rayjob {name} -o jsonpath='{{.status.rayClusterName}}'" in cmd
    assert cmd.endswith(f"-c ray-head -- cat /lustre/gate/{r.outputs['runName']}/summary.json")


def test_advisory_mode_off_and_no_job(synth):
    advisory = synth("dev", {"readinessGate": "advisory", "gateLustreFraction": 0.25, "gateMinAllGatherBusbw": 80})
    assert advisory.error is None, advisory.error
    argv = gate_argv(advisory)
    assert argv[argv.index("--mode") + 1] == "advisory"
    assert argv[argv.index("--lustre-fraction") + 1] == "0.25"
    assert argv[argv.index("--min-allgather-avg-busbw") + 1] == "80"
    off = synth("dev", {"readinessGate": "off"})
    assert all(recipes.GATE_SCRIPT not in ln for ln in script_lines(off))
    assert "gateSummaryCommand" not in off.outputs
    assert "gateSummaryCommand" not in synth("dev", {"jobEnabled": False}).outputs


def test_gate_rerun_changes_the_rayjob_so_it_is_submitted_again(synth):
    before = synth("dev").get(RAYJOB, "rayjob")
    after = synth("dev", {"gateRerun": "node-7-replaced"}).get(RAYJOB, "rayjob")
    # In the runtime env, which is part of the spec in both modes (the standing RayJob has no spec.metadata:
    # KubeRay < 1.5.0 crashes on metadata with a clusterSelector, kuberay PR #4102; workloads/manifests/rayjob.py).
    renv = json.loads(after.get("spec.runtimeEnvYAML"))["env_vars"]
    assert renv[recipes.GATE_RERUN_ENV] == "node-7-replaced"
    assert after.get("metadata.annotations")["nemo-rl-gke/gateRerun"] == "node-7-replaced"
    assert before.get("spec.runtimeEnvYAML") != after.get("spec.runtimeEnvYAML")
    assert "spec.runtimeEnvYAML" in after.replace_on_changes
    own = synth("dev", {"jobMode": "own-cluster"})
    assert recipes.GATE_SCRIPT in own.get(RAYJOB, "rayjob").get("spec.entrypoint")


# Rule: the RayCluster keeps every worker replica up and NeMo-RL's placement groups may use any
# of them (nemo_rl/distributed/virtual_cluster.py builds its bundles from whatever GPU nodes Ray offers), so the
# gate tests every GPU worker, not only cluster.num_nodes of them; workers the job leaves idle are a preview warning.
def test_the_gate_covers_every_gpu_worker_and_preview_warns_about_idle_ones(synth):
    r = synth("dev", {"gpuNodes": 4})
    assert r.error is None, r.error
    argv = gate_argv(r)
    assert argv[argv.index("--nodes") + 1] == "4"
    assert "cluster.num_nodes=2" in r.get(RAYJOB, "rayjob").get("spec.entrypoint")
    [idle] = [w for w in r.warnings if "sit idle" in w]
    assert idle.startswith("nemo-rl-gke:gpuNodes: 4 GPU workers but the job uses cluster.num_nodes=2: 2 node(s)")
    explicit = synth("dev", {"gpuNodes": 4, "workerReplicas": 3})
    assert any(w.startswith("nemo-rl-gke:workerReplicas: 3 GPU workers") for w in explicit.warnings)
    assert not [w for w in synth("dev").warnings if "sit idle" in w or "no job" in w]
    own = synth("dev", {"gpuNodes": 4, "jobMode": "own-cluster"})
    argv = [ln for ln in script_lines(own) if recipes.GATE_SCRIPT in ln]
    assert "--nodes 4 " in argv[0]


def test_gpu_workers_without_a_job_are_a_preview_warning(synth):
    # Without a job the standing cluster keeps no GPU worker; asked for on purpose, they are warned about.
    r = synth("dev", {"jobEnabled": False, "workerReplicas": 2})
    assert r.error is None, r.error
    assert any(w.startswith("nemo-rl-gke:workerReplicas: 2 GPU worker(s) start with no job") for w in r.warnings)


def test_the_gate_keeps_node_records_and_reuses_a_pass_for_a_day_unless_full_or_rerun(synth, tmp_path):
    r = synth("dev")
    a = parsed_by_the_program(gate_argv(r)[4:], tmp_path)
    assert a["node_records_dir"] == "/lustre/gate/.nodes" and a["trusted_node_records_dir"] == []
    assert a["node_pass_window_seconds"] == catalog.GATE_NODE_PASS_WINDOW_SECONDS == 24 * 3600
    assert a["gib_dir"] == catalog.GIB_MOUNT and a["rerun_token"] == ""
    # The run's trained marker, which the entrypoint writes after training: a later gate of this run without it is
    # a retry, and runs in full.
    assert a["run_done_marker"] == export.trained_marker("/lustre", r.outputs["runName"])
    assert any(ln == f"touch {a['run_done_marker']}" for ln in script_lines(r))
    # The node the records are bound to reaches every GPU worker through the downward API.
    workers = r.get("kubernetes:ray.io/v1:RayCluster", "raycluster").get("spec.workerGroupSpecs")
    [env] = [e for e in workers[0]["template"]["spec"]["containers"][0]["env"] if e["name"] == gc.NODE_NAME_ENV]
    assert env == {"name": gc.NODE_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    full = parsed_by_the_program(gate_argv(synth("dev", {"readinessGate": "full"}))[4:], tmp_path)
    assert full["node_pass_window_seconds"] == 0 and full["mode"] == "enforce"
    again = parsed_by_the_program(gate_argv(synth("dev", {"gateRerun": "node-7-replaced"}))[4:], tmp_path)
    assert again["rerun_token"] == "node-7-replaced"


def test_an_experiment_trusts_its_platforms_node_records_read_only_and_writes_its_own(synth, tmp_path):
    r = synth("codelab-exp1")
    a = parsed_by_the_program(gate_argv(r)[4:], tmp_path)
    mount = r.get(RAYJOB, "rayjob").get("spec.entrypoint").split("--lustre-path ")[1].split()[0]
    assert a["node_records_dir"] == f"{mount}/gate/.nodes"
    assert a["trusted_node_records_dir"] == [f"{mount}/gate/.platform-nodes"]
    platform = parsed_by_the_program(gate_argv(synth("codelab"))[4:], tmp_path)
    assert platform["trusted_node_records_dir"] == []
