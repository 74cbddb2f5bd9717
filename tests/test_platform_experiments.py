"""Platform and experiment stacks: an experiment stack (`platformStack` set) reads its platform's outputs
through a pulumi.StackReference, which the engine answers with the platform's synthesized outputs, as `pulumi
preview` answers it with the deployed platform's. Oracles: the KubeRay CRDs v1.4.2 and v1.7.0 and the Kubernetes
OpenAPI (tests/k8s_validation.py), KubeRay's RayJob semantics at those tags (docs/research/platform.md §1, with file
and line), and the Pulumi CLI's config merge (pulumi/pulumi pkg/workspace/config.go mergeConfig, §6b)."""

from __future__ import annotations

import shlex

import pytest
import yaml

from core import export
from core.settings import platform
from synth import engine
from synth.render import manifest_of
from tests.k8s_validation import validate_any

pytestmark = pytest.mark.graph

PLATFORM = "codelab"
PLATFORM_REF = "organization/nemo-rl-gke/codelab"
EXPERIMENTS = ("codelab-exp1", "codelab-exp2", "codelab-exp3")  # the shipped examples (conftest EXPERIMENT_STACKS)
RAYJOB = "kubernetes:ray.io/v1:RayJob"


def rayjob(result: engine.SynthResult) -> engine.Registration:
    (job,) = result.of_type(RAYJOB)
    return job


def job_named(result: engine.SynthResult, role: str) -> engine.Registration:
    found = [
        r
        for r in result.of_type("kubernetes:batch/v1:Job")
        if r.get("metadata.labels", {}).get("nemo-rl-gke/role") == role
    ]
    assert len(found) == 1, [r.get("metadata.name") for r in found]
    return found[0]


# The only Google Cloud resources an experiment stack may declare: its export folder's managed folder, that folder's
# grant and the bucket-level listing Cloud Storage FUSE needs, all for its own export identity.
EXPERIMENT_GCP_TYPES = {
    "gcp:storage/managedFolder:ManagedFolder",
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
}


def hosted(plat: engine.SynthResult, stack: str) -> dict:
    return plat.outputs[platform.CONTRACT_OUTPUT][platform.EXPERIMENTS_KEY][stack]


@pytest.mark.parametrize("stack", EXPERIMENTS)
def test_an_experiment_stack_declares_only_its_own_export_grants_and_lives_in_its_own_namespace(synth, stack):
    exp, plat = synth(stack), synth(PLATFORM)
    assert exp.error is None, exp.error
    assert exp.stack_references == [PLATFORM_REF]
    entry = hosted(plat, stack)
    gcp_resources = [r for r in exp.resources if r.type.startswith("gcp:")]
    assert {r.type for r in gcp_resources} == EXPERIMENT_GCP_TYPES
    assert len(gcp_resources) == len(EXPERIMENT_GCP_TYPES)
    # Every grant is for its own export identity, in its own namespace, on its own folder.
    for r in gcp_resources:
        if "member" in r.inputs:
            assert r.inputs["member"] == entry["exportPrincipal"], r.key
            assert r.inputs["member"].endswith(f"/subject/ns/{entry['namespace']}/sa/{entry['exportServiceAccount']}")
    (managed,) = exp.of_type("gcp:storage/managedFolder:ManagedFolder")
    assert managed.get("name") == f"{entry['exportPrefix']}/"
    assert exp.of_type("kubernetes:ray.io/v1:RayCluster") == []
    assert entry["namespace"] == f"nemo-rl-{stack}"
    for r in exp.kubernetes_objects():
        assert r.get("metadata.namespace") == entry["namespace"], r.key
    # Nothing cluster-scoped and nothing the platform creates for it: Secrets, its scripts, Jobs and its RayJob.
    kinds = {r.type for r in exp.kubernetes_objects()}
    assert kinds == {"kubernetes:core/v1:Secret", "kubernetes:core/v1:ConfigMap", "kubernetes:batch/v1:Job", RAYJOB}
    platform_objects = {
        (r.type, r.get("metadata.namespace"), r.get("metadata.name")) for r in plat.kubernetes_objects()
    }
    for r in exp.kubernetes_objects():
        assert (r.type, r.get("metadata.namespace"), r.get("metadata.name")) not in platform_objects, r.key
    # The provider is the platform's cluster, from its kubeconfig output, which holds no credential and is not secret.
    (provider,) = exp.of_type("pulumi:providers:kubernetes")
    assert "kubeconfig" not in provider.secret_paths
    assert provider.get("kubeconfig") == plat.outputs["kubeconfig"]


@pytest.mark.parametrize("stack", EXPERIMENTS)
def test_every_object_of_an_experiment_validates_against_both_kuberay_crds_and_kubernetes(synth, stack):
    for r in synth(stack).kubernetes_objects():
        validate_any(manifest_of(r))


def test_two_experiments_on_one_platform_have_their_own_job_run_checkpoints_and_wandb_run(synth):
    seen: dict[str, set] = {"rayjob": set(), "run": set(), "ckpt": set(), "wandb": set(), "export": set()}
    for stack in EXPERIMENTS:
        r = synth(stack)
        job = rayjob(r)
        entry = job.get("spec.entrypoint")
        assert r.outputs["checkpointDir"] in entry
        assert f"logger.wandb.name={r.outputs['runName']}" in entry
        seen["rayjob"].add(job.get("metadata.name"))
        seen["run"].add(r.outputs["runName"])
        seen["ckpt"].add(r.outputs["checkpointDir"])
        seen["wandb"].add(r.outputs["runName"])
        seen["export"].add(job_named(r, "checkpoint-export").get("metadata.name"))
    for what, values in seen.items():
        assert len(values) == len(EXPERIMENTS), (what, values)


@pytest.mark.parametrize("stack", EXPERIMENTS)
def test_an_experiments_rayjob_brings_its_own_cluster_with_bounded_attempts_as_kuberay_runs_them(synth, stack):
    """KubeRay, own-cluster RayJob (rayjob_controller.go at v1.4.2 and v1.7.0, docs/research/platform.md §1a):
    backoffLimit N = N+1 attempts, each a new RayCluster that is submitted to only when all its workers run;
    shutdownAfterJobFinishes deletes the GPU cluster after the last one. backoffLimit > 0 is refused with a
    clusterSelector from v1.6.0 (utils/validation.go, commit 5d59a37b3): never both."""
    job = rayjob(synth(stack))
    spec = job.get("spec")
    assert "clusterSelector" not in spec
    assert spec["backoffLimit"] == 5  # jobBackoffLimit in the stack file: 6 attempts
    assert spec["shutdownAfterJobFinishes"] is True
    assert spec["ttlSecondsAfterFinished"] == 0
    assert spec["submissionMode"] == "K8sJobMode"
    # Fields one of the two CRDs lacks (deletionPolicy 1.4.2 only, deletionStrategy/preRunningDeadlineSeconds
    # 1.5+/1.7.0 only) are never rendered.
    for absent in ("deletionPolicy", "deletionStrategy", "preRunningDeadlineSeconds"):
        assert absent not in spec


@pytest.mark.parametrize("stack", EXPERIMENTS)
def test_an_experiments_export_runs_on_the_cpu_pool_after_training_and_never_reruns_it(synth, stack):
    r = synth(stack)
    spec = rayjob(r).get("spec")
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]
    # The GPU cluster has nothing to do after training: no bucket mount, no FUSE sidecar on its head.
    assert "gke-gcsfuse/volumes" not in (head.get("metadata", {}).get("annotations") or {})
    run, mount = r.outputs["runName"], "/lustre"
    marker = export.trained_marker(mount, run)
    script = shlex.split(spec["entrypoint"])[2].splitlines()
    # Under `set -e`, the marker follows the training command: only a successful training writes it.
    assert script[0] == "set -eu"
    train = next(i for i, line in enumerate(script) if "run_grpo" in line)
    assert script[train + 1 :] == [shlex.join(c) for c in export.mark_trained_argv(mount, run)]
    job = job_named(r, "checkpoint-export")
    assert job.get("metadata.annotations")["pulumi.com/skipAwait"] == "true"
    pod = job.get("spec.template.spec")
    assert pod["nodeSelector"] == head["spec"]["nodeSelector"]  # the CPU pool of the head, no GPU
    (container,) = pod["containers"]
    assert "nvidia.com/gpu" not in str(container["resources"])
    wait_and_copy = container["command"][2]
    assert f"until [ -f {marker} ]" in wait_and_copy
    # Retries are the export's own; nothing in the Job touches the RayJob.
    assert job.get("spec.backoffLimit") >= 1
    # Run as its own export identity, the one its own grant gives write on its own folder.
    assert pod["serviceAccountName"] == hosted(synth(PLATFORM), stack)["exportServiceAccount"]


def test_the_export_leaves_the_optimizer_out_by_default_where_the_checkpoint_has_it_apart(synth):
    """DTensor (gemma, codelab-exp2): <step>/policy/optimizer is its own directory and is excluded; Megatron
    (qwen, codelab-exp1) embeds it in iter_* (NeMo-RL v0.7.0 nemo_rl/utils/checkpoint.py L175-183): copied, and
    preview says so; exportOptimizer keeps it."""
    dtensor = job_named(synth("codelab-exp2"), "checkpoint-export").get("spec.template.spec.containers")[0]
    assert f"--exclude {export.OPTIMIZER_GLOB}" in dtensor["command"][2]
    kept = synth("codelab-exp2", {"exportOptimizer": True})
    assert "--exclude" not in job_named(kept, "checkpoint-export").get("spec.template.spec.containers")[0]["command"][2]
    megatron = synth("codelab-exp1")
    assert (
        "--exclude"
        not in job_named(megatron, "checkpoint-export").get("spec.template.spec.containers")[0]["command"][2]
    )
    assert any(w.startswith("nemo-rl-gke:exportOptimizer:") for w in megatron.warnings)


def test_a_platform_setting_set_in_an_experiment_is_refused_naming_the_key_before_anything_is_read(synth):
    r = synth("codelab-exp1", {"lustreCapacityGib": 36000, "gpuNodes": 16})
    assert r.error is not None
    lines = [line for line in r.error.splitlines() if line.startswith("  - ")]
    assert len(lines) == 2
    assert lines[0].startswith("  - nemo-rl-gke:gpuNodes: is a platform setting")
    assert lines[1].startswith("  - nemo-rl-gke:lustreCapacityGib: is a platform setting")
    assert r.resources == [] and r.stack_references == []  # refused before the StackReference read


def test_a_platform_setting_at_its_pulumi_yaml_default_is_not_a_set_value(synth):
    """The CLI merges every Pulumi.yaml default into the stack's config (config.go mergeConfig): the program sees
    lustreTier's default in every stack. Equal to the default means not set, whatever the spelling."""
    assert synth("codelab-exp1").config["nemo-rl-gke:lustreTier"]  # the merged default is there
    for value in ("500", 500):
        fields = {"lustreTier": value}
        assert platform.platform_only_problems(fields) == [], value
    assert platform.platform_only_problems({"lustreTier": "1000"}) != []


def test_a_referenced_stack_that_is_not_a_platform_is_refused_with_one_line():
    not_platform = engine.StackOutputs({"rayJobName": "x"}, [])
    r = engine.run("codelab-exp1", stack_references={PLATFORM_REF: not_platform})
    assert r.error is not None
    problems = [line for line in r.error.splitlines() if line.startswith("  - ")]
    assert problems == [
        f"  - nemo-rl-gke:platformStack: stack {PLATFORM_REF!r} is not a nemo-rl-gke platform stack (it has no "
        "'experimentPlatform' output; is it an experiment stack, or not yet up?)"
    ]
    assert [x.type for x in r.resources if x.type != "pulumi:pulumi:StackReference"] == []
    old = engine.StackOutputs({platform.CONTRACT_OUTPUT: {"schemaVersion": 0, "settings": {}}}, [])
    r = engine.run("codelab-exp1", stack_references={PLATFORM_REF: old})
    assert "platform contract version 0" in (r.error or "")


def test_a_platform_stack_exports_what_experiments_read_without_a_secret(synth, stack):
    """An experimenter reads the contract and the kubeconfig without the right to decrypt the platform's secrets:
    neither is a secret output, and neither holds one (the kubeconfig authenticates through gke-gcloud-auth-plugin)."""
    r = synth(stack)
    if r.config.get("nemo-rl-gke:platformStack"):
        pytest.skip("an experiment stack")
    contract = r.outputs[platform.CONTRACT_OUTPUT]
    assert contract["schemaVersion"] == platform.SCHEMA_VERSION
    assert not {"kubeconfig", platform.CONTRACT_OUTPUT} & set(r.secret_outputs)
    kubeconfig = yaml.safe_load(r.outputs["kubeconfig"])
    (user,) = kubeconfig["users"]
    assert set(user["user"]) == {"exec"} and user["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert not set(contract["settings"]) & platform.EXPERIMENT_KEYS
    # Names derived from the platform's prefix are resolved: the experiment's own prefix differs.
    assert contract["settings"]["bucketName"] == r.outputs["bucketUrl"].removeprefix("gs://")
    assert "hfToken" not in str(contract) and "synth-placeholder" not in str(contract)


def test_an_experiment_uses_its_own_tokens_secret_in_every_pod(synth):
    r = synth("codelab-exp1")
    (secret,) = r.of_type("kubernetes:core/v1:Secret")
    name = secret.get("metadata.name")
    assert name == "nemo-codelab-exp1-tokens"
    spec = rayjob(r).get("spec.rayClusterSpec")
    assert name in str(spec["headGroupSpec"]["template"]["spec"]["volumes"])
    prefetch = job_named(r, "weights-prefetch").get("spec.template.spec.volumes")
    assert name in str(prefetch)
    assert "nemo-rl-secrets" not in str(spec) + str(prefetch)


# --- GPUs only while they train ------------------------------------------------------------------------------------
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
PLACEHOLDERS_ROLE = "gpu-warmup"


def test_a_platform_without_a_job_of_its_own_keeps_no_gpu_worker_and_no_placeholder(synth):
    r = synth(PLATFORM, {"jobEnabled": False})
    assert r.error is None, r.error
    (cluster,) = r.of_type(RAYCLUSTER)
    (group,) = cluster.get("spec.workerGroupSpecs")
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (0, 0, 0)
    roles = [
        j.get("spec.template.metadata.labels", {}).get("nemo-rl-gke/role") for j in r.of_type("kubernetes:batch/v1:Job")
    ]
    assert PLACEHOLDERS_ROLE not in roles
    assert not [w for w in r.warnings if "idle" in w or "no job to run" in w]
    # GPU pools stay at zero until an experiment's own cluster asks for nodes; the contract still tells them apart.
    assert r.outputs[platform.CONTRACT_OUTPUT]["maxGpuNodes"] == 8
    # Asked for on purpose, standing workers are kept, and preview says they bill with no job.
    kept = synth(PLATFORM, {"jobEnabled": False, "workerReplicas": 2})
    (group,) = kept.of_type(RAYCLUSTER)[0].get("spec.workerGroupSpecs")
    assert group["replicas"] == 2
    assert any("no job to run" in w for w in kept.warnings)


def test_placeholders_hold_no_more_nodes_than_the_jobs_workers_for_a_bound_the_cluster_enforces(synth):
    """Job spec.activeDeadlineSeconds is enforced by the Job controller (Kubernetes batch/v1 API), so the bound
    holds after a failed `pulumi up` too; priority -10 is the cluster autoscaler's expendable cutoff, the lowest value
    that still triggers scale-up ("Pods with priority lower than this cutoff: don't trigger scale-ups ... Nothing
    changes for pods with priority greater or equal to cutoff"; default cutoff -10: kubernetes/autoscaler
    cluster-autoscaler/FAQ.md @55c37cd5)."""
    r = synth(PLATFORM)
    (placeholders,) = [j for j in r.of_type("kubernetes:batch/v1:Job") if j.get("metadata.name").endswith("gpu-warmup")]
    job = rayjob(r)
    # The job's workers: its own cluster's (own-cluster, codelab with its queue) or the standing cluster's.
    own = job.get("spec.rayClusterSpec.workerGroupSpecs")
    groups = own if own else r.of_type(RAYCLUSTER)[0].get("spec.workerGroupSpecs")
    workers = sum(g["replicas"] for g in groups)
    assert placeholders.get("spec.parallelism") == placeholders.get("spec.completions") == workers
    assert placeholders.get("spec.activeDeadlineSeconds") == 30 * 60
    (pc,) = r.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert pc.get("value") == -10 and pc.get("preemptionPolicy") == "Never"


# --- time: warm and cold platform ----------------------------------------------------------------------------------
def test_an_experiment_on_a_warm_platform_waits_for_its_gate_and_on_a_cold_one_for_node_boot_and_image(synth):
    from core import catalog
    from synth import critical_path

    records = synth("codelab-exp1").resources
    cold, warm = critical_path.estimate(records), critical_path.estimate(records, warm=True)
    assert cold.dominant == "GPU nodes provisioned for the first GPU pod"
    # Warm nodes passed the full gate within its window: only its GPU part runs, and the model load is the longest.
    assert warm.dominant == "NeMo-RL loads the weights from Lustre"
    # Cold = warm + node boot + the image streamed from the copy the platform prewarmed + the gate's sweeps, on the
    # critical path, and the datasets staged by this run (warm: a previous run's markers make the staging Job's steps
    # skip) (nominal catalog figures, see their sources).
    stream = catalog.NOMINAL_IMAGE_STREAM_SECONDS.seconds
    sweeps = catalog.NOMINAL_GATE_SECONDS.seconds - catalog.NOMINAL_GATE_FAST_SECONDS.seconds
    staging = catalog.NOMINAL_DATA_STAGING_SECONDS.seconds - catalog.NOMINAL_SCRIPT_SECONDS.seconds
    assert cold.first_step_seconds - warm.first_step_seconds == pytest.approx(
        catalog.NOMINAL_GPU_NODE_SECONDS.seconds + stream + sweeps + staging
    )
    assert warm.first_step_seconds < 5 * 60  # minutes for an experiment, the model load included


def test_an_experiment_larger_than_its_platforms_gpu_pools_is_refused_naming_its_key(synth):
    r = synth("codelab-exp1", {"workerReplicas": 9})
    problems = [line for line in (r.error or "").splitlines() if line.startswith("  - ")]
    assert problems == [
        "  - nemo-rl-gke:workerReplicas: 9 GPU workers need 9 nodes but the GPU pools scale to at most 8 "
        "(nemo-rl-gke:gpuNodes)"
    ]
    assert [x.type for x in r.resources] == []  # refused after the read, before any registration


def test_a_standing_cluster_job_shows_its_attempts_log_through_an_output(synth):
    out = synth("dev").outputs
    assert out["attemptsCommand"].endswith(f"-- cat /lustre/attempts/{out['runName']}.jsonl")
    entry = synth("dev").get(RAYJOB, "rayjob").get("spec.entrypoint")
    assert f"--log /lustre/attempts/{out['runName']}.jsonl" in entry
    assert "attemptsCommand" not in synth("codelab-exp1").outputs  # KubeRay counts an own cluster's attempts


def test_an_experiment_whose_platform_does_not_synthesize_says_so_in_one_line(monkeypatch):
    real = engine.run

    def platform_broken(stack, *args, **kwargs):
        if stack == PLATFORM:  # the platform's own settings are refused
            return real(PLATFORM, {"lustreTier": 7})
        return real(stack, *args, **kwargs)

    monkeypatch.setattr(engine, "run", platform_broken)
    with pytest.raises(engine.StackConfigError) as err:
        real("codelab-exp1")
    assert str(err.value).startswith("stack 'codelab-exp1' reads platform stack 'codelab', which does not synthesize: ")
    assert "nemo-rl-gke:lustreTier" in str(err.value) and "\n" not in str(err.value)


def test_an_experiment_needing_egress_its_namespaces_policies_do_not_allow_is_refused_naming_the_key(synth):
    """Its pods live under its namespace's NetworkPolicies, which its platform renders (workloads/experiment_tenancy.py)
    and publishes in the contract; its Ray pods mount the shared cache read-only, so an experiment without the
    prefetch (its head would download into it) is refused; W&B from its head and its data staging Job's Hub and
    Cloud Storage are open to every experiment."""
    r = synth("codelab-exp2", {"prefetchWeights": False})
    problems = [line for line in (r.error or "").splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and problems[0].startswith("  - nemo-rl-gke:prefetchWeights: without the prefetch")
    assert [x.type for x in r.resources if x.type != "pulumi:pulumi:StackReference"] == []
    egress = synth(PLATFORM).outputs[platform.CONTRACT_OUTPUT]["egress"]
    assert egress == {
        "prefetch": True,
        "prefetchPypi": True,
        "headWandb": True,
        "workersHub": False,
        "staging": True,
        "stagingStorage": True,
    }
    ok = synth("codelab-exp2", {"jobOverrides": {"wandb_enabled": True}})
    assert ok.error is None, ok.error


def test_every_experiment_pod_is_at_the_pod_security_level_of_its_role_on_the_platform(synth):
    """The roles' levels of tests/test_security_measures.py; the export Job runs as root like the head (the files
    it reads on Lustre belong to root), so baseline, with every capability dropped."""
    from tests import pod_security_standards as pss
    from tests import security_figures as f

    want = {
        "ray-head": "baseline",
        "ray-worker": "privileged",
        "ray-job-submitter": "restricted",
        "weights-prefetch": "baseline",
        "checkpoint-export": "baseline",
        "data-staging": "baseline",
    }
    for stack in EXPERIMENTS:
        seen = set()
        for p in f.workload_pods(synth(stack)):
            role = p.labels[f.ROLE]
            seen.add(role)
            assert pss.level_of(p.spec) == want[role], (stack, p.source, pss.violations(p.spec, "restricted"))
            if role == "checkpoint-export":
                ours = [c for c in p.containers if not c["name"].startswith("gke-gcsfuse")]
                assert all(c["securityContext"]["capabilities"]["drop"] == ["ALL"] for c in ours)
        assert seen == set(want), (stack, seen)


def test_an_experiment_stack_name_is_held_only_to_the_kubernetes_names_it_creates(synth):
    # 26 characters of prefix would overflow a GCP service-account id (30 with "-nodes"), which an experiment never
    # creates; its RayJob name (<prefix>-grpo) stays within KubeRay's 47.
    ok = synth("codelab-exp1", {"prefix": "team-a-lr-sweep-0042-run1"})
    assert ok.error is None, ok.error
    assert rayjob(ok).get("metadata.name") == "team-a-lr-sweep-0042-run1-grpo"
    too_long = synth("codelab-exp1", {"prefix": "team-a-lr-sweep-0042-run1-with-more"})
    problems = [line for line in (too_long.error or "").splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and problems[0].startswith("  - nemo-rl-gke:prefix: ")


# --- an experiment's place on its platform ---------------------------------------------------------------------------
def _problems(r: engine.SynthResult) -> list[str]:
    return [line for line in (r.error or "").splitlines() if line.startswith("  - ")]


def _registered(r: engine.SynthResult) -> list[str]:
    return [x.type for x in r.resources if x.type != "pulumi:pulumi:StackReference"]


def test_an_experiment_its_platform_does_not_host_is_refused_in_one_line_before_anything_is_registered(synth):
    r = synth("codelab-exp1", {"experiment": "team-z"})
    assert _problems(r) == [
        "  - nemo-rl-gke:experiment: platform 'organization/nemo-rl-gke/codelab' hosts no experiment 'team-z' (its "
        "experiments: codelab-exp1, codelab-exp2, codelab-exp3); add it to the platform's nemo-rl-gke:experiments and "
        "run `pulumi up` there, or set experiment to one of them"
    ]
    assert _registered(r) == []
    # By default the stack's own name: a platform that lists none refuses every experiment stack.
    bare = engine.run(
        "codelab-exp2", stack_references={PLATFORM_REF: engine.StackOutputs.of(synth(PLATFORM, {"experiments": {}}))}
    )
    (line,) = _problems(bare)
    assert line.startswith("  - nemo-rl-gke:experiment: platform ") and "(default: the stack's name)" in line
    assert _registered(bare) == []


def test_an_experiment_named_explicitly_lives_in_that_experiments_namespace(synth):
    r = synth("codelab-exp1", {"experiment": "codelab-exp3"})
    assert r.error is None, r.error
    assert {x.get("metadata.namespace") for x in r.kubernetes_objects()} == {"nemo-rl-codelab-exp3"}
    assert r.outputs["experiment"] == "codelab-exp3"


def test_an_experiment_with_its_platforms_names_or_run_name_is_refused_before_anything_is_registered(synth):
    plat = synth(PLATFORM)
    same_prefix = synth("codelab-exp1", {"prefix": "nemo-codelab"})
    (line,) = _problems(same_prefix)
    assert line.startswith("  - nemo-rl-gke:prefix: 'nemo-codelab' gives this experiment its platform's own names")
    assert _registered(same_prefix) == []
    same_run = synth("codelab-exp1", {"runName": plat.outputs["runName"]})
    assert _problems(same_run) == [
        f"  - nemo-rl-gke:runName: {plat.outputs['runName']!r} is its platform's run name; choose another"
    ]
    assert _registered(same_run) == []


def test_an_experiment_exports_only_to_its_own_folder_and_prefetches_in_the_image_that_may_write_the_cache(synth):
    elsewhere = synth("codelab-exp1", {"exportDestination": "exports"})
    (line,) = _problems(elsewhere)
    assert line.startswith("  - nemo-rl-gke:exportDestination: an experiment exports to its own folder gs://")
    assert line.endswith(
        "/experiments/codelab-exp1 (its platform creates it); remove exportDestination (now 'exports')"
    )
    assert _registered(elsewhere) == []
    own = synth("codelab-exp1", {"exportDestination": "experiments/codelab-exp1"})
    assert own.error is None, own.error
    nemo_image = synth("codelab-exp1", {"prefetchImage": "nemo-rl"})
    (line,) = _problems(nemo_image)
    assert line.startswith("  - nemo-rl-gke:prefetchImage: an experiment's prefetch runs the pinned Python image")
    assert _registered(nemo_image) == []


def test_a_token_auth_experiment_on_a_platform_with_its_own_kuberay_brings_the_secret_its_rayjob_names(synth):
    """With kubeRayOperator helm a v0.7.0 experiment turns Ray token auth on (rayTokenAuth auto): its RayJob's
    authOptions name the Secret nemo-rl-ray-auth, which its own stack creates in its namespace from its own
    rayAuthToken (a v0.4.0 platform has no token auth and creates none), and the operator watches its namespace."""
    helm = synth(PLATFORM, {"kubeRayOperator": "helm"})
    assert helm.error is None, helm.error
    assert not [s for s in helm.of_type("kubernetes:core/v1:Secret") if s.get("metadata.name") == "nemo-rl-ray-auth"]
    refs = {PLATFORM_REF: engine.StackOutputs.of(helm)}
    r = engine.run("codelab-exp3", {"nemoRlRelease": "v0.7.0"}, stack_references=refs)
    assert r.error is None, r.error
    auth = rayjob(r).get("spec.rayClusterSpec.authOptions")
    assert auth == {"mode": "token", "secretName": "nemo-rl-ray-auth"}
    (secret,) = [s for s in r.of_type("kubernetes:core/v1:Secret") if s.get("metadata.name") == auth["secretName"]]
    assert secret.get("metadata.namespace") == rayjob(r).get("metadata.namespace") == "nemo-rl-codelab-exp3"
    assert "stringData" in secret.secret_paths or any(p.startswith("stringData") for p in secret.secret_paths)
    missing = engine.run(
        "codelab-exp3", {"nemoRlRelease": "v0.7.0"}, secrets={"rayAuthToken": None}, stack_references=refs
    )
    (line,) = _problems(missing)
    assert line.startswith("  - nemo-rl-gke:rayAuthToken:")
    # The operator manages the experiment namespaces too, with its Role in each.
    (release,) = helm.of_type("kubernetes:helm.sh/v3:Release")
    watched = release.get("values.watchNamespace")
    assert watched == ["nemo-rl", "nemo-rl-codelab-exp1", "nemo-rl-codelab-exp2", "nemo-rl-codelab-exp3"]
    roles = {
        r.get("metadata.namespace")
        for r in helm.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
        if r.get("metadata.name") == "kuberay-operator-workload"
    }
    assert roles == set(watched)
