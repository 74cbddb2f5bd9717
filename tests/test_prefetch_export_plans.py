"""core.prefetch / core.export: the commands they render drive the real programs, and their refusals name
what is wrong. The prefetch plan is run end to end against the loopback Hub (tests/hub_server.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import catalog, export, lustre_paths, node_fit, prefetch
from tests.hub_server import FakeHub, Repo

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = "/etc/nemo-rl-gke"
COMMIT = "a" * 40


@pytest.mark.unit
def test_a_commit_id_pins_a_revision():
    assert prefetch.revision_problem(COMMIT) is None


# Tags are refused too: they can be moved (huggingface_hub HfApi.delete_tag / create_tag), so only a commit pins.
@pytest.mark.unit
@pytest.mark.parametrize(
    "revision", ["main", "master", "A" * 40, "a" * 39, "refs/heads/main", "v1.0", "1.2.3", "v2.0-rc1", "v1.0\n", ""]
)
def test_branches_and_malformed_revisions_are_refused(revision):
    assert "is not a commit hash" in prefetch.revision_problem(revision)
    with pytest.raises(ValueError):
        prefetch.plan(model_name="acme/m", revision=revision, mount_path="/lustre")


@pytest.mark.unit
def test_catalog_revisions_are_pinned_commits():
    for facts in catalog.MODELS.values():
        assert prefetch.revision_problem(facts.revision) is None and len(facts.revision) == 40


@pytest.mark.unit
def test_plan_names_its_marker_after_its_items():
    a = prefetch.plan(
        model_name="Qwen/Qwen2.5-72B-Instruct",
        revision=catalog.MODELS["Qwen/Qwen2.5-72B-Instruct"].revision,
        mount_path="/lustre/",
    )
    # The weights only: the datasets are the data staging Job's, at their own pinned commits (core/data.py).
    assert a.items == (f"model:Qwen/Qwen2.5-72B-Instruct@{catalog.MODELS['Qwen/Qwen2.5-72B-Instruct'].revision}",)
    assert a.model_path == f"/lustre/models/Qwen/Qwen2.5-72B-Instruct@{a.revision}"
    assert a.download_bytes == catalog.MODELS["Qwen/Qwen2.5-72B-Instruct"].weight_bytes
    b = prefetch.plan(model_name="Qwen/Qwen2.5-72B-Instruct", revision=COMMIT, mount_path="/lustre")
    assert a.marker != b.marker and a.marker.startswith("/lustre/prefetch/")
    # Pulumi's wait covers the download at the slowest tolerated rate.
    assert prefetch.job_timeout_seconds(a.download_bytes) >= a.download_bytes / prefetch.SLOWEST_DOWNLOAD_BYTES_PER_S


def _as_local(argv: list[str]) -> list[str]:
    """`uv run python /etc/nemo-rl-gke/<program>` -> this interpreter and the program file in the repository."""
    assert argv[:3] == ["uv", "run", "python"] and argv[3].startswith(SCRIPTS + "/")
    return [sys.executable, str(ROOT / "pod_programs" / Path(argv[3]).name), *argv[4:]]


@pytest.mark.graph
def test_rendered_prefetch_commands_download_then_wait_and_the_model_path_is_the_snapshot(tmp_path):
    mount = tmp_path / "lustre"
    with FakeHub() as hub:
        hub.add(Repo("model", "acme/tiny-llm", COMMIT, {"config.json": b"{}", "w.safetensors": os.urandom(4096)}))
        p = prefetch.plan(model_name="acme/tiny-llm", revision=COMMIT, mount_path=str(mount))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=lustre_paths.hf_home(str(mount)), NO_PROXY="127.0.0.1")
        r = subprocess.run(
            _as_local(prefetch.download_argv(p, SCRIPTS)), env=env, capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 0, r.stderr
    snapshot = mount / "huggingface_cache" / "hub" / "models--acme--tiny-llm" / "snapshots" / COMMIT
    assert Path(p.model_path).resolve() == snapshot.resolve()
    assert json.loads(Path(p.marker).read_text())["items"][0]["commit"] == COMMIT
    w = subprocess.run(
        _as_local(prefetch.wait_argv(p, SCRIPTS, 5)), env=env, capture_output=True, text=True, timeout=60
    )
    assert w.returncode == 0, w.stderr


@pytest.mark.unit
@pytest.mark.parametrize(
    "value,expected",
    [
        ("", "gs://stack-bucket/exports"),
        ("gs://stack-bucket/runs/final", "gs://stack-bucket/runs/final"),
        ("checkpoints/", "gs://stack-bucket/checkpoints"),
    ],
)
def test_export_destinations_inside_the_stack_bucket(value, expected):
    dest, problem = export.parse_destination(value, "stack-bucket")
    assert problem is None and dest.url == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    "value,words",
    [
        ("gs://other-bucket/exports", "outside the stack's bucket"),
        ("gs://stack-bucket-2/x", "outside the stack's bucket"),
        ("gs://stack-bucket", "needs a prefix"),
        ("gs://stack-bucket/../x", "needs a prefix"),
        ("a b", "needs a prefix"),
    ],
)
def test_export_destinations_elsewhere_are_refused(value, words):
    dest, problem = export.parse_destination(value, "stack-bucket")
    assert dest is None and words in problem


@pytest.mark.unit
def test_rendered_export_command_copies_latest_and_best(tmp_path):
    run = tmp_path / "lustre" / "checkpoints" / "r"
    for step, acc in ((2, 0.9), (4, 0.1)):
        d = run / f"step_{step}" / "policy" / "weights"
        d.mkdir(parents=True)
        (d / "shard").write_bytes(os.urandom(100))
        (run / f"step_{step}" / "training_info.json").write_text(json.dumps({"val:accuracy": acc}))
    argv = export.export_argv(
        scripts_dir=SCRIPTS, checkpoint_dir=str(run), prefix="exports", run_name="r", metric_name="val:accuracy"
    )
    i, j = argv.index("--destination"), argv.index("--root")
    # The mount's root is the export prefix (`only-dir=exports`): the run's directory is right under it.
    assert argv[i + 1] == f"{export.EXPORT_MOUNT}/r" and argv[j + 1] == export.EXPORT_MOUNT
    assert (
        export.volume(export.Destination("b", "exports"))["csi"]["volumeAttributes"]["mountOptions"]
        == f"implicit-dirs,{catalog.GCSFUSE_STREAMING_WRITES_OPTION},only-dir=exports"
    )
    bucket = tmp_path / "bucket" / "exports"  # the test's stand-in for the mounted export prefix
    argv[i + 1], argv[j + 1] = str(bucket / "r"), str(bucket)
    missing = subprocess.run(_as_local(argv), capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "is the bucket mounted" in missing.stderr
    bucket.mkdir(parents=True)
    r = subprocess.run(_as_local(argv), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (bucket / "r").iterdir()) == ["EXPORT.json", "step_2", "step_4"]


@pytest.mark.unit
def test_the_sidecar_streams_the_copy_and_names_every_request_and_limit():
    # Rule: the GCS FUSE webhook makes a sidecar's request EQUAL its limit when only the limit is annotated
    # (gcs-fuse-csi-driver pkg/webhook/config.go populateResource, v1.24.4), which is how `dev` once asked for a
    # 112Gi ephemeral-storage request on a node offering ~96. Streaming writes (GoogleCloudPlatform/gcsfuse
    # docs/semantics.md v3.11.2; on by default from GKE 1.33.2-gke.4655000, GoogleCloudPlatform/gcs-fuse-csi-driver
    # docs/releases.md) stage nothing on disk for new files written sequentially, ~96 MiB of memory each, up to 4 files
    # at once on a non-high-performance node.
    a = export.pod_annotations()
    for res in ("cpu", "memory", "ephemeral-storage"):
        assert f"gke-gcsfuse/{res}-request" in a and f"gke-gcsfuse/{res}-limit" in a
    sidecar = node_fit.gcsfuse_sidecar_requests(a)
    assert sidecar.ephemeral_gib == 1
    assert sidecar.memory_gib * 1024 >= export.COPY_WORKERS * catalog.GCSFUSE_STREAMING_FILE_MIB
    assert export.COPY_WORKERS <= catalog.GCSFUSE_STREAMING_MAX_FILES
    options = export.volume(export.Destination("b", "exports"))["csi"]["volumeAttributes"]["mountOptions"]
    assert catalog.GCSFUSE_STREAMING_WRITES_OPTION in options.split(",")


@pytest.mark.graph
def test_a_model_outside_the_catalog_gets_the_ceiling_deadline_and_sizes_its_own_in_the_pod(synth):
    # Found by review: without a size offline, 1800 s (0 bytes + margin) killed the download of any real model.
    # The Job, Pulumi's wait and the download's --job-deadline take the ceiling (core.prefetch); the download
    # itself sizes a tighter deadline from the Hub's file list (tests/test_prefetch_program.py).
    import json

    own = {
        "jobOverrides": json.dumps({"model_name": "acme/own-llm", "model_revision": "a" * 40}),
        "checkpointBudgetSeconds": 0,
    }
    ceiling = prefetch.job_timeout_seconds(0)
    assert (
        ceiling
        == int(prefetch.UNKNOWN_MODEL_CEILING_BYTES / prefetch.SLOWEST_DOWNLOAD_BYTES_PER_S)
        + prefetch.TIMEOUT_MARGIN_SECONDS
    )
    r = synth("dev", own)
    assert r.error is None, r.error
    job = next(x for x in r.of_type("kubernetes:batch/v1:Job") if x.name == "prefetch")
    argv = job.inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    assert job.inputs["spec"]["activeDeadlineSeconds"] == ceiling
    assert argv[argv.index("--job-deadline") + 1] == str(ceiling)
    assert job.custom_timeouts["create"] == f"{ceiling // 60}m"
    # Own cluster: the entrypoint waits as long for the marker.
    r = synth("dev", {**own, "jobMode": "own-cluster"})
    entry = r.get("kubernetes:ray.io/v1:RayJob", "rayjob").inputs["spec"]["entrypoint"]
    assert f"--timeout {ceiling}" in entry
    # With a budget, the unknown size is refused naming the model, with the way out.
    r = synth("dev", {"jobOverrides": own["jobOverrides"]})
    assert "set checkpointBudgetSeconds to 0" in r.error and r.resources == []
