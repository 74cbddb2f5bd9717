"""weightsPath bucket-import, the three pod programs as their Jobs run them, each a subprocess:
pod_programs/stage_weights.py against the real huggingface_hub 0.34.4 and a Hub on loopback (tests/hub_server.py),
writing into a directory that stands for the bucket's staging folder (the GCS FUSE mount); pod_programs/
lustre_import.py against Managed Lustre's API and the metadata server on loopback (tests/lustre_api.py, shaped per the
API's messages in tests/reference/lustre-v1); and pod_programs/prefetch_hf.py `--imported`, which checks what landed on
"Lustre" against the staging's manifest.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from core import weights
from tests.hub_server import FakeHub, Repo, sha256
from tests.lustre_api import FakeLustre, tree

pytestmark = pytest.mark.graph

PROGRAMS = Path(__file__).resolve().parents[1] / "pod_programs"
REFERENCE = Path(__file__).resolve().parent / "reference" / "lustre-v1"
TOKEN = "hf_loopback_token_0123456789"
COMMIT = "a" * 40
MOVED = "b" * 40
BIG = os.urandom(3 * 1024 * 1024)
SHARD_2 = os.urandom(64 * 1024)
CONFIG = b'{"architectures": ["TinyForCausalLM"]}'
FILES = {
    "config.json": CONFIG,
    "model-00001-of-00002.safetensors": BIG,
    "model-00002-of-00002.safetensors": SHARD_2,
    "tokenizer.json": b'{"version": "1.0"}',
    "pytorch_model.bin": b"x" * 2048,  # another weight format beside safetensors: not what training loads
    "original/consolidated.00.pth": b"y" * 2048,  # a sub-directory: never staged
}
ITEM = f"model:acme/tiny-llm@{COMMIT}"
STAGED = {k: len(v) for k, v in FILES.items() if "/" not in k and not k.endswith(".bin")}
BUCKET = "nemo-test-bucket"
INSTANCE = "projects/p/locations/us-east1-b/instances/nemo-test-lustre"
MOUNT = "/lustre"


@pytest.fixture()
def hub():
    with FakeHub(token=TOKEN) as h:
        h.add(Repo("model", "acme/tiny-llm", COMMIT, dict(FILES), branches={"main": MOVED}))
        h.add(Repo("model", "acme/tiny-llm-moved", MOVED, {"config.json": b"{}"}))
        h.add(Repo("model", "acme/gated-llm", COMMIT, {"config.json": CONFIG}, gated=True))
        yield h


@pytest.fixture()
def env(tmp_path, hub):
    token_file = tmp_path / "secrets" / "hf-token"
    token_file.parent.mkdir()
    token_file.write_text(TOKEN + "\n")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    e.update(
        {
            "HF_ENDPOINT": hub.endpoint,
            "HF_HOME": str(tmp_path / "hf-home"),
            "HF_TOKEN_PATH": str(token_file),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "NO_PROXY": "127.0.0.1",
        }
    )
    return e


def plan(item=ITEM) -> weights.StagingPlan:
    """The shipped plan's layout for the tiny model (core/weights.py), on a mount at MOUNT."""
    from core import prefetch

    repo, _, rev = item.split(":", 1)[1].partition("@")
    p = prefetch.plan(model_name=repo, revision=rev, mount_path=MOUNT)
    return weights.plan(p, bucket=BUCKET, mount_path=MOUNT, project="p", zone="us-east1-b", instance_id="x")


def dest(tmp_path, item=ITEM) -> Path:
    """Where the staging writes: the plan's stage directory, under a local stand-in for the GCS FUSE mount."""
    return tmp_path / "bucket" / weights.STAGING_PREFIX / plan(item).stage_dir[len(weights.STAGE_MOUNT) + 1 :]


def stage(env, tmp_path, *extra, item=ITEM, timeout=120):
    argv = [sys.executable, str(PROGRAMS / "stage_weights.py"), "--dest", str(dest(tmp_path, item)), *extra, item]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def manifest(tmp_path) -> dict:
    return json.loads((dest(tmp_path) / weights.STAGED_MANIFEST).read_text())


# --- staging ---------------------------------------------------------------------------------------------------------
def test_staging_writes_the_pinned_commits_training_files_as_plain_files_and_the_manifest_last(env, tmp_path, hub):
    r = stage(env, tmp_path)
    assert r.returncode == 0, r.stderr
    d = dest(tmp_path)
    # Plain files, no link: what a bucket can hold, and the layout of a local model directory.
    assert {p.name for p in d.iterdir()} == set(STAGED) | {weights.STAGED_MANIFEST}
    assert not any(p.is_symlink() for p in d.rglob("*"))
    assert (d / "model-00001-of-00002.safetensors").read_bytes() == BIG
    assert (d / "config.json").read_bytes() == CONFIG  # the pinned commit's, though `main` has moved on
    m = manifest(tmp_path)
    assert m["item"] == {"kind": "model", "repo_id": "acme/tiny-llm", "revision": COMMIT}
    assert m["files"] == STAGED and m["bytes"] == sum(STAGED.values())
    # Every file came from the pinned commit's resolve URL, and only the planned ones.
    resolved = {e["path"].rsplit("/", 1)[-1] for e in hub.log if "/resolve/" in e["path"]}
    assert resolved == set(STAGED)
    assert all(f"/resolve/{COMMIT}/" in e["path"] for e in hub.log if "/resolve/" in e["path"])
    # The token travelled in every request to the Hub, from its file, and never into the output.
    assert all(e["authorized"] for e in hub.log)
    assert TOKEN not in r.stdout + r.stderr


def test_a_rerun_with_its_manifest_in_place_returns_at_once_without_a_request(env, tmp_path, hub):
    assert stage(env, tmp_path).returncode == 0
    before = len(hub.log)
    r = stage(env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "complete already" in r.stdout and len(hub.log) == before


def test_a_killed_staging_keeps_its_complete_files_and_rewrites_the_cut_one_from_its_start(env, tmp_path, hub):
    # One copy at a time, in name order: config.json, then the big shard (slow CDN), then the rest.
    hub.cdn_delay = 30.0
    argv = [
        sys.executable,
        str(PROGRAMS / "stage_weights.py"),
        "--dest",
        str(dest(tmp_path)),
        "--workers",
        "1",
        ITEM,
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    d = dest(tmp_path)
    deadline = time.monotonic() + 60
    while not (d / "model-00001-of-00002.safetensors").exists():  # config.json done, the shard's copy begun
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)  # as the node would end a preempted pod
    proc.wait()
    assert (d / "config.json").read_bytes() == CONFIG
    assert (d / "model-00001-of-00002.safetensors").stat().st_size < len(BIG)
    assert not (d / weights.STAGED_MANIFEST).exists()

    hub.cdn_delay = 0.0
    before = len(hub.log)
    r = stage(env, tmp_path)
    assert r.returncode == 0, r.stderr
    again = [e["path"].rsplit("/", 1)[-1] for e in hub.log[before:] if "/resolve/" in e["path"]]
    assert "config.json" not in again  # complete: never fetched again
    big = [e for e in hub.log[before:] if e["path"] == f"/cdn/{sha256(BIG)}"]
    assert [e["range"] for e in big] == [None]  # from its start: a streamed object is rewritten, not appended to
    assert (d / "model-00001-of-00002.safetensors").read_bytes() == BIG
    assert manifest(tmp_path)["files"] == STAGED


def test_a_file_of_the_wrong_size_is_written_again(env, tmp_path, hub):
    assert stage(env, tmp_path).returncode == 0
    (dest(tmp_path) / weights.STAGED_MANIFEST).unlink()
    (dest(tmp_path) / "model-00002-of-00002.safetensors").write_bytes(b"short")
    r = stage(env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "3 files in place already, 1 to copy" in r.stdout
    assert (dest(tmp_path) / "model-00002-of-00002.safetensors").read_bytes() == SHARD_2


def test_a_gated_model_needs_the_token_file_and_fails_in_one_line(env, tmp_path, hub):
    item = f"model:acme/gated-llm@{COMMIT}"
    env = {k: v for k, v in env.items() if k != "HF_TOKEN_PATH"}
    r = stage(env, tmp_path, item=item)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()
    assert len(last) == 1 and last[0].startswith("stage_weights: cannot list acme/gated-llm@"), r.stderr


def test_hf_token_in_the_environment_is_refused_before_any_request(env, tmp_path, hub):
    r = stage({**env, "HF_TOKEN": "hf_should_not_be_here"}, tmp_path)
    assert r.returncode != 0 and hub.log == []
    assert r.stderr.strip() == (
        "stage_weights: HF_TOKEN is set in the environment; tokens come from a file (--token-file or HF_TOKEN_PATH)"
    )


def test_staging_that_cannot_fit_the_jobs_deadline_is_refused_before_copying(env, tmp_path, hub):
    # 3 MB at 1 kB/s is far beyond a 60 s Job deadline: refused at once, nothing copied.
    r = stage(env, tmp_path, "--rate", "1000", "--margin", "0", "--job-deadline", "60")
    assert r.returncode != 0
    assert "more than the Job's 60 s deadline" in r.stderr.strip().splitlines()[-1]
    assert not [e for e in hub.log if "/resolve/" in e["path"]]


# --- the import --------------------------------------------------------------------------------------------------
@pytest.fixture()
def lustre(tmp_path):
    with FakeLustre(
        bucket=BUCKET, bucket_root=tmp_path / "bucket", lustre_root=tmp_path / "lustre", instances={INSTANCE}
    ) as f:
        (tmp_path / "lustre").mkdir()
        yield f


def run_import(lustre, *extra, source=None, timeout=60):
    p = plan()
    argv = [
        sys.executable,
        str(PROGRAMS / "lustre_import.py"),
        "--instance",
        INSTANCE,
        "--source",
        source or p.gcs_source,
        "--api",
        f"{lustre.endpoint}/v1",
        "--metadata",
        lustre.endpoint,
        "--poll",
        "0.1",
        *extra,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={"NO_PROXY": "127.0.0.1"})


def test_staging_then_import_then_prefetch_puts_the_model_where_the_job_reads_it(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    r = run_import(lustre, "--permission-wait", "0")
    assert r.returncode == 0, r.stderr
    p = plan()
    # The model directory lands at the job's model path, relative to the file system's root (the mount).
    landed = tmp_path / "lustre" / p.tree
    staged_manifest = (dest(tmp_path) / weights.STAGED_MANIFEST).stat().st_size
    assert tree(landed) == {**STAGED, weights.STAGED_MANIFEST: staged_manifest}
    assert p.model_path == f"{MOUNT}/{p.tree}"
    # One importData call of the shape the API takes, then the operation polled until done; a token every time.
    (call,) = lustre.calls("POST", ":importData")
    assert call["path"] == f"/v1/{INSTANCE}:importData"
    assert set(call["body"]) == {"requestId", "gcsPath", "lustrePath"}
    assert call["body"]["gcsPath"] == {"uri": f"gs://{BUCKET}/{weights.STAGING_PREFIX}/acme/tiny-llm@{COMMIT}/"}
    assert call["body"]["lustrePath"] == {"path": "/"}
    assert uuid.UUID(call["body"]["requestId"]).version == 4
    polls = lustre.calls("GET", "/operations/")
    assert len(polls) == lustre.polls_until_done
    api_calls = [e for e in lustre.log if e["path"].startswith("/v1/")]
    assert all(e["authorization"] == f"Bearer {lustre.token}" for e in api_calls)
    tokens = [e for e in lustre.log if e["path"].startswith("/computeMetadata/")]
    assert len(tokens) == len(api_calls) and all(e["metadata_flavor"] == "Google" for e in tokens)
    assert lustre.token not in r.stdout + r.stderr
    assert re.search(r"import: done in \d+ s: 5 objects \(0\.00 GB\) copied, 0 already there", r.stdout), r.stdout

    # The prefetch then takes the imported directory for the model, checked against the manifest.
    links = tmp_path / "lustre" / "models"
    marker = tmp_path / "lustre" / "prefetch" / "m.json"
    pf = subprocess.run(
        [
            sys.executable,
            str(PROGRAMS / "prefetch_hf.py"),
            "download",
            "--marker",
            str(marker),
            "--links",
            str(links),
            "--imported",
            weights.STAGED_MANIFEST,
            ITEM,
        ],
        env={**env, "HF_HOME": str(tmp_path / "lustre" / "huggingface_cache")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert pf.returncode == 0, pf.stderr
    (entry,) = json.loads(marker.read_text())["items"]
    assert entry["path"] == str(landed) and entry["commit"] == COMMIT and entry["imported"] is True
    assert not (tmp_path / "lustre" / "huggingface_cache" / "hub").exists()  # nothing downloaded for the model


def test_a_rerun_of_the_import_copies_nothing_that_is_there_already(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    assert run_import(lustre, "--permission-wait", "0").returncode == 0
    r = run_import(lustre, "--permission-wait", "0")
    assert r.returncode == 0, r.stderr
    assert "0 objects (0.00 GB) copied, 5 already there" in r.stdout


def test_a_refusal_while_the_grant_propagates_is_retried_with_the_same_request_id(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    lustre.deny = 1
    r = run_import(lustre, "--permission-wait", "60", timeout=90)
    assert r.returncode == 0, r.stderr
    calls = lustre.calls("POST", ":importData")
    assert len(calls) == 2 and calls[0]["body"]["requestId"] == calls[1]["body"]["requestId"]
    assert len(lustre.operations) == 1


def test_a_missing_permission_fails_in_one_line_naming_it(lustre):
    lustre.deny = 100
    r = run_import(lustre, "--permission-wait", "0")
    assert r.returncode != 0
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("lustre_import: importData failed (403 PERMISSION_DENIED: ")
    assert "needs lustre.instances.importData and lustre.operations.get" in line


def test_an_operation_that_fails_is_one_line_with_its_code_and_first_error(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    lustre.operation_error = {"code": 7, "message": "The service agent cannot read the bucket"}
    r = run_import(lustre, "--permission-wait", "0")
    assert r.returncode != 0
    (line,) = r.stderr.strip().splitlines()
    assert "failed (code 7: The service agent cannot read the bucket)" in line
    assert "the Lustre service agent needs roles/storage.objectViewer on the bucket" in line


def test_objects_that_failed_fail_the_import_with_the_first_one_named(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    lustre.failing = {f"{plan().tree}/model-00002-of-00002.safetensors"}
    r = run_import(lustre, "--permission-wait", "0")
    assert r.returncode != 0
    (line,) = r.stderr.strip().splitlines()
    assert "finished with 1 objects not imported" in line and "model-00002-of-00002.safetensors" in line


def test_an_unavailable_api_is_retried(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    lustre.unavailable = 1
    r = run_import(lustre, "--permission-wait", "0", timeout=90)
    assert r.returncode == 0, r.stderr
    assert "503 UNAVAILABLE" in r.stdout


def test_an_operation_not_done_in_time_fails_naming_it(lustre, tmp_path):
    lustre.polls_until_done = 10**6
    r = run_import(lustre, "--permission-wait", "0", "--timeout", "1")
    assert r.returncode != 0
    (line,) = r.stderr.strip().splitlines()
    assert re.match(r"lustre_import: operation projects/p/locations/us-east1-b/operations/operation-1 not done", line)


def test_a_source_without_its_trailing_slash_is_refused_before_any_request(lustre):
    r = run_import(lustre, source=f"gs://{BUCKET}/{weights.STAGING_PREFIX}/acme/tiny-llm@{COMMIT}")
    assert r.returncode != 0 and lustre.log == []
    assert "importData needs the trailing slash" in r.stderr


def test_without_a_metadata_server_the_import_fails_in_one_line(tmp_path):
    argv = [
        sys.executable,
        str(PROGRAMS / "lustre_import.py"),
        "--instance",
        INSTANCE,
        "--source",
        plan().gcs_source,
        "--metadata",
        "http://127.0.0.1:9",  # nothing listens on the discard port
        "--api",
        "http://127.0.0.1:9/v1",
    ]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("lustre_import: no token from the metadata server")


def test_prefetch_refuses_a_model_that_was_not_fully_imported(env, tmp_path, hub, lustre):
    assert stage(env, tmp_path).returncode == 0
    assert run_import(lustre, "--permission-wait", "0").returncode == 0
    landed = tmp_path / "lustre" / plan().tree
    (landed / "model-00001-of-00002.safetensors").write_bytes(b"cut")
    r = subprocess.run(
        [
            sys.executable,
            str(PROGRAMS / "prefetch_hf.py"),
            "download",
            "--marker",
            str(tmp_path / "m.json"),
            "--links",
            str(tmp_path / "lustre" / "models"),
            "--imported",
            weights.STAGED_MANIFEST,
            ITEM,
        ],
        env={**env, "HF_HOME": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and not (tmp_path / "m.json").exists()
    assert "is incomplete" in r.stderr.strip().splitlines()[-1]


# --- the fake speaks the API's messages ------------------------------------------------------------------------
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def proto_fields() -> dict[str, set[str]]:
    """message -> its fields' proto3 JSON names, from the vendored excerpt."""
    text = (REFERENCE / "transfer.proto.excerpt").read_text()
    out: dict[str, set[str]] = {}
    for m in re.finditer(r"^message (\w+) \{(?:\}$|(.*?)^\})", text, re.S | re.M):
        body = re.sub(r"//[^\n]*", "", m.group(2) or "")
        out[m.group(1)] = {_camel(f) for f in re.findall(r"^\s*(?:repeated\s+)?[\w.]+\s+(\w+)\s*=\s*\d+", body, re.M)}
    return out


def test_the_json_both_sides_use_is_the_apis_messages():
    f = proto_fields()
    # The request the program sends and the fake accepts.
    assert {"requestId", "serviceAccount", "gcsPath", "lustrePath"} == f["ImportDataRequest"] - {"name"}
    from tests import lustre_api

    assert lustre_api.REQUEST_FIELDS == f["ImportDataRequest"] - {"name"}
    # Every field name the program reads or writes from the operation's metadata is one of the messages'.
    program = (PROGRAMS / "lustre_import.py").read_text()
    used = set(re.findall(r'"((?:[a-z]+[A-Z][A-Za-z]*)|uri|path|counters)"', program))
    known = set().union(*f.values())
    used -= {"importData"}  # the method, in the URL (the rpc below)
    assert used <= known, used - known
    assert "operationMetadata" in f["ImportDataMetadata"] and "counters" in f["TransferOperationMetadata"]
    assert {"objectsFailedCount", "objectsCopiedCount", "bytesCopiedCount", "objectsSkippedCount"} <= f[
        "TransferCounters"
    ]
    assert {"errorCode", "errorCount", "errorLogEntries"} == f["ErrorSummary"]
    assert {"uri", "errorDetails"} == f["ErrorLogEntry"]
    # The rpc and the operations' route the fake serves.
    service = (REFERENCE / "service.excerpt").read_text()
    assert 'post: "/v1/{name=projects/*/locations/*/instances/*}:importData"' in service
    assert "get: '/v1/{name=projects/*/locations/*/operations/*}'" in service
    assert 'metadata_type: "ImportDataMetadata"' in service
