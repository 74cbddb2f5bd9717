"""The NemoRlJob component: the RayJob the program registers in each mode, from the engine's records."""

from __future__ import annotations

import json

import pytest
import yaml

from core import catalog, export, gate, prefetch, recipes
from core.settings import SettingsError, load_settings
from synth import render
from tests.k8s_validation import validate_any
from workloads.manifests.kueue import QUEUE_LABEL_PATH
from workloads.manifests.raycluster import RayPodsConfig, raycluster_spec
from workloads.ray_cluster import REPLACE_ON_CHANGES

RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
# codelab queues its own job on a cluster of its own (queue: kueue); the standing-cluster shape is asked for.
STANDING = {"jobMode": "standing-cluster"}


def _settings(r):
    values = {
        k.split(":", 1)[1]: v
        for k, v in r.config.items()
        if k.startswith("nemo-rl-gke:") and k.split(":", 1)[1] not in ("hfToken", "wandbApiKey")
    }
    # Outside the engine the placeholder project is refused; nothing compared here depends on the project.
    return load_settings(r.stack, "example-project", values, {"hfToken": "secret", "wandbApiKey": "secret"})


@pytest.mark.graph
def test_standing_mode_job_selects_the_standing_cluster_without_retries(synth, stack):
    r = synth(stack, STANDING)
    job, cluster = r.get(RAYJOB, "rayjob"), r.get(RAYCLUSTER, "raycluster")
    spec = job.inputs["spec"]
    assert spec["clusterSelector"] == {"ray.io/cluster": cluster.get("metadata.name")}
    assert spec["submissionMode"] == "K8sJobMode"
    # KubeRay >= 1.6 rejects backoffLimit with clusterSelector; before that a retry could delete the cluster.
    assert "backoffLimit" not in spec and "rayClusterSpec" not in spec and "shutdownAfterJobFinishes" not in spec
    assert r.depends_on(job, cluster)


@pytest.mark.graph
def test_job_submits_exactly_the_rendered_recipe(synth, stack):
    r = synth(stack, STANDING)
    s = _settings(r)
    recipe = recipes.resolve_recipe(s.job, s.workload.release)
    run = recipes.default_run_name(s.job, s.stack_name, s.workload.release)
    spec = r.get(RAYJOB, "rayjob").inputs["spec"]
    gate_options = gate.options(gate.GateArgs.of(s))
    # The job trains from the prefetched, pinned snapshot and ends by writing the trained marker the export Job waits
    # for (stack defaults; workloads/manifests/export_job.py).
    plan = prefetch.plan(model_name=recipe.model_name, revision=recipe.model_revision, mount_path="/lustre")
    assert spec["entrypoint"] == recipes.entrypoint(
        recipe,
        s.workload.release,
        recipes.EntrypointArgs(
            mount_path="/lustre",
            run_name=run,
            gate=gate_options,
            model_path=plan.model_path,
            after=tuple(export.mark_trained_argv("/lustre", run)),
            # Standing cluster: jobBackoffLimit (default 3) retries are the entrypoint's loop (KubeRay takes none).
            attempts=recipes.Attempts(
                attempts=s.job.backoff_limit + 1,
                log=recipes.attempts_log("/lustre", run),
                amount=s.worker_replicas * recipe.gpus_per_node,
                capacity_wait_seconds=catalog.ATTEMPT_CAPACITY_WAIT_SECONDS,
            ),
        ),
    )
    assert f"policy.model_name={plan.model_path}" in spec["entrypoint"]
    assert f"policy.tokenizer.name={plan.model_path}" in spec["entrypoint"]
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == recipes.runtime_env(
        recipe, mount_path="/lustre", release=s.workload.release
    )
    assert r.outputs["checkpointDir"] == f"/lustre/checkpoints/{run}" == recipes.checkpoint_dir("/lustre", run)


@pytest.mark.graph
def test_runtime_env_and_job_metadata_carry_no_secrets(synth, stack):
    job = synth(stack).get(RAYJOB, "rayjob")
    spec = job.inputs["spec"]
    env = yaml.safe_load(spec["runtimeEnvYAML"])["env_vars"]
    assert not {"HF_TOKEN", "WANDB_API_KEY"} & set(env)
    text = spec["entrypoint"] + spec["runtimeEnvYAML"] + str(spec.get("metadata")) + str(job.get("metadata"))
    assert "synth-placeholder" not in text


@pytest.mark.graph
def test_standing_mode_never_sends_job_metadata_with_a_cluster_selector(synth, stack):
    # Every KubeRay before 1.5.0 dereferences the absent rayClusterSpec when a clusterSelector RayJob has
    # spec.metadata (ray-operator/controllers/ray/common/job.go GetK8sJobCommand @ v1.4.2:
    # GetMetadataJson(metadata, rayJobInstance.Spec.RayClusterSpec.RayVersion); guard added by kuberay PR #4102 in
    # 1.5.0): the submitter is never created and the job stays Initializing. GKE does not publish its KubeRay.
    r = synth(stack, STANDING)
    job = r.get(RAYJOB, "rayjob")
    assert "clusterSelector" in job.inputs["spec"] and "metadata" not in job.inputs["spec"]
    # The same facts stay readable on the RayJob (kubectl describe), as annotations (no 63-character limit).
    s = _settings(r)
    meta = recipes.job_metadata(s.recipe, run_name=s.run_name, stack_name=s.stack_name)
    annotations = job.get("metadata.annotations")
    assert {k: annotations[f"nemo-rl-gke/{k}"] for k in meta} == meta
    assert "nemo-rl-gke/run" not in (job.get("metadata.labels") or {})


@pytest.mark.graph
def test_own_cluster_mode_keeps_job_metadata_in_the_ray_job(synth):
    # With rayClusterSpec present every KubeRay 1.x builds --metadata-json (Ray >= 2.6.0 is all it checks).
    r = synth("codelab", {"jobMode": "own-cluster"})
    spec = r.get(RAYJOB, "rayjob").inputs["spec"]
    s = _settings(r)
    assert spec["metadata"] == recipes.job_metadata(s.recipe, run_name=s.run_name, stack_name=s.stack_name)
    assert "rayClusterSpec" in spec and "clusterSelector" not in spec


@pytest.mark.graph
def test_a_changed_recipe_replaces_the_job_and_destroy_never_waits_for_training(synth, stack):
    job = synth(stack).get(RAYJOB, "rayjob")
    # Every rendered spec field replaces the RayJob, except the deadline KubeRay rereads
    # (workloads/manifests/rayjob.py), and so does its queue label (Kueue refuses a new queue on a running job).
    spec = [f"spec.{k}" for k in job.inputs["spec"] if k != "activeDeadlineSeconds"]
    assert job.replace_on_changes == sorted([QUEUE_LABEL_PATH, *spec])
    assert "spec.entrypoint" in job.replace_on_changes and job.delete_before_replace
    assert job.get("metadata.annotations")["pulumi.com/skipAwait"] == "true"


@pytest.mark.graph
def test_a_changed_cluster_replaces_the_cluster_and_its_job(synth, stack):
    # KubeRay never recreates running pods when the RayCluster's pod template changes (<= 1.5; from 1.6.0 only
    # with upgradeStrategy Recreate, kuberay PR #4185, absent from the 1.4.2 CRD): a changed image, release, env
    # or resources must replace the cluster (fixed name: delete first), and the RayJob with it.
    r = synth(stack, STANDING)
    job, cluster = r.get(RAYJOB, "rayjob"), r.get(RAYCLUSTER, "raycluster")
    # Every spec field but the worker group's replica counts (tests/test_standing_cluster.py checks the list).
    assert (
        cluster.replace_on_changes == sorted([QUEUE_LABEL_PATH, *REPLACE_ON_CHANGES]) and cluster.delete_before_replace
    )
    assert job.replace_with == [cluster.urn] and job.delete_before_replace
    assert r.depends_on(job, cluster)


@pytest.mark.graph
def test_what_changes_the_cluster_is_in_its_spec(synth):
    # A new image, release, env or resources all land in the RayCluster's spec, which replace_on_changes watches.
    base = synth("dev").get(RAYCLUSTER, "raycluster").inputs["spec"]
    for overrides in (
        {"nemoRlRelease": "v0.4.0", "jobEnabled": False},
        {"shmSizeGib": 200},
        {"headMemoryGib": 48},
        {"gpuType": "nvidia-b200", "machineType": "a4-highgpu-8g"},
    ):
        r = synth("dev", overrides)
        assert r.error is None, (overrides, r.error)
        assert r.get(RAYCLUSTER, "raycluster").inputs["spec"] != base, overrides


@pytest.mark.graph
def test_run_name_and_checkpoint_dir_are_stable_across_runs(synth):
    # More steps is the same run continued: NeMo-RL resumes from the newest step_N under the same directory.
    a = synth("dev")
    b = synth("dev", {"jobOverrides": {"max_num_steps": 400}})
    assert a.outputs["runName"] == b.outputs["runName"]
    assert a.outputs["runName"].startswith("gemma3-27b-gsm8k-dev-")
    assert a.get(RAYJOB, "rayjob").inputs["spec"]["entrypoint"] != b.get(RAYJOB, "rayjob").inputs["spec"]["entrypoint"]


@pytest.mark.graph
def test_own_cluster_mode_embeds_the_same_cluster_and_retries_after_preemption(synth):
    r = synth("codelab", {"jobMode": "own-cluster", "jobBackoffLimit": 5, "jobTtlSeconds": 600})
    assert r.error is None, r.error
    # The standing RayCluster stays for interactive work, without a GPU worker: the job brings its own.
    (standing,) = r.of_type(RAYCLUSTER)
    assert [g["replicas"] for g in standing.inputs["spec"]["workerGroupSpecs"]] == [0]
    job = r.get(RAYJOB, "rayjob")
    spec = job.inputs["spec"]
    assert "clusterSelector" not in spec
    assert spec["backoffLimit"] == 5 and spec["shutdownAfterJobFinishes"] is True
    assert spec["ttlSecondsAfterFinished"] == 600
    assert job.replace_with == []
    s = _settings(r)
    # An own cluster's head mounts no bucket: its export is a CPU Job after training.
    pods = RayPodsConfig.of(s)
    expected = raycluster_spec(pods, secret_name="nemo-rl-secrets", pvc_name="lustre-pvc")
    # The pods' image is the stack's registry copy, whose path names the project (_settings loads another one).
    expected = json.loads(json.dumps(expected).replace("example-project", r.config["gcp:project"]))
    assert spec["rayClusterSpec"] == expected
    validate_any(render.manifest_of(job))
    pvc = r.get("kubernetes:core/v1:PersistentVolumeClaim", "lustre-pvc")
    assert r.depends_on(job, pvc)
    assert r.outputs["rayDashboardCommand"] == "kubectl ray session rayjob/nemo-codelab-grpo -n nemo-rl"


@pytest.mark.graph
def test_job_can_be_turned_off_to_bring_the_cluster_up_alone(synth):
    r = synth("dev", {"jobEnabled": False})
    assert r.error is None
    assert r.of_type(RAYJOB) == [] and r.of_type(RAYCLUSTER)
    assert "rayJobName" not in r.outputs and "checkpointSizing" not in r.outputs


@pytest.mark.graph
def test_outputs_tell_how_to_follow_the_job(synth, stack):
    out = synth(stack).outputs
    assert out["jobLogsCommand"] == f"kubectl -n nemo-rl logs -f job/{out['rayJobName']}"
    # With the attempts KubeRay counts (status.failed / status.succeeded, both CRDs).
    assert out["jobStatusCommand"].startswith(f"kubectl -n nemo-rl get rayjob {out['rayJobName']} -o custom-columns=")
    assert ".status.failed" in out["jobStatusCommand"]
    assert "python -m cli.ray_jobs" in out["jobsCliCommand"]


@pytest.mark.graph
def test_job_on_a_release_the_recipe_cannot_run_is_rejected(synth):
    r = synth("dev", {"nemoRlRelease": "v0.4.0"})  # the gemma recipe's config ships from v0.5.0
    assert r.error and "nemo-rl-gke:" in r.error and r.resources == []
    r = synth("dev", {"jobOverrides": {"num_nodes": 4}})
    assert r.error and "workerReplicas" in r.error and r.resources == []


@pytest.mark.graph
def test_own_cluster_mode_deletes_the_gpu_cluster_when_the_job_ends(synth):
    # KubeRay deletes the RayCluster ttlSecondsAfterFinished after the job's end when shutdownAfterJobFinishes is
    # true, and keeps the RayJob (rayjob_controller.go handleShutdownAfterJobFinishes @ v1.7.0, the
    # Complete/Failed case @ v1.4.2; CRD: "TTLSecondsAfterFinished is the TTL to clean up RayCluster"). By default
    # the GPU cluster goes at once.
    spec = synth("codelab", {"jobMode": "own-cluster"}).get(RAYJOB, "rayjob").inputs["spec"]
    assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] == 0


@pytest.mark.graph
def test_megatron_saves_without_validation_warn_at_preview(synth):
    # NVIDIA-NeMo/RL #1137 (OOM) and #834 (segfault, fixed in v0.4.0): core/recipes/resolve.py job_warnings.
    r = synth("codelab", {"jobOverrides": {"save_period": 2}})
    assert r.error is None
    [warning] = [w for w in r.warnings if "#1137" in w]
    assert warning.startswith("nemo-rl-gke:jobOverrides.save_period: ") and "\n" not in warning
    assert not [w for w in synth("codelab").warnings if "#1137" in w]


# --- the RayJob's deadline ----------------------------------------------------------------------------------------
# Rule (KubeRay rayjob_controller.go checkActiveDeadlineAndUpdateStatusIfNeeded at v1.4.2 34ea80e0 and v1.7.0
# 59d663ae): past spec.activeDeadlineSeconds, counted from the attempt's Status.StartTime, the RayJob turns Failed
# with reason DeadlineExceeded and is not retried; own-cluster RayJobs with shutdownAfterJobFinishes then lose their
# GPU cluster. Both CRDs declare it int32 and KubeRay's validation.go refuses a value <= 0.
@pytest.mark.graph
def test_the_rayjob_carries_the_recipes_deadline_in_both_modes_and_both_crds(synth, stack):
    for mode in ("standing-cluster", "own-cluster"):
        r = synth(stack, {"jobMode": mode})
        assert r.error is None, r.error
        s = _settings(r)
        job = r.get(RAYJOB, "rayjob")
        expected = recipes.job_deadline_seconds(s.recipe)
        assert job.get("spec.activeDeadlineSeconds") == expected
        assert expected == 4 * 3600 + s.recipe.max_num_steps * s.recipe.step_budget_seconds
        validate_any(
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "metadata": job.inputs["metadata"],
                "spec": job.inputs["spec"],
            }
        )


@pytest.mark.graph
def test_jobDeadlineSeconds_sets_or_removes_the_deadline_and_changes_it_in_place(synth):
    base = synth("dev").get(RAYJOB, "rayjob")
    longer = synth("dev", {"jobDeadlineSeconds": 3 * 86400}).get(RAYJOB, "rayjob")
    assert longer.get("spec.activeDeadlineSeconds") == 3 * 86400
    # Only the deadline differs, and it is not a path that replaces the RayJob: a running job keeps running.
    changed = {k for k in base.inputs["spec"] if base.inputs["spec"][k] != longer.inputs["spec"].get(k)}
    assert changed == {"activeDeadlineSeconds"}
    assert not any(p.startswith("spec.activeDeadlineSeconds") for p in longer.replace_on_changes)
    assert "activeDeadlineSeconds" not in synth("dev", {"jobDeadlineSeconds": 0}).get(RAYJOB, "rayjob").inputs["spec"]


@pytest.mark.unit
@pytest.mark.parametrize(
    "values,key",
    [
        ({"jobDeadlineSeconds": -1}, "nemo-rl-gke:jobDeadlineSeconds"),
        ({"jobDeadlineSeconds": 2**31}, "nemo-rl-gke:jobDeadlineSeconds"),
        ({"jobOverrides": {"max_num_steps": 10**7}}, "nemo-rl-gke:jobOverrides.max_num_steps"),
    ],
)
def test_a_deadline_kuberay_cannot_take_is_refused_in_one_line(values, key):
    with pytest.raises(SettingsError) as e:
        load_settings("dev", "example-project", values, {"hfToken": "secret", "wandbApiKey": "secret"})
    [line] = e.value.problems
    assert line.startswith(key + ":")
