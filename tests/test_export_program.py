"""pod_programs/export_checkpoints.py on real local directories: one standing in for the run's checkpoint directory
on Lustre, one for the mounted bucket. Which checkpoints are "final" and "best" is asked of NeMo-RL's own
CheckpointManager (tests/oracles/nemo_rl_checkpoint.py, v0.5.0, unmodified)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

PROGRAM = Path(__file__).resolve().parents[1] / "pod_programs" / "export_checkpoints.py"
METRIC = "val:accuracy"


def write_checkpoint(run: Path, name: str, info: dict | None, shard_bytes: int = 4096) -> Path:
    """NeMo-RL's layout (nemo_rl/utils/checkpoint.py): training_info.json, config.yaml,
    policy/{weights,optimizer,tokenizer}/."""
    d = run / name
    for sub in ("policy/weights", "policy/optimizer", "policy/tokenizer"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    if info is not None:
        (d / "training_info.json").write_text(json.dumps(info))
    (d / "config.yaml").write_text("grpo:\n  max_num_steps: 20\n")
    (d / "train_dataloader.pt").write_bytes(os.urandom(128))
    (d / "policy/weights/__0_0.distcp").write_bytes(os.urandom(shard_bytes))
    (d / "policy/weights/.metadata").write_bytes(os.urandom(64))
    (d / "policy/optimizer/__0_0.distcp").write_bytes(os.urandom(2 * shard_bytes))
    (d / "policy/tokenizer/tokenizer.json").write_text('{"version": "1.0"}')
    return d


@pytest.fixture()
def dirs(tmp_path):
    run = tmp_path / "lustre" / "checkpoints" / "qwen-codelab"
    run.mkdir(parents=True)
    bucket = tmp_path / "bucket" / "exports"
    bucket.mkdir(parents=True)
    return run, bucket / "qwen-codelab"


def export(run: Path, dest: Path, *extra: str):
    return subprocess.run(
        [sys.executable, str(PROGRAM), "--checkpoints", str(run), "--destination", str(dest), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(autouse=True)
def _nemo_rl_checkpoint(nemo_rl_checkpoint):
    global _CHECKPOINT
    _CHECKPOINT = nemo_rl_checkpoint  # the session's import (tests/conftest.py), before each test


_CHECKPOINT: Any = None


def oracle(run: Path, metric: str | None, higher_is_better: bool = True):
    return _CHECKPOINT.CheckpointManager(
        {
            "enabled": True,
            "checkpoint_dir": str(run),
            "metric_name": metric,
            "higher_is_better": higher_is_better,
            "save_period": 2,
            "keep_top_k": 3,
        }
    )


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def exported_steps(dest: Path) -> set[str]:
    return {p.name for p in dest.iterdir() if p.is_dir()}


def test_without_a_metric_only_nemo_rl_latest_checkpoint_is_exported_byte_for_byte(dirs):
    run, dest = dirs
    for step in (2, 4, 10):
        write_checkpoint(run, f"step_{step}", {"step": step})
    write_checkpoint(run, "tmp_step_12", {"step": 12})  # being written when the job ended: not complete
    write_checkpoint(run, "old_step_4", {"step": 4})  # left over from a rename
    r = export(run, dest)
    assert r.returncode == 0, r.stderr
    latest = Path(oracle(run, None).get_latest_checkpoint_path())
    assert exported_steps(dest) == {latest.name} == {"step_10"}
    assert tree(dest / latest.name) == tree(latest)
    manifest = json.loads((dest / "EXPORT.json").read_text())
    assert manifest["final"] == "step_10" and manifest["best"] is None
    assert manifest["bytes"] == sum(len(b) for b in tree(latest).values())


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_with_a_metric_the_best_checkpoint_by_nemo_rl_rules_is_exported_too(dirs, higher_is_better):
    run, dest = dirs
    values = {2: 0.31, 4: 0.58, 6: 0.12, 8: 0.44}
    for step, value in values.items():
        write_checkpoint(run, f"step_{step}", {"step": step, METRIC: value})
    extra = ["--metric", METRIC] + ([] if higher_is_better else ["--lower-is-better"])
    r = export(run, dest, *extra)
    assert r.returncode == 0, r.stderr
    cm = oracle(run, METRIC, higher_is_better)
    best = Path(cm.get_best_checkpoint_path())
    latest = Path(cm.get_latest_checkpoint_path())
    assert best.name == ("step_4" if higher_is_better else "step_6")
    assert exported_steps(dest) == {best.name, latest.name}
    assert tree(dest / best.name) == tree(best)
    manifest = json.loads((dest / "EXPORT.json").read_text())
    assert (manifest["final"], manifest["best"]) == (latest.name, best.name)


def test_when_no_checkpoint_has_the_metric_best_is_the_final_one_as_in_nemo_rl(dirs):
    run, dest = dirs
    for step in (2, 4):
        write_checkpoint(run, f"step_{step}", {"step": step})
    r = export(run, dest, "--metric", METRIC)
    assert r.returncode == 0, r.stderr
    with pytest.warns(UserWarning):
        best = Path(oracle(run, METRIC).get_best_checkpoint_path())
    assert exported_steps(dest) == {best.name} == {"step_4"}


def test_excluded_parts_stay_on_lustre(dirs):
    run, dest = dirs
    src = write_checkpoint(run, "step_20", {"step": 20})
    r = export(run, dest, "--exclude", "policy/optimizer")
    assert r.returncode == 0, r.stderr
    copied = tree(dest / "step_20")
    assert not [k for k in copied if k.startswith("policy/optimizer")]
    assert copied == {k: v for k, v in tree(src).items() if not k.startswith("policy/optimizer")}


def test_rerun_copies_only_what_is_missing_or_partial(dirs):
    run, dest = dirs
    src = write_checkpoint(run, "step_20", {"step": 20}, shard_bytes=1 << 20)
    assert export(run, dest).returncode == 0
    # An interrupted earlier copy on a plain directory: one file cut short, one missing.
    shard = dest / "step_20" / "policy" / "weights" / "__0_0.distcp"
    shard.write_bytes(shard.read_bytes()[:1000])
    (dest / "step_20" / "config.yaml").unlink()
    untouched = dest / "step_20" / "policy" / "optimizer" / "__0_0.distcp"
    mtime = untouched.stat().st_mtime_ns
    # A second name for the cut file's inode, outside the export: rewriting the file in place would change it.
    held = dest.parent / "held-cut-shard"
    held.hardlink_to(shard)
    r = export(run, dest)
    assert r.returncode == 0, r.stderr
    assert "copied 2 of" in r.stdout
    assert untouched.stat().st_mtime_ns == mtime
    assert tree(dest / "step_20") == tree(src)
    # The cut file was written again as a NEW file: Cloud Storage FUSE streams only new files written
    # sequentially and stages a modified one whole on the sidecar's disk (GoogleCloudPlatform/gcsfuse docs/semantics.md
    # v3.11.2), which core/export.py sizes at 1 GiB.
    assert held.stat().st_size == 1000 and not held.samefile(shard)


def test_no_complete_checkpoint_fails_loudly_and_writes_no_manifest(dirs):
    run, dest = dirs
    write_checkpoint(run, "tmp_step_2", {"step": 2})
    r = export(run, dest)
    assert r.returncode != 0 and "no complete checkpoint" in r.stderr
    assert not (dest / "EXPORT.json").exists()


def test_unmounted_bucket_is_reported_instead_of_filling_the_pod_disk(tmp_path, dirs):
    run, _ = dirs
    write_checkpoint(run, "step_2", {"step": 2})
    r = export(run, tmp_path / "not-mounted" / "exports" / "run")
    assert r.returncode != 0 and "is the bucket mounted" in r.stderr
