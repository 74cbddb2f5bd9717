"""An interrupted one-time HF -> Megatron conversion is redone, never trained on.

Rule: NeMo-RL converts the weights once into `<HF_HOME>/nemo_rl/<model subdir>` and skips the conversion whenever
`iter_0000000` exists there (NVIDIA-NeMo/RL v0.4.0 nemo_rl/models/policy/megatron_policy_worker.py lines 486-499:
`pt_checkpoint_exists = os.path.exists(pretrained_path) and os.path.exists(os.path.join(pretrained_path,
"iter_0000000"))`; the same test at v0.5.0 and v0.7.0). The conversion's writes, in order (Megatron-Bridge
62f4704b, the v0.4.0 submodule: training/checkpointing.py `save_checkpoint`): rank 0 creates `iter_0000000/`, the
ranks write their shards, the save finishes with the global `.metadata`; after a barrier rank 0 writes
`iter_0000000/train_state.pt`, copies it to `latest_train_state.pt`, and writes `iter_0000000/run_config.yaml`.

The conversion is replayed here on a real directory standing in for Lustre, cut after every one of its writes
(a preemption), then the entrypoint's guard runs (pod_programs/megatron_import_guard.py, as a subprocess, the way
the job runs it) and NeMo-RL's own test above decides what the next attempt does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import script_calls

PROGRAM = Path(__file__).resolve().parents[1] / "pod_programs" / recipes.MEGATRON_GUARD_SCRIPT


def conversion_steps(path: Path) -> list:
    """Megatron-Bridge's writes of one conversion on 2 ranks, in order, each a callable."""
    it = path / "iter_0000000"

    def write(p: Path, data: bytes):
        return lambda: p.write_bytes(data)

    return [
        lambda: it.mkdir(parents=True),  # rank 0: ensure_directory_exists
        write(it / "metadata.json", b'{"sharded_backend": "torch_dist"}'),
        write(it / "common.pt", os.urandom(64)),
        write(it / "__0_0.distcp", os.urandom(4096)),  # rank 0's shard
        write(it / "__1_0.distcp", os.urandom(4096)),  # rank 1's shard
        write(it / ".metadata", os.urandom(256)),  # the save's finish (coordinator)
        write(it / "train_state.pt", os.urandom(128)),  # after the barrier, rank 0
        write(path / "latest_train_state.pt", os.urandom(128)),  # shutil.copy of it
        write(it / "run_config.yaml", b"model:\n  tensor_model_parallel_size: 8\n"),  # last
    ]


def nemo_rl_skips_conversion(path: Path) -> bool:
    """NeMo-RL's test, as quoted in the module docstring."""
    return os.path.exists(path) and os.path.exists(os.path.join(path, "iter_0000000"))


def guard(model_name: str, hf_home: Path) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HF_HOME": str(hf_home)}
    return subprocess.run(
        [sys.executable, str(PROGRAM), "--model-name", model_name], env=env, capture_output=True, text=True, timeout=60
    )


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(params=["hub-id", "local-snapshot"])
def model(request, tmp_path) -> tuple[str, Path]:
    """(policy.model_name, where NeMo-RL converts it to): a Hub id keeps its name as the subdirectory; an existing
    local path (the prefetched snapshot the job trains from) becomes `model_<path with / as _>`."""
    hf_home = tmp_path / "lustre" / "hf"
    if request.param == "hub-id":
        return "Qwen/Qwen2.5-72B-Instruct", hf_home / "nemo_rl" / "Qwen/Qwen2.5-72B-Instruct"
    snapshot = tmp_path / "lustre" / "models" / "Qwen--Qwen2.5-72B-Instruct" / "495f3936"
    snapshot.mkdir(parents=True)
    return str(snapshot), hf_home / "nemo_rl" / ("model_" + str(snapshot).replace("/", "_"))


@pytest.mark.unit
@pytest.mark.parametrize("cut", range(len(conversion_steps(Path("x")))))
def test_a_conversion_cut_after_any_write_is_converted_again(model, cut, tmp_path):
    model_name, target = model
    hf_home = tmp_path / "lustre" / "hf"
    for step in conversion_steps(target)[: cut + 1]:
        step()
    complete = cut == len(conversion_steps(target)) - 1
    before = tree(target)
    assert nemo_rl_skips_conversion(target)  # without the guard, every retry would load this as it is
    r = guard(model_name, hf_home)
    assert r.returncode == 0, r.stderr
    if complete:
        assert nemo_rl_skips_conversion(target) and tree(target) == before
        assert "is a complete conversion" in r.stdout
    else:
        assert not nemo_rl_skips_conversion(target), f"cut after write {cut}: NeMo-RL would skip the conversion"
        assert "interrupted conversion" in r.stdout
        assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # set-aside copy deleted
    # The next attempt then converts (all writes again) and the guard leaves the result alone.
    if not complete:
        for step in conversion_steps(target):
            step()
        done = tree(target)
        assert guard(model_name, hf_home).returncode == 0 and tree(target) == done


@pytest.mark.unit
def test_no_conversion_yet_is_left_to_nemo_rl(tmp_path):
    r = guard("google/gemma-3-27b-it", tmp_path / "hf")
    assert r.returncode == 0 and "NeMo-RL converts it" in r.stdout
    assert not (tmp_path / "hf").exists()


def entry_calls(name: str, tag: str, model_path: str | None = None) -> list[list[str]]:
    recipe = recipes.resolve_recipe(JobSettings.model_validate({"jobRecipe": name}), NEMO_RL_RELEASES[tag])
    return script_calls(
        recipes.entrypoint(
            recipe,
            NEMO_RL_RELEASES[tag],
            recipes.EntrypointArgs(mount_path="/lustre", run_name="r", model_path=model_path),
        )
    )


@pytest.mark.unit
def test_megatron_runs_check_the_conversion_of_the_model_nemo_rl_receives_right_before_training():
    snapshot = "/lustre/models/Qwen--Qwen2.5-72B-Instruct/495f39366efef23836d0cfae4fbe635880d2be31"
    calls = entry_calls("qwen2.5-72b-deepscaler", "v0.4.0", model_path=snapshot)
    check, train = calls[-2], calls[-1]
    assert check[:4] == ["uv", "run", "python", f"{recipes.SCRIPTS_DIR}/{recipes.MEGATRON_GUARD_SCRIPT}"]
    own = "/lustre/huggingface_cache/nemo_rl/.runs/r"
    assert check[4:] == ["--model-name", snapshot, "--own", own, "--shared", "/lustre/huggingface_cache/nemo_rl"]
    assert f"policy.model_name={snapshot}" in train
    # DTensor runs convert nothing: no check.
    assert not [
        c for c in entry_calls("gemma3-27b-gsm8k", "v0.5.0") if any(recipes.MEGATRON_GUARD_SCRIPT in w for w in c)
    ]


# --- concurrent jobs on one Lustre ------------------------------------------------------------------------------
# A job as it runs on the head: the guard, then NeMo-RL's own decision and, when it converts, the conversion's writes in
# Megatron-Bridge's order, slowly. NeMo-RL reads the directory from NRL_MEGATRON_CHECKPOINT_DIR first
# (nemo_rl/models/policy/utils.py get_megatron_checkpoint_dir), which the entrypoint exports.
JOB = r"""
import os, subprocess, sys, time
guard, model, own, shared, pace = sys.argv[1:6]
r = subprocess.run([sys.executable, guard, "--model-name", model, "--own", own, "--shared", shared], check=True,
                   capture_output=True, text=True)
print(r.stdout, end="", flush=True)
path = os.path.join(os.environ.get("NRL_MEGATRON_CHECKPOINT_DIR") or os.path.join(os.environ["HF_HOME"], "nemo_rl"),
                    model)
if os.path.exists(path) and os.path.exists(os.path.join(path, "iter_0000000")):
    print("nemo-rl: skips the conversion", flush=True)
    sys.exit(0)
it = os.path.join(path, "iter_0000000")
os.makedirs(it)
for name in ("metadata.json", "common.pt", "__0_0.distcp", "__1_0.distcp", ".metadata", "train_state.pt"):
    time.sleep(float(pace))
    open(os.path.join(it, name), "wb").write(os.urandom(64))
open(os.path.join(path, "latest_train_state.pt"), "wb").write(os.urandom(64))
open(os.path.join(it, "run_config.yaml"), "w").write("model: {}\n")
print("nemo-rl: converted", flush=True)
"""


def start_job(tmp_path: Path, run: str, pace: float) -> subprocess.Popen:
    hf_home = tmp_path / "lustre" / "hf"
    shared = hf_home / "nemo_rl"
    own = shared / ".runs" / run
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HF_HOME": str(hf_home),
        "NRL_MEGATRON_CHECKPOINT_DIR": str(own),
    }
    script = tmp_path / "job.py"
    script.write_text(JOB)
    argv = [sys.executable, str(script), str(PROGRAM), "Qwen/Qwen2.5-72B-Instruct", str(own), str(shared), str(pace)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def complete(path: Path) -> bool:
    return (path / "latest_train_state.pt").is_file() and (path / "iter_0000000" / "run_config.yaml").is_file()


@pytest.mark.graph
def test_concurrent_jobs_never_remove_each_others_conversion_and_later_runs_share_one(tmp_path):
    shared = tmp_path / "lustre" / "hf" / "nemo_rl"
    model = "Qwen/Qwen2.5-72B-Instruct"
    # A job from before the per-run directories is converting into the shared directory, half-way.
    legacy = shared / model / "iter_0000000"
    legacy.mkdir(parents=True)
    (legacy / "__0_0.distcp").write_bytes(b"x" * 64)
    # Two experiments of the same model start together; a third joins while both are converting.
    first = [start_job(tmp_path, run, pace=0.3) for run in ("exp1-run", "exp2-run")]
    time.sleep(0.5)
    third = start_job(tmp_path, "exp3-run", pace=0.3)
    outputs = [p.communicate(timeout=60)[0] for p in (*first, third)]
    assert all(p.returncode == 0 for p in (*first, third)), outputs
    runs = shared / ".runs"
    assert all(complete(runs / run / model) for run in ("exp1-run", "exp2-run", "exp3-run")), outputs
    assert (legacy / "__0_0.distcp").read_bytes() == b"x" * 64  # nobody removed the other job's files
    # A later run converts nothing: it links a complete conversion (the same inodes, no bytes copied).
    later = start_job(tmp_path, "exp4-run", pace=0.3)
    out = later.communicate(timeout=60)[0]
    assert later.returncode == 0 and "nemo-rl: skips the conversion" in out and "links the complete conversion" in out
    linked = runs / "exp4-run" / model / "iter_0000000" / "run_config.yaml"
    sources = {
        (runs / r / model / "iter_0000000" / "run_config.yaml").stat().st_ino
        for r in ("exp1-run", "exp2-run", "exp3-run")
    }
    assert linked.stat().st_ino in sources


@pytest.mark.unit
def test_a_runs_interrupted_conversion_is_redone_while_another_runs_conversion_is_kept(tmp_path):
    shared = tmp_path / "lustre" / "hf" / "nemo_rl"
    model = "Qwen/Qwen2.5-72B-Instruct"
    mine, theirs = shared / ".runs" / "mine" / model, shared / ".runs" / "theirs" / model
    for path in (mine, theirs):  # both interrupted after two writes; "theirs" may be converting right now
        for step in conversion_steps(path)[:2]:
            step()
    before = tree(theirs)
    job = start_job(tmp_path, "mine", pace=0.05)
    out = job.communicate(timeout=60)[0]
    assert job.returncode == 0 and "interrupted conversion" in out and "nemo-rl: converted" in out
    assert complete(mine) and tree(theirs) == before


@pytest.mark.unit
def test_v070s_hf_config_overrides_suffix_is_the_directory_the_guard_checks():
    # nemo_rl/models/megatron/setup.py at v0.7.0 L445-452: `<model>__hfovr_<sha256(canonical JSON)[:12]>`, of the
    # overrides as NeMo-RL's loader resolves them.
    import hashlib
    import json

    from tests.nemo_rl_oracle import lookup, nemo_rl_config

    release = NEMO_RL_RELEASES["v0.7.0"]
    j = JobSettings.model_validate(
        {"jobRecipe": "qwen2.5-72b-deepscaler", "jobOverrides": {"+policy.hf_config_overrides.rope_theta": 1e6}}
    )
    recipe = recipes.resolve_recipe(j, release)
    words = recipes.render_overrides(recipe, release, mount_path="/lustre", run_name="r")
    overrides = lookup(nemo_rl_config("v0.7.0", recipe.config_path, words), "policy.hf_config_overrides")[1]
    digest = hashlib.sha256(
        json.dumps(overrides, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    ).hexdigest()[:12]
    calls = script_calls(
        recipes.entrypoint(recipe, release, recipes.EntrypointArgs(mount_path="/lustre", run_name="r"))
    )
    (check,) = [c for c in calls if any(recipes.MEGATRON_GUARD_SCRIPT in w for w in c)]
    assert check[check.index("--hf-overrides-hash") + 1] == digest
    # Without overrides (and on v0.4.0/v0.5.0) the directory is the model's alone.
    plain = recipes.resolve_recipe(JobSettings.model_validate({"jobRecipe": "qwen2.5-72b-deepscaler"}), release)
    calls = script_calls(recipes.entrypoint(plain, release, recipes.EntrypointArgs(mount_path="/lustre", run_name="r")))
    assert not [c for c in calls if "--hf-overrides-hash" in c]
