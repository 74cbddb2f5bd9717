"""The NemoRlJob component: the RayJob the program registers in each mode, from the engine's records."""
from __future__ import annotations

import yaml

from core.settings import load_settings
from synth import render
from tests.k8s_validation import validate_any
from core import gate, recipes
from workloads.raycluster_spec import RayPodsConfig, raycluster_spec

RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"


def _settings(r):
    values = {k.split(":", 1)[1]: v for k, v in r.config.items()
              if k.startswith("nemo-rl-gke:") and k.split(":", 1)[1] not in ("hfToken", "wandbApiKey")}
    # Outside the engine the placeholder project is refused; nothing compared here depends on the project.
    return load_settings(r.stack, "example-project", values, {"hfToken": "secret", "wandbApiKey": "secret"})


def test_standing_mode_job_selects_the_standing_cluster_without_retries(synth, stack):
    r = synth(stack)
    job, cluster = r.get(RAYJOB, "rayjob"), r.get(RAYCLUSTER, "raycluster")
    spec = job.inputs["spec"]
    assert spec["clusterSelector"] == {"ray.io/cluster": cluster.get("metadata.name")}
    assert spec["submissionMode"] == "K8sJobMode"
    # KubeRay >= 1.6 rejects backoffLimit with clusterSelector; before that a retry could delete the cluster.
    assert "backoffLimit" not in spec and "rayClusterSpec" not in spec and "shutdownAfterJobFinishes" not in spec
    assert r.depends_on(job, cluster)


def test_job_submits_exactly_the_rendered_recipe(synth, stack):
    r = synth(stack)
    s = _settings(r)
    recipe = recipes.resolve_recipe(s.job, s.workload.release)
    run = recipes.default_run_name(s.job, s.stack_name, s.workload.release)
    spec = r.get(RAYJOB, "rayjob").inputs["spec"]
    gate_options = gate.options(gate.GateArgs.of(s))
    assert spec["entrypoint"] == recipes.entrypoint(recipe, s.workload.release, mount_path="/lustre", run_name=run,
                                                    gate=gate_options)
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == recipes.runtime_env(recipe, mount_path="/lustre")
    assert r.outputs["checkpointDir"] == f"/lustre/checkpoints/{run}" == recipes.checkpoint_dir("/lustre", run)


def test_runtime_env_and_job_metadata_carry_no_secrets(synth, stack):
    spec = synth(stack).get(RAYJOB, "rayjob").inputs["spec"]
    env = yaml.safe_load(spec["runtimeEnvYAML"])["env_vars"]
    assert not {"HF_TOKEN", "WANDB_API_KEY"} & set(env)
    text = spec["entrypoint"] + spec["runtimeEnvYAML"] + str(spec["metadata"])
    assert "synth-placeholder" not in text


def test_a_changed_recipe_replaces_the_job_and_destroy_never_waits_for_training(synth, stack):
    job = synth(stack).get(RAYJOB, "rayjob")
    assert job.replace_on_changes == ["spec"] and job.delete_before_replace
    assert job.get("metadata.annotations")["pulumi.com/skipAwait"] == "true"


def test_run_name_and_checkpoint_dir_are_stable_across_runs(synth):
    # More steps is the same run continued: NeMo-RL resumes from the newest step_N under the same directory.
    a = synth("dev")
    b = synth("dev", {"jobOverrides": {"max_num_steps": 400}})
    assert a.outputs["runName"] == b.outputs["runName"]
    assert a.outputs["runName"].startswith("gemma3-27b-gsm8k-dev-")
    assert a.get(RAYJOB, "rayjob").inputs["spec"]["entrypoint"] != b.get(RAYJOB, "rayjob").inputs["spec"]["entrypoint"]


def test_own_cluster_mode_embeds_the_same_cluster_and_retries_after_preemption(synth):
    r = synth("codelab", {"jobMode": "own-cluster", "jobBackoffLimit": 5, "jobTtlSeconds": 600})
    assert r.error is None, r.error
    assert r.of_type(RAYCLUSTER) == []
    job = r.get(RAYJOB, "rayjob")
    spec = job.inputs["spec"]
    assert "clusterSelector" not in spec
    assert spec["backoffLimit"] == 5 and spec["shutdownAfterJobFinishes"] is True
    assert spec["ttlSecondsAfterFinished"] == 600
    s = _settings(r)
    assert spec["rayClusterSpec"] == raycluster_spec(RayPodsConfig.of(s), secret_name="nemo-rl-secrets", pvc_name="lustre-pvc")
    validate_any(render.manifest_of(job))
    pvc = r.get("kubernetes:core/v1:PersistentVolumeClaim", "lustre-pvc")
    assert r.depends_on(job, pvc)
    assert r.outputs["rayDashboardCommand"] == "kubectl ray session rayjob/nemo-codelab-grpo -n nemo-rl"


def test_job_can_be_turned_off_to_bring_the_cluster_up_alone(synth):
    r = synth("dev", {"jobEnabled": False})
    assert r.error is None
    assert r.of_type(RAYJOB) == [] and r.of_type(RAYCLUSTER)
    assert "rayJobName" not in r.outputs and "checkpointSizing" not in r.outputs


def test_outputs_tell_how_to_follow_the_job(synth, stack):
    out = synth(stack).outputs
    assert out["jobLogsCommand"] == f"kubectl -n nemo-rl logs -f job/{out['rayJobName']}"
    assert out["jobStatusCommand"] == f"kubectl -n nemo-rl get rayjob {out['rayJobName']}"
    assert "python -m workloads.jobs" in out["jobsCliCommand"]


def test_job_on_a_release_the_recipe_cannot_run_is_rejected(synth):
    r = synth("dev", {"nemoRlRelease": "v0.4.0"})   # the gemma recipe's config ships from v0.5.0
    assert r.error and "nemo-rl-gke:" in r.error and r.resources == []
    r = synth("dev", {"jobOverrides": {"num_nodes": 4}})
    assert r.error and "workerReplicas" in r.error and r.resources == []
