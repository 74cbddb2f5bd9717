"""core.prefetch / core.export: the commands they render drive the real programs, and their refusals name
what is wrong. The prefetch plan is run end to end against the loopback Hub (tests/hub_server.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import catalog, export, lustre_paths, prefetch
from core import sizing
from tests.hub_server import FakeHub, Repo

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = "/etc/nemo-rl-gke"
COMMIT = "a" * 40


@pytest.mark.parametrize("revision", [COMMIT, "v1.0", "1.2.3", "v2.0-rc1"])
def test_commit_ids_and_version_tags_pin_a_revision(revision):
    assert prefetch.revision_problem(revision) is None


@pytest.mark.parametrize("revision", ["main", "master", "A" * 40, "a" * 39, "refs/heads/main", "v1.0\n", ""])
def test_branches_and_malformed_revisions_are_refused(revision):
    assert "is not a commit hash" in prefetch.revision_problem(revision)
    with pytest.raises(ValueError):
        prefetch.plan(model_name="acme/m", revision=revision, dataset="gsm8k", mount_path="/lustre")


def test_catalog_revisions_are_pinned_commits():
    for facts in catalog.MODELS.values():
        assert prefetch.revision_problem(facts.revision) is None and len(facts.revision) == 40


def test_plan_names_its_marker_after_its_items():
    a = prefetch.plan(model_name="Qwen/Qwen2.5-72B-Instruct", revision=catalog.MODELS["Qwen/Qwen2.5-72B-Instruct"].revision,
                      dataset="DeepScaler", mount_path="/lustre/")
    assert a.items == (f"model:Qwen/Qwen2.5-72B-Instruct@{catalog.MODELS['Qwen/Qwen2.5-72B-Instruct'].revision}",
                       "dataset:agentica-org/DeepScaleR-Preview-Dataset@main", "dataset:HuggingFaceH4/aime_2024@main")
    assert a.model_path == f"/lustre/models/Qwen/Qwen2.5-72B-Instruct@{a.revision}"
    assert a.download_bytes == catalog.MODELS["Qwen/Qwen2.5-72B-Instruct"].weight_bytes
    b = prefetch.plan(model_name="Qwen/Qwen2.5-72B-Instruct", revision=COMMIT, dataset="DeepScaler",
                      mount_path="/lustre")
    assert a.marker != b.marker and a.marker.startswith("/lustre/prefetch/")
    # Pulumi's wait covers the download at the slowest tolerated rate.
    assert prefetch.job_timeout_seconds(a.download_bytes) >= a.download_bytes / prefetch.SLOWEST_DOWNLOAD_BYTES_PER_S


def _as_local(argv: list[str]) -> list[str]:
    """`uv run python /etc/nemo-rl-gke/<program>` -> this interpreter and the program file in the repository."""
    assert argv[:3] == ["uv", "run", "python"] and argv[3].startswith(SCRIPTS + "/")
    return [sys.executable, str(ROOT / "workloads" / Path(argv[3]).name), *argv[4:]]


def test_rendered_prefetch_commands_download_then_wait_and_the_model_path_is_the_snapshot(tmp_path):
    mount = tmp_path / "lustre"
    with FakeHub() as hub:
        hub.add(Repo("model", "acme/tiny-llm", COMMIT, {"config.json": b"{}", "w.safetensors": os.urandom(4096)}))
        p = prefetch.plan(model_name="acme/tiny-llm", revision=COMMIT, dataset="none", mount_path=str(mount))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=lustre_paths.hf_home(str(mount)), NO_PROXY="127.0.0.1")
        r = subprocess.run(_as_local(prefetch.download_argv(p, SCRIPTS)), env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
    snapshot = mount / "huggingface_cache" / "hub" / "models--acme--tiny-llm" / "snapshots" / COMMIT
    assert Path(p.model_path).resolve() == snapshot.resolve()
    assert json.loads(Path(p.marker).read_text())["items"][0]["commit"] == COMMIT
    w = subprocess.run(_as_local(prefetch.wait_argv(p, SCRIPTS, 5)), env=env, capture_output=True, text=True,
                       timeout=60)
    assert w.returncode == 0, w.stderr


@pytest.mark.parametrize("value,expected", [
    ("", "gs://stack-bucket/exports"),
    ("gs://stack-bucket/runs/final", "gs://stack-bucket/runs/final"),
    ("checkpoints/", "gs://stack-bucket/checkpoints"),
])
def test_export_destinations_inside_the_stack_bucket(value, expected):
    dest, problem = export.parse_destination(value, "stack-bucket")
    assert problem is None and dest.url == expected


@pytest.mark.parametrize("value,words", [
    ("gs://other-bucket/exports", "outside the stack's bucket"),
    ("gs://stack-bucket-2/x", "outside the stack's bucket"),
    ("gs://stack-bucket", "needs a prefix"),
    ("gs://stack-bucket/../x", "needs a prefix"),
    ("a b", "needs a prefix"),
])
def test_export_destinations_elsewhere_are_refused(value, words):
    dest, problem = export.parse_destination(value, "stack-bucket")
    assert dest is None and words in problem


def test_rendered_export_command_copies_latest_and_best(tmp_path):
    run = tmp_path / "lustre" / "checkpoints" / "r"
    for step, acc in ((2, 0.9), (4, 0.1)):
        d = run / f"step_{step}" / "policy" / "weights"
        d.mkdir(parents=True)
        (d / "shard").write_bytes(os.urandom(100))
        (run / f"step_{step}" / "training_info.json").write_text(json.dumps({"val:accuracy": acc}))
    argv = export.export_argv(scripts_dir=SCRIPTS, checkpoint_dir=str(run), prefix="exports", run_name="r",
                              metric_name="val:accuracy")
    i, j = argv.index("--destination"), argv.index("--root")
    # The mount's root is the export prefix (`only-dir=exports`): the run's directory is right under it.
    assert argv[i + 1] == f"{export.EXPORT_MOUNT}/r" and argv[j + 1] == export.EXPORT_MOUNT
    assert export.volume(export.Destination("b", "exports"))["csi"]["volumeAttributes"]["mountOptions"] == \
        "implicit-dirs,only-dir=exports"
    bucket = tmp_path / "bucket" / "exports"          # the test's stand-in for the mounted export prefix
    argv[i + 1], argv[j + 1] = str(bucket / "r"), str(bucket)
    missing = subprocess.run(_as_local(argv), capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "is the bucket mounted" in missing.stderr
    bucket.mkdir(parents=True)
    r = subprocess.run(_as_local(argv), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (bucket / "r").iterdir()) == ["EXPORT.json", "step_2", "step_4"]


def test_staging_space_holds_the_largest_checkpoint_file_per_parallel_copy():
    # Codelab: 72.7B parameters with optimizer state over 64 training ranks.
    nbytes = sizing.checkpoint_bytes(catalog.MODEL_PARAMS["Qwen/Qwen2.5-72B-Instruct"], save_optimizer=True)
    gib = export.staging_gib(nbytes, training_ranks=64)
    assert gib * export.GIB >= nbytes / 64 * export.COPY_WORKERS
    assert export.pod_annotations(gib)["gke-gcsfuse/ephemeral-storage-limit"] == f"{gib}Gi"
    assert export.staging_gib(1, training_ranks=1) == export.MIN_STAGING_GIB
