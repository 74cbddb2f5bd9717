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
from pathlib import Path

import pytest

from core import recipes
from core.catalog import NEMO_RL_RELEASES
from core.settings.job import JobSettings
from tests.nemo_rl_oracle import script_calls

pytestmark = pytest.mark.unit

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


def test_megatron_runs_check_the_conversion_of_the_model_nemo_rl_receives_right_before_training():
    snapshot = "/lustre/models/Qwen--Qwen2.5-72B-Instruct/495f39366efef23836d0cfae4fbe635880d2be31"
    calls = entry_calls("qwen2.5-72b-deepscaler", "v0.4.0", model_path=snapshot)
    check, train = calls[-2], calls[-1]
    assert check[:4] == ["uv", "run", "python", f"{recipes.SCRIPTS_DIR}/{recipes.MEGATRON_GUARD_SCRIPT}"]
    assert check[4:] == ["--model-name", snapshot] and f"policy.model_name={snapshot}" in train
    # DTensor runs convert nothing: no check.
    assert not [
        c for c in entry_calls("gemma3-27b-gsm8k", "v0.5.0") if any(recipes.MEGATRON_GUARD_SCRIPT in w for w in c)
    ]
