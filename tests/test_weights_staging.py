"""weightsPath bucket-import in the rendered graph (the codelab ships it): the staging Job starts without Lustre, the
import waits for the instance and the staging, the prefetch for the import; exactly the grants the two Jobs need;
the job's model path and run name unchanged; the critical-path report counts the new path.
"""

from __future__ import annotations

import shlex

import pytest

from core import catalog, weights
from core.catalog import replacements
from synth import critical_path as cp
from synth import render
from tests.k8s_validation import validate_any

pytestmark = pytest.mark.graph

JOB = "kubernetes:batch/v1:Job"
KSA = "kubernetes:core/v1:ServiceAccount"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
LUSTRE = "gcp:lustre/instance:Instance"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
MF_MEMBER = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
IAM_TYPES = (MF_MEMBER, BUCKET_MEMBER, PROJECT_MEMBER, SA_MEMBER, "gcp:artifactregistry/repositoryIamMember")
DOWNLOAD = {"weightsPath": "lustre-download"}
QWEN = "Qwen/Qwen2.5-72B-Instruct"


@pytest.fixture(scope="module")
def codelab(synth):
    r = synth("codelab")
    assert r.error is None, r.error
    return r


def command(job) -> list[str]:
    return job.get("spec.template.spec.containers.0.command")


def test_the_staging_job_needs_neither_the_lustre_instance_nor_its_volume(codelab):
    r = codelab
    stage = r.get(JOB, "stage")
    assert not r.depends_on(stage, r.get(LUSTRE, "lustre")) and not r.depends_on(stage, r.get(PVC, "lustre-pvc"))
    pod = stage.get("spec.template.spec")
    assert not any("persistentVolumeClaim" in v for v in pod["volumes"])
    # It waits for what its pod names and for the grants its GCS FUSE sidecar mounts with.
    for dep in (
        (KSA, "stage-ksa"),
        ("kubernetes:core/v1:Secret", "tokens"),
        ("kubernetes:core/v1:ConfigMap", "job-scripts"),
        (MF_MEMBER, "weights-stage-object-user"),
        (BUCKET_MEMBER, "weights-stage-bucket-list"),
    ):
        assert r.depends_on(stage, r.get(*dep)), dep
    validate_any(render.manifest_of(stage))
    # The bucket's staging folder, mounted alone, with the streaming writes the copy keeps to.
    (csi,) = [v["csi"] for v in pod["volumes"] if "csi" in v]
    assert csi["volumeAttributes"]["bucketName"] == r.get("gcp:storage/bucket:Bucket", "bucket").inputs["name"]
    options = csi["volumeAttributes"]["mountOptions"].split(",")
    assert f"only-dir={weights.STAGING_PREFIX}" in options and catalog.GCSFUSE_STREAMING_WRITES_OPTION in options
    argv = command(stage)
    assert argv[argv.index("--workers") + 1] == str(catalog.GCSFUSE_STREAMING_MAX_FILES)
    env = {e["name"] for e in stage.get("spec.template.spec.containers.0.env")}
    assert "HF_TOKEN" not in env and "HF_TOKEN_PATH" in env


def test_the_import_waits_for_the_instance_and_the_staging_and_the_prefetch_for_the_import(codelab):
    r = codelab
    stage, imp, pf = r.get(JOB, "stage"), r.get(JOB, "import"), r.get(JOB, "prefetch")
    assert r.depends_on(imp, r.get(LUSTRE, "lustre")) and r.depends_on(imp, stage)
    for grant in ((BUCKET_MEMBER, "lustre-agent-read"), (PROJECT_MEMBER, "weights-import-role-member")):
        assert r.depends_on(imp, r.get(*grant)), grant
    assert r.depends_on(imp, r.get(SA_MEMBER, "weights-import-workload-identity"))
    # No Lustre mount: importData writes; the pod only calls the API (and runs as nobody).
    pod = imp.get("spec.template.spec")
    assert [v for v in pod["volumes"] if "configMap" not in v] == []
    assert pod["securityContext"]["runAsNonRoot"] is True
    validate_any(render.manifest_of(imp))
    assert r.depends_on(pf, imp)
    argv = command(pf)
    assert argv[argv.index("--imported") + 1] == weights.STAGED_MANIFEST
    # Pulumi waits long enough for each: the staging like a download, the import at the slowest tolerated rate.
    nbytes = catalog.MODELS[QWEN].weight_bytes
    assert int(stage.custom_timeouts["create"].rstrip("m")) * 60 >= nbytes / 50e6
    assert int(imp.custom_timeouts["create"].rstrip("m")) * 60 >= nbytes / weights.SLOWEST_IMPORT_BYTES_PER_S
    assert int(imp.get("metadata.annotations")[catalog.IMPORT_BYTES_ANNOTATION]) == nbytes
    assert int(pf.get("metadata.annotations")[catalog.DOWNLOAD_BYTES_ANNOTATION]) == 0  # the model is not its


def test_the_import_reads_the_staged_prefix_into_the_root_where_the_job_reads_the_model(codelab):
    r = codelab
    stage_argv, import_argv = command(r.get(JOB, "stage")), command(r.get(JOB, "import"))
    source = import_argv[import_argv.index("--source") + 1]
    bucket = r.get("gcp:storage/bucket:Bucket", "bucket").inputs["name"]
    model = r.outputs["modelPath"]
    mount = r.outputs["lustreMountPath"].rstrip("/")
    commit = catalog.MODELS[QWEN].revision
    assert source == f"gs://{bucket}/{weights.STAGING_PREFIX}/{QWEN}@{commit}/"
    assert import_argv[import_argv.index("--lustre-path") + 1] == "/"
    # The staging writes <prefix>/<model>@<commit>/<the model's path on Lustre>/..., so that importing that prefix into
    # the file system's root puts each file at the model path the job trains from.
    dest = stage_argv[stage_argv.index("--dest") + 1]
    object_path = f"{weights.STAGING_PREFIX}/{dest[len(weights.STAGE_MOUNT) + 1 :]}"
    assert object_path.startswith(source[len(f"gs://{bucket}/") :])
    assert "/" + object_path[len(source) - len(f"gs://{bucket}/") :] == model[len(mount) :]
    instance = r.get(LUSTRE, "lustre").inputs
    assert import_argv[import_argv.index("--instance") + 1] == (
        f"projects/{instance['project']}/locations/{instance['location']}/instances/{instance['instanceId']}"
    )


def test_both_ways_the_job_trains_the_same_model_path_under_the_same_run_name(codelab, synth):
    staged, downloaded = codelab, synth("codelab", DOWNLOAD)
    assert staged.outputs["modelPath"] == downloaded.outputs["modelPath"]
    assert staged.outputs["runName"] == downloaded.outputs["runName"]
    assert staged.outputs["prefetchMarker"] == downloaded.outputs["prefetchMarker"]
    # The RayJob itself is the same object: switching the path on a deployed stack never stops the job.
    assert staged.get(RAYJOB, "rayjob").inputs == downloaded.get(RAYJOB, "rayjob").inputs
    entry = shlex.split(staged.get(RAYJOB, "rayjob").get("spec.entrypoint"))[2]
    assert f"policy.model_name={staged.outputs['modelPath']}" in entry
    assert not [j for j in downloaded.of_type(JOB) if j.name in ("stage", "import")]


def _members(r) -> dict[str, list[tuple[str, str]]]:
    """member -> [(resource type, role)] of every IAM grant the stack declares."""
    out: dict[str, list[tuple[str, str]]] = {}
    for res in r.resources:
        if res.custom and res.type.startswith(IAM_TYPES) and "member" in res.inputs:
            out.setdefault(str(res.inputs["member"]), []).append((res.type, str(res.inputs["role"])))
    return out


def test_each_identity_holds_exactly_the_grants_the_transfer_needs(codelab):
    r = codelab
    members = _members(r)
    stage_ksa = r.get(KSA, "stage-ksa").inputs["metadata"]
    stage_principal = stage_ksa["annotations"]["nemo-rl-gke/workload-identity-principal"]
    assert stage_principal.endswith(f"/subject/ns/{stage_ksa['namespace']}/sa/{stage_ksa['name']}")
    # The staging Job's principal: object write on the staging managed folder, bucket listing only.
    assert sorted(members[stage_principal]) == [
        (BUCKET_MEMBER, catalog.BUCKET_LIST_ROLE),
        (MF_MEMBER, catalog.EXPORT_ROLE),
    ]
    write = r.get(MF_MEMBER, "weights-stage-object-user")
    managed = r.get("gcp:storage/managedFolder:ManagedFolder", "weights-managed-folder")
    assert managed.inputs["name"] == f"{weights.STAGING_PREFIX}/" and r.depends_on(write, managed)
    listing = r.get(BUCKET_MEMBER, "weights-stage-bucket-list").inputs["condition"]["expression"]
    assert listing == f'resource.type == "{catalog.BUCKET_RESOURCE_TYPE}"'
    # The Lustre service agent: object read on the bucket, after its identity exists.
    from synth import engine

    agent = r.get(BUCKET_MEMBER, "lustre-agent-read")
    assert agent.inputs["member"] == f"serviceAccount:{catalog.lustre_service_agent(engine.PLACEHOLDER_PROJECT_NUMBER)}"
    assert members[agent.inputs["member"]] == [(BUCKET_MEMBER, catalog.LUSTRE_AGENT_BUCKET_ROLE)]
    assert "condition" not in agent.inputs
    identity = r.get("gcp:projects/serviceIdentity:ServiceIdentity", "lustre-agent")
    assert identity.inputs["service"] == "lustre.googleapis.com" and r.depends_on(agent, identity)
    # The import's caller: a custom role with exactly importData and reading operations, on its own account only.
    role = r.get(ROLE, "weights-import-role").inputs
    assert sorted(role["permissions"]) == sorted(catalog.LUSTRE_IMPORT_PERMISSIONS)
    account = r.get("gcp:serviceaccount/account:Account", "weights-import-account")
    role_member = r.get(PROJECT_MEMBER, "weights-import-role-member")
    assert role_member.inputs["role"] == f"projects/{role['project']}/roles/{role['roleId']}"
    assert [m for m, grants in members.items() if any(g[1] == role_member.inputs["role"] for g in grants)] == [
        role_member.inputs["member"]
    ]
    assert members[role_member.inputs["member"]] == [(PROJECT_MEMBER, role_member.inputs["role"])]
    assert r.depends_on(role_member, account)
    # The import Job's KSA acts as that account, and only it may.
    import_ksa = r.get(KSA, "import-ksa").inputs["metadata"]
    acts = r.get(SA_MEMBER, "weights-import-workload-identity").inputs
    assert acts["role"] == "roles/iam.workloadIdentityUser"
    pool = r.config.get("gcp:project") + ".svc.id.goog"
    assert acts["member"] == f"serviceAccount:{pool}[{import_ksa['namespace']}/{import_ksa['name']}]"
    email = f"{account.inputs['accountId']}@{account.inputs['project']}.iam.gserviceaccount.com"
    assert import_ksa["annotations"]["iam.gke.io/gcp-service-account"] == email
    assert role_member.inputs["member"] == f"serviceAccount:{email}"
    # Pods run as those KSAs: nothing else does.
    assert r.get(JOB, "stage").get("spec.template.spec.serviceAccountName") == stage_ksa["name"]
    assert r.get(JOB, "import").get("spec.template.spec.serviceAccountName") == import_ksa["name"]


def test_the_import_roles_id_carries_its_creation_time_and_is_a_valid_custom_role_id(codelab):
    from synth import engine

    r = codelab
    role = r.get(ROLE, "weights-import-role")
    static = r.get("time:index/static:Static", "weights-import-role-created")
    assert r.depends_on(role, static) and static.inputs == {}  # no triggers: created once, never replaced
    rid = role.inputs["roleId"]
    assert rid == f"nemo_codelab_weightsImport{engine.PLACEHOLDER_UNIX}"
    # Custom role ids: letters, digits, '_' and '.', at most 64 (no '-').
    assert len(rid) <= 64 and all(c.isalnum() or c in "_." for c in rid), rid
    longest = "p" * 30
    assert len(longest.replace("-", "_") + "_weightsImport" + "9" * 11) <= 64


def test_every_new_resource_type_had_its_provider_rules_read(codelab):
    types = {res.type for res in codelab.resources if res.custom}
    unread = sorted(t for t in types if not replacements.diff_rules_read(t))
    assert unread == []
    for t in (ROLE, "gcp:projects/serviceIdentity:ServiceIdentity", "time:index/static:Static", SA_MEMBER):
        assert t in types and t in replacements.REPLACE_ONLY, t


def test_the_staging_folder_goes_with_its_objects_and_nothing_refuses_turning_staging_off(codelab):
    folder = codelab.get("gcp:storage/folder:Folder", "weights-folder")
    assert folder.inputs["forceDestroy"] is True
    assert replacements.delete_refusal("gcp:storage/folder:Folder", folder.inputs) == ""
    # The export's folders stay protected: they hold the run's results.
    assert codelab.get("gcp:storage/folder:Folder", "export-folder-0").inputs["forceDestroy"] is False


def test_an_experiment_stack_downloads_onto_its_platforms_lustre(synth):
    r = synth("codelab-exp1")
    assert r.error is None, r.error
    assert not [j for j in r.of_type(JOB) if j.name in ("stage", "import")]
    argv = command(r.get(JOB, "prefetch"))
    assert "--imported" not in argv
    # In Google Cloud it declares only its own export grants (infra/experiment_export.py): nothing staged, no import.
    own_export = {"ManagedFolder export-managed-folder", "ManagedFolderIamMember export-object-user"}
    own_export.add("BucketIAMMember export-bucket-list")
    gcp_resources = {f"{res.type.rsplit(':', 1)[1]} {res.name}" for res in r.resources if res.type.startswith("gcp:")}
    assert gcp_resources == own_export


def test_a_prefix_too_long_for_the_import_account_is_refused_in_one_line(synth):
    r = synth("dev", {"weightsPath": "bucket-import", "prefix": "a-prefix-of-23-chars-xy"})
    assert r.error is not None and r.resources == []
    lines = [ln.strip() for ln in r.error.splitlines() if ln.strip().startswith("- ")]
    assert lines == [
        "- nemo-rl-gke:weightsPath: bucket-import's service account id 'a-prefix-of-23-chars-xy-wimport' is longer "
        "than 30 characters; choose a prefix of at most 22 (now 'a-prefix-of-23-chars-xy') or set weightsPath to "
        "lustre-download"
    ]
    assert synth("dev", {"weightsPath": "bucket-import", "prefix": "a-prefix-of-22-chars-x"}).error is None


def test_without_the_prefetch_nothing_is_staged(synth):
    r = synth("codelab", {"prefetchWeights": False})
    assert r.error is None, r.error
    assert not [j for j in r.of_type(JOB) if j.name in ("stage", "import", "prefetch")]
    assert not [res for res in r.resources if res.type == ROLE]


# --- the critical-path report ---------------------------------------------------------------------------------------
def test_the_report_stages_while_lustre_is_created_and_imports_at_the_instances_rate(codelab):
    est = cp.estimate(codelab.resources)
    acts = {a.label: k for k, a in est.activities.items()}
    stage_run = acts["Job stage runs: 145 GB from the Hub"]
    import_run = acts["Job import runs: 145 GB imported into Lustre"]
    lustre = next(k for k, a in est.activities.items() if a.label == "Instance lustre")
    # The staging downloads while Lustre is still being created.
    assert est.start[stage_run] < est.finish[lustre]
    # The import starts after both, and lasts the operation's overhead plus the bytes at capacity x tier (9,000 GiB at
    # 1000 MB/s per TiB = 8.8 GB/s, below importData's 100 GB/s).
    inst = codelab.get(LUSTRE, "lustre").inputs
    rate = int(inst["capacityGib"]) / 1024 * int(inst["perUnitStorageThroughput"]) * 1e6
    assert rate < catalog.LUSTRE_IMPORT_MAX_BYTES_PER_S
    nbytes = catalog.MODELS[QWEN].weight_bytes
    assert est.activities[import_run].seconds == pytest.approx(
        catalog.NOMINAL_LUSTRE_IMPORT_OVERHEAD_SECONDS.seconds + nbytes / rate
    )
    assert est.start[import_run] >= max(est.finish[lustre], est.finish[stage_run])
    assert "at most importData's 100 GB/s" in est.activities[import_run].source
    # The prefetch (datasets, the model checked) follows the import; the weights are on Lustre when it ran, and
    # NeMo-RL's model load (then the first step) waits for that.
    prefetch_run = acts["Job prefetch runs: 0 GB from the Hub"]
    assert est.start[prefetch_run] > est.finish[import_run]
    assert prefetch_run in est.activities[cp.MODEL_LOAD].needs_all
    assert est.activities[cp.FIRST_STEP].needs_all == (cp.MODEL_LOAD,)


def test_staging_brings_the_weights_to_lustre_sooner_than_downloading_after_lustre(codelab, synth):
    staged = cp.estimate(codelab.resources)
    downloaded = cp.estimate(synth("codelab", DOWNLOAD).resources)

    def weights_ready(est):
        return max(est.finish[k] for k in est.activities if k.endswith("#ran") and "prefetch" in k)

    assert weights_ready(staged) < weights_ready(downloaded)
    assert staged.first_step_seconds <= downloaded.first_step_seconds


def test_the_import_rate_is_capped_at_the_documented_ceiling():
    # A large instance (Lustre's 1000 MB/s-per-TiB tier at 1,530,000 GiB is ~1.5 TB/s) imports at importData's 100 GB/s.
    assert catalog.lustre_import_bytes_per_s(1_530_000, 1000) == catalog.LUSTRE_IMPORT_MAX_BYTES_PER_S
    assert catalog.lustre_import_bytes_per_s(9_000, 1000) == pytest.approx(9_000 / 1024 * 1e9)
