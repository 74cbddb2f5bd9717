"""Stand-ins that let the RayJob path run on a laptop or CI: no GPU, no NeMo-RL image, no network.

- `grpo_trainer.py`: the GRPO entry script stand-in. It builds the run's config with the release's real
  config loader and real hydra-core, then behaves like NeMo-RL's checkpointing.
- `install_workdir()`: lays out a directory standing in for /opt/nemo-rl of one NeMo-RL release: that
  release's real files the tests keep (nemo-rl-reference/<tag>: its GRPO configs and
  nemo_rl/utils/config.py) and the stand-in at the release's entry script path.
- `fake_datasets`: a `datasets` package stand-in serving GSM8K-shaped rows from memory;
- `stage_gsm8k()`: the GSM8K step of the data staging Job (pod_programs/stage_data.py), run with that stand-in, as
  the Job runs it before the RayJob exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from core import data
from core.catalog import NemoRlRelease

TRAINER = Path(__file__).with_name("grpo_trainer.py")
# Unmodified NeMo-RL files, one folder per release tag (see SOURCES.md there).
NEMO_RL_REFERENCE = Path(__file__).resolve().parents[2] / "nemo-rl-reference"


def release_tree(tag: str) -> Path:
    """The kept copy of NeMo-RL `tag`'s files, laid out as in its repository."""
    tree = NEMO_RL_REFERENCE / tag
    if not tree.is_dir():
        raise FileNotFoundError(f"no NeMo-RL {tag} files under {NEMO_RL_REFERENCE}")
    return tree


def install_workdir(workdir: Path, release: NemoRlRelease) -> None:
    """`workdir` as /opt/nemo-rl of `release`: its real configs and config loader, the stand-in at its entry."""
    shutil.copytree(
        release_tree(release.tag), workdir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )  # only the kept files
    dest = workdir / release.grpo_entry
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TRAINER, dest)


def stage_gsm8k(lustre: Path, fake_site: Path, calls: Optional[Path] = None) -> subprocess.CompletedProcess:
    """Run the data staging program on the GSM8K recipe's plan (its GSM8K step only: the built-in loaders' cache is
    tests/test_data_staging.py's, with the real `datasets`), with HF_HOME on `lustre` and `datasets` the stand-in."""
    from core.lustre_paths import hf_home
    from tests.standin import fake_datasets

    plan = data.staging_plan(None, tag="v0.5.0", mount_path=str(lustre), builtins=[], gsm8k=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=hf_home(str(lustre)), PYTHONPATH=str(fake_site))
    if calls is not None:
        env[fake_datasets.CALLS_ENV] = str(calls)
    program = Path(__file__).resolve().parents[2] / "pod_programs" / "stage_data.py"
    out = subprocess.run(
        [sys.executable, str(program), "--plan", json.dumps(plan)], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out
