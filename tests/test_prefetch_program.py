"""pod_programs/prefetch_hf.py against the real huggingface_hub client and a Hub on loopback (tests/hub_server.py).

The program runs as a subprocess, as the prefetch Job runs it: real files in a temporary HF_HOME, real HTTP
on 127.0.0.1, the token in a file. huggingface_hub is the version the NeMo-RL images lock (0.34.4).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hub_server import FakeHub, Repo, sha256

pytestmark = pytest.mark.graph

PROGRAM = Path(__file__).resolve().parents[1] / "pod_programs" / "prefetch_hf.py"
TOKEN = "hf_loopback_token_0123456789"
C_MODEL = "1" * 40
C_MODEL_V2 = "2" * 40
C_GATED = "3" * 40
C_DATA = "4" * 40
BIG = os.urandom(24 * 1024 * 1024)  # above huggingface_hub's 10 MB download chunk: a cut leaves bytes on disk
SHARD_2 = os.urandom(64 * 1024)
CONFIG = b'{"architectures": ["TinyForCausalLM"]}'


@pytest.fixture()
def hub():
    with FakeHub(token=TOKEN) as h:
        h.add(
            Repo(
                "model",
                "acme/tiny-llm",
                C_MODEL,
                {
                    "config.json": CONFIG,
                    "model-00001-of-00002.safetensors": BIG,
                    "model-00002-of-00002.safetensors": SHARD_2,
                    "tokenizer.json": b'{"version": "1.0"}',
                },
                branches={"main": C_MODEL},
            )
        )
        h.add(Repo("model", "acme/tiny-llm-v2", C_MODEL_V2, {"config.json": CONFIG}, branches={"main": C_MODEL_V2}))
        h.add(
            Repo(
                "model", "acme/gated-llm", C_GATED, {"config.json": CONFIG, "weights.safetensors": SHARD_2}, gated=True
            )
        )
        h.add(
            Repo(
                "dataset",
                "acme/tiny-data",
                C_DATA,
                {"README.md": b"# tiny", "data/train-00000-of-00001.parquet": os.urandom(4096)},
                branches={"main": C_DATA},
            )
        )
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
            "HF_HOME": str(tmp_path / "lustre" / "huggingface_cache"),
            "HF_TOKEN_PATH": str(token_file),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "NO_PROXY": "127.0.0.1",
        }
    )
    return e


def run(env, *args, timeout=120):
    return subprocess.run(
        [sys.executable, str(PROGRAM), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def download(env, tmp_path, *items, marker="prefetch/model.json"):
    return run(
        env,
        "download",
        "--marker",
        str(tmp_path / "lustre" / marker),
        "--links",
        str(tmp_path / "lustre" / "models"),
        *items,
    )


MODEL_ITEM = f"model:acme/tiny-llm@{C_MODEL}"
DATA_ITEM = "dataset:acme/tiny-data@main"


def test_download_fills_the_hf_cache_pins_the_commit_and_links_the_snapshot(env, tmp_path, hub):
    r = download(env, tmp_path, MODEL_ITEM, DATA_ITEM)
    assert r.returncode == 0, r.stderr
    snapshot = Path(env["HF_HOME"]) / "hub" / "models--acme--tiny-llm" / "snapshots" / C_MODEL
    assert (snapshot / "model-00001-of-00002.safetensors").read_bytes() == BIG
    assert (snapshot / "config.json").read_bytes() == CONFIG
    # The layout is the real cache's: a loader asking for the pinned commit finds the files offline.
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(
        "acme/tiny-llm",
        "model-00002-of-00002.safetensors",
        cache_dir=str(Path(env["HF_HOME"]) / "hub"),
        revision=C_MODEL,
    )
    assert found is not None and Path(found).read_bytes() == SHARD_2
    dataset_snapshot = Path(env["HF_HOME"]) / "hub" / "datasets--acme--tiny-data" / "snapshots" / C_DATA
    assert (dataset_snapshot / "README.md").read_bytes() == b"# tiny"
    # `main` was resolved once and recorded where load_dataset looks for it.
    assert (Path(env["HF_HOME"]) / "hub" / "datasets--acme--tiny-data" / "refs" / "main").read_text() == C_DATA

    link = tmp_path / "lustre" / "models" / "acme" / f"tiny-llm@{C_MODEL}"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert link.resolve() == snapshot.resolve()
    marker = json.loads((tmp_path / "lustre" / "prefetch" / "model.json").read_text())
    by_repo = {i["repo_id"]: i for i in marker["items"]}
    assert by_repo["acme/tiny-llm"]["commit"] == C_MODEL
    assert by_repo["acme/tiny-data"]["commit"] == C_DATA and by_repo["acme/tiny-data"]["revision"] == "main"
    assert by_repo["acme/tiny-llm"]["bytes"] == len(BIG) + len(SHARD_2) + len(CONFIG) + len(b'{"version": "1.0"}')


def test_token_comes_from_the_token_file_and_never_reaches_the_output(env, tmp_path, hub):
    r = download(env, tmp_path, MODEL_ITEM)
    assert r.returncode == 0, r.stderr
    hub_requests = hub.requests(path_part="/acme/")
    assert hub_requests and all(e["authorized"] for e in hub_requests)
    assert TOKEN not in r.stdout + r.stderr


def test_rerun_with_its_marker_returns_at_once_without_any_request(env, tmp_path, hub):
    assert download(env, tmp_path, MODEL_ITEM, DATA_ITEM).returncode == 0
    before = len(hub.log)
    started = time.monotonic()
    r = download(env, tmp_path, DATA_ITEM, MODEL_ITEM)  # same items, other order
    assert r.returncode == 0, r.stderr
    assert "complete already" in r.stdout
    assert len(hub.log) == before
    assert time.monotonic() - started < 10


def test_marker_for_other_items_does_not_count_as_complete(env, tmp_path, hub):
    assert download(env, tmp_path, MODEL_ITEM).returncode == 0
    r = download(env, tmp_path, f"model:acme/tiny-llm-v2@{C_MODEL_V2}")
    assert r.returncode == 0, r.stderr
    assert "complete already" not in r.stdout
    marker = json.loads((tmp_path / "lustre" / "prefetch" / "model.json").read_text())
    assert [i["repo_id"] for i in marker["items"]] == ["acme/tiny-llm-v2"]


def test_interrupted_download_leaves_no_marker_and_the_rerun_resumes_with_a_range_request(env, tmp_path, hub):
    cut = 15 * 1024 * 1024
    hub.break_blob(BIG, after=cut)
    first = download(env, tmp_path, MODEL_ITEM)
    assert first.returncode != 0
    assert not (tmp_path / "lustre" / "prefetch" / "model.json").exists()
    blobs = Path(env["HF_HOME"]) / "hub" / "models--acme--tiny-llm" / "blobs"
    partial = blobs / f"{sha256(BIG)}.incomplete"
    kept = partial.stat().st_size
    assert 0 < kept <= cut

    hub.heal()
    before = len(hub.log)
    second = download(env, tmp_path, MODEL_ITEM)
    assert second.returncode == 0, second.stderr
    big_gets = [e for e in hub.log[before:] if e["method"] == "GET" and e["path"] == f"/cdn/{sha256(BIG)}"]
    assert [e["range"] for e in big_gets] == [f"bytes={kept}-"]
    assert (blobs / sha256(BIG)).read_bytes() == BIG
    assert not partial.exists()
    # Blobs completed in the first run are not fetched again.
    assert not [e for e in hub.log[before:] if e["path"] == f"/cdn/{sha256(SHARD_2)}" and e["method"] == "GET"]


def test_gated_model_needs_the_token_file(env, tmp_path, hub):
    anonymous = dict(env)
    del anonymous["HF_TOKEN_PATH"]
    r = download(anonymous, tmp_path, f"model:acme/gated-llm@{C_GATED}")
    assert r.returncode != 0
    assert not (tmp_path / "lustre" / "prefetch" / "model.json").exists()
    assert not any(e["auth_header"] for e in hub.log)  # anonymous really means no token at all
    assert download(env, tmp_path, f"model:acme/gated-llm@{C_GATED}").returncode == 0


def test_hf_token_in_the_environment_is_refused_before_any_request(env, tmp_path, hub):
    bad = dict(env, HF_TOKEN=TOKEN)
    r = download(bad, tmp_path, MODEL_ITEM)
    assert r.returncode != 0
    assert "HF_TOKEN is set in the environment" in r.stderr
    assert TOKEN not in r.stderr + r.stdout
    assert hub.log == []


def test_missing_hf_home_is_refused(env, tmp_path, hub):
    no_home = {k: v for k, v in env.items() if k != "HF_HOME"}
    r = download(no_home, tmp_path, MODEL_ITEM)
    assert r.returncode != 0 and "HF_HOME is not set" in r.stderr
    assert hub.log == []


@pytest.mark.parametrize(
    "item",
    [
        "model:acme/tiny-llm",
        "weights:acme/tiny-llm@main",
        "model:../x/y@main",
        "model:acme/tiny-llm@main\n",
        "model:acme@main",
    ],
)
def test_malformed_items_are_refused(env, tmp_path, hub, item):
    r = download(env, tmp_path, item)
    assert r.returncode != 0 and "bad item" in r.stderr
    assert hub.log == []


def test_wait_times_out_without_the_marker_and_returns_once_the_download_completes(env, tmp_path, hub):
    marker = tmp_path / "lustre" / "prefetch" / "model.json"
    r = run(env, "wait", "--marker", str(marker), "--timeout", "1", "--interval", "0.2", MODEL_ITEM)
    assert r.returncode != 0 and "did not list every item" in r.stderr

    waiter = subprocess.Popen(
        [
            sys.executable,
            str(PROGRAM),
            "wait",
            "--marker",
            str(marker),
            "--timeout",
            "60",
            "--interval",
            "0.2",
            MODEL_ITEM,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert download(env, tmp_path, MODEL_ITEM).returncode == 0
        out, err = waiter.communicate(timeout=30)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == 0, err
    assert "continuing" in out


def test_wait_does_not_accept_a_marker_for_other_items(env, tmp_path, hub):
    assert download(env, tmp_path, f"model:acme/tiny-llm-v2@{C_MODEL_V2}").returncode == 0
    r = run(
        env,
        "wait",
        "--marker",
        str(tmp_path / "lustre" / "prefetch" / "model.json"),
        "--timeout",
        "0.5",
        "--interval",
        "0.1",
        MODEL_ITEM,
    )
    assert r.returncode != 0


# --- A model outside the catalog ----------------------------------------------------------------------------
C_LLAMA = "6" * 40
LLAMA_FILES = {
    "config.json": CONFIG,
    "generation_config.json": b"{}",
    "tokenizer.json": b'{"v": 1}',
    "tokenizer_config.json": b"{}",
    "model.safetensors.index.json": b"{}",
    "model-00001-of-00001.safetensors": os.urandom(8 * 1024),
    # What training never loads: Meta's own second copy of the weights (meta-llama repositories), a .bin copy.
    "original/consolidated.00.pth": os.urandom(16 * 1024),
    "original/params.json": b"{}",
    "original/tokenizer.model": os.urandom(2048),
    "pytorch_model.bin": os.urandom(4096),
}
LLAMA_ITEM = f"model:acme/llama-like@{C_LLAMA}"


@pytest.fixture()
def llama(hub):
    return hub.add(Repo("model", "acme/llama-like", C_LLAMA, dict(LLAMA_FILES)))


def test_a_model_downloads_only_what_training_loads(env, tmp_path, hub, llama):
    r = download(env, tmp_path, LLAMA_ITEM)
    assert r.returncode == 0, r.stderr
    snapshot = Path(env["HF_HOME"]) / "hub" / "models--acme--llama-like" / "snapshots" / C_LLAMA
    got = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file())
    assert got == sorted(n for n in LLAMA_FILES if "/" not in n and not n.endswith(".bin"))
    # Not even asked for: no request names original/ or the .bin copy.
    assert not [e for e in hub.log if "/original/" in e["path"] or e["path"].endswith(".bin")]


def test_the_deadline_comes_from_the_repositorys_real_file_list(env, tmp_path, hub, llama):
    wanted = sum(len(v) for n, v in LLAMA_FILES.items() if "/" not in n and not n.endswith(".bin"))
    r = run(env, "download", "--marker", str(tmp_path / "m.json"), "--rate", "1000", "--margin", "7", LLAMA_ITEM)
    assert r.returncode == 0, r.stderr
    assert f"{wanted / 1e9:.2f} GB to fetch at most; deadline {int(wanted / 1000 + 7)} s" in r.stdout
    # More than the Job's own deadline: refused at once, before a single file is fetched.
    before = len(hub.log)
    r = run(
        env,
        "download",
        "--marker",
        str(tmp_path / "m2.json"),
        "--rate",
        "1",
        "--margin",
        "0",
        "--job-deadline",
        "60",
        f"model:acme/tiny-llm@{C_MODEL}",
    )
    assert r.returncode != 0 and "more than the Job's 60 s deadline" in r.stderr
    assert not [e for e in hub.log[before:] if e["path"].startswith("/cdn/")]
    assert not (tmp_path / "m2.json").exists()


def test_a_download_past_its_deadline_stops_with_one_line_and_no_marker(env, tmp_path, hub):
    hub.cdn_delay = 3.0
    # 24 MB at 100 MB/s and no margin: a 1 s deadline, which the slow CDN cannot meet.
    r = run(env, "download", "--marker", str(tmp_path / "m.json"), "--rate", "100000000", "--margin", "0", MODEL_ITEM)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1].startswith("prefetch_hf: the download did not finish within its deadline")
    assert not (tmp_path / "m.json").exists()


def test_only_the_plain_http_path_resumes_a_partial_file_in_the_pinned_client():
    # The docstring's resume claim, against huggingface_hub 0.34.4 itself: the offset of
    # `<blob>.incomplete` reaches http_get (resume_size) only; xet_get, used for Xet-backed files when hf_xet is
    # installed (as the pinned requirements do), takes none, so such a file starts over.
    import inspect

    import huggingface_hub
    from huggingface_hub import file_download

    assert huggingface_hub.__version__ == "0.34.4"
    assert "resume_size" in inspect.signature(file_download.http_get).parameters
    assert not {"resume_size", "resume"} & set(inspect.signature(file_download.xet_get).parameters)
    src = inspect.getsource(file_download._download_to_tmp_and_move)
    assert src.count("resume_size=resume_size") == 1 and "xet_get(" in src
    doc = PROGRAM.read_text()
    assert "`xet_get`, which takes no offset: that file starts over" in " ".join(doc.split())
