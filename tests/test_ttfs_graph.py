"""Time to the first step, in the shipped stacks' graphs: GPU warmup, weights prefetch, checkpoint export, the
order between them and the job, the settings that turn them off, and the refusals naming their keys."""

from __future__ import annotations

import itertools
import shlex

import pytest

from core import catalog, export, prefetch
from synth import critical_path as cp
from synth import render
from tests.k8s_validation import validate_any

pytestmark = pytest.mark.graph

JOB = "kubernetes:batch/v1:Job"
RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
LUSTRE = "gcp:lustre/instance:Instance"


def prefetch_job(r):
    return r.get(JOB, "prefetch")


def warmup_job(r):
    return r.get(JOB, "placeholders")


def test_standing_cluster_job_waits_for_the_prefetch_while_the_raycluster_does_not(synth, stack):
    # codelab queues its jobs, so its own job runs own-cluster unless it says otherwise.
    r = synth(stack, STANDING if stack == "codelab" else None)
    assert r.error is None, r.error
    job, ray, pf = r.get(RAYJOB, "rayjob"), r.get(RAYCLUSTER, "raycluster"), prefetch_job(r)
    assert r.depends_on(job, pf)
    assert not r.depends_on(ray, pf)
    assert r.depends_on(pf, r.get(PVC, "lustre-pvc"))


def test_own_cluster_entrypoint_waits_for_the_marker_instead_of_a_graph_edge(synth):
    r = synth("codelab", {"jobMode": "own-cluster"})
    assert r.error is None, r.error
    job, pf = r.get(RAYJOB, "rayjob"), prefetch_job(r)
    assert not r.depends_on(job, pf)
    entry = job.get("spec.entrypoint")
    marker = pf.get("metadata.annotations")["nemo-rl-gke/marker"]
    wait_line = next(line for line in entry.splitlines() if "prefetch_hf.py wait" in line)
    train_line = next(line for line in entry.splitlines() if "run_grpo" in line)
    assert marker in wait_line
    assert entry.index(wait_line) < entry.index(train_line)


def test_warmup_placeholders_need_neither_lustre_nor_a_secret(synth, stack):
    r = synth(stack)
    job = warmup_job(r)
    assert not r.depends_on(job, r.get(LUSTRE, "lustre")) and not r.depends_on(job, r.get(PVC, "lustre-pvc"))
    pod = job.get("spec.template.spec")
    assert "volumes" not in pod and pod["priorityClassName"] == r.get(
        "kubernetes:scheduling.k8s.io/v1:PriorityClass", "priority-class"
    ).get("metadata.name")
    assert job.get("metadata.annotations")["pulumi.com/skipAwait"] == "true"
    if stack != "autopilot":
        # Every GPU pool of the capacity models exists before the placeholders ask the autoscaler.
        pools = [p for p in r.of_type("gcp:container/nodePool:NodePool") if p.name.startswith("gpu")]
        assert pools and all(r.depends_on(job, p) for p in pools)
    validate_any(render.manifest_of(job))


def test_prefetch_job_reads_the_token_from_a_file_and_waits_long_enough(synth, stack):
    r = synth(stack)
    pf = prefetch_job(r)
    validate_any(render.manifest_of(pf))
    container = pf.get("spec.template.spec.containers.0")
    names = {e["name"] for e in container["env"]}
    assert "HF_TOKEN" not in names and "HF_TOKEN_PATH" in names
    assert any(v.get("secret") for v in pf.get("spec.template.spec.volumes"))
    # The Job that downloads the model: the prefetch, or the staging Job where the model is imported (weightsPath).
    downloader = r.get(JOB, "stage") if r.config.get("nemo-rl-gke:weightsPath") == "bucket-import" else pf
    nbytes = int(downloader.get("metadata.annotations")[catalog.DOWNLOAD_BYTES_ANNOTATION])
    minutes = int(downloader.custom_timeouts["create"].rstrip("m"))
    assert minutes * 60 >= nbytes / prefetch.SLOWEST_DOWNLOAD_BYTES_PER_S > 10 * 60
    assert pf.get("metadata.annotations")["pulumi.com/replaceUnready"] == "true"
    # The job trains from the snapshot the prefetch pins.
    entry = r.get(RAYJOB, "rayjob").get("spec.entrypoint")
    assert f"policy.model_name={r.outputs['modelPath']}" in entry


def test_export_runs_after_training_as_a_cpu_job_and_the_head_mounts_no_bucket(synth, stack):
    r = synth(stack)
    entry = r.get(RAYJOB, "rayjob").get("spec.entrypoint")
    # The script's commands (a standing cluster's bounded-attempts line lists its steps in order): training, then
    # the trained marker the export Job waits for.
    lines = [shlex.join(c) for c in cp._script_commands(shlex.split(entry)[2])]
    mount, run = r.outputs["lustreMountPath"], r.outputs["runName"]
    marker = export.trained_marker(mount, run)
    assert lines[-2:] == [shlex.join(c) for c in export.mark_trained_argv(mount, run)]
    assert "run_grpo" in lines[-3] and not lines[-3].startswith("exec ")
    head = r.get(RAYCLUSTER, "raycluster").get("spec.headGroupSpec.template")
    assert "gke-gcsfuse/volumes" not in (head["metadata"].get("annotations") or {})
    assert not any("csi" in v for v in head["spec"]["volumes"])
    job = r.get(JOB, "export")
    assert job.inputs["metadata"]["annotations"]["nemo-rl-gke/waits-for"] == marker
    bucket = r.get("gcp:storage/bucket:Bucket", "bucket").inputs["name"]
    pod = job.inputs["spec"]["template"]
    assert pod["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    assert any(v.get("csi", {}).get("volumeAttributes", {}).get("bucketName") == bucket for v in pod["spec"]["volumes"])
    # The Job runs as the export's service account, after its grants exist (the sidecar mounts at pod start); the
    # RayCluster waits for none of them.
    for grant in (
        ("gcp:storage/managedFolderIamMember:ManagedFolderIamMember", "export-object-user"),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", "export-bucket-list"),
        ("kubernetes:core/v1:ServiceAccount", "export-ksa"),
    ):
        assert r.depends_on(job, r.get(*grant)), grant
        assert not r.depends_on(r.get(RAYCLUSTER, "raycluster"), r.get(*grant)), grant
    assert r.outputs["exportUrl"] == f"gs://{bucket}/{export.DEFAULT_PREFIX}/{r.outputs['runName']}"


def test_each_part_can_be_turned_off(synth):
    r = synth("dev", {"imagePath": "pull", "prefetchWeights": False, "exportCheckpoints": False})
    assert r.error is None, r.error
    # Only the data staging Job stays: it pins the datasets the run reads (core/data.py), it is no part to turn off.
    assert [j.name for j in r.of_type(JOB)] == ["data-staging"]
    assert r.of_type("kubernetes:apps/v1:DaemonSet") == [] or all(
        d.name != "cpu-prepull" for d in r.of_type("kubernetes:apps/v1:DaemonSet")
    )
    entry = r.get(RAYJOB, "rayjob").get("spec.entrypoint")
    # Without the prefetch Job the entrypoint downloads the pinned snapshot and trains from it, never from `main`.
    pinned = f"/lustre/models/google/gemma-3-27b-it@{catalog.MODELS['google/gemma-3-27b-it'].revision}"
    assert f"policy.model_name={pinned}" in entry and "export_checkpoints" not in entry
    assert "annotations" not in r.get(RAYCLUSTER, "raycluster").get("spec.headGroupSpec.template.metadata")


@pytest.mark.parametrize(
    "overrides,key",
    [
        ({"jobOverrides": '{"model_revision": "main"}'}, "nemo-rl-gke:jobOverrides.model_revision"),
        ({"exportDestination": "gs://someone-elses-bucket/exports"}, "nemo-rl-gke:exportDestination"),
        # A model outside the catalog needs its commit before anything is fetched (and its size, refused too).
        ({"jobOverrides": '{"model_name": "acme/unknown-model"}'}, "nemo-rl-gke:jobOverrides.model_revision"),
    ],
)
def test_bad_input_is_refused_before_anything_is_registered_naming_the_key(synth, overrides, key):
    r = synth("dev", overrides)
    assert r.error is not None and r.resources == []
    assert any(line.strip().startswith(f"- {key}:") for line in r.error.splitlines()), r.error


# The prefetch's own download onto Lustre (the codelab ships weightsPath bucket-import: tests/test_weights_staging.py).
DOWNLOAD = {"weightsPath": "lustre-download"}
STANDING = {"jobMode": "standing-cluster"}  # codelab's own job on its standing cluster (it queues: own-cluster)


def test_critical_path_follows_the_stacks_graph(synth):
    full = cp.estimate(synth("codelab", DOWNLOAD).resources)
    no_prefetch = cp.estimate(synth("codelab", {**DOWNLOAD, "prefetchWeights": False}).resources)
    plain_pull = cp.estimate(synth("codelab", {**DOWNLOAD, "imagePath": "pull"}).resources)
    assert full.first_step_seconds < no_prefetch.first_step_seconds
    assert full.first_step_seconds < plain_pull.first_step_seconds
    # Without the prefetch the whole download follows the job's start: the entrypoint's own step.
    download = (
        catalog.MODELS["Qwen/Qwen2.5-72B-Instruct"].weight_bytes / catalog.NOMINAL_HF_DOWNLOAD_BYTES_PER_S.seconds
    )
    [step] = [a for a in no_prefetch.activities.values() if a.label.startswith("the entrypoint downloads")]
    assert step.seconds == pytest.approx(download) and step.key in no_prefetch.path
    # The one-step-at-a-time figure hardly moves: the same steps, in another order.
    assert abs(full.sequential_seconds - no_prefetch.sequential_seconds) < 60
    assert full.ratio < no_prefetch.ratio


def test_the_one_step_at_a_time_estimate_counts_enabling_the_apis_once(synth):
    # The seeds enable every API with one `gcloud services enable`: the sequential baseline must not charge
    # them once per API, which would flatter the ratio.
    # The same for the image copies and their prewarms: one command each by hand, however many releases.
    est = cp.estimate(synth("codelab").resources)
    services = [a for a in est.activities.values() if a.sequential_step == cp.API_STEP]
    assert len(services) > 1
    grouped: dict[str, list[float]] = {}
    for a in est.activities.values():
        if a.sequential_step is not None:
            grouped.setdefault(a.sequential_step, []).append(a.seconds)
    assert set(grouped) == {cp.API_STEP, "image-copy", "image-prewarm"}
    assert all(len(v) > 1 for v in grouped.values())
    every_activity = sum(a.seconds for a in est.activities.values())
    once = sum(max(v) - sum(v) for v in grouped.values())
    assert est.sequential_seconds == pytest.approx(every_activity + once)


def test_codelab_reaches_the_running_driver_in_at_most_40_percent_of_the_one_step_at_a_time_estimate(synth):
    # The time-to-first-step target (docs/research/ttfs.md), on nominal durations (core.catalog NOMINAL_*; the report
    # prints each figure's source), on the path it measures: up to the job's driver running with the weights on Lustre.
    est = cp.estimate(synth("codelab").resources)
    entry = [k for k in est.activities if k.startswith("entrypoint ")]
    driver = est.finish["job started"]
    assert driver / (est.sequential_seconds - sum(est.activities[k].seconds for k in entry)) <= 0.40, est.format(
        "codelab"
    )
    # The report also covers the entrypoint's steps (the readiness gate first), in their order, and the model load
    # (docs/performance.md gives the complete path's figures beside their bounds). codelab's queued job runs its own
    # cluster: nothing in the graph holds it for the weights, so its wait for the prefetch's marker ends with the
    # prefetch (the bucket-import chain), after the gate.
    assert est.start[entry[0]] == pytest.approx(driver)
    for before, after in itertools.pairwise(entry):
        assert est.start[after] >= est.finish[before] - 1e-6
    (wait,) = [k for k in entry if "prefetch's marker" in est.activities[k].label]
    prefetch = next(k for k in est.activities if k.endswith("prefetch#ran"))
    before_wait = entry[entry.index(wait) - 1]
    assert est.start[wait] == pytest.approx(max(est.finish[before_wait], est.finish[prefetch]))
    assert est.finish[prefetch] > est.finish[before_wait]  # the weights, not the gate, are the last chain here
    assert est.first_step_seconds == pytest.approx(est.finish[entry[-1]] + est.activities[cp.MODEL_LOAD].seconds)
    # On its standing cluster the RayJob waits for the prefetch in the graph: the steps add their full length.
    standing = cp.estimate(synth("codelab", STANDING).resources)
    steps = [k for k in standing.activities if k.startswith("entrypoint ")]
    assert standing.first_step_seconds == pytest.approx(
        standing.finish["job started"]
        + sum(standing.activities[k].seconds for k in steps)
        + standing.activities[cp.MODEL_LOAD].seconds
    )


def test_the_prefetch_in_the_nemo_rl_image_first_waits_for_that_image_on_the_cpu_node(synth):
    # Pulled from NGC (prepull), the image reaches the CPU node after Lustre; streamed from the prewarmed copy (the
    # default) it is there before, and the prefetch in it starts with the small image's. On the standing cluster the
    # RayJob waits for the prefetch in the graph, so the prefetch is the last chain.
    streamed = cp.estimate(synth("codelab", {**DOWNLOAD, **STANDING, "prefetchImage": "nemo-rl"}).resources)
    small = cp.estimate(synth("codelab", {**DOWNLOAD, **STANDING, "imagePath": "prepull"}).resources)
    nemo = cp.estimate(
        synth("codelab", {**DOWNLOAD, **STANDING, "prefetchImage": "nemo-rl", "imagePath": "prepull"}).resources
    )
    ran = next(k for k in streamed.activities if k.endswith("#ran"))
    assert streamed.finish["image on CPU nodes"] < streamed.start[ran] <= nemo.start[ran]
    run = next(k for k in small.activities if k.endswith("#ran"))
    assert nemo.start[run] == pytest.approx(nemo.finish["image on CPU nodes"])
    assert small.start[run] < nemo.finish["image on CPU nodes"]
    # The prefetch is the last chain in both graphs, so the first step moves by exactly the run's head start.
    assert nemo.first_step_seconds - small.first_step_seconds == pytest.approx(nemo.start[run] - small.start[run])


# --- the image, counted the way the stack renders it ------------------------------------------------------------
JOB_IMAGE = "us-docker.pkg.dev/your-gcp-project-id/team-images/grpo@sha256:" + "1" * 64


def test_the_report_streams_the_prewarmed_copy_on_gpu_nodes_after_its_prewarm(synth):
    r = synth("dev")
    est = cp.estimate(r.resources)
    image = est.activities["image on GPU nodes"]
    assert "streamed" in image.label and image.seconds == catalog.NOMINAL_IMAGE_STREAM_SECONDS.seconds
    # It waits for the prewarm of the release the pods run, an activity of this graph timed from the image's bytes.
    release = r.config["nemo-rl-gke:nemoRlRelease"].replace(".", "-")
    prewarm = r.get("gcp:cloudrunv2/job:Job", f"image-prewarm-{release}")
    assert prewarm.urn in image.needs_all
    rate = catalog.NOMINAL_IMAGE_PREWARM_BYTES_PER_S.seconds
    expected = catalog.NOMINAL_CLOUD_RUN_START_SECONDS.seconds + catalog.NOMINAL_IMAGE_BYTES.seconds / rate
    assert est.activities[prewarm.urn].seconds == pytest.approx(expected)
    # A fresh dev stack: the GPU side was the longest chain with the image pulled; streamed, Lustre is.
    pulled = cp.estimate(synth("dev", {"imagePath": "prepull"}).resources)
    assert "pulled" in pulled.activities["image on GPU nodes"].label
    assert est.first_step_seconds < pulled.first_step_seconds


def test_a_job_image_of_your_own_is_counted_as_a_cold_first_pull(synth):
    # Not prewarmed by the graph: "during the first pull of an eligible image you might not notice the benefits".
    r = synth("dev", {"jobImage": JOB_IMAGE})
    assert r.error is None, r.error
    est = cp.estimate(r.resources)
    image = est.activities["image on GPU nodes"]
    pull = catalog.NOMINAL_IMAGE_BYTES.seconds / catalog.NOMINAL_IMAGE_PULL_BYTES_PER_S.seconds
    assert "first pull" in image.label and image.seconds == pytest.approx(pull)
    # The placeholders, which run it too, still bring the nodes up: the image counts from the first GPU pod.
    assert est.activities["GPU nodes"].needs_any


def test_an_experiment_streams_the_release_copy_its_platform_prewarmed(synth):
    r = synth("codelab-exp1")
    est = cp.estimate(r.resources)
    image = est.activities["image on GPU nodes"]
    assert "streamed" in image.label and "platform prewarmed" in image.source
    assert image.seconds == catalog.NOMINAL_IMAGE_STREAM_SECONDS.seconds
